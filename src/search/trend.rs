//! The latency trend of a long window (a `find --hold`): p95 of its first and last
//! thirds and the least-squares slope of its per-second p95 ([`Trend`]), collected
//! second by second from the engine's merged per-second histograms ([`Thirds`]).
//!
//! Why thirds of merged histograms and not the per-second p95s of the first and last
//! seconds: a percentile of a part is the percentile of all its requests (ARCHITECTURE.md
//! rule 3, never an average of percentiles), and a third of a ten-minute hold holds
//! enough requests that one slow second does not move it. The slope, from the per-second
//! p95s, says how fast it moved; the thirds say how far.
//!
//! Only whole, full seconds count, as in [`super::keepup`]: the partial second of the
//! drain after the schedule holds the requests still in flight when it ended, the
//! slowest by construction, and would read as a rise in every hold.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::keepup::{FULL_SECOND, MIN_SECOND_REQUESTS};
use crate::engine::Live;
use crate::metrics::recorder::new_histogram;
use crate::metrics::summary::Second;

/// How p95 moved across a window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    /// p95 of the requests completed in the first third of the window's full seconds, ms.
    pub first_ms: f64,
    /// p95 of those completed in the last third, ms.
    pub last_ms: f64,
    /// Least-squares slope of the per-second p95 over the full seconds, ms per minute.
    pub slope_ms_per_min: f64,
}

impl Trend {
    /// The slope as a share of the first third's p95, percent per minute (0 when that
    /// p95 is 0).
    pub fn slope_percent_per_min(&self) -> f64 {
        if self.first_ms > 0.0 {
            self.slope_ms_per_min / self.first_ms * 100.0
        } else {
            0.0
        }
    }
}

/// Each second's merged latency histogram (corrected, µs) as the engine completes it,
/// to cut into thirds at the end.
#[derive(Debug, Default)]
pub struct Thirds {
    seconds: Vec<(Second, Histogram<u64>)>,
}

impl Thirds {
    /// Keeps the second `live` just completed.
    pub fn second(&mut self, live: &Live) {
        self.seconds
            .push((live.last.clone(), live.last_bucket.latency.clone()));
    }

    /// The trend over the seconds kept that lie whole inside a window of `window_s`
    /// and are full (see the module documentation); `None` with fewer than two.
    pub fn trend(&self, window_s: f64) -> Option<Trend> {
        let whole: Vec<&(Second, Histogram<u64>)> = self
            .seconds
            .iter()
            .filter(|(s, _)| (s.t + 1) as f64 <= window_s + 0.05)
            .collect();
        let mut counts: Vec<u64> = whole.iter().map(|(s, _)| s.requests).collect();
        counts.sort_unstable();
        let median = *counts.get(counts.len() / 2)?;
        let floor = (median as f64 * FULL_SECOND).max(MIN_SECOND_REQUESTS as f64);
        let mut full: Vec<&(Second, Histogram<u64>)> = whole
            .into_iter()
            .filter(|(s, h)| s.requests as f64 >= floor && !h.is_empty())
            .collect();
        full.sort_by_key(|(s, _)| s.t);
        let n = full.len();
        if n < 2 {
            return None;
        }
        let k = (n / 3).max(1);
        let p95 = |part: &[&(Second, Histogram<u64>)]| {
            let mut merged = new_histogram(2);
            for (_, h) in part {
                merged
                    .add(h)
                    .expect("auto-resizing histograms always merge");
            }
            merged.value_at_quantile(0.95) as f64 / 1000.0
        };
        let points: Vec<(f64, f64)> = full.iter().map(|(s, _)| (s.t as f64, s.p95_ms)).collect();
        Some(Trend {
            first_ms: p95(&full[..k]),
            last_ms: p95(&full[n - k..]),
            slope_ms_per_min: slope(&points) * 60.0,
        })
    }
}

/// The least-squares slope of `points` (x, y): y per unit of x; 0 when every x is
/// the same.
pub fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    if sxx == 0.0 {
        0.0
    } else {
        sxy / sxx
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::recorder::SecondBucket;

    /// A completed second `t` with `requests` latencies of `ms` each, as the engine
    /// hands it over.
    fn live(t: u64, requests: u64, ms: f64) -> Live {
        let mut bucket = SecondBucket::new(t);
        for _ in 0..requests {
            bucket.latency.record((ms * 1000.0) as u64).unwrap();
        }
        Live {
            last: Second {
                t,
                requests,
                p95_ms: ms,
                ..Second::default()
            },
            last_bucket: bucket,
            ..Live::default()
        }
    }

    #[test]
    fn slope_is_the_least_squares_line() {
        assert_eq!(slope(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]), 2.0);
        assert_eq!(slope(&[(0.0, 4.0), (1.0, 4.0)]), 0.0);
        assert_eq!(slope(&[(1.0, 4.0), (1.0, 9.0)]), 0.0);
        assert_eq!(slope(&[(0.0, 4.0)]), 0.0);
        let s = slope(&[(0.0, 10.0), (1.0, 8.0), (2.0, 12.0), (3.0, 10.0)]);
        assert!((s - 0.4).abs() < 1e-12, "{s}");
    }

    #[test]
    fn thirds_compare_the_first_and_last_parts_of_whole_full_seconds() {
        let mut thirds = Thirds::default();
        // Six seconds rising 10 ms a second, then a drain second of 3 stragglers.
        for t in 0..6 {
            thirds.second(&live(t, 100, 10.0 + 10.0 * t as f64));
        }
        thirds.second(&live(6, 3, 900.0));
        let trend = thirds.trend(6.0).unwrap();
        // First third: seconds 0 and 1 (10 and 20 ms): p95 20 ms. Last: 50 and 60 ms.
        assert!((trend.first_ms - 20.0).abs() < 0.2, "{trend:?}");
        assert!((trend.last_ms - 60.0).abs() < 0.6, "{trend:?}");
        // 10 ms a second is 600 ms a minute, 3000 % of 20 ms.
        assert!((trend.slope_ms_per_min - 600.0).abs() < 1e-6, "{trend:?}");
        assert!((trend.slope_percent_per_min() - 3000.0).abs() < 20.0);

        // A nearly empty second in the middle (a stall) is not judged.
        let mut thirds = Thirds::default();
        for (t, n) in [(0, 100), (1, 2), (2, 100)] {
            thirds.second(&live(t, n, 5.0 + t as f64));
        }
        let trend = thirds.trend(3.0).unwrap();
        assert!((trend.first_ms - 5.0).abs() < 0.1 && (trend.last_ms - 7.0).abs() < 0.1);

        let mut one = Thirds::default();
        one.second(&live(0, 100, 5.0));
        assert_eq!(one.trend(1.0), None);
        assert_eq!(Thirds::default().trend(10.0), None);
    }
}
