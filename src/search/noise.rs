//! Whether the runs of one load disagree enough to doubt the answer: [`Noisy`].
//!
//! Noise is judged against the question the runs answer, not in the abstract. Every
//! load run more than once (the boundary's trials, any other repeat) is noisy when
//!
//! - its verdicts differ: one run passed, another failed; or
//! - on a rule it is judged by (`p95 < 100ms`, `errors < 1%`, `rate > 990/s`), its runs
//!   moved apart by at least the margin left to the rule's limit: `max − min ≥
//!   min |limit − value|`. One more run as far from the nearest as these are apart
//!   could land on the other side of the limit, so the verdict rests on luck.
//!
//! A p95 that moves from 9.8 to 18 ms under `p95 < 100ms` moved 8 ms with 82 ms to
//! spare: that is not noise that changes the answer. From 40 to 48 ms under
//! `p95 < 50ms` it moved 8 ms with 2 ms to spare: it is. Rules on counts (`==`) are
//! not judged this way: a count either holds or it does not.
//!
//! Generator-bound and interrupted runs say nothing of the target and are left out.

use serde::{Deserialize, Serialize};

use super::step::StepRecord;
use super::words::{measured, value};
use crate::metrics::summary::ThresholdResult;
use crate::metrics::threshold::{Op, Threshold};
use headroom_format::units::latency;

/// One run of a load, as noise is judged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trial<'a> {
    /// Rate or users.
    pub rate: f64,
    /// Whether it passed.
    pub passed: bool,
    /// Its p95, ms.
    pub p95_ms: f64,
    /// The rules it was judged by, with what each measured.
    pub thresholds: &'a [ThresholdResult],
}

/// Runs at one load that disagree: `noisy` in the JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Noisy {
    /// The load (rate or users) whose runs disagreed most.
    pub value: f64,
    /// Runs at it.
    pub trials: u32,
    /// Of them, the ones that passed.
    pub passed: u32,
    /// Lowest p95 of its runs, ms.
    pub p95_min_ms: f64,
    /// Highest p95 of its runs, ms.
    pub p95_max_ms: f64,
    /// `(p95_max − p95_min) / p95_min`.
    pub spread: f64,
    /// The rule the runs are noisy on: the one whose verdict differed, or whose figures
    /// moved apart by at least their margin to its limit. `None` in a search stored
    /// before noise was judged by rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<RuleSpread>,
}

/// What the runs of one load measured on one rule, against its limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleSpread {
    /// The rule as written.
    pub expr: String,
    /// Its limit, in the rule's unit.
    pub limit: f64,
    /// Lowest figure of the runs, in the rule's unit.
    pub min: f64,
    /// Highest figure of the runs.
    pub max: f64,
    /// Distance from the limit of the run nearest to it.
    pub margin: f64,
}

impl RuleSpread {
    /// How far the runs moved apart, against the margin left: 1 or more is noise.
    pub fn ratio(&self) -> f64 {
        let spread = self.max - self.min;
        if spread <= 0.0 {
            0.0
        } else if self.margin <= 0.0 {
            f64::INFINITY
        } else {
            spread / self.margin
        }
    }

    /// Whether the runs moved at least as far apart as the margin left to the limit.
    pub fn is_noise(&self) -> bool {
        self.ratio() >= 1.0
    }

    /// `p95 < 50ms measured 40.0ms to 48.0ms`.
    fn words(&self) -> String {
        format!(
            "`{}` measured {} to {}",
            self.expr,
            measured(&self.expr, self.min),
            measured(&self.expr, self.max)
        )
    }

    /// Each rule the runs were judged by, with its figures across them; `ok` tells
    /// whether the rule's verdict differed between runs.
    fn of_runs(runs: &[&Trial]) -> Vec<(RuleSpread, bool)> {
        let Some(first) = runs.first() else {
            return Vec::new();
        };
        first
            .thresholds
            .iter()
            .filter_map(|rule| {
                let parsed = Threshold::parse(&rule.expr).ok()?;
                if parsed.op == Op::Eq || !parsed.limit.is_finite() {
                    return None;
                }
                let results: Vec<&ThresholdResult> = runs
                    .iter()
                    .map(|r| r.thresholds.iter().find(|t| t.expr == rule.expr))
                    .collect::<Option<_>>()?;
                let values = results.iter().map(|t| t.value);
                if values.clone().any(|v| !v.is_finite()) {
                    return None;
                }
                let flipped = results.iter().any(|t| t.ok != rule.ok);
                let limit = parsed.limit;
                Some((
                    RuleSpread {
                        expr: rule.expr.clone(),
                        limit,
                        min: values.clone().fold(f64::INFINITY, f64::min),
                        max: values.clone().fold(f64::NEG_INFINITY, f64::max),
                        margin: values
                            .map(|v| (limit - v).abs())
                            .fold(f64::INFINITY, f64::min),
                    },
                    flipped,
                ))
            })
            .collect()
    }
}

impl Noisy {
    /// The load whose repeated runs disagree most (verdicts first, then how far their
    /// figures moved against the margin to a limit), if any are noisy. Generator-bound
    /// and interrupted steps say nothing of the target.
    pub fn of(steps: &[StepRecord]) -> Option<Noisy> {
        Noisy::of_trials(
            steps
                .iter()
                .filter(|s| !s.summary.generator.bound && !s.summary.interrupted)
                .map(|s| Trial {
                    rate: s.rate,
                    passed: s.passed,
                    p95_ms: s.summary.latency_ms.p95,
                    thresholds: &s.summary.thresholds,
                }),
        )
    }

    /// As [`Noisy::of`], from the runs that judge the target (not generator-bound,
    /// not interrupted) in any form, e.g. a stored search's.
    pub fn of_trials<'a>(trials: impl Iterator<Item = Trial<'a>>) -> Option<Noisy> {
        let judged: Vec<Trial> = trials.collect();
        let mut values: Vec<f64> = judged.iter().map(|s| s.rate).collect();
        values.sort_by(f64::total_cmp);
        values.dedup();
        values
            .into_iter()
            .filter_map(|v| {
                let runs: Vec<&Trial> = judged.iter().filter(|s| s.rate == v).collect();
                if runs.len() < 2 {
                    return None;
                }
                let passed = runs.iter().filter(|s| s.passed).count() as u32;
                let trials = runs.len() as u32;
                let disagree = passed > 0 && passed < trials;
                let rules = RuleSpread::of_runs(&runs);
                // The rule to name: when the verdicts differ, one whose verdict flipped
                // (none when the runs differed on keeping up alone); else the one whose
                // runs moved furthest against their margin, if that is noise.
                let rule = if disagree {
                    rules
                        .into_iter()
                        .find(|(_, flipped)| *flipped)
                        .map(|(r, _)| r)
                } else {
                    rules
                        .into_iter()
                        .map(|(r, _)| r)
                        .max_by(|a, b| a.ratio().total_cmp(&b.ratio()))
                        .filter(RuleSpread::is_noise)
                };
                let p95 = runs.iter().map(|s| s.p95_ms);
                let min = p95.clone().fold(f64::INFINITY, f64::min);
                let max = p95.fold(0.0, f64::max);
                (disagree || rule.is_some()).then(|| Noisy {
                    value: v,
                    trials,
                    passed,
                    p95_min_ms: min,
                    p95_max_ms: max,
                    spread: if min > 0.0 { (max - min) / min } else { 0.0 },
                    rule,
                })
            })
            .max_by(|a, b| {
                let rank = |n: &Noisy| n.rule.as_ref().map_or(0.0, RuleSpread::ratio);
                a.disagree()
                    .cmp(&b.disagree())
                    .then(rank(a).total_cmp(&rank(b)))
            })
    }

    /// Whether its runs' verdicts differed.
    pub fn disagree(&self) -> bool {
        self.passed > 0 && self.passed < self.trials
    }

    /// The sentence that tells the user: `The target is noisy: at 800 req/s 1 of 2
    /// trials passed (`p95 < 50ms` measured 41.0ms to 63.0ms). Isolate runs: …`, or
    /// for runs that agreed but moved apart as far as their margin, what moved.
    pub fn sentence(&self, unit: &str) -> String {
        let head = format!(
            "The target is noisy: at {} {} {} of {} trials passed",
            value(self.value),
            unit,
            self.passed,
            self.trials
        );
        let what = match (&self.rule, self.disagree()) {
            (Some(r), true) => format!("{head} ({})", r.words()),
            (Some(r), false) => format!(
                "{head}, but {}: they moved {} apart with {} left to the limit, so one more run could land on the other side",
                r.words(),
                measured(&r.expr, r.max - r.min),
                measured(&r.expr, r.margin)
            ),
            (None, _) => format!(
                "{head}, p95 {} to {} ({:.0} % apart)",
                latency(self.p95_min_ms),
                latency(self.p95_max_ms),
                self.spread * 100.0
            ),
        };
        format!(
            "{what}. Isolate runs (nothing else on the target's or the generator's machine, a longer --cooldown), and run more trials (--trials 3 --allow-failed-trials 1) before trusting one number."
        )
    }
}

#[cfg(test)]
#[path = "noise_tests.rs"]
mod tests;
