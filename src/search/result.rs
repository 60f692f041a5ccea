//! [`SearchResult`]: what a ceiling search found, every step it ran, and why it
//! stopped ([`LimitedBy`]). It serializes as the `find --out` JSON (version 1):
//! `{"version":1, "ceiling", "knee", "limited_by", "unit", "steps": [{"rate",
//! "passed", "summary", ...}], "model": {"kind": "usl", ...}, ...}`.

use serde::{Deserialize, Serialize};

use super::bottleneck::Bottleneck;
use super::hold::Hold;
use super::interval::CeilingInterval;
pub use super::limited::LimitedBy;
use super::model::Model;
use super::noise::Noisy;
use super::step::{StepRecord, Unit};
pub use super::words::value;

/// The outcome of a search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    /// Format version, always 1.
    pub version: u32,
    /// The highest value (in `unit`) that passed every threshold, confirmed by a second
    /// step; with `ceiling_is_lower_bound`, the best pass known when the search had to
    /// stop. `None` when nothing passed.
    pub ceiling: Option<f64>,
    /// True when `ceiling` is only a lower bound (limited by the generator, the range,
    /// an interruption or an error).
    pub ceiling_is_lower_bound: bool,
    /// The value after which p95 grew faster than the load, to a latency that matters
    /// against the baseline and the threshold (see [`super::knee`]).
    pub knee: Option<f64>,
    /// Why the search stopped.
    pub limited_by: LimitedBy,
    /// `req/s` or `users`.
    pub unit: Unit,
    /// The lowest value that failed its thresholds, if any.
    pub failed_at: Option<f64>,
    /// The watched resource that ran out between the last passing and the first
    /// failing step, with its evidence (see [`super::bottleneck`]); absent when the
    /// search did not end at a failure a watch explains (the conclusion then says
    /// which watch would).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottleneck: Option<Bottleneck>,
    /// One or two sentences saying what was found and, when it falls short, what to do.
    pub conclusion: String,
    /// Wall time of the whole search, seconds.
    pub duration_s: f64,
    /// Every step in the order run.
    pub steps: Vec<StepRecord>,
    /// With `--hold`, the answer run for that long and whether it held; absent
    /// without `--hold` or when there was no answer to hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<Hold>,
    /// The boundary as its trials left it: the highest load that passed its trials and
    /// the lowest that failed them, with their counts. `null` when the search found no
    /// boundary (nothing passed, or it stopped early).
    #[serde(default)]
    pub ceiling_interval: Option<CeilingInterval>,
    /// Set when trials at one load disagreed (verdicts, or p95 far apart): the ceiling
    /// is less sure than its interval says. `null` otherwise.
    #[serde(default)]
    pub noisy: Option<Noisy>,
    /// The Universal Scalability Law fitted to the steps, with the peak it predicts
    /// ([`super::model`]); `null` when the steps cannot fix it.
    #[serde(default)]
    pub model: Option<Model>,
}

impl SearchResult {
    /// Whether the search answered its question: a confirmed ceiling below `--to`, or
    /// the whole range passing. `headroom find` exits 0 exactly then.
    pub fn found(&self) -> bool {
        self.ceiling.is_some()
            && matches!(self.limited_by, LimitedBy::Thresholds | LimitedBy::Range)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_the_v1_shape() {
        let r = SearchResult {
            version: 1,
            ceiling: Some(800.0),
            ceiling_is_lower_bound: false,
            knee: None,
            limited_by: LimitedBy::Thresholds,
            unit: Unit::Rate,
            failed_at: Some(825.0),
            bottleneck: None,
            conclusion: "c".into(),
            duration_s: 1.0,
            steps: Vec::new(),
            hold: None,
            ceiling_interval: None,
            noisy: None,
            model: None,
        };
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["version"], 1);
        assert_eq!(json["ceiling"], 800.0);
        assert!(json["knee"].is_null());
        assert_eq!(json["limited_by"], "thresholds");
        assert_eq!(json["unit"], "req/s");
        assert!(json["steps"].as_array().unwrap().is_empty());
        // Without --hold the result has no `hold` key at all.
        assert!(json.get("hold").is_none());
        // Without steps to fit, `model` is there and null.
        assert!(json["model"].is_null());
        assert!(r.found());
        let back: SearchResult = serde_json::from_value(json).unwrap();
        assert_eq!(back, r);
        let users = serde_json::to_value(Unit::Users).unwrap();
        assert_eq!(users, "users");
    }

    #[test]
    fn only_thresholds_and_range_count_as_found() {
        for (limited_by, found) in [
            (LimitedBy::Thresholds, true),
            (LimitedBy::Range, true),
            (LimitedBy::Generator, false),
            (LimitedBy::Interrupted, false),
            (LimitedBy::Error, false),
        ] {
            let r = SearchResult {
                version: 1,
                ceiling: Some(1.0),
                ceiling_is_lower_bound: false,
                knee: None,
                limited_by,
                unit: Unit::Users,
                failed_at: None,
                bottleneck: None,
                conclusion: String::new(),
                duration_s: 0.0,
                steps: Vec::new(),
                hold: None,
                ceiling_interval: None,
                noisy: None,
                model: None,
            };
            assert_eq!(r.found(), found, "{limited_by:?}");
            assert_eq!(
                serde_json::to_value(limited_by).unwrap(),
                limited_by.as_str()
            );
        }
    }

    #[test]
    fn values_print_whole_numbers_bare() {
        assert_eq!(value(800.0), "800");
        assert_eq!(value(12.5), "12.5");
    }
}
