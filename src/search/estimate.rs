//! [`boundary`]: where a failed step says the boundary is, so the search can jump next
//! to it instead of bisecting down from the failed value (see [`super::strategy`]).
//!
//! - **Open model:** an overloaded step completes what the target can do and no more,
//!   so `value × good / offered` is the rate it can take, where `good` is the achieved
//!   rate less its errors: a target that slows down achieves less, one that sheds load
//!   (a rate limiter answering 503 at once) achieves it all but fails the excess. Only a
//!   step clearly short (by more than the search's precision) measures that: a step
//!   that kept up and failed on latency says nothing of where latency would have held.
//! - **Users model:** Little's law, N = X·(R + Z), for N users at throughput X with
//!   response time R and think time (and any other time between requests) Z. Past
//!   saturation X stays where it is and R grows with N, so the users at which the
//!   failed latency threshold would just hold are N' = X·(R' + Z) with R' = R·limit/
//!   measured: N' = N − X·R·(1 − limit / measured). Z is never needed: it is what N/X
//!   leaves of R. Only a failed latency threshold (whole run, `<` or `<=`) says this.

use super::step::{StepRecord, Unit};
use crate::metrics::summary::Summary;
use crate::metrics::threshold::{Metric, Op, Threshold};

/// Where failed step `step` says the boundary is, in the search's unit, when it can
/// tell: `None` for a passing step, a generator-bound or interrupted one, or one whose
/// figures measure nothing of the boundary.
pub fn boundary(step: &StepRecord, unit: Unit, precision: f64) -> Option<f64> {
    let s = &step.summary;
    if step.passed || s.generator.bound || s.interrupted || s.requests == 0 {
        return None;
    }
    let e = match unit {
        Unit::Rate => open(step.rate, s, precision)?,
        Unit::Users => users(step.rate, s)?,
    };
    (e.is_finite() && e > 0.0 && e < step.rate).then_some(e)
}

/// The open model: the rate the good share of `value` says the target takes.
fn open(value: f64, s: &Summary, precision: f64) -> Option<f64> {
    let good = s.rate.achieved * (1.0 - s.errors.rate.clamp(0.0, 1.0));
    let share = good / s.rate.offered;
    (share.is_finite() && share < 1.0 - precision).then_some(value * share)
}

/// The users model: Little's law from the step's throughput and its failed latency
/// threshold (the one that failed by most, when several did).
fn users(n: f64, s: &Summary) -> Option<f64> {
    let ratio = s
        .thresholds
        .iter()
        .filter(|t| !t.ok && t.window.is_none() && t.value > 0.0)
        .filter_map(|t| Some((Threshold::parse(&t.expr).ok()?, t.value)))
        .filter(|(t, _)| t.scope.is_none() && matches!(t.op, Op::Lt | Op::Le))
        .filter(|(t, _)| matches!(t.metric, Metric::Latency(_)))
        .map(|(t, measured)| t.limit / measured)
        .filter(|r| r.is_finite() && *r < 1.0)
        .reduce(f64::min)?;
    let x = s.rate.achieved;
    let r = s.latency_ms.avg / 1000.0;
    Some(n - x * r * (1.0 - ratio))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::summary::ThresholdResult;

    fn step(value: f64, achieved: f64, offered: f64) -> StepRecord {
        let mut summary = Summary::empty("s", 1.0);
        summary.requests = 1000;
        summary.rate.achieved = achieved;
        summary.rate.offered = offered;
        StepRecord::measured(value, false, summary)
    }

    #[test]
    fn an_overloaded_open_step_measures_the_capacity() {
        // The demo's first overloaded step: 1600/s offered, 800/s achieved.
        let s = step(1600.0, 800.0, 1600.0);
        assert_eq!(boundary(&s, Unit::Rate, 0.05), Some(800.0));
        // A step that kept up (or nearly) and failed on latency says nothing.
        let s = step(1600.0, 1580.0, 1600.0);
        assert_eq!(boundary(&s, Unit::Rate, 0.05), None);
        // A passing, bound or empty step neither.
        let mut s = step(1600.0, 800.0, 1600.0);
        s.passed = true;
        assert_eq!(boundary(&s, Unit::Rate, 0.05), None);
        let mut s = step(1600.0, 800.0, 1600.0);
        s.summary.generator.bound = true;
        assert_eq!(boundary(&s, Unit::Rate, 0.05), None);
        let mut s = step(1600.0, 0.0, 0.0);
        s.summary.requests = 0;
        assert_eq!(boundary(&s, Unit::Rate, 0.05), None);
        // A rate limiter at 500/s answers everything at once and fails the excess:
        // 1000/s offered, all achieved, 50 % errors.
        let mut s = step(1000.0, 1000.0, 1000.0);
        s.summary.errors.rate = 0.5;
        assert_eq!(boundary(&s, Unit::Rate, 0.05), Some(500.0));
    }

    #[test]
    fn littles_law_finds_the_users_at_which_latency_would_hold() {
        // A saturated service: 200 req/s whatever the users, no think time. 40 users
        // wait 200 ms each; p95 < 50 ms failed at 210 ms (p95 ≈ 1.05 × mean). The
        // users that give a p95 of 50 ms: mean 47.6 ms, N = 200 × 0.0476 = 9.5.
        let mut s = step(40.0, 200.0, 200.0);
        s.summary.latency_ms.avg = 200.0;
        s.summary.thresholds = vec![ThresholdResult {
            expr: "p95 < 50ms".into(),
            ok: false,
            value: 210.0,
            window: None,
        }];
        let e = boundary(&s, Unit::Users, 0.05).unwrap();
        assert!((e - 9.52).abs() < 0.05, "{e}");
        // With 100 ms of think time per user, the same 200 req/s takes 60 users; the
        // think time stays, so the estimate is 20 users more.
        let mut t = s.clone();
        t.rate = 60.0;
        let e = boundary(&t, Unit::Users, 0.05).unwrap();
        assert!((e - 29.52).abs() < 0.05, "{e}");
        // Only a failed whole-run latency rule counts.
        let mut u = s.clone();
        u.summary.thresholds[0].expr = "errors < 1%".into();
        assert_eq!(boundary(&u, Unit::Users, 0.05), None);
        let mut u = s.clone();
        u.summary.thresholds[0].ok = true;
        assert_eq!(boundary(&u, Unit::Users, 0.05), None);
        // An estimate at or above the failed value is no estimate.
        let mut u = s;
        u.summary.latency_ms.avg = -5.0;
        assert_eq!(boundary(&u, Unit::Users, 0.05), None);
    }
}
