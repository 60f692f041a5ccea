//! [`knee`]: the value after which p95 latency starts growing faster than the load, in
//! a way that matters.
//!
//! Below a system's knee, doubling the rate leaves p95 nearly flat; past it, queues
//! form and p95 grows by more than the rate did. Comparing successive steps' p95 ratio
//! with their rate ratio finds that point without any model of the system.
//!
//! Not every such departure is a knee worth reporting: a fast service's p95 going from
//! 1.6 ms to 3.9 ms under a `p95 < 100ms` threshold outgrows the rate, yet costs
//! nothing anyone would notice. So the p95 after the departure must also be at least
//! [`MATTER_BASELINE`] times the baseline (the lowest p95 of the steps up to the knee)
//! and, when the steps are judged by a latency threshold, at least [`MATTER_SHARE`] of
//! its limit (a fifth of the latency budget spent). Otherwise there is no knee that
//! matters, and none is reported.

use crate::metrics::summary::ThresholdResult;
use crate::metrics::threshold::{Metric, Op, Threshold};

/// Smallest p95 increase, in milliseconds, that can mark a knee. Sub-millisecond
/// wobbles of a fast service are measurement noise, not queueing.
pub const MIN_GROWTH_MS: f64 = 1.0;
/// Smallest relative p95 increase that can mark a knee (a jitter guard for steps whose
/// rates are only a few percent apart).
pub const MIN_GROWTH_RATIO: f64 = 1.10;
/// The p95 after a knee is at least this many times the baseline p95.
pub const MATTER_BASELINE: f64 = 2.0;
/// The p95 after a knee is at least this share of the latency threshold's limit.
pub const MATTER_SHARE: f64 = 0.2;

/// Given `(value, p95_ms)` pairs of the steps (any order; a value measured twice counts
/// once, its first measurement) and the latency limit the steps were judged by (ms, see
/// [`latency_limit`]), returns the value of the last step before p95 first grew faster
/// than the value did, by at least [`MIN_GROWTH_MS`] and [`MIN_GROWTH_RATIO`], to a p95
/// that matters (module documentation). `None` when p95 never did (or there are fewer
/// than two steps).
pub fn knee(points: &[(f64, f64)], limit_ms: Option<f64>) -> Option<f64> {
    let mut sorted: Vec<(f64, f64)> = Vec::with_capacity(points.len());
    for &(value, p95) in points {
        if value > 0.0 && p95.is_finite() && !sorted.iter().any(|&(v, _)| v == value) {
            sorted.push((value, p95));
        }
    }
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let floor = limit_ms
        .filter(|l| l.is_finite() && *l > 0.0)
        .unwrap_or(0.0)
        * MATTER_SHARE;
    let mut baseline = f64::INFINITY;
    sorted.windows(2).find_map(|w| {
        let ((v0, p0), (v1, p1)) = (w[0], w[1]);
        baseline = baseline.min(p0);
        let grew = p1 - p0 >= MIN_GROWTH_MS && p1 >= p0 * MIN_GROWTH_RATIO;
        let faster = p1 / p0.max(f64::MIN_POSITIVE) > v1 / v0;
        let matters = p1 >= baseline * MATTER_BASELINE && p1 >= floor;
        (grew && faster && matters).then_some(v0)
    })
}

/// The tightest whole-run latency limit among a step's threshold verdicts (`p95 <
/// 100ms` gives 100), in ms; `None` when no rule bounds latency from above.
pub fn latency_limit(thresholds: &[ThresholdResult]) -> Option<f64> {
    thresholds
        .iter()
        .filter_map(|t| Threshold::parse(&t.expr).ok())
        .filter(|t| t.scope.is_none() && matches!(t.op, Op::Lt | Op::Le))
        .filter(|t| matches!(t.metric, Metric::Latency(_)))
        .map(|t| t.limit)
        .reduce(f64::min)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_step_before_p95_outgrows_the_rate() {
        let steps = [
            (100.0, 5.1),
            (200.0, 5.2),
            (400.0, 5.3),
            (800.0, 6.0),
            (1600.0, 900.0),
            (1200.0, 400.0),
            (1000.0, 150.0),
            (900.0, 70.0),
            (850.0, 40.0),
            (825.0, 20.0),
            (800.0, 7.5), // the confirmation: ignored, the first 800 counts
        ];
        assert_eq!(knee(&steps, None), Some(800.0));
        assert_eq!(knee(&steps, Some(100.0)), Some(800.0));
    }

    #[test]
    fn proportional_growth_is_no_knee() {
        // A closed system past saturation: p95 grows exactly with the user count.
        let steps = [(8.0, 20.0), (16.0, 40.0), (12.0, 30.0), (14.0, 35.0)];
        assert_eq!(knee(&steps, None), None);
    }

    #[test]
    fn noise_is_no_knee() {
        // Sub-millisecond jitter (×3 in ratio, but 0.2 ms) and +8 % between close rates.
        let sub_ms = [(1000.0, 0.1), (1100.0, 0.3), (1200.0, 0.2)];
        assert_eq!(knee(&sub_ms, None), None);
        let close = [(800.0, 20.0), (820.0, 21.6)];
        assert_eq!(knee(&close, None), None);
        assert_eq!(knee(&[(1.0, 5.0)], None), None);
        assert_eq!(knee(&[], None), None);
    }

    #[test]
    fn the_issues_small_rise_under_a_100ms_threshold_is_no_knee() {
        // Issue 9 item 13: p95 1.6 ms → 3.9 ms from 800 to 1600/s outgrew the rate, but
        // under `p95 < 100ms` it spent 4 % of the budget.
        let small = [
            (100.0, 1.5),
            (200.0, 1.5),
            (400.0, 1.6),
            (800.0, 1.6),
            (1600.0, 3.9),
        ];
        assert_eq!(knee(&small, Some(100.0)), None);
        // The rise that mattered came between 1600 and 2400/s, to tens of ms.
        let mut search = small.to_vec();
        search.extend([
            (3200.0, 850.0),
            (2400.0, 38.0),
            (2000.0, 9.5),
            (1800.0, 6.0),
        ]);
        let k = knee(&search, Some(100.0)).expect("a knee");
        assert!((1600.0..2400.0).contains(&k), "{k}");
        assert_eq!(k, 2000.0, "the last step before p95 reached 20 ms");
        // Without a latency threshold only the baseline counts: 3.9 ms is 2.4 × 1.5 ms.
        assert_eq!(knee(&small, None), Some(800.0));
    }

    #[test]
    fn a_rise_must_double_the_baseline() {
        // 40 → 75 ms outgrows the rate (+88 % for +50 %) and passes a fifth of 200 ms,
        // but is less than twice the baseline of 40 ms.
        let steps = [(200.0, 40.0), (400.0, 40.0), (600.0, 75.0)];
        assert_eq!(knee(&steps, Some(200.0)), None);
        let steps = [(200.0, 40.0), (400.0, 40.0), (600.0, 85.0)];
        assert_eq!(knee(&steps, Some(200.0)), Some(400.0));
    }

    #[test]
    fn the_limit_is_the_tightest_whole_run_latency_bound() {
        let t = |expr: &str| ThresholdResult {
            expr: expr.into(),
            ok: true,
            value: 0.0,
            window: None,
        };
        let rules = [
            t("errors < 1%"),
            t("p95 < 100ms"),
            t("p99 <= 0.5s"),
            t("create.p95 < 10ms"),
            t("p50 > 1ms"),
            t("rate > 100/s"),
        ];
        assert_eq!(latency_limit(&rules), Some(100.0));
        assert_eq!(latency_limit(&rules[2..]), Some(500.0));
        assert_eq!(latency_limit(&[t("errors < 1%"), t("not a rule")]), None);
    }
}
