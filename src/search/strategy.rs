//! [`Strategy`]: which rate (or user count) a ceiling search tries next, as pure data.
//!
//! The driver asks [`Strategy::next`] for a [`Next`] and, after running the step, tells
//! [`Strategy::record`] whether it passed. No clock, no engine: the whole search order
//! is testable from a table of verdicts.
//!
//! The order: grow geometrically (×2) from `from` until a step fails or `to` passes;
//! then close in on the boundary until the gap between the best pass and the lowest
//! fail is within `precision` of the pass; then run the best pass once more to confirm
//! it. A failed confirmation makes that value the new lowest fail and the search
//! resumes below it.
//!
//! Closing in: a failed step usually says where the boundary is. An overloaded step of
//! the open model completes what the target can do, so its achieved rate measures the
//! capacity ([`Strategy::record_measured`]). Not yet fed by the driver, which still
//! calls [`Strategy::record`] (plain bisection): with the keep-up rule's 2 % tolerance
//! a probe just above the estimate can pass, so the probe must first be placed past
//! that tolerance (a search in the suite took more steps, not fewer, without it).
//! With such an estimate `e` inside the gap, the next steps bracket it, just below
//! (`e·(1 − 0.45·precision)`, expected to pass) and just above (`e·(1 + 0.45·precision)`,
//! expected to fail): two steps and a confirmation instead of a bisection from the
//! failed value down. An estimate at or below the best pass probes just above the pass.
//! A probe that surprises (the one below fails, the one above passes) falls back to
//! bisecting; a failed probe brings its own estimate.

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

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    /// Run a step at this value; `confirm` when it re-runs the best pass.
    Run {
        /// Rate or user count.
        value: f64,
        /// True for the confirmation run of the boundary.
        confirm: bool,
    },
    /// The search is over.
    Done(Conclusion),
}

/// How a search ended, as far as the strategy can tell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Conclusion {
    /// `ceiling` passed twice and `failed` (within precision above it) failed.
    Ceiling {
        /// Highest value that passed, confirmed.
        ceiling: f64,
        /// Lowest value that failed.
        failed: f64,
    },
    /// Every step up to `to` passed (confirmed): the ceiling is at least `to`.
    Range(f64),
    /// The very first step failed.
    NothingPassed(f64),
    /// The lowest passing value failed when run again; nothing is known to pass.
    NotReproducible(f64),
}

/// The search order's state. Feed it every step's verdict in order.
#[derive(Debug, Clone)]
pub struct Strategy {
    range: Range,
    passes: Vec<f64>,
    lo: Option<f64>,
    hi: Option<f64>,
    confirming: bool,
    done: Option<Conclusion>,
    /// Where the last failed step said the boundary is, until a probe uses it up.
    estimate: Option<f64>,
}

impl Strategy {
    /// A new search over `range` (which should have passed [`Range::validate`]).
    pub fn new(range: Range) -> Strategy {
        Strategy {
            range: Range {
                from: range.from.round().max(1.0),
                to: range.to.round().max(range.from.round().max(1.0)),
                ..range
            },
            passes: Vec::new(),
            lo: None,
            hi: None,
            confirming: false,
            done: None,
            estimate: None,
        }
    }

    /// The next step to run, or the conclusion once there is one.
    pub fn next(&self) -> Next {
        if let Some(done) = self.done {
            return Next::Done(done);
        }
        let run = |value: f64, confirm| Next::Run { value, confirm };
        match (self.lo, self.hi) {
            (None, None) => run(self.range.from, false),
            (Some(lo), None) if lo >= self.range.to => run(lo, true),
            (Some(lo), None) => run((lo * 2.0).min(self.range.to).round(), false),
            (Some(lo), Some(hi)) if self.close_enough(lo, hi) => run(lo, true),
            (Some(lo), Some(hi)) => match self.probe(lo, hi) {
                Some(value) => run(value, false),
                None => run(((lo + hi) / 2.0).floor(), false),
            },
            // `record` concludes as soon as a failure leaves no pass below it.
            (None, Some(hi)) => Next::Done(Conclusion::NothingPassed(hi)),
        }
    }

    /// The value that brackets the estimate next, if one is left and lies in the gap.
    fn probe(&self, lo: f64, hi: f64) -> Option<f64> {
        let e = self.estimate?;
        // Just under half the precision each way: the two probes' gap must fit within
        // precision of the lower one for the search to end on them.
        let half = self.range.precision * 0.45;
        let below = (e * (1.0 - half)).floor();
        let above = (e * (1.0 + half)).ceil().max(lo + 1.0);
        [below, above].into_iter().find(|&v| v > lo && v < hi)
    }

    /// Records the verdict of the step [`Strategy::next`] asked for at `value`.
    pub fn record(&mut self, value: f64, passed: bool) {
        self.record_measured(value, passed, None);
    }

    /// Records a verdict with what the step measured of the boundary: for a failed
    /// step, the value (rate or users) the target's achieved throughput says it can
    /// take, when the step could tell.
    pub fn record_measured(&mut self, value: f64, passed: bool, estimate: Option<f64>) {
        if self.done.is_some() {
            return;
        }
        match (passed, estimate) {
            // A fresh estimate from a failure replaces the old one; a probe that passed
            // where it was expected to keeps it for the probe above.
            (false, Some(e)) if e.is_finite() && e > 0.0 => self.estimate = Some(e),
            (false, _) => self.estimate = None,
            (true, _) => {
                if self.estimate.is_some_and(|e| value >= e) {
                    // It passed above the estimate: the estimate is wrong, bisect.
                    self.estimate = None;
                }
            }
        }
        if std::mem::take(&mut self.confirming) {
            self.record_confirmation(value, passed);
            return;
        }
        if passed {
            self.passes.push(value);
            self.lo = Some(self.lo.map_or(value, |lo| lo.max(value)));
            if self.lo.is_some_and(|lo| lo >= self.range.to) || self.closing() {
                self.confirming = true;
            }
        } else {
            self.hi = Some(self.hi.map_or(value, |hi| hi.min(value)));
            match self.lo {
                None => self.done = Some(Conclusion::NothingPassed(value)),
                Some(_) => self.confirming = self.closing(),
            }
        }
    }

    /// Whether the bounds are now close enough that the next step is a confirmation.
    fn closing(&self) -> bool {
        matches!((self.lo, self.hi), (Some(lo), Some(hi)) if self.close_enough(lo, hi))
    }

    fn close_enough(&self, lo: f64, hi: f64) -> bool {
        hi - lo <= (self.range.precision * lo).max(1.0)
    }

    fn record_confirmation(&mut self, value: f64, passed: bool) {
        if passed {
            self.done = Some(match self.hi {
                Some(failed) => Conclusion::Ceiling {
                    ceiling: value,
                    failed,
                },
                None => Conclusion::Range(value),
            });
            return;
        }
        // The boundary did not hold up: it becomes the lowest fail, and the best pass
        // below it (if any) the new lower bound.
        self.passes.retain(|&p| p < value);
        self.hi = Some(self.hi.map_or(value, |hi| hi.min(value)));
        self.lo = self.passes.iter().copied().reduce(f64::max);
        match self.lo {
            None => self.done = Some(Conclusion::NotReproducible(value)),
            Some(_) => self.confirming = self.closing(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a strategy against a pass rule and returns the values tried (confirmations
    /// marked negative) and the conclusion.
    fn drive(range: Range, mut passes: impl FnMut(f64, bool) -> bool) -> (Vec<f64>, Conclusion) {
        drive_with(range, |value, confirm| (passes(value, confirm), None))
    }

    /// As [`drive`], with each verdict's estimate of the boundary (if any).
    fn drive_with(
        range: Range,
        mut verdict: impl FnMut(f64, bool) -> (bool, Option<f64>),
    ) -> (Vec<f64>, Conclusion) {
        let mut s = Strategy::new(range);
        let mut tried = Vec::new();
        for _ in 0..200 {
            match s.next() {
                Next::Run { value, confirm } => {
                    tried.push(if confirm { -value } else { value });
                    let (passed, estimate) = verdict(value, confirm);
                    s.record_measured(value, passed, estimate);
                }
                Next::Done(c) => return (tried, c),
            }
        }
        panic!("search did not end: {tried:?}");
    }

    fn range(from: f64, to: f64) -> Range {
        Range {
            from,
            to,
            precision: 0.05,
        }
    }

    #[test]
    fn grows_then_bisects_then_confirms() {
        let (tried, c) = drive(range(100.0, 1e6), |v, _| v <= 800.0);
        assert_eq!(
            tried,
            [100.0, 200.0, 400.0, 800.0, 1600.0, 1200.0, 1000.0, 900.0, 850.0, 825.0, -800.0]
        );
        assert_eq!(
            c,
            Conclusion::Ceiling {
                ceiling: 800.0,
                failed: 825.0
            }
        );
    }

    /// As [`drive`], with each failed step measuring the capacity as an overloaded
    /// open-model step does: it completes `capacity` and no more.
    fn drive_measured(range: Range, capacity: f64) -> (Vec<f64>, Conclusion) {
        drive_with(range, |value, _| {
            let passed = value <= capacity;
            (passed, (!passed).then_some(capacity))
        })
    }

    #[test]
    fn a_measured_capacity_brackets_the_boundary_in_two_steps() {
        // The demo: the first overloaded step (1600/s) completed 800/s.
        let (tried, c) = drive_measured(range(100.0, 1e6), 800.0);
        assert_eq!(tried, [100.0, 200.0, 400.0, 800.0, 1600.0, 818.0, -800.0]);
        assert_eq!(
            c,
            Conclusion::Ceiling {
                ceiling: 800.0,
                failed: 818.0
            }
        );
        // A capacity inside the gap: just below it, then just above, then confirm.
        let (tried, _) = drive_measured(range(100.0, 1e6), 1000.0);
        assert_eq!(
            tried,
            [100.0, 200.0, 400.0, 800.0, 1600.0, 977.0, 1023.0, -977.0]
        );
    }

    #[test]
    fn a_measured_capacity_finds_the_same_ceiling_within_precision_in_fewer_steps() {
        for capacity in [1.0, 7.0, 13.0, 99.0, 640.0, 801.0, 12_345.0, 999_999.0] {
            let (bisected, _) = drive(range(1.0, 1e6), |v, _| v <= capacity);
            let (tried, c) = drive_measured(range(1.0, 1e6), capacity);
            let Conclusion::Ceiling { ceiling, failed } = c else {
                panic!("capacity {capacity}: {c:?}")
            };
            assert!(
                ceiling <= capacity && failed > capacity,
                "{capacity}: {c:?}"
            );
            assert!(
                failed - ceiling <= (ceiling * 0.05).max(1.0),
                "{capacity}: {c:?}"
            );
            assert!(
                tried.len() <= bisected.len(),
                "{capacity}: {tried:?} vs {bisected:?}"
            );
        }
    }

    #[test]
    fn a_wrong_estimate_falls_back_to_bisecting() {
        // Every failure claims 300 though the target takes 800: the probes surprise,
        // and the search still ends at 800.
        let mut s = Strategy::new(range(100.0, 1e6));
        let mut tried = Vec::new();
        while let Next::Run { value, .. } = s.next() {
            tried.push(value);
            let passed = value <= 800.0;
            s.record_measured(value, passed, (!passed).then_some(300.0));
            assert!(tried.len() < 50, "{tried:?}");
        }
        assert!(
            matches!(
                s.next(),
                Next::Done(Conclusion::Ceiling { ceiling: 800.0, .. })
            ),
            "{tried:?}"
        );
    }

    #[test]
    fn finds_any_ceiling_within_precision() {
        for capacity in [1.0, 7.0, 13.0, 99.0, 640.0, 801.0, 12_345.0, 999_999.0] {
            let (_, c) = drive(range(1.0, 1e6), |v, _| v <= capacity);
            let Conclusion::Ceiling { ceiling, failed } = c else {
                panic!("capacity {capacity}: {c:?}")
            };
            assert!(
                ceiling <= capacity && failed > capacity,
                "{capacity}: {c:?}"
            );
            assert!(
                failed - ceiling <= (ceiling * 0.05).max(1.0),
                "{capacity}: {c:?}"
            );
        }
    }

    #[test]
    fn user_counts_bisect_to_one() {
        let (tried, c) = drive(range(1.0, 100_000.0), |v, _| v <= 13.0);
        assert_eq!(tried, [1.0, 2.0, 4.0, 8.0, 16.0, 12.0, 14.0, 13.0, -13.0]);
        assert_eq!(
            c,
            Conclusion::Ceiling {
                ceiling: 13.0,
                failed: 14.0
            }
        );
    }

    #[test]
    fn everything_passing_stops_at_to_after_confirming_it() {
        let (tried, c) = drive(range(100.0, 500.0), |_, _| true);
        assert_eq!(tried, [100.0, 200.0, 400.0, 500.0, -500.0]);
        assert_eq!(c, Conclusion::Range(500.0));
    }

    #[test]
    fn a_failing_first_step_ends_the_search() {
        let (tried, c) = drive(range(100.0, 1e6), |_, _| false);
        assert_eq!(tried, [100.0]);
        assert_eq!(c, Conclusion::NothingPassed(100.0));
    }

    #[test]
    fn a_failed_confirmation_bisects_below_it() {
        // 800 passes once, then fails when run again; 780 holds.
        let mut runs_at_800 = 0;
        let (tried, c) = drive(range(100.0, 1e6), |v, _| {
            if v == 800.0 {
                runs_at_800 += 1;
                runs_at_800 == 1
            } else {
                v <= 780.0
            }
        });
        assert_eq!(
            &tried[..11],
            [100.0, 200.0, 400.0, 800.0, 1600.0, 1200.0, 1000.0, 900.0, 850.0, 825.0, -800.0]
        );
        assert_eq!(&tried[11..], [600.0, 700.0, 750.0, 775.0, -775.0]);
        assert_eq!(
            c,
            Conclusion::Ceiling {
                ceiling: 775.0,
                failed: 800.0
            }
        );
    }

    #[test]
    fn an_unrepeatable_first_pass_finds_nothing() {
        let (tried, c) = drive(range(100.0, 150.0), |v, confirm| v == 100.0 && !confirm);
        assert_eq!(tried, [100.0, 150.0, 125.0, 112.0, 106.0, 103.0, -100.0]);
        assert_eq!(c, Conclusion::NotReproducible(100.0));
    }

    #[test]
    fn validates_the_range() {
        assert!(range(1.0, 1.0).validate().is_ok());
        assert!(range(0.5, 10.0).validate().is_err());
        assert!(range(10.0, 5.0).validate().is_err());
        assert!(range(10.0, f64::INFINITY).validate().is_err());
        let mut r = range(1.0, 10.0);
        r.precision = 0.0;
        assert!(r.validate().is_err());
    }
}
