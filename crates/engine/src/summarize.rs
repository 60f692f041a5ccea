//! Turns merged recorders and the timeline into the v1 [`Summary`].

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

use headroom_client::Protocol;
use headroom_metrics::recorder::{Breakdown, Recorder, SecondBucket, Tally};
use headroom_metrics::summary::{
    ChecksSummary, Connections, Errors, Generator, GroupSummary, Latency, NameSummary, Phase,
    Rates, Second, Summary, TimingMs,
};
use headroom_metrics::threshold::evaluate_all;
use headroom_metrics::ErrorKind;
use headroom_plan::{Load, Plan};

fn phase(h: &Histogram<u64>) -> Phase {
    Phase {
        count: h.len(),
        ms: Latency::of_micros(h),
    }
}

/// The timing breakdown's percentiles in milliseconds.
pub(crate) fn timing(b: &Breakdown) -> TimingMs {
    TimingMs {
        dns: phase(&b.dns),
        connect: phase(&b.connect),
        tls: phase(&b.tls),
        ttfb: phase(&b.ttfb),
        receive: phase(&b.receive),
    }
}

fn errors(t: &Tally) -> Errors {
    let count = t.error_count();
    let requests = t.requests();
    let by_kind = ErrorKind::ALL
        .iter()
        .zip(t.errors)
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| (k.as_str().to_string(), n))
        .collect();
    Errors {
        count,
        rate: if requests > 0 {
            count as f64 / requests as f64
        } else {
            0.0
        },
        by_kind,
        // Filled in by the engine from the run's first failure of each kind.
        first_message: Default::default(),
    }
}

/// One timeline entry from the merged bucket of a second.
pub(crate) fn second(bucket: &SecondBucket, plan: &Plan) -> Second {
    let h = &bucket.latency;
    let q = |q: f64| {
        if h.is_empty() {
            0.0
        } else {
            h.value_at_quantile(q) as f64 / 1000.0
        }
    };
    let offered = match &plan.load {
        Load::ArrivalRate { schedule, .. } => schedule
            .value_at(plan.warmup + Duration::from_secs(bucket.t) + Duration::from_millis(500)),
        Load::Users { .. } => bucket.users as f64,
    };
    Second {
        t: bucket.t,
        requests: h.len(),
        errors: bucket.errors,
        dropped: bucket.dropped,
        offered,
        p50_ms: q(0.50),
        p95_ms: q(0.95),
        p99_ms: q(0.99),
        max_lag_ms: bucket.max_lag_us as f64 / 1000.0,
        generator_cpu_percent: bucket.cpu_us as f64 / 10_000.0,
    }
}

/// How long a run lasted.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    /// The part of the schedule that ran (all of it unless interrupted).
    pub(crate) scheduled: Duration,
    /// From the start until the last in-flight request finished (at least `scheduled`).
    pub(crate) measured: Duration,
}

/// Builds the summary of a run over `span` (its schedule cut short when `interrupted`),
/// judged by the plan's thresholds.
pub(crate) fn summarize(
    plan: &Plan,
    rec: &Recorder,
    timeline: Vec<Second>,
    span: Span,
    interrupted: bool,
    generator: Generator,
) -> Summary {
    let secs = span.measured.as_secs_f64().max(1e-9);
    let scheduled_secs = span.scheduled.as_secs_f64().max(1e-9);
    let requests = rec.overall.requests();
    let achieved = requests as f64 / secs;
    let (model, offered) = match &plan.load {
        Load::ArrivalRate { schedule, .. } => {
            let w = plan.warmup;
            let arrivals = schedule.arrivals_by(w + span.scheduled) - schedule.arrivals_by(w);
            ("arrival-rate", arrivals / scheduled_secs)
        }
        Load::Users { .. } => ("users", achieved),
    };
    let by_name: BTreeMap<String, NameSummary> = plan
        .names
        .iter()
        .zip(&rec.by_name)
        .map(|(name, t)| {
            let s = NameSummary {
                requests: t.requests(),
                latency_ms: Latency::of_micros(&t.latency),
                latency_success_ms: Latency::of_micros(&t.success),
                errors: errors(t),
                timing_ms: timing(&t.timing),
            };
            (name.clone(), s)
        })
        .collect();
    let (streams, stream_totals) = super::summarize_streams::summarize(plan, rec, secs);
    let mut summary = Summary {
        version: 1,
        name: plan.name.clone(),
        model: model.to_string(),
        requests,
        duration_s: secs,
        rate: Rates { offered, achieved },
        dropped: rec.dropped,
        scheduled: rec.scheduled,
        completed: requests - rec.overall.error_count(),
        abandoned: rec.abandoned,
        retries: rec.retries,
        latency_ms: Latency::of_micros(&rec.overall.latency),
        latency_uncorrected_ms: Latency::of_micros(&rec.overall.uncorrected),
        latency_success_ms: Latency::of_micros(&rec.overall.success),
        errors: errors(&rec.overall),
        timing_ms: timing(&rec.overall.timing),
        connections: Connections {
            protocol: match (plan.client.protocol, plan.target.scheme.as_str()) {
                (Protocol::Http1, _) => "http/1.1",
                (Protocol::Http2, "https") => "h2",
                (Protocol::Http2, _) => "h2c",
                (Protocol::Http3, _) => "h3",
            }
            .to_string(),
            model: plan.client.connection.to_string(),
            streams: plan
                .client
                .protocol
                .multiplexed()
                .then_some(plan.client.streams),
            opened: rec.connections.opened,
            reused: rec.connections.reused,
            handshakes: rec.connections.handshakes,
            by_protocol: rec.connections.by_protocol,
            first_request: headroom_metrics::first_request::FirstRequest::of(
                &rec.connections.opening,
            ),
        },
        quic: headroom_metrics::quic::QuicSummary::of(&rec.connections.quic),
        by_name,
        thresholds: Vec::new(),
        generator,
        timeline,
        interrupted,
        aborted: None,
        watches: Vec::new(),
        delivery: None,
        streams,
        stream_totals,
        shards: Vec::new(),
        coordinator: None,
        checks: ChecksSummary::of(&plan.checks, &rec.checks),
        redirects: rec.redirects,
        cookies: rec.cookies,
        by_group: GroupSummary::by_name(&plan.groups, &rec.groups),
        by_workload: BTreeMap::new(),
        partial: None,
    };
    summary.thresholds = evaluate_all(&plan.thresholds, &summary);
    summary
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_metrics::recorder::{Hit, Timing};
    use headroom_scenario::{self as scenario, Overrides};

    #[test]
    fn the_breakdown_and_connections_reach_the_summary_overall_and_per_name() {
        let overrides = Overrides {
            url: Some("http://127.0.0.1:9/work".into()),
            users: Some(1),
            ..Overrides::default()
        };
        let plan = scenario::load(None, &overrides).unwrap();
        let mut rec = Recorder::new(plan.names.len());
        rec.record_dns(Duration::from_micros(700));
        for i in 0..10u64 {
            let first = i == 0;
            rec.record(&Hit {
                name_id: 0,
                corrected: Duration::from_millis(12),
                uncorrected: Duration::from_millis(12),
                error: None,
                timing: Timing {
                    connect: first.then_some(Duration::from_micros(250)),
                    tls: None,
                    ttfb: Some(Duration::from_millis(10)),
                    receive: Some(Duration::from_millis(2)),
                    reused: !first,
                },
            });
        }
        // The connector counted the one connection as it opened.
        let mut opened = headroom_metrics::recorder::ByProtocol::default();
        opened.count(headroom_metrics::recorder::Speaks::Http1);
        rec.connections.add_opened(&opened, 0);
        let span = Span {
            scheduled: Duration::from_secs(1),
            measured: Duration::from_secs(1),
        };
        let s = summarize(
            &plan,
            &rec.finish(),
            Vec::new(),
            span,
            false,
            Generator::default(),
        );
        let t = &s.timing_ms;
        assert_eq!((t.dns.count, t.connect.count, t.tls.count), (1, 1, 0));
        assert!((0.69..=0.71).contains(&t.dns.ms.max), "{:?}", t.dns);
        assert!((0.24..=0.26).contains(&t.connect.ms.p50), "{:?}", t.connect);
        assert_eq!(t.ttfb.count, 10);
        assert!((9.9..=10.1).contains(&t.ttfb.ms.p99), "{:?}", t.ttfb);
        assert!((1.98..=2.02).contains(&t.receive.ms.avg), "{:?}", t.receive);
        assert_eq!(t.tls.ms, Latency::default(), "no handshake: all zero");
        let c = s.connections;
        assert_eq!((c.opened, c.reused, c.handshakes), (1, 9, 0));
        assert_eq!(c.by_protocol.http1, 1);
        let named = &s.by_name[&plan.names[0]].timing_ms;
        assert_eq!(
            (named.ttfb.count, named.connect.count, named.dns.count),
            (10, 1, 0)
        );
        assert_eq!(named.ttfb, t.ttfb);
    }
}
