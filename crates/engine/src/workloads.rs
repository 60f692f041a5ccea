//! The summary of a run with several workloads (`workloads:`): each workload's figures
//! (`by_workload`), summed from its own request names' exact tallies and judged by its
//! own thresholds, whose verdicts also join the run's (prefixed `NAME: `) so that they
//! fail the run as the run's own rules do; and the run's model and offered rate (and
//! each second's) over all workloads rather than one.

use std::collections::BTreeMap;
use std::time::Duration;

use headroom_metrics::recorder::{Recorder, Tally};
use headroom_metrics::summary::{ChecksSummary, Errors, Latency, Rates, Summary};
use headroom_metrics::threshold::evaluate_all;
use headroom_metrics::workloads::WorkloadSummary;
use headroom_metrics::ErrorKind;
use headroom_plan::{Load, Plan, WorkloadPlan};

/// Completes `summary` (already judged by the run's own rules) with the workloads of
/// `plan`, from the merged recorder `rec`; `scheduled` is the part of the measured
/// window's schedule that ran. A plan without workloads is left as it is.
pub(crate) fn complete(plan: &Plan, rec: &Recorder, scheduled: Duration, summary: &mut Summary) {
    if plan.workloads.is_empty() {
        return;
    }
    let open = plan.workloads.iter().any(|w| plan.load_of(w).is_open());
    let mut offered = 0.0;
    for w in &plan.workloads {
        let figures = one(plan, w, rec, scheduled, summary);
        offered += match plan.load_of(w).is_open() {
            true => figures.rate.offered * window(plan, w, scheduled, summary).as_secs_f64(),
            // A closed model offers what it achieves.
            false => figures.requests as f64,
        };
        let prefix = WorkloadSummary::rule_prefix(&w.name);
        summary
            .thresholds
            .extend(figures.thresholds.iter().map(|r| {
                let mut r = r.clone();
                r.expr = format!("{prefix}{}", r.expr);
                r
            }));
        summary.by_workload.insert(w.name.clone(), figures);
    }
    summary.model = if open { "arrival-rate" } else { "users" }.into();
    summary.rate.offered = match open {
        true => offered / scheduled.as_secs_f64().max(1e-9),
        false => summary.rate.achieved,
    };
    if open {
        // Each second offers the open workloads' rates at its middle.
        for second in &mut summary.timeline {
            let mid = plan.warmup + Duration::from_secs(second.t) + Duration::from_millis(500);
            second.offered = plan
                .workloads
                .iter()
                .filter_map(|w| match plan.load_of(w) {
                    Load::ArrivalRate { schedule, .. } => Some((schedule, w.start)),
                    Load::Users { .. } => None,
                })
                .filter(|(s, start)| mid >= *start && mid < *start + s.duration())
                .map(|(s, start)| s.value_at(mid - start))
                .fold(0.0, |a, b| a + b);
        }
    }
}

/// The part of the measured window `w` was scheduled in: from its start (or the
/// window's) to its end (or the window's: the run's measured span when it ends last).
fn window(plan: &Plan, w: &WorkloadPlan, scheduled: Duration, summary: &Summary) -> Duration {
    let (from, to) = bounds(plan, w, scheduled, summary);
    to.saturating_sub(from)
}

/// [`window`]'s ends, from the start of the measured window.
fn bounds(
    plan: &Plan,
    w: &WorkloadPlan,
    scheduled: Duration,
    summary: &Summary,
) -> (Duration, Duration) {
    let from = w.start.saturating_sub(plan.warmup).min(scheduled);
    let end = (w.start + plan.load_of(w).duration()).saturating_sub(plan.warmup);
    let to = match end >= scheduled {
        // It ran to the end: its requests kept completing through the drain.
        true => Duration::from_secs_f64(summary.duration_s).max(scheduled),
        false => end,
    };
    (from, to.max(from))
}

/// One workload's figures, judged by its thresholds.
fn one(
    plan: &Plan,
    w: &WorkloadPlan,
    rec: &Recorder,
    scheduled: Duration,
    run: &Summary,
) -> WorkloadSummary {
    let mut tally = Tally::default();
    for &id in &w.names {
        if let Some(t) = rec.by_name.get(id) {
            tally.merge(t);
        }
    }
    let requests = tally.requests();
    let (from, to) = bounds(plan, w, scheduled, run);
    let span = to.saturating_sub(from).as_secs_f64();
    let achieved = if span > 0.0 {
        requests as f64 / span
    } else {
        0.0
    };
    let load = plan.load_of(w);
    let (model, offered) = match load {
        Load::ArrivalRate { schedule, .. } => {
            // The schedule runs from the workload's start: read it from there.
            let at = |t: Duration| (t + plan.warmup).saturating_sub(w.start);
            let scheduled_to = (w.start + load.duration()).saturating_sub(plan.warmup);
            let until = scheduled_to.min(scheduled);
            let arrivals = schedule.arrivals_by(at(until)) - schedule.arrivals_by(at(from));
            let secs = until.saturating_sub(from).as_secs_f64();
            let offered = if secs > 0.0 { arrivals / secs } else { 0.0 };
            ("arrival-rate", offered)
        }
        Load::Users { .. } => ("users", achieved),
    };
    let names: Vec<String> = w.checks.iter().map(|&id| plan.checks[id].clone()).collect();
    let counts: Vec<_> = (w.checks.iter())
        .map(|&id| rec.checks.get(id).copied().unwrap_or_default())
        .collect();
    let mut figures = WorkloadSummary {
        model: model.into(),
        start_s: w.start.as_secs_f64(),
        requests,
        completed: requests - tally.error_count(),
        rate: Rates { offered, achieved },
        latency_ms: Latency::of_micros(&tally.latency),
        latency_success_ms: Latency::of_micros(&tally.success),
        errors: errors(&tally),
        checks: ChecksSummary::of(&names, &counts),
        thresholds: Vec::new(),
    };
    // Its rules read a summary of its own requests alone.
    let by_name = (w.names.iter())
        .filter_map(|&id| plan.names.get(id))
        .filter_map(|n| Some((n.clone(), run.by_name.get(n)?.clone())))
        .collect::<BTreeMap<_, _>>();
    let own = Summary {
        model: figures.model.clone(),
        requests,
        completed: figures.completed,
        rate: figures.rate,
        latency_ms: figures.latency_ms,
        latency_success_ms: figures.latency_success_ms,
        errors: figures.errors.clone(),
        checks: figures.checks.clone(),
        by_name,
        ..Summary::empty(&w.name, span)
    };
    figures.thresholds = evaluate_all(&w.thresholds, &own);
    figures
}

/// A tally's errors: count, share and kinds.
fn errors(t: &Tally) -> Errors {
    let count = t.error_count();
    let requests = t.requests();
    Errors {
        count,
        rate: if requests > 0 {
            count as f64 / requests as f64
        } else {
            0.0
        },
        by_kind: ErrorKind::ALL
            .iter()
            .zip(t.errors)
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| (k.as_str().to_string(), n))
            .collect(),
        first_message: BTreeMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_metrics::recorder::{Hit, Timing};
    use headroom_metrics::summary::Second;
    use headroom_scenario::{self as scenario, Overrides};

    #[test]
    fn each_workload_sums_its_names_and_is_judged_by_its_own_rules() {
        let yaml = "target: http://127.0.0.1:9\nworkloads:
  - {name: a, load: {rate: 10, duration: 2s}, requests: [{name: x, path: /}], thresholds: [\"p95 < 1s\"]}
  - {name: b, load: {users: 1, duration: 2s}, start: 1s, requests: [{name: y, path: /}], thresholds: [\"errors < 1%\"]}
";
        let plan = scenario::load_text("s.yaml", yaml, &Overrides::default()).unwrap();
        let mut rec = Recorder::new(plan.names.len());
        let hit = |name_id, error| Hit {
            name_id,
            corrected: Duration::from_millis(5),
            uncorrected: Duration::from_millis(5),
            error,
            timing: Timing::default(),
        };
        (0..20).for_each(|_| rec.record(&hit(0, None)));
        (0..7).for_each(|i| rec.record(&hit(1, (i == 0).then_some(ErrorKind::Timeout))));
        let rec = rec.finish();
        let mut s = Summary::empty("s", 2.0);
        s.timeline = (0..2)
            .map(|t| Second {
                t,
                ..Second::default()
            })
            .collect();
        complete(&plan, &rec, Duration::from_secs(2), &mut s);
        let (a, b) = (&s.by_workload["a"], &s.by_workload["b"]);
        assert_eq!(
            (a.requests, a.completed, a.model.as_str()),
            (20, 20, "arrival-rate")
        );
        assert_eq!((a.rate.offered, a.rate.achieved), (10.0, 10.0));
        assert_eq!((b.requests, b.completed, b.errors.count), (7, 6, 1));
        // `b` ran from 1 s to the run's end: 7 requests in 1 s.
        assert_eq!(
            (b.start_s, b.rate.achieved, b.model.as_str()),
            (1.0, 7.0, "users")
        );
        let rules: Vec<(&str, bool)> = s
            .thresholds
            .iter()
            .map(|r| (r.expr.as_str(), r.ok))
            .collect();
        assert_eq!(rules, [("a: p95 < 1s", true), ("b: errors < 1%", false)]);
        assert_eq!(b.thresholds[0].expr, "errors < 1%");
        // The run offers `a`'s arrivals and what `b`'s user achieved.
        assert_eq!(s.model, "arrival-rate");
        assert_eq!(s.rate.offered, (20.0 + 7.0) / 2.0);
        let offered: Vec<f64> = s.timeline.iter().map(|t| t.offered).collect();
        assert_eq!(offered, [10.0, 10.0]);
    }
}
