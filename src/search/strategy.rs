//! [`Strategy`]: which rate (or user count) a ceiling search tries next, as pure data.
//!
//! The driver asks [`Strategy::next`] for a [`Next`] and, after running the step, tells
//! [`Strategy::record`] whether it passed. No clock, no engine: the whole search order
//! is testable from a table of verdicts.
//!
//! The order: grow geometrically (×2) from `from` until a step fails or `to` passes;
//! then close in on the boundary until the gap between the best pass and the lowest
//! fail is within `precision` of the pass; then run the two boundary loads until their
//! trials decide them (below).
//!
//! Closing in: a failed step usually says where the boundary is. An overloaded step of
//! the open model completes what the target can do, so its achieved rate measures the
//! capacity; in the users model, Little's law does the same (see `super::estimate`).
//! With such an estimate `e` inside the gap ([`Probing::Estimates`]), the next steps
//! bracket it: just below (`e·(1 − 0.45·precision)`, expected to pass) and just above
//! (expected to fail): two steps and a confirmation instead of a bisection from the
//! failed value down. The probe above clears half the precision and the overshoot the
//! pass rule forgives (the keep-up rule lets an open-model step fall 2 % behind and
//! pass), so that it fails on a target at `e`; the probe below is then raised, if need
//! be, to within precision of it, so that the two end the search. An estimate at or
//! below the best pass probes just above the pass. A probe below that fails brings its
//! own estimate; a probe above that passes moves the estimate just above it once (the
//! boundary is most often a little higher: a rate limiter's burst lets a short step
//! through a few percent over its rate); a load within the bracket that fails without
//! measuring a capacity (the confirmation of a pass at the capacity itself, where a
//! queue is not stable) moves the estimate to it once; a second surprise falls back to
//! bisecting. A failure already within the bracket lets the probe below stop within
//! precision of it. [`Probing::Bisect`] ignores estimates: the order before them.
//!
//! Trials: the boundary loads are run until their [`Trials`] decide them (see
//! [`super::trials`]): the best pass until N − K of its runs passed, the lowest fail
//! until more than K failed. A boundary that fails its trials becomes the lowest fail
//! and the search resumes below it; a lowest fail that passes its trials becomes the
//! best pass and the search resumes above it.

use super::trials::{Load, Loads, Trials};

/// The values a search may try: whole numbers from `from` to `to`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    /// First value tried (at least 1).
    pub from: f64,
    /// Highest value tried (at least `from`).
    pub to: f64,
    /// Relative gap between best pass and lowest fail at which bisecting stops, e.g.
    /// 0.05 for 5 %. The gap never needs to be below 1 (values are whole numbers).
    pub precision: f64,
}

/// A search range whose bounds do not hold.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RangeError {
    /// `--from` below 1 or not finite.
    #[error("--from: expected a number >= 1, found {from}")]
    From {
        /// The value given.
        from: f64,
    },
    /// `--to` below `--from` or not finite.
    #[error("--to: expected a number >= --from ({from}), found {to}")]
    To {
        /// `--from`.
        from: f64,
        /// The value given.
        to: f64,
    },
    /// `--precision` outside (0 %, 100 %).
    #[error("--precision: expected a percentage between 0% and 100%, found {}%", precision * 100.0)]
    Precision {
        /// The value given, as a fraction.
        precision: f64,
    },
}

impl Range {
    /// Checks the bounds: `1 <= from <= to`, both finite, `0 < precision < 1`.
    pub fn validate(&self) -> Result<(), RangeError> {
        if !(self.from.is_finite() && self.from >= 1.0) {
            return Err(RangeError::From { from: self.from });
        }
        if !(self.to.is_finite() && self.to >= self.from) {
            return Err(RangeError::To {
                from: self.from,
                to: self.to,
            });
        }
        if !(self.precision > 0.0 && self.precision < 1.0) {
            return Err(RangeError::Precision {
                precision: self.precision,
            });
        }
        Ok(())
    }
}

/// `find --strategy`: how the search closes in on the boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Order {
    /// Jump to where failed steps say the boundary is, then bracket it.
    #[default]
    Estimate,
    /// Plain bisection between the best pass and the lowest fail (the order before
    /// estimates, kept for comparison).
    Bisect,
}

/// Whether failed steps' estimates of the boundary steer the search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Probing {
    /// Plain bisection between the best pass and the lowest fail.
    Bisect,
    /// Bracket each estimate (see the module doc).
    Estimates {
        /// Share above the estimate that a load must exceed to be sure to fail: the
        /// pass rule's own tolerance (0 when it has none).
        overshoot: f64,
    },
}

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    /// Run a step at this value; `confirm` when the value ran before (another trial).
    Run {
        /// Rate or user count.
        value: f64,
        /// True for a further trial of a load.
        confirm: bool,
    },
    /// The search is over.
    Done(Conclusion),
}

/// How a search ended, as far as the strategy can tell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Conclusion {
    /// `ceiling` passed its trials and `failed` (within precision above it) failed its.
    Ceiling {
        /// Highest value that passed its trials.
        ceiling: f64,
        /// Lowest value that failed its trials.
        failed: f64,
    },
    /// Every step up to `to` passed (its trials too): the ceiling is at least `to`.
    Range(f64),
    /// The very first value failed its trials.
    NothingPassed(f64),
    /// The lowest passing value failed its trials; nothing is known to pass.
    NotReproducible(f64),
}

/// The search order's state. Feed it every step's verdict in order.
#[derive(Debug, Clone)]
pub struct Strategy {
    range: Range,
    trials: Trials,
    probing: Probing,
    loads: Loads,
    /// The best pass so far (leaning pass), if any.
    lo: Option<f64>,
    /// The lowest fail above `lo` (leaning fail), if any.
    hi: Option<f64>,
    /// Where the last failed step said the boundary is, until a probe uses it up.
    estimate: Option<f64>,
    /// Whether a probe above an estimate has passed once already (see `record`).
    nudged: bool,
}

impl Strategy {
    /// A new search over `range` (which should have passed [`Range::validate`]), its
    /// boundary decided by `trials` (validated too).
    pub fn new(range: Range, trials: Trials, probing: Probing) -> Strategy {
        Strategy {
            range: Range {
                from: range.from.round().max(1.0),
                to: range.to.round().max(range.from.round().max(1.0)),
                ..range
            },
            trials,
            probing,
            loads: Loads::default(),
            lo: None,
            hi: None,
            estimate: None,
            nudged: false,
        }
    }

    /// The runs at `value` so far.
    pub fn load(&self, value: f64) -> Option<Load> {
        self.loads.get(value)
    }

    /// The trial counts the strategy decides by.
    pub fn trials(&self) -> Trials {
        self.trials
    }

    /// The next step to run, or the conclusion once there is one.
    pub fn next(&self) -> Next {
        let run = |value: f64| Next::Run {
            value,
            confirm: self.loads.get(value).is_some(),
        };
        let decided = |v: f64| self.loads.get(v).and_then(|l| l.decided(self.trials));
        match (self.lo, self.hi) {
            (None, None) => run(self.range.from),
            (None, Some(hi)) => match decided(hi) {
                None => run(hi),
                Some(_) if self.loads.get(hi).is_some_and(|l| l.passed > 0) => {
                    Next::Done(Conclusion::NotReproducible(hi))
                }
                Some(_) => Next::Done(Conclusion::NothingPassed(hi)),
            },
            (Some(lo), None) if lo >= self.range.to => match decided(lo) {
                None => run(lo),
                Some(_) => Next::Done(Conclusion::Range(lo)),
            },
            (Some(lo), None) => run((lo * 2.0).min(self.range.to).round()),
            (Some(lo), Some(hi)) if self.close_enough(lo, hi) => match (decided(lo), decided(hi)) {
                (None, _) => run(lo),
                (_, None) => run(hi),
                _ => Next::Done(Conclusion::Ceiling {
                    ceiling: lo,
                    failed: hi,
                }),
            },
            (Some(lo), Some(hi)) => match self.probe(lo, hi) {
                Some(value) => run(value),
                None => run(((lo + hi) / 2.0).floor()),
            },
        }
    }

    /// The two values that bracket estimate `e`: below (expected to pass) and above
    /// (expected to fail), `None` when estimates are not used.
    fn bracket(&self, e: f64) -> Option<(f64, f64)> {
        let Probing::Estimates { overshoot } = self.probing else {
            return None;
        };
        let p = self.range.precision;
        // Just under half the precision each way, so that the two probes' gap fits
        // within precision of the lower one and the search can end on them...
        let half = p * 0.45;
        // ...but the probe above must also clear what the pass rule forgives, or a
        // target at exactly `e` passes it (half a percent more for the estimate's own
        // error), and then the probe below moves up to stay within precision of it.
        let above = (e * (1.0 + half.max(overshoot + 0.005))).ceil();
        // (Whole numbers: a gap of one is always close enough.)
        let below = (e * (1.0 - half))
            .floor()
            .max((above / (1.0 + p)).min(above - 1.0).ceil());
        Some((below, above))
    }

    /// The value that brackets the estimate next, if one is left and lies in the gap.
    fn probe(&self, lo: f64, hi: f64) -> Option<f64> {
        let e = self.estimate?;
        let (below, above) = self.bracket(e)?;
        // A load that already failed near the estimate does the probe above's job: the
        // probe below then only has to come within precision of that failure, as long
        // as that keeps it at or under the estimate (where it is expected to pass).
        let near_hi = (hi / (1.0 + self.range.precision)).min(hi - 1.0).ceil();
        let below = if near_hi <= e {
            below.max(near_hi)
        } else {
            below
        };
        [below, above.max(lo + 1.0)]
            .into_iter()
            .find(|&v| v > lo && v < hi)
    }

    /// Records the verdict of the step [`Strategy::next`] asked for at `value`.
    pub fn record(&mut self, value: f64, passed: bool) {
        self.record_measured(value, passed, None);
    }

    /// Records a verdict with what the step measured of the boundary: for a failed
    /// step, the value (rate or users) the target's achieved throughput says it can
    /// take, when the step could tell.
    pub fn record_measured(&mut self, value: f64, passed: bool, estimate: Option<f64>) {
        if matches!(self.next(), Next::Done(_)) {
            return;
        }
        match (passed, estimate) {
            // A fresh estimate from a failure replaces the old one; a probe that passed
            // where it was expected to keeps it for the probe above.
            (false, Some(e)) if e.is_finite() && e > 0.0 => self.estimate = Some(e),
            (false, _) => {
                self.estimate = match self.estimate.and_then(|e| self.bracket(e)) {
                    // The probe above (or anything higher) failed as it was expected to:
                    // the estimate stands for the probe below.
                    Some((_, above)) if value >= above => self.estimate,
                    // A failure that measured no capacity (it kept up and failed on
                    // latency) at the estimated capacity itself. At ρ = 1 there is no
                    // spare capacity to drain a queue after any stall, so a verdict
                    // there is luck (most often a confirmation of a pass). The boundary
                    // is at or just under this load, and the probe just below it
                    // decides, where bisecting from the last pass would take four steps
                    // more. Once: a second surprise falls back to bisecting.
                    Some((below, _))
                        if value >= below && !std::mem::replace(&mut self.nudged, true) =>
                    {
                        Some(value)
                    }
                    _ => None,
                };
            }
            (true, _) => {
                let bracket = self.estimate.and_then(|e| self.bracket(e));
                if bracket.is_some_and(|(_, above)| value >= above) {
                    // It passed where it should have failed: the estimate is low. Most
                    // often by a little (a rate limiter's burst lets a short step
                    // through a few percent above its rate), so once, the boundary is
                    // taken to be just above this pass and bracketed again; a second
                    // surprise falls back to bisecting.
                    self.estimate = if std::mem::replace(&mut self.nudged, true) {
                        None
                    } else {
                        Some(value * (1.0 + self.range.precision * 0.45))
                    };
                }
            }
        }
        let load = self.loads.record(value, passed);
        if load.leans_pass(self.trials) {
            if self.hi == Some(value) {
                // The lowest fail passed its trials: the search resumes above it.
                self.hi = self.loads.lowest_fail_above(value, self.trials);
            }
            if self.lo.is_none_or(|lo| lo < value) {
                self.lo = Some(value);
            }
        } else if load.leans_fail(self.trials) {
            self.hi = Some(self.hi.map_or(value, |hi| hi.min(value)));
            if self.lo == Some(value) {
                // The best pass failed its trials: the best pass below it takes over.
                self.lo = self.loads.best_pass_below(value, self.trials);
            }
        }
        // Otherwise the load's trials disagree and are not decided yet: it stays where
        // it was, and `next` runs it again.
    }

    fn close_enough(&self, lo: f64, hi: f64) -> bool {
        hi - lo <= (self.range.precision * lo).max(1.0)
    }
}

#[cfg(test)]
#[path = "strategy_tests.rs"]
mod tests;
