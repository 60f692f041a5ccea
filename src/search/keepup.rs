//! Did the target keep up with a step's load? ([`judge`], ARCHITECTURE.md rule 7.)
//!
//! A step whose thresholds hold can still be past the target's capacity: the queue
//! grows, it just has not yet crossed the latency threshold when a short window ends.
//! Two signs of that fail the step whatever its thresholds say:
//!
//! - **Behind** (open model only): the achieved rate is below the offered rate by more
//!   than [`RATE_TOLERANCE`]. The achieved rate already counts the drain after the
//!   schedule (see `engine::measured_span`), so a backlog that was served late lowers it.
//!   A closed model's offered rate *is* its achieved rate: nothing to compare.
//! - **Rising**: the median latency of the last third of the window's seconds is above
//!   that of the first third by both [`RISE_RATIO`] and [`RISE_MIN_MS`]: a queue that
//!   grows. Both are needed: at 2 ms a step's per-second p50 wobbles by a millisecond
//!   (+50 %) without any queue, and at 300 ms 2 ms more is no trend. Only whole seconds
//!   count ([`FULL_SECOND`]): the partial second of the drain holds the requests still
//!   in flight when the schedule ended, the slowest ones by construction, and would
//!   look like a rise in every step. A window of one second has no trend to judge
//!   (the rate rule still does); two or three seconds compare the first with the last.

use serde::{Deserialize, Serialize};

use crate::metrics::summary::{Second, Summary};
use headroom_format::units::{latency, per_second};

/// Largest shortfall of the achieved rate below the offered one, as a share of the
/// offered rate, that still counts as keeping up.
pub const RATE_TOLERANCE: f64 = 0.02;
/// Requests a window may fall short by on top of the tolerance: a schedule's arrival
/// count is a whole number, its offered rate need not be (15.5/s over 1 s starts 15).
pub const RATE_SLACK_REQUESTS: f64 = 1.0;
/// Smallest ratio of the late p50 to the early one that is a rise.
pub const RISE_RATIO: f64 = 1.5;
/// Smallest increase of the p50, in milliseconds, that is a rise.
pub const RISE_MIN_MS: f64 = 2.0;
/// A second of the timeline is judged when it completed at least this share of the
/// median second's requests (and at least [`MIN_SECOND_REQUESTS`]).
pub const FULL_SECOND: f64 = 0.6;
/// Fewest requests a second needs for its p50 to mean anything.
pub const MIN_SECOND_REQUESTS: u64 = 5;

/// The achieved rate fell short of the offered one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Behind {
    /// Completed requests per second, the drain included.
    pub achieved: f64,
    /// Scheduled requests per second.
    pub offered: f64,
}

/// The per-second median latency rose across the window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rising {
    /// p50 of the first third of the window's seconds, ms.
    pub from_ms: f64,
    /// p50 of the last third, ms.
    pub to_ms: f64,
}

/// Whether the target kept up with a step's load, and if not, how it fell behind.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct KeepUp {
    /// Set when the achieved rate fell short of the offered one.
    #[serde(default)]
    pub behind: Option<Behind>,
    /// Set when latency rose across the window.
    #[serde(default)]
    pub rising: Option<Rising>,
}

impl KeepUp {
    /// True when neither sign of falling behind was seen.
    pub fn kept_up(&self) -> bool {
        self.behind.is_none() && self.rising.is_none()
    }

    /// `did not keep up (achieved 1201/s of 1240/s)`, `latency rising (p50 5ms → 31ms
    /// over the window)`, both joined by `, `, or `None` when the target kept up.
    pub fn describe(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(b) = self.behind {
            parts.push(format!(
                "did not keep up (achieved {} of {})",
                per_second(b.achieved),
                per_second(b.offered)
            ));
        }
        if let Some(r) = self.rising {
            parts.push(format!(
                "latency rising (p50 {} → {} over the window)",
                latency(r.from_ms),
                latency(r.to_ms)
            ));
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

/// Judges whether the target kept up over a step's measured window (see the module
/// documentation for the rules).
pub fn judge(summary: &Summary) -> KeepUp {
    KeepUp {
        behind: behind(summary),
        rising: rising(&summary.timeline),
    }
}

fn behind(s: &Summary) -> Option<Behind> {
    let (offered, achieved) = (s.rate.offered, s.rate.achieved);
    if s.model != "arrival-rate" || !(offered > 0.0 && achieved.is_finite()) {
        return None;
    }
    // In requests over the measured span: the shortfall, against the tolerance plus
    // the rounding of the arrival count.
    let span = s.duration_s.max(0.0);
    let short = (offered - achieved) * span;
    (short > RATE_TOLERANCE * offered * span + RATE_SLACK_REQUESTS)
        .then_some(Behind { achieved, offered })
}

fn rising(timeline: &[Second]) -> Option<Rising> {
    let mut counts: Vec<u64> = timeline.iter().map(|s| s.requests).collect();
    counts.sort_unstable();
    let median = *counts.get(counts.len() / 2)?;
    let full = (median as f64 * FULL_SECOND).max(MIN_SECOND_REQUESTS as f64);
    let mut p50: Vec<(u64, f64)> = timeline
        .iter()
        .filter(|s| s.requests as f64 >= full && s.p50_ms.is_finite())
        .map(|s| (s.t, s.p50_ms))
        .collect();
    p50.sort_by_key(|&(t, _)| t);
    let n = p50.len();
    if n < 2 {
        return None;
    }
    let k = (n / 3).max(1);
    let values = |part: &[(u64, f64)]| -> Vec<f64> {
        let mut v: Vec<f64> = part.iter().map(|&(_, ms)| ms).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    // With an even count the early figure takes the upper middle and the late one
    // the lower: a rise must show in the bulk of both thirds, not in one odd second.
    let early = values(&p50[..k]);
    let late = values(&p50[n - k..]);
    let from_ms = early[k / 2];
    let to_ms = late[(k - 1) / 2];
    (to_ms >= from_ms * RISE_RATIO && to_ms - from_ms >= RISE_MIN_MS)
        .then_some(Rising { from_ms, to_ms })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An open-model summary offered `offered`/s that achieved `achieved`/s over
    /// `duration_s`, with per-second `(requests, p50)` as its timeline.
    fn summary(offered: f64, achieved: f64, duration_s: f64, seconds: &[(u64, f64)]) -> Summary {
        let timeline = seconds
            .iter()
            .enumerate()
            .map(|(t, &(requests, p50_ms))| Second {
                t: t as u64,
                requests,
                p50_ms,
                ..Second::default()
            })
            .collect();
        let mut s = Summary::empty("t", duration_s);
        s.rate.offered = offered;
        s.rate.achieved = achieved;
        s.requests = (achieved * duration_s).round() as u64;
        s.timeline = timeline;
        s
    }

    #[test]
    fn the_issues_step_at_1240_did_not_keep_up() {
        // Capacity 1200/s, 1 s at 1240/s: a 40-request backlog drained in 33 ms.
        let s = summary(1240.0, 1201.0, 1.033, &[(1200, 21.0), (41, 38.0)]);
        let k = judge(&s);
        assert_eq!(
            k.behind,
            Some(Behind {
                achieved: 1201.0,
                offered: 1240.0
            })
        );
        assert_eq!(k.rising, None, "one whole second has no trend");
        assert!(!k.kept_up());
        assert_eq!(
            k.describe().unwrap(),
            "did not keep up (achieved 1201.0/s of 1240.0/s)"
        );
    }

    #[test]
    fn the_rate_tolerance_is_two_percent_plus_one_request() {
        let at = |achieved: f64| judge(&summary(1000.0, achieved, 1.0, &[(1000, 5.0)]));
        assert!(at(1000.0).kept_up());
        assert!(at(981.0).kept_up()); // 1.9 %
        assert!(at(979.5).kept_up()); // 20.5 requests short: within 20 + 1
        assert!(!at(978.0).kept_up()); // 22 short
                                       // 15.5/s for 1 s schedules 15 arrivals: all 15 done is keeping up.
        assert!(judge(&summary(15.5, 15.0, 1.0, &[(15, 5.0)])).kept_up());
        assert!(!judge(&summary(15.5, 13.0, 1.0, &[(13, 5.0)])).kept_up());
        // Over 10 s the same 2 % is 200 requests.
        assert!(judge(&summary(1000.0, 981.0, 10.0, &[])).kept_up());
        assert!(!judge(&summary(1000.0, 970.0, 10.0, &[])).kept_up());
    }

    #[test]
    fn a_closed_model_is_never_behind_its_own_rate() {
        let mut s = summary(1000.0, 500.0, 1.0, &[(500, 5.0)]);
        s.model = "users".into();
        assert!(judge(&s).kept_up());
    }

    #[test]
    fn a_growing_queue_over_a_long_window_is_a_rise() {
        // 1 % over capacity for 10 s at 5 ms: +10 ms a second, yet only 1 % behind.
        let seconds: Vec<(u64, f64)> = (0..10).map(|t| (1200, 10.0 + 10.0 * t as f64)).collect();
        let s = summary(1212.0, 1200.0, 10.1, &seconds);
        let k = judge(&s);
        assert_eq!(k.behind, None);
        assert_eq!(
            k.rising,
            Some(Rising {
                from_ms: 20.0,
                to_ms: 90.0
            })
        );
        assert_eq!(
            k.describe().unwrap(),
            "latency rising (p50 20.0ms → 90.0ms over the window)"
        );
    }

    #[test]
    fn short_windows_compare_first_and_last_whole_seconds() {
        // 2 s: second 0 against second 1; the drain's partial second is left out even
        // though its few requests were the slowest.
        let two = summary(500.0, 500.0, 2.0, &[(500, 5.0), (500, 16.0), (3, 40.0)]);
        assert_eq!(
            judge(&two).rising,
            Some(Rising {
                from_ms: 5.0,
                to_ms: 16.0
            })
        );
        let steady = summary(500.0, 500.0, 2.0, &[(500, 5.0), (500, 5.2), (3, 40.0)]);
        assert!(judge(&steady).kept_up());
        // 1 s plus a drain second: nothing to compare.
        let one = summary(500.0, 500.0, 1.0, &[(500, 5.0), (4, 40.0)]);
        assert!(judge(&one).kept_up());
        assert!(judge(&summary(500.0, 500.0, 1.0, &[])).kept_up());
    }

    #[test]
    fn noise_is_no_rise() {
        // 2 ms latency wobbling to 3.5 ms: +75 % but 1.5 ms.
        let fast = summary(100.0, 100.0, 3.0, &[(100, 2.0), (100, 2.4), (100, 3.5)]);
        assert!(judge(&fast).kept_up());
        // 300 ms doubling... no: 300 → 310 ms is +10 ms but only +3 %.
        let slow = summary(
            100.0,
            100.0,
            3.0,
            &[(100, 300.0), (100, 305.0), (100, 310.0)],
        );
        assert!(judge(&slow).kept_up());
        // One slow second among six in the last third is not the bulk of it.
        let spike: Vec<(u64, f64)> = [5.0, 5.0, 5.1, 5.0, 5.0, 40.0]
            .iter()
            .map(|&p| (800, p))
            .collect();
        assert!(judge(&summary(800.0, 800.0, 6.0, &spike)).kept_up());
        // Seconds with too few requests say nothing.
        let sparse = summary(3.0, 3.0, 3.0, &[(3, 2.0), (3, 2.0), (3, 90.0)]);
        assert!(judge(&sparse).kept_up());
    }

    #[test]
    fn both_signs_are_named() {
        let seconds: Vec<(u64, f64)> = (0..3).map(|t| (900, 5.0 + 20.0 * t as f64)).collect();
        let k = judge(&summary(1000.0, 900.0, 3.0, &seconds));
        let text = k.describe().unwrap();
        assert!(
            text.starts_with("did not keep up (achieved 900.0/s of 1000.0/s), latency rising (p50 5.00ms → 45.0ms"),
            "{text}"
        );
        let back: KeepUp = serde_json::from_value(serde_json::to_value(k).unwrap()).unwrap();
        assert_eq!(back, k);
        let old: KeepUp = serde_json::from_str("{}").unwrap();
        assert!(old.kept_up());
    }
}
