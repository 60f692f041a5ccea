//! `find --hold D`: once the search has its answer, that value (the rate in the open
//! model, the user count in the closed one) is run for D, as seed 000's authors ran
//! their "sweet spot" by hand, and [`judge`] says whether it held ([`Hold`], the
//! result's `hold` key). The driver runs it ([`super::driver`]); this module is the
//! verdict and its words.
//!
//! **The rule.** A hold held when it ran its whole duration and
//!
//! 1. it completed requests, and the generator kept up (a generator-bound hold says
//!    nothing of the target);
//! 2. every threshold passed over the whole hold (the error rule among them);
//! 3. the target kept up as a passing step must ([`super::keepup`]): the achieved rate
//!    within 2 % of the offered one (so drops beyond that fail it) and no rising p50;
//! 4. p95 did not grow: the p95 of the last third of the hold is at most
//!    [`P95_GROWTH`] above the first third's, or less than [`P95_GROWTH_MIN_MS`] above
//!    it ([`super::trend`]). Both are needed: at 2 ms a p95 wobbles by a millisecond
//!    without any queue, and at 300 ms a few more is no trend.
//!
//! The reason lists every rule that broke, in that order. A hold stopped by Ctrl-C is
//! `interrupted`, not held, and the search's answer stands.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::keepup::{self, KeepUp};
use super::step::Unit;
use super::trend::Trend;
use super::words::failed_rules;
use super::words::value;
use crate::metrics::summary::Summary;
use headroom_format::units::{latency, percent, seconds};

/// Shortest hold: three seconds give a first and a last third to compare.
pub const MIN_HOLD: Duration = Duration::from_secs(3);
/// Largest growth of p95 from the first third of the hold to the last, as a share of
/// the first, that still holds (+50 %).
pub const P95_GROWTH: f64 = 0.5;
/// p95 growth in milliseconds below which no share counts as growing.
pub const P95_GROWTH_MIN_MS: f64 = 5.0;

/// Whether the answer held for `--hold`, with the figures behind the verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hold {
    /// The duration asked for, seconds.
    pub duration_s: f64,
    /// The value held: the ceiling, in the search's unit.
    pub value: f64,
    /// It held by every rule (see the module documentation).
    pub held: bool,
    /// What broke, when it did not hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Ctrl-C stopped it before its end.
    pub interrupted: bool,
    /// The measured window the figures cover, seconds (less than `duration_s` when
    /// interrupted).
    pub measured_s: f64,
    /// Requests completed, successful or not.
    pub requests: u64,
    /// Of which errors.
    pub errors: u64,
    /// `errors / requests`.
    pub error_rate: f64,
    /// Iterations dropped at the in-flight cap.
    pub dropped: u64,
    /// Offered rate (open model) or throughput (closed), per second.
    pub offered: f64,
    /// Achieved rate, per second.
    pub achieved: f64,
    /// p50 over the whole hold, ms.
    pub p50_ms: f64,
    /// p95 over the whole hold, ms.
    pub p95_ms: f64,
    /// p99 over the whole hold, ms.
    pub p99_ms: f64,
    /// p95 of the first third of the hold, ms (`None`: fewer than two full seconds).
    pub p95_first_ms: Option<f64>,
    /// p95 of the last third, ms.
    pub p95_last_ms: Option<f64>,
    /// Least-squares slope of the per-second p95, ms per minute.
    pub p95_slope_ms_per_min: Option<f64>,
    /// That slope as a share of `p95_first_ms`, percent per minute.
    pub p95_slope_percent_per_min: Option<f64>,
    /// Whether the target kept up, as a step is judged.
    pub keep_up: KeepUp,
    /// The hold's whole summary (thresholds, generator, timeline, watches).
    pub summary: Summary,
}

/// Judges a hold of `value` asked to last `duration` from its measured `summary` and
/// latency `trend` (see the module documentation for the rule).
pub fn judge(value: f64, duration: Duration, summary: Summary, trend: Option<Trend>) -> Hold {
    let keep_up = keepup::judge(&summary);
    let interrupted = summary.interrupted;
    let mut broke: Vec<String> = Vec::new();
    if interrupted {
        broke.push(format!(
            "interrupted after {} of {}",
            seconds(summary.duration_s),
            span(duration)
        ));
    } else {
        if summary.requests == 0 {
            broke.push("no request completed".into());
        }
        if summary.generator.bound {
            broke.push(format!(
                "the generator, not the target, limited it ({})",
                summary.generator.reason
            ));
        }
        let rules = failed_rules(&summary);
        if !rules.is_empty() {
            broke.push(rules);
        }
        if let Some(behind) = keep_up.describe() {
            broke.push(behind);
        }
        if let Some(t) = trend.filter(grew) {
            broke.push(format!(
                "p95 rose from {} to {} ({})",
                latency(t.first_ms),
                latency(t.last_ms),
                per_minute(&t)
            ));
        }
    }
    Hold {
        duration_s: duration.as_secs_f64(),
        value,
        held: broke.is_empty(),
        reason: (!broke.is_empty()).then(|| broke.join(", ")),
        interrupted,
        measured_s: summary.duration_s,
        requests: summary.requests,
        errors: summary.errors.count,
        error_rate: summary.errors.rate,
        dropped: summary.dropped,
        offered: summary.rate.offered,
        achieved: summary.rate.achieved,
        p50_ms: summary.latency_ms.p50,
        p95_ms: summary.latency_ms.p95,
        p99_ms: summary.latency_ms.p99,
        p95_first_ms: trend.map(|t| t.first_ms),
        p95_last_ms: trend.map(|t| t.last_ms),
        p95_slope_ms_per_min: trend.map(|t| t.slope_ms_per_min),
        p95_slope_percent_per_min: trend.map(|t| t.slope_percent_per_min()),
        keep_up,
        summary,
    }
}

/// A hold that could not run at all (a hook failed, the engine could not start): not
/// held, `reason` saying why, with an empty summary named `name`.
pub fn not_run(name: &str, value: f64, duration: Duration, reason: String) -> Hold {
    let mut summary = Summary::empty(name, 0.0);
    summary.interrupted = false;
    let mut hold = judge(value, duration, summary, None);
    hold.reason = Some(reason);
    hold.held = false;
    hold
}

/// p95 grew past the rule: by more than [`P95_GROWTH`] and [`P95_GROWTH_MIN_MS`].
fn grew(t: &Trend) -> bool {
    t.last_ms > t.first_ms * (1.0 + P95_GROWTH) && t.last_ms - t.first_ms >= P95_GROWTH_MIN_MS
}

/// `+12.0%/min` (or `-3.1%/min`): the slope against the first third's p95.
fn per_minute(t: &Trend) -> String {
    let p = t.slope_percent_per_min();
    let sign = if p < 0.0 { "-" } else { "+" };
    format!("{sign}{:.1}%/min", p.abs())
}

/// A hold's duration as people write it: `10m`, `1h30m`, `45s`, `1m30s`, `3.5s`.
pub fn span(d: Duration) -> String {
    if d.subsec_millis() != 0 {
        return seconds(d.as_secs_f64());
    }
    let s = d.as_secs();
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    let mut out = String::new();
    for (n, unit) in [(h, "h"), (m, "m"), (s, "s")] {
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    if out.is_empty() {
        out.push_str("0s");
    }
    out
}

impl Hold {
    /// The duration asked for.
    pub fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.duration_s.max(0.0))
    }

    /// The verdict in a few words: `held for 10m`, `did not hold for 10m: p95 < 500ms
    /// (812ms)`, `hold interrupted after 42.0s of 10m`.
    pub fn headline(&self) -> String {
        let d = span(self.duration());
        let reason = self.reason.as_deref().unwrap_or("");
        if self.held {
            format!("held for {d}")
        } else if self.interrupted {
            format!("hold {reason}")
        } else {
            format!("did not hold for {d}: {reason}")
        }
    }

    /// `p95 5.10ms → 5.20ms (+1.0%/min)` when the trend was measured.
    pub fn trend_text(&self) -> Option<String> {
        let trend = Trend {
            first_ms: self.p95_first_ms?,
            last_ms: self.p95_last_ms?,
            slope_ms_per_min: self.p95_slope_ms_per_min?,
        };
        Some(format!(
            "p95 {} → {} ({})",
            latency(trend.first_ms),
            latency(trend.last_ms),
            per_minute(&trend)
        ))
    }

    /// One line of figures: `1200 requests, 0 errors (0.00%), 0 dropped, achieved
    /// 400.0/s of 400.0/s, p95 5.10ms → 5.20ms (+1.0%/min)`.
    pub fn figures(&self) -> String {
        let mut line = format!(
            "{} requests, {} errors ({}), {} dropped, achieved {}",
            self.requests,
            self.errors,
            percent(self.error_rate * 100.0),
            self.dropped,
            headroom_format::units::per_second(self.achieved),
        );
        if let Some(trend) = self.trend_text() {
            line.push_str(&format!(", {trend}"));
        }
        line
    }

    /// The first line of a search's report: `Held for 10m at 800 req/s.`, `Did not
    /// hold for 10m at 800 req/s: p95 < 500ms (812ms).`, `Hold at 800 req/s
    /// interrupted after 42.0s of 10m.`
    pub fn first_line(&self, unit: Unit) -> String {
        let at = format!("{} {}", value(self.value), unit.as_str());
        let d = span(self.duration());
        let reason = self.reason.as_deref().unwrap_or("");
        if self.held {
            format!("Held for {d} at {at}.")
        } else if self.interrupted {
            format!("Hold at {at} {reason}.")
        } else {
            format!("Did not hold for {d} at {at}: {reason}.")
        }
    }

    /// The sentence the search's conclusion ends with: `Held for 10m at 800 req/s: ...`.
    pub fn sentence(&self, unit: Unit) -> String {
        let at = format!("{} {}", value(self.value), unit.as_str());
        if self.held {
            format!(
                "Held for {} at {at}: every threshold passed and the target kept up ({}).",
                span(self.duration()),
                self.figures()
            )
        } else if self.interrupted {
            format!(
                "The hold at {at} was {}: the ceiling stands, whether it holds is not known.",
                self.reason.as_deref().unwrap_or("interrupted")
            )
        } else {
            format!(
                "It did not hold for {} at {at}: {}. Size below {at}, or find what ran out during the hold.",
                span(self.duration()),
                self.reason.as_deref().unwrap_or("")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::summary::{Second, ThresholdResult};

    /// A clean open-model hold at 400/s over `secs` seconds with p95 `p95`.
    fn summary(secs: f64, p95: f64) -> Summary {
        let mut s = Summary::empty("hold", secs);
        s.requests = (400.0 * secs) as u64;
        s.completed = s.requests;
        s.scheduled = s.requests;
        s.rate.offered = 400.0;
        s.rate.achieved = 400.0;
        s.latency_ms.p95 = p95;
        s.timeline = (0..secs as u64)
            .map(|t| Second {
                t,
                requests: 400,
                p50_ms: 5.0,
                p95_ms: p95,
                ..Second::default()
            })
            .collect();
        s.thresholds = vec![ThresholdResult {
            expr: "p95 < 100ms".into(),
            ok: true,
            value: p95,
            window: None,
        }];
        s
    }

    fn trend(first_ms: f64, last_ms: f64) -> Option<Trend> {
        Some(Trend {
            first_ms,
            last_ms,
            slope_ms_per_min: (last_ms - first_ms) * 30.0,
        })
    }

    #[test]
    fn a_clean_hold_held_and_says_so() {
        let d = Duration::from_secs(600);
        let h = judge(400.0, d, summary(600.0, 5.2), trend(5.1, 5.3));
        assert!(h.held, "{h:?}");
        assert_eq!(h.reason, None);
        assert_eq!(h.headline(), "held for 10m");
        assert_eq!((h.requests, h.errors, h.dropped), (240_000, 0, 0));
        assert!(h
            .sentence(Unit::Rate)
            .starts_with("Held for 10m at 400 req/s"));
        assert_eq!(h.first_line(Unit::Users), "Held for 10m at 400 users.");
        // Small wobbles are no growth: +60 % of 2 ms is under the 5 ms floor.
        assert!(judge(400.0, d, summary(600.0, 3.0), trend(2.0, 3.2)).held);
        let json = serde_json::to_value(&h).unwrap();
        assert!(json.get("reason").is_none());
        assert_eq!(json["p95_first_ms"], 5.1);
        let back: Hold = serde_json::from_value(json).unwrap();
        assert_eq!(back, h);
    }

    #[test]
    fn a_hold_names_every_rule_that_broke() {
        let d = Duration::from_secs(3);
        let mut s = summary(3.0, 312.0);
        s.thresholds[0].ok = false;
        s.rate.achieved = 300.0;
        let h = judge(400.0, d, s, trend(6.0, 640.0));
        assert!(!h.held);
        let reason = h.reason.clone().unwrap();
        assert!(reason.starts_with("p95 < 100ms (312ms), did not keep up (achieved 300.0/s of 400.0/s), p95 rose from 6.00ms to 640ms (+"), "{reason}");
        assert!(
            h.headline().starts_with("did not hold for 3s: p95 < 100ms"),
            "{}",
            h.headline()
        );

        // p95 growth alone breaks it.
        let h = judge(400.0, d, summary(3.0, 20.0), trend(10.0, 20.0));
        assert_eq!(
            h.reason.as_deref(),
            Some("p95 rose from 10.0ms to 20.0ms (+3000.0%/min)")
        );

        let mut bound = summary(3.0, 5.0);
        bound.generator.bound = true;
        bound.generator.reason = "CPU 100%".into();
        let h = judge(400.0, d, bound, None);
        assert!(h
            .reason
            .unwrap()
            .contains("the generator, not the target, limited it (CPU 100%)"));
    }

    #[test]
    fn an_interrupted_hold_is_only_interrupted() {
        let mut s = summary(42.0, 5.0);
        s.interrupted = true;
        s.thresholds[0].ok = false;
        let h = judge(800.0, Duration::from_secs(600), s, trend(5.0, 50.0));
        assert!(!h.held && h.interrupted);
        assert_eq!(h.reason.as_deref(), Some("interrupted after 42.0s of 10m"));
        assert_eq!(h.headline(), "hold interrupted after 42.0s of 10m");
        assert_eq!(
            h.first_line(Unit::Rate),
            "Hold at 800 req/s interrupted after 42.0s of 10m."
        );
        let not = not_run(
            "x",
            800.0,
            Duration::from_secs(60),
            "hooks.before_step[0] failed".into(),
        );
        assert!(!not.held && !not.interrupted);
        assert_eq!(
            not.headline(),
            "did not hold for 1m: hooks.before_step[0] failed"
        );
    }

    #[test]
    fn spans_read_as_written() {
        let s = |secs: u64| span(Duration::from_secs(secs));
        assert_eq!(s(600), "10m");
        assert_eq!(s(5400), "1h30m");
        assert_eq!(s(90), "1m30s");
        assert_eq!(s(3), "3s");
        assert_eq!(span(Duration::from_millis(3500)), "3.5s");
    }
}
