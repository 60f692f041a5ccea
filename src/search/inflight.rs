//! The in-flight cap of a step above every load that passed.
//!
//! A step far above the capacity (a growth step at twice the last pass) queues
//! everything it cannot serve: at 1600/s against an 800/s service, 800 more requests a
//! second wait, each on its own connection, so after a 3 s step the generator holds
//! thousands of sockets it opened for nothing. Opening them costs the generator the CPU
//! the measurement needs, on a 2-core machine enough to be called generator-bound and
//! run again: a whole step lost to an answer that was clear after the first second.
//!
//! Such a step needs only as many requests in flight as a service that passes could
//! hold: at the step's rate, for as long as the slowest latency a pass may have (the
//! rules' latency limit, or the slowest p99 a passing step measured, whichever is
//! larger), with a margin ([`FACTOR`]) and a floor ([`FLOOR`]). A service that keeps
//! up never reaches the cap (Little's law: in flight = rate × latency); one that cannot
//! is still saturated by it, so the achieved rate (the capacity's estimate) is the same,
//! and the rest are dropped, cheaply, and counted as dropped.
//!
//! Only above every pass, only in the arrival-rate model, never above the user's own
//! cap, and only when the rules bound latency: without a latency rule a passing step
//! may be as slow as it likes, and no cap would be safe.

use crate::metrics::threshold::{Metric, Op};
use crate::plan::{Load, Plan};

use super::step::StepRecord;

/// How many times the in-flight a pass could need the cap allows.
const FACTOR: f64 = 4.0;

/// The fewest requests in flight a capped step allows.
const FLOOR: usize = 256;

/// `base` with the in-flight cap of a step at `value` after `steps`, or `None` when the
/// step keeps `base`'s own (see the module doc).
pub fn capped(base: &Plan, value: f64, steps: &[StepRecord]) -> Option<Plan> {
    let Load::ArrivalRate { max_in_flight, .. } = base.load else {
        return None;
    };
    let limit_ms = base
        .thresholds
        .iter()
        .filter(|t| matches!(t.op, Op::Lt | Op::Le))
        .filter_map(|t| match t.metric {
            Metric::Latency(_) | Metric::SuccessLatency(_) => Some(t.limit),
            _ => None,
        })
        .fold(None, |max: Option<f64>, l| {
            Some(max.map_or(l, |m| m.max(l)))
        })?;
    let best = steps
        .iter()
        .filter(|s| s.passed && !s.summary.generator.bound)
        .max_by(|a, b| a.rate.total_cmp(&b.rate))?;
    if value <= best.rate {
        return None;
    }
    let p99 = best.summary.latency_ms.p99;
    let slowest_ms = if p99.is_finite() {
        limit_ms.max(p99)
    } else {
        limit_ms
    };
    let cap = ((value * slowest_ms / 1000.0 * FACTOR).ceil() as usize).max(FLOOR);
    if cap >= max_in_flight {
        return None;
    }
    let mut plan = base.clone();
    if let Load::ArrivalRate { max_in_flight, .. } = &mut plan.load {
        *max_in_flight = cap;
    }
    Some(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{self, Overrides};

    fn plan(thresholds: &[&str]) -> Plan {
        let mut text = String::from(
            "target: http://127.0.0.1:9\nload: {rate: 10, duration: 1s}\nrequests: [{path: /}]\nthresholds: [",
        );
        text.push_str(
            &thresholds
                .iter()
                .map(|t| format!("\"{t}\""))
                .collect::<Vec<_>>()
                .join(", "),
        );
        text.push_str("]\n");
        scenario::load_text("t.yaml", &text, &Overrides::default()).unwrap()
    }

    fn step(rate: f64, passed: bool, p99_ms: f64) -> StepRecord {
        let mut summary = crate::metrics::summary::Summary::empty("step", 3.0);
        summary.latency_ms.p99 = p99_ms;
        StepRecord::measured(rate, passed, summary)
    }

    fn cap_of(plan: &Plan) -> usize {
        match plan.load {
            Load::ArrivalRate { max_in_flight, .. } => max_in_flight,
            Load::Users { .. } => unreachable!(),
        }
    }

    #[test]
    fn a_step_above_every_pass_holds_what_a_pass_could_need() {
        let base = plan(&["p95 < 100ms", "errors < 1%"]);
        let steps = [step(400.0, true, 8.0), step(800.0, true, 12.0)];
        // 1600/s × 100 ms × 4 = 640.
        assert_eq!(cap_of(&capped(&base, 1600.0, &steps).unwrap()), 640);
        // A pass slower than the limit widens it: 1600/s × 300 ms × 4.
        let slow = [step(800.0, true, 300.0)];
        assert_eq!(cap_of(&capped(&base, 1600.0, &slow).unwrap()), 1920);
        // The floor.
        assert_eq!(
            cap_of(&capped(&base, 900.0, &[step(100.0, true, 1.0)]).unwrap()),
            360
        );
        assert_eq!(
            cap_of(&capped(&base, 300.0, &[step(100.0, true, 1.0)]).unwrap()),
            FLOOR
        );
    }

    #[test]
    fn no_cap_at_or_below_a_pass_before_any_pass_or_without_a_latency_rule() {
        let base = plan(&["p95 < 100ms"]);
        let steps = [step(800.0, true, 12.0), step(1600.0, false, 900.0)];
        assert!(capped(&base, 800.0, &steps).is_none(), "at the pass");
        assert!(capped(&base, 1200.0, &steps[1..]).is_none(), "no pass yet");
        let errors_only = plan(&["errors < 1%"]);
        assert!(capped(&errors_only, 1600.0, &steps).is_none());
        // A generator-bound pass says nothing of the service.
        let mut bound = step(800.0, true, 12.0);
        bound.summary.generator.bound = true;
        assert!(capped(&base, 1600.0, &[bound]).is_none());
        // Never above the user's own cap.
        let mut low = base.clone();
        if let Load::ArrivalRate { max_in_flight, .. } = &mut low.load {
            *max_in_flight = 100;
        }
        assert!(capped(&low, 1600.0, &steps).is_none());
    }
}
