//! [`Trials`]: how many times a boundary load is run and how many of its runs may fail
//! (`--trials N`, `--allow-failed-trials K`), and [`Loads`], the verdicts of every load
//! a search ran, from which it decides whether a load passed.
//!
//! As in IETF MLRsearch (draft-ietf-bmwg-mlrsearch), a load is *decided* as soon as
//! its remaining trials cannot change the outcome: it fails once more than K of its
//! trials failed, and passes once N − K of them passed (even if every trial left
//! failed, no more than K would have). With the defaults (N = 2, K = 0) a passing
//! boundary load is run twice and a failing one once: the confirmation the search has
//! always made. Loads the search only passes through on its way (growing, bisecting)
//! run once; their single verdict is taken as it is ([`Load::leans_pass`]).

use serde::{Deserialize, Serialize};

/// `--trials` and `--allow-failed-trials`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trials {
    /// Runs of each boundary load (at least 1).
    pub per_load: u32,
    /// Failed runs a load may have and still pass (less than `per_load`).
    pub allowed_failures: u32,
}

impl Default for Trials {
    /// Two trials, none allowed to fail: the boundary passes twice.
    fn default() -> Self {
        Trials {
            per_load: 2,
            allowed_failures: 0,
        }
    }
}

/// Trial counts that cannot decide anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TrialsError {
    /// `--trials 0`.
    #[error("--trials: expected at least 1 run per boundary load, found 0")]
    NoTrials,
    /// `--allow-failed-trials` at or above `--trials`: every load would pass.
    #[error(
        "--allow-failed-trials {allowed} must be less than --trials {trials}: with as many failures allowed as trials run, every load would pass"
    )]
    TooManyAllowed {
        /// `--trials`.
        trials: u32,
        /// `--allow-failed-trials`.
        allowed: u32,
    },
}

impl Trials {
    /// Checks `1 <= per_load` and `allowed_failures < per_load`.
    pub fn validate(&self) -> Result<(), TrialsError> {
        if self.per_load == 0 {
            return Err(TrialsError::NoTrials);
        }
        if self.allowed_failures >= self.per_load {
            return Err(TrialsError::TooManyAllowed {
                trials: self.per_load,
                allowed: self.allowed_failures,
            });
        }
        Ok(())
    }
}

/// A load's verdict once its trials decide it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decided {
    /// At least N − K trials passed.
    Pass,
    /// More than K trials failed.
    Fail,
}

/// The runs of one load (rate or user count).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    /// Rate or user count.
    pub value: f64,
    /// Runs that passed.
    pub passed: u32,
    /// Runs that failed.
    pub failed: u32,
}

impl Load {
    /// Runs so far.
    pub fn runs(&self) -> u32 {
        self.passed + self.failed
    }

    /// The verdict, once the trials decide it.
    pub fn decided(&self, trials: Trials) -> Option<Decided> {
        if self.failed > trials.allowed_failures {
            Some(Decided::Fail)
        } else if self.passed >= trials.per_load - trials.allowed_failures {
            Some(Decided::Pass)
        } else {
            None
        }
    }

    /// Whether the search counts it as a pass for now: decided so, or only passes yet.
    pub fn leans_pass(&self, trials: Trials) -> bool {
        match self.decided(trials) {
            Some(d) => d == Decided::Pass,
            None => self.failed == 0 && self.passed > 0,
        }
    }

    /// Whether the search counts it as a failure for now: decided so, or only failures
    /// yet.
    pub fn leans_fail(&self, trials: Trials) -> bool {
        match self.decided(trials) {
            Some(d) => d == Decided::Fail,
            None => self.passed == 0 && self.failed > 0,
        }
    }
}

/// Every load a search ran, in the order first run.
#[derive(Debug, Clone, Default)]
pub struct Loads(Vec<Load>);

impl Loads {
    /// Adds one run's verdict at `value`.
    pub fn record(&mut self, value: f64, passed: bool) -> Load {
        let i = match self.0.iter().position(|l| l.value == value) {
            Some(i) => i,
            None => {
                self.0.push(Load {
                    value,
                    passed: 0,
                    failed: 0,
                });
                self.0.len() - 1
            }
        };
        let load = &mut self.0[i];
        if passed {
            load.passed += 1;
        } else {
            load.failed += 1;
        }
        *load
    }

    /// The runs at `value`, if any.
    pub fn get(&self, value: f64) -> Option<Load> {
        self.0.iter().copied().find(|l| l.value == value)
    }

    /// The highest load below `below` that leans pass.
    pub fn best_pass_below(&self, below: f64, trials: Trials) -> Option<f64> {
        self.0
            .iter()
            .filter(|l| l.value < below && l.leans_pass(trials))
            .map(|l| l.value)
            .reduce(f64::max)
    }

    /// The lowest load above `above` that leans fail.
    pub fn lowest_fail_above(&self, above: f64, trials: Trials) -> Option<f64> {
        self.0
            .iter()
            .filter(|l| l.value > above && l.leans_fail(trials))
            .map(|l| l.value)
            .reduce(f64::min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(passed: u32, failed: u32) -> Load {
        Load {
            value: 1.0,
            passed,
            failed,
        }
    }

    #[test]
    fn a_load_is_decided_as_soon_as_the_rest_cannot_change_it() {
        let t = Trials::default();
        assert_eq!(load(1, 0).decided(t), None);
        assert_eq!(load(2, 0).decided(t), Some(Decided::Pass));
        assert_eq!(load(0, 1).decided(t), Some(Decided::Fail));
        assert_eq!(load(1, 1).decided(t), Some(Decided::Fail));
        // 3 trials, one may fail: two passes decide, two failures decide.
        let t = Trials {
            per_load: 3,
            allowed_failures: 1,
        };
        assert_eq!(load(1, 1).decided(t), None);
        assert!(!load(1, 1).leans_pass(t) && !load(1, 1).leans_fail(t));
        assert_eq!(load(2, 1).decided(t), Some(Decided::Pass));
        assert_eq!(load(0, 2).decided(t), Some(Decided::Fail));
        // One trial: its verdict is final.
        let t = Trials {
            per_load: 1,
            allowed_failures: 0,
        };
        assert_eq!(load(1, 0).decided(t), Some(Decided::Pass));
    }

    #[test]
    fn validates_the_counts() {
        assert!(Trials::default().validate().is_ok());
        let bad = Trials {
            per_load: 2,
            allowed_failures: 2,
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("less than --trials 2"));
        let none = Trials {
            per_load: 0,
            allowed_failures: 0,
        };
        assert_eq!(none.validate(), Err(TrialsError::NoTrials));
    }

    #[test]
    fn best_pass_and_lowest_fail_follow_the_leanings() {
        let t = Trials::default();
        let mut loads = Loads::default();
        for (v, p) in [(100.0, true), (200.0, true), (400.0, false), (300.0, true)] {
            loads.record(v, p);
        }
        loads.record(300.0, false);
        assert_eq!(loads.best_pass_below(400.0, t), Some(200.0));
        assert_eq!(loads.lowest_fail_above(200.0, t), Some(300.0));
        assert_eq!(loads.get(300.0).map(|l| l.runs()), Some(2));
    }
}
