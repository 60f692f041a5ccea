//! How sure a search is of its answer: the [`CeilingInterval`] its trials leave (the
//! highest load that passed its trials, the lowest that failed them) and whether the
//! target was [`Noisy`] (trials at one load that disagree).
//!
//! Noise is judged on every load run more than once, the boundary's trials and any
//! other repeat: the verdicts differ, or their p95 differs by more than
//! [`NOISY_P95_SPREAD`] of the lower one and by at least [`NOISY_P95_MIN_MS`] (at 2 ms
//! a millisecond is 50 % without meaning anything, as the keep-up rule found).

use serde::{Deserialize, Serialize};

use super::step::{StepRecord, Unit};
use super::strategy::{Conclusion, Strategy};
use super::words::value;
use headroom_format::units::latency;

/// Largest relative spread of p95 between trials at one load that is not noise.
pub const NOISY_P95_SPREAD: f64 = 0.5;
/// Smallest difference of p95, in milliseconds, that can be noise.
pub const NOISY_P95_MIN_MS: f64 = 5.0;

/// The boundary as the trials left it: `ceiling_interval` in the JSON.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CeilingInterval {
    /// The highest load that passed its trials (the ceiling).
    pub low: f64,
    /// The lowest load that failed its trials; `None` when every load up to `--to`
    /// passed.
    pub high: Option<f64>,
    /// Trials run at `low`.
    pub trials: u32,
    /// Of them, the ones that passed.
    pub passed: u32,
    /// Trials run at `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high_trials: Option<u32>,
    /// Of them, the ones that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high_failed: Option<u32>,
    /// `--trials`: the most runs a boundary load gets.
    pub trials_per_load: u32,
    /// `--allow-failed-trials`.
    pub allowed_failures: u32,
}

impl CeilingInterval {
    /// The interval of a search the strategy concluded, when it found a boundary.
    pub fn of(strategy: &Strategy, conclusion: Conclusion) -> Option<CeilingInterval> {
        let (low, high) = match conclusion {
            Conclusion::Ceiling { ceiling, failed } => (ceiling, Some(failed)),
            Conclusion::Range(top) => (top, None),
            Conclusion::NothingPassed(_) | Conclusion::NotReproducible(_) => return None,
        };
        let at_low = strategy.load(low)?;
        let at_high = high.and_then(|h| strategy.load(h));
        let t = strategy.trials();
        Some(CeilingInterval {
            low,
            high,
            trials: at_low.runs(),
            passed: at_low.passed,
            high_trials: at_high.map(|l| l.runs()),
            high_failed: at_high.map(|l| l.failed),
            trials_per_load: t.per_load,
            allowed_failures: t.allowed_failures,
        })
    }

    /// `passed 2 of 2 trials; 821 req/s failed 1 of 1`, or for a range that passed
    /// to its end, `passed 2 of 2 trials`.
    pub fn describe(&self, unit: Unit) -> String {
        let high = match (self.high, self.high_failed, self.high_trials) {
            (Some(h), Some(failed), Some(runs)) => Some((h, failed, runs)),
            _ => None,
        };
        trials_sentence(self.passed, self.trials, high, unit.as_str())
    }
}

/// `passed P of R trials`, then `; H unit failed F of N` when `high` is
/// `(H, F, N)`: the interval's words, for a search that just ran or a stored one.
pub fn trials_sentence(
    passed: u32,
    runs: u32,
    high: Option<(f64, u32, u32)>,
    unit: &str,
) -> String {
    let mut s = format!("passed {passed} of {runs} trials");
    if let Some((h, failed, runs)) = high {
        s.push_str(&format!("; {} {unit} failed {failed} of {runs}", value(h)));
    }
    s
}

/// One run of a load, as noise is judged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trial {
    /// Rate or users.
    pub rate: f64,
    /// Whether it passed.
    pub passed: bool,
    /// Its p95, ms.
    pub p95_ms: f64,
}

/// Trials at one load that disagree: `noisy` in the JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Noisy {
    /// The load (rate or users) whose trials disagreed most.
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
}

impl Noisy {
    /// The load whose repeated runs disagree most (verdicts first, then p95 spread),
    /// if any do. Generator-bound and interrupted steps say nothing of the target.
    pub fn of(steps: &[StepRecord]) -> Option<Noisy> {
        Noisy::of_trials(
            steps
                .iter()
                .filter(|s| !s.summary.generator.bound && !s.summary.interrupted)
                .map(|s| Trial {
                    rate: s.rate,
                    passed: s.passed,
                    p95_ms: s.summary.latency_ms.p95,
                }),
        )
    }

    /// As [`Noisy::of`], from the runs that judge the target (not generator-bound,
    /// not interrupted) in any form, e.g. a stored search's.
    pub fn of_trials(trials: impl Iterator<Item = Trial>) -> Option<Noisy> {
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
                let p95 = runs.iter().map(|s| s.p95_ms);
                let min = p95.clone().fold(f64::INFINITY, f64::min);
                let max = p95.fold(0.0, f64::max);
                let spread = if min > 0.0 { (max - min) / min } else { 0.0 };
                let trials = runs.len() as u32;
                let disagree = passed > 0 && passed < trials;
                let wide = spread > NOISY_P95_SPREAD && max - min >= NOISY_P95_MIN_MS;
                (disagree || wide).then_some((
                    disagree,
                    Noisy {
                        value: v,
                        trials,
                        passed,
                        p95_min_ms: min,
                        p95_max_ms: max,
                        spread,
                    },
                ))
            })
            .max_by(|(da, a), (db, b)| da.cmp(db).then(a.spread.total_cmp(&b.spread)))
            .map(|(_, n)| n)
    }

    /// The sentence that tells the user: `The target is noisy: at 800 req/s 1 of 2
    /// trials passed, p95 4.1ms to 63.0ms. Isolate runs: …`.
    pub fn sentence(&self, unit: &str) -> String {
        format!(
            "The target is noisy: at {} {} {} of {} trials passed, p95 {} to {} ({:.0} % apart). Isolate runs (nothing else on the target's or the generator's machine, a longer --cooldown), and run more trials (--trials 3 --allow-failed-trials 1) before trusting one number.",
            value(self.value),
            unit,
            self.passed,
            self.trials,
            latency(self.p95_min_ms),
            latency(self.p95_max_ms),
            self.spread * 100.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::summary::Summary;
    use crate::search::strategy::{Next, Probing, Range};
    use crate::search::trials::Trials;

    fn step(rate: f64, passed: bool, p95: f64) -> StepRecord {
        let mut summary = Summary::empty("s", 1.0);
        summary.latency_ms.p95 = p95;
        StepRecord::measured(rate, passed, summary)
    }

    #[test]
    fn the_interval_counts_the_trials_at_both_ends() {
        let trials = Trials {
            per_load: 3,
            allowed_failures: 0,
        };
        let range = Range {
            from: 100.0,
            to: 1e6,
            precision: 0.05,
        };
        let mut s = Strategy::new(range, trials, Probing::Bisect);
        let conclusion = loop {
            match s.next() {
                Next::Run { value, .. } => s.record(value, value <= 800.0),
                Next::Done(c) => break c,
            }
        };
        let i = CeilingInterval::of(&s, conclusion).unwrap();
        assert_eq!((i.low, i.high), (800.0, Some(825.0)));
        assert_eq!((i.trials, i.passed), (3, 3));
        assert_eq!((i.high_trials, i.high_failed), (Some(1), Some(1)));
        assert_eq!(
            i.describe(Unit::Rate),
            "passed 3 of 3 trials; 825 req/s failed 1 of 1"
        );
    }

    #[test]
    fn disagreeing_trials_or_a_wide_p95_spread_are_noise() {
        // Agreeing trials with p95 close together: quiet.
        let quiet = [
            step(400.0, true, 10.0),
            step(800.0, true, 20.0),
            step(800.0, true, 24.0),
        ];
        assert_eq!(Noisy::of(&quiet), None);
        // A millisecond at 2 ms is 50 % and still not noise.
        let small = [step(800.0, true, 2.0), step(800.0, true, 3.5)];
        assert_eq!(Noisy::of(&small), None);
        // p95 from 20 to 48 ms: wide.
        let wide = [step(800.0, true, 20.0), step(800.0, true, 48.0)];
        let n = Noisy::of(&wide).unwrap();
        assert_eq!((n.value, n.trials, n.passed), (800.0, 2, 2));
        assert!((n.spread - 1.4).abs() < 1e-9);
        // One passed, one failed: noise, and it outranks a wider spread elsewhere.
        let mixed = [
            step(600.0, true, 10.0),
            step(600.0, true, 40.0),
            step(800.0, true, 20.0),
            step(800.0, false, 22.0),
        ];
        let n = Noisy::of(&mixed).unwrap();
        assert_eq!((n.value, n.passed, n.trials), (800.0, 1, 2));
        assert!(n
            .sentence("req/s")
            .contains("at 800 req/s 1 of 2 trials passed"));
        // A generator-bound repeat says nothing of the target.
        let mut bound = step(800.0, false, 20.0);
        bound.summary.generator.bound = true;
        assert_eq!(Noisy::of(&[step(800.0, true, 20.0), bound]), None);
    }
}
