//! [`knee`]: the value after which p95 latency starts growing faster than the load.
//!
//! Below a system's knee, doubling the rate leaves p95 nearly flat; past it, queues
//! form and p95 grows by more than the rate did. Comparing successive steps' p95 ratio
//! with their rate ratio finds that point without any model of the system.

/// Smallest p95 increase, in milliseconds, that can mark a knee. Sub-millisecond
/// wobbles of a fast service are measurement noise, not queueing.
pub const MIN_GROWTH_MS: f64 = 1.0;
/// Smallest relative p95 increase that can mark a knee (a jitter guard for steps whose
/// rates are only a few percent apart).
pub const MIN_GROWTH_RATIO: f64 = 1.10;

/// Given `(value, p95_ms)` pairs of the steps (any order; a value measured twice counts
/// once, its first measurement), returns the value of the last step before p95 first
/// grew faster than the value did, by at least [`MIN_GROWTH_MS`] and
/// [`MIN_GROWTH_RATIO`]. `None` when p95 never did (or there are fewer than two steps).
pub fn knee(points: &[(f64, f64)]) -> Option<f64> {
    let mut sorted: Vec<(f64, f64)> = Vec::with_capacity(points.len());
    for &(value, p95) in points {
        if value > 0.0 && p95.is_finite() && !sorted.iter().any(|&(v, _)| v == value) {
            sorted.push((value, p95));
        }
    }
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    sorted.windows(2).find_map(|w| {
        let ((v0, p0), (v1, p1)) = (w[0], w[1]);
        let grew = p1 - p0 >= MIN_GROWTH_MS && p1 >= p0 * MIN_GROWTH_RATIO;
        (grew && p1 / p0.max(f64::MIN_POSITIVE) > v1 / v0).then_some(v0)
    })
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
        assert_eq!(knee(&steps), Some(800.0));
    }

    #[test]
    fn proportional_growth_is_no_knee() {
        // A closed system past saturation: p95 grows exactly with the user count.
        let steps = [(8.0, 20.0), (16.0, 40.0), (12.0, 30.0), (14.0, 35.0)];
        assert_eq!(knee(&steps), None);
    }

    #[test]
    fn noise_is_no_knee() {
        // Sub-millisecond jitter (×3 in ratio, but 0.2 ms) and +8 % between close rates.
        let sub_ms = [(1000.0, 0.1), (1100.0, 0.3), (1200.0, 0.2)];
        assert_eq!(knee(&sub_ms), None);
        let close = [(800.0, 20.0), (820.0, 21.6)];
        assert_eq!(knee(&close), None);
        assert_eq!(knee(&[(1.0, 5.0)]), None);
        assert_eq!(knee(&[]), None);
    }
}
