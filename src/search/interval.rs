//! How sure a search is of its answer: the [`CeilingInterval`] its trials leave (the
//! highest load that passed its trials, the lowest that failed them). Whether the
//! target was noisy is [`super::noise`]'s.

use serde::{Deserialize, Serialize};

use super::step::Unit;
use super::strategy::{Conclusion, Strategy};
use super::words::value;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::strategy::{Next, Probing, Range};
    use crate::search::trials::Trials;

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
}
