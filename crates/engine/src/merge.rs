//! Summarising and judging any number of [`Share`]s of one plan: their recorders merge
//! exactly (HDR `add`, never percentiles of percentiles), counts add up, seconds align
//! by their index, and the thresholds are judged once, on the merged data. A single
//! process is the case of one share.

use std::collections::BTreeMap;
use std::time::Duration;

use super::share::Share;
use super::summarize::{self, Span};
use super::Outcome;
use headroom_metrics::recorder::{Recorder, SecondBucket};
use headroom_metrics::summary::Generator;
use headroom_metrics::threshold::window::judge_all;
use headroom_plan::Plan;

/// Merges the shares of `plan`'s run into one [`Outcome`]: one summary, judged by the
/// plan's thresholds, with each share's generator verdict beside it. The shares should
/// have passed [`Share::check`]; with none, the outcome is an empty run.
pub fn merge(plan: &Plan, shares: &[Share]) -> Outcome {
    let mut recorder = Recorder::new(plan.names.len());
    for share in shares {
        recorder.merge(&share.recorder);
    }
    let seconds = merge_seconds(shares.iter().map(|s| s.seconds.as_slice()));
    let timeline = seconds.iter().map(|b| summarize::second(b, plan)).collect();
    // The shards share the measured window's start: the run ran as long as its
    // longest share, and served requests until the last of them drained.
    let scheduled = shares.iter().map(|s| s.scheduled).max();
    let scheduled = scheduled.unwrap_or_else(|| plan.measured());
    let last_done = shares.iter().filter_map(|s| s.last_done).max();
    let fastest = Duration::from_micros(recorder.overall.latency.min());
    let span = Span {
        scheduled,
        measured: measured_span(scheduled, last_done, fastest),
    };
    let interrupted = shares.iter().any(|s| s.interrupted);
    let shards: Vec<Generator> = shares.iter().map(|s| s.generator(plan)).collect();
    let generator = combine(&shards, &recorder);
    let mut summary = summarize::summarize(plan, &recorder, timeline, span, interrupted, generator);
    // Rules with `over D` are judged on windows of the merged seconds.
    let run_s = span.scheduled.as_secs_f64().ceil() as u64;
    summary.thresholds = judge_all(&plan.thresholds, &summary, &seconds, &plan.names, run_s);
    super::workloads::complete(plan, &recorder, span.scheduled, &mut summary);
    let first = |f: fn(&Share) -> &Option<String>| shares.iter().find_map(|s| f(s).clone());
    if let Some(message) = first(|s| &s.failures.graphql) {
        summary
            .errors
            .first_message
            .insert("graphql".into(), message);
    }
    Outcome {
        summary,
        connect_failure: first(|s| &s.failures.connect),
        tls_failure: first(|s| &s.failures.tls),
        recorder,
        shards,
        lost: None,
    }
}

/// The run's seconds from each share's seconds, second `t` of every share merged
/// into second `t` of the run, in order of `t`.
fn merge_seconds<'a>(parts: impl Iterator<Item = &'a [SecondBucket]>) -> Vec<SecondBucket> {
    let mut seconds: BTreeMap<u64, SecondBucket> = BTreeMap::new();
    for bucket in parts.flatten() {
        seconds
            .entry(bucket.t)
            .or_insert_with(|| SecondBucket::new(bucket.t))
            .merge(bucket);
    }
    seconds.into_values().collect()
}

/// The run's generator figures from each share's verdict: bound when any share was
/// (each bound share named, when there are several), CPU and threads summed over the
/// shares, lag from the merged lag histogram, the busiest host.
fn combine(shards: &[Generator], merged: &Recorder) -> Generator {
    let several = shards.len() > 1;
    let reason = shards
        .iter()
        .enumerate()
        .filter(|(_, g)| g.bound)
        .map(|(i, g)| match several {
            true => format!("shard {i}: {}", g.reason),
            false => g.reason.clone(),
        })
        .collect::<Vec<_>>()
        .join("; ");
    let lag = &merged.lag;
    Generator {
        cpu_percent: shards.iter().map(|g| g.cpu_percent).sum(),
        threads: shards.iter().map(|g| g.threads).sum(),
        max_lag_ms: lag.max() as f64 / 1000.0,
        p99_lag_ms: lag.value_at_quantile(0.99) as f64 / 1000.0,
        bound: shards.iter().any(|g| g.bound),
        reason,
        host_cpu_percent: shards
            .iter()
            .map(|g| g.host_cpu_percent)
            .fold(0.0, f64::max),
        starved: shards.iter().any(|g| g.bound && g.starved),
    }
}

/// How long the run served requests, for the achieved rate: the schedule, plus the
/// time requests kept completing after it beyond what one request takes anyway.
/// `last_done` is when the last request ended, from the start of the measured window.
///
/// A backlog drained after the schedule extends the span, so it cannot inflate the
/// rate; the last requests of a target that kept up end one latency after the
/// schedule, as the first ones ended one latency after its start, and do not shrink it.
fn measured_span(scheduled: Duration, last_done: Option<Duration>, fastest: Duration) -> Duration {
    let Some(last_done) = last_done else {
        return scheduled;
    };
    let after = last_done.saturating_sub(scheduled);
    scheduled + after.saturating_sub(fastest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::ThreadTimes;
    use crate::share::Failures;
    use headroom_metrics::recorder::{Hit, Timing};
    use headroom_plan::Slice;
    use headroom_scenario::{self as scenario, Overrides};

    fn plan() -> Plan {
        let overrides = Overrides {
            url: Some("http://127.0.0.1:9/".into()),
            rate: Some(10.0),
            duration: Some(Duration::from_secs(3)),
            ..Overrides::default()
        };
        scenario::load(None, &overrides).unwrap()
    }

    /// A share of shard `index` of `count` whose requests took `ms` each, completed in
    /// the given seconds, one per entry, with one of them failed.
    fn share(index: u64, count: u64, seconds: &[u64], ms: u64) -> Share {
        let mut recorder = Recorder::new(1);
        let mut buckets: Vec<SecondBucket> = Vec::new();
        for (i, &t) in seconds.iter().enumerate() {
            recorder.second = SecondBucket::new(t);
            let d = Duration::from_millis(ms + i as u64);
            recorder.scheduled += 1;
            recorder.record(&Hit {
                name_id: 0,
                corrected: d,
                uncorrected: d,
                error: (i == 0).then_some(headroom_metrics::ErrorKind::Timeout),
                timing: Timing::default(),
            });
            recorder.record_lag(Duration::from_micros(100 * (index + 1)));
            buckets.push(recorder.take_second(t + 1));
        }
        Share {
            shard: Slice::new(index, count).unwrap(),
            recorder: recorder.finish(),
            seconds: buckets,
            scheduled: Duration::from_secs(3),
            last_done: Some(Duration::from_millis(3_000 + ms)),
            interrupted: false,
            failures: Failures::default(),
            threads: vec![ThreadTimes::default()],
        }
    }

    #[test]
    fn one_share_is_summarised_as_it_is_and_its_verdict_is_the_runs() {
        let plan = plan();
        let one = share(0, 1, &[0, 1, 2], 5);
        let out = merge(&plan, std::slice::from_ref(&one));
        assert_eq!(out.shards, vec![one.generator(&plan)]);
        assert_eq!(out.summary.generator, one.generator(&plan));
        assert_eq!(out.summary.requests, 3);
        assert_eq!(out.summary.scheduled, 3);
        assert_eq!(out.summary.errors.count, 1);
        assert_eq!(out.recorder.overall.latency, one.recorder.overall.latency);
    }

    #[test]
    fn seconds_align_by_index_and_histograms_add_exactly() {
        let plan = plan();
        let shares = [share(0, 2, &[0, 1], 5), share(1, 2, &[1, 2, 2], 40)];
        let out = merge(&plan, &shares);
        let s = &out.summary;
        let per_second: Vec<(u64, u64, u64)> = s
            .timeline
            .iter()
            .map(|t| (t.t, t.requests, t.errors))
            .collect();
        assert_eq!(per_second, [(0, 1, 1), (1, 2, 1), (2, 2, 0)]);
        assert_eq!((s.requests, s.scheduled, s.errors.count), (5, 5, 2));
        let mut all = shares[0].recorder.overall.latency.clone();
        all.add(&shares[1].recorder.overall.latency).unwrap();
        assert_eq!(s.latency_ms.p50, all.value_at_quantile(0.5) as f64 / 1000.0);
        assert_eq!(s.latency_ms.max, all.max() as f64 / 1000.0);
        // The lag figures come from the merged lag histogram, not the shares' figures.
        assert_eq!(
            s.generator.max_lag_ms,
            out.recorder.lag.max() as f64 / 1000.0
        );
        assert_eq!(s.generator.threads, 2);
    }

    /// Every run, shard and `find` step is judged here: a rule `over D` on the merged
    /// seconds of all shares, beside the same rule on the whole run.
    #[test]
    fn windowed_rules_are_judged_on_the_merged_seconds() {
        let mut plan = plan();
        plan.thresholds = ["max < 30ms over 1s", "max < 30ms over 2s", "p50 < 30ms"]
            .iter()
            .map(|e| headroom_metrics::threshold::Threshold::parse(e).unwrap())
            .collect();
        // Second 2 holds the slow share's requests (40 ms); the fast share's are 5 ms.
        let shares = [share(0, 2, &[0, 1], 5), share(1, 2, &[2, 2], 40)];
        let out = merge(&plan, &shares);
        let seen: Vec<(bool, Option<(u64, u64)>)> = out
            .summary
            .thresholds
            .iter()
            .map(|r| (r.ok, r.window.map(|w| (w.start_s, w.end_s))))
            .collect();
        assert_eq!(
            seen,
            [(false, Some((2, 3))), (false, Some((1, 3))), (true, None)]
        );
    }

    /// Checks, redirects, cookies and groups of every share add up into the summary,
    /// named by the plan, and a rule on checks is judged on the merged counts.
    #[test]
    fn flow_figures_of_all_shares_merge_into_the_summary() {
        let mut plan = plan();
        plan.checks = vec!["status ok".into(), "has id".into()];
        plan.groups = vec!["login".into()];
        plan.thresholds = ["checks > 99%", "checks{has id} >= 50%"]
            .iter()
            .map(|e| headroom_metrics::threshold::Threshold::parse(e).unwrap())
            .collect();
        let mut shares = [share(0, 2, &[0], 5), share(1, 2, &[1], 5)];
        for (i, s) in shares.iter_mut().enumerate() {
            let r = &mut s.recorder;
            r.check(0, true);
            r.check(1, i == 0);
            r.redirects += 2;
            r.cookies.received += 1;
            r.cookies.sent += 4;
            r.group(0, Duration::from_millis(10 * (i as u64 + 1)), i == 1);
        }
        let s = merge(&plan, &shares).summary;
        assert_eq!((s.checks.passed, s.checks.failed), (3, 1));
        let by: Vec<(&str, u64, u64)> = s
            .checks
            .by_name
            .iter()
            .map(|(n, c)| (n.as_str(), c.passed, c.failed))
            .collect();
        assert_eq!(by, [("has id", 1, 1), ("status ok", 2, 0)]);
        assert_eq!(s.redirects, 4);
        assert_eq!(
            (s.cookies.received, s.cookies.sent, s.cookies.dropped),
            (2, 8, 0)
        );
        let login = &s.by_group["login"];
        assert_eq!((login.count, login.failed), (2, 1));
        assert!((19.9..=20.1).contains(&login.duration_ms.max), "{login:?}");
        let verdicts: Vec<(bool, f64)> = s.thresholds.iter().map(|r| (r.ok, r.value)).collect();
        assert_eq!(verdicts, [(false, 75.0), (true, 50.0)]);
    }

    #[test]
    fn a_run_without_flow_figures_leaves_them_out() {
        let plan = plan();
        let s = merge(&plan, &[share(0, 1, &[0], 5)]).summary;
        assert!(s.checks.is_empty() && s.by_group.is_empty());
        let json = serde_json::to_value(&s).unwrap();
        for key in ["checks", "redirects", "cookies", "by_group"] {
            assert!(json.get(key).is_none(), "{key}");
        }
    }

    #[test]
    fn a_bound_shard_binds_the_run_and_is_named() {
        let free = Generator::default();
        let bound = Generator {
            bound: true,
            reason: "engine threads busy 97% of the time".into(),
            cpu_percent: 95.0,
            ..Generator::default()
        };
        let merged = Recorder::new(1);
        let g = combine(&[free.clone(), bound.clone(), free.clone()], &merged);
        assert!(g.bound);
        assert_eq!(g.reason, "shard 1: engine threads busy 97% of the time");
        assert_eq!(g.cpu_percent, 95.0);
        let alone = combine(std::slice::from_ref(&bound), &merged);
        assert_eq!(alone.reason, bound.reason, "one share: no shard named");
        assert!(!combine(&[free.clone(), free], &merged).bound);
    }

    #[test]
    fn the_span_grows_by_the_drain_beyond_one_request() {
        let ms = Duration::from_millis;
        let s = Duration::from_secs(2);
        let fastest = ms(10);
        // The last request ended one latency after the schedule: the target kept up.
        assert_eq!(measured_span(s, Some(s + ms(9)), fastest), s);
        // A 500 ms backlog drained after the schedule counts, less one latency.
        assert_eq!(measured_span(s, Some(s + ms(510)), fastest), s + ms(500));
        // Nothing completed (or everything before the end): the schedule alone.
        assert_eq!(measured_span(s, None, fastest), s);
        assert_eq!(measured_span(s, Some(ms(300)), fastest), s);
    }
}
