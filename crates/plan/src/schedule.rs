//! A [`Schedule`] is a value over time made of linear stages: the arrival rate of the
//! open model, or the user count of the closed one. It answers two questions exactly,
//! with no clock: the value at an elapsed time, and when the n-th arrival is due.

use std::time::Duration;

/// One linear ramp: over `duration`, the value moves from the previous stage's target
/// (or the schedule's start) to `target`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    /// How long the ramp lasts.
    pub duration: Duration,
    /// Value reached at the end of the stage.
    pub target: f64,
}

/// A piecewise-linear value over time.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    start: f64,
    stages: Vec<Stage>,
}

impl Schedule {
    /// A schedule starting at `start` and following `stages` in order.
    pub fn new(start: f64, stages: Vec<Stage>) -> Schedule {
        Schedule { start, stages }
    }

    /// A constant value held for `duration`.
    pub fn constant(value: f64, duration: Duration) -> Schedule {
        Schedule::new(
            value,
            vec![Stage {
                duration,
                target: value,
            }],
        )
    }

    /// The stages, in order.
    pub fn stages(&self) -> &[Stage] {
        &self.stages
    }

    /// The value at the very start.
    pub fn start(&self) -> f64 {
        self.start
    }

    /// Total length of all stages (at most `Duration::MAX`: a sum cannot panic).
    pub fn duration(&self) -> Duration {
        self.stages
            .iter()
            .fold(Duration::ZERO, |total, s| total.saturating_add(s.duration))
    }

    /// The highest value the schedule reaches.
    pub fn peak(&self) -> f64 {
        self.stages
            .iter()
            .map(|s| s.target)
            .fold(self.start, f64::max)
    }

    /// Returns a copy with every value multiplied by `factor`.
    pub fn scaled(&self, factor: f64) -> Schedule {
        Schedule {
            start: self.start * factor,
            stages: self
                .stages
                .iter()
                .map(|s| Stage {
                    duration: s.duration,
                    target: s.target * factor,
                })
                .collect(),
        }
    }

    /// The value at `elapsed`; after the end, the last target.
    pub fn value_at(&self, elapsed: Duration) -> f64 {
        let mut from = self.start;
        let mut t = elapsed.as_secs_f64();
        for stage in &self.stages {
            let d = stage.duration.as_secs_f64();
            if t < d {
                return from + (stage.target - from) * (t / d);
            }
            t -= d;
            from = stage.target;
        }
        from
    }

    /// The number of arrivals due by `elapsed` when the value is a rate per second
    /// (the integral of the rate from 0 to `elapsed`).
    pub fn arrivals_by(&self, elapsed: Duration) -> f64 {
        let mut from = self.start;
        let mut t = elapsed.as_secs_f64();
        let mut total = 0.0;
        for stage in &self.stages {
            let d = stage.duration.as_secs_f64();
            let span = t.min(d);
            let slope = if d > 0.0 {
                (stage.target - from) / d
            } else {
                0.0
            };
            total += from * span + slope * span * span / 2.0;
            if t <= d {
                return total;
            }
            t -= d;
            from = stage.target;
        }
        total
    }

    /// When arrival number `n` (0-based) is due, reading the value as a rate per
    /// second: the time at which [`Schedule::arrivals_by`] reaches `n`. `None` when
    /// the schedule ends first.
    pub fn time_of_arrival(&self, n: u64) -> Option<Duration> {
        let mut remaining = n as f64;
        let mut from = self.start;
        let mut offset = 0.0;
        for stage in &self.stages {
            let d = stage.duration.as_secs_f64();
            let slope = if d > 0.0 {
                (stage.target - from) / d
            } else {
                0.0
            };
            let in_stage = from * d + slope * d * d / 2.0;
            if remaining < in_stage || (remaining == 0.0 && d > 0.0) {
                // Solve from*τ + slope*τ²/2 = remaining. This form stays exact when
                // slope is zero or negative, where the textbook one divides by zero.
                let disc = from * from + 2.0 * slope * remaining;
                let root = disc.max(0.0).sqrt();
                let denom = from + root;
                let tau = if denom > 0.0 {
                    2.0 * remaining / denom
                } else {
                    0.0
                };
                return Some(Duration::from_secs_f64(offset + tau.min(d)));
            }
            remaining -= in_stage;
            offset += d;
            from = stage.target;
        }
        None
    }

    /// The first `length` of the schedule: stages past it dropped, the one it falls
    /// in cut there at the value it has reached. A schedule no longer than `length`
    /// is returned whole.
    pub fn until(&self, length: Duration) -> Schedule {
        let mut stages = Vec::new();
        let mut left = length;
        let mut from = self.start;
        for stage in &self.stages {
            if left.is_zero() {
                break;
            }
            if stage.duration <= left {
                stages.push(*stage);
                left -= stage.duration;
            } else {
                let part = left.as_secs_f64() / stage.duration.as_secs_f64();
                stages.push(Stage {
                    duration: left,
                    target: from + (stage.target - from) * part,
                });
                break;
            }
            from = stage.target;
        }
        Schedule::new(self.start, stages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_cut_short_keeps_its_shape_up_to_the_cut() {
        let s = Schedule::new(
            0.0,
            vec![
                Stage {
                    duration: secs(2.0),
                    target: 100.0,
                },
                Stage {
                    duration: secs(2.0),
                    target: 100.0,
                },
            ],
        );
        let cut = s.until(secs(1.0));
        assert_eq!(cut.duration(), secs(1.0));
        assert!((cut.value_at(secs(1.0)) - 50.0).abs() < 1e-9);
        assert!((cut.arrivals_by(secs(1.0)) - s.arrivals_by(secs(1.0))).abs() < 1e-9);
        assert_eq!(s.until(secs(3.0)).duration(), secs(3.0));
        assert_eq!(s.until(secs(9.0)), s);
        assert_eq!(s.until(Duration::ZERO).duration(), Duration::ZERO);
        assert_eq!(s.until(Duration::ZERO).time_of_arrival(0), None);
    }

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn constant_rate_spaces_arrivals_evenly() {
        let s = Schedule::constant(100.0, secs(1.0));
        let cases = [
            (0, Some(0.0)),
            (1, Some(0.01)),
            (50, Some(0.5)),
            (99, Some(0.99)),
            (100, None),
        ];
        for (n, want) in cases {
            let got = s.time_of_arrival(n).map(|d| d.as_secs_f64());
            match (got, want) {
                (Some(g), Some(w)) => assert!((g - w).abs() < 1e-9, "arrival {n}: {g} vs {w}"),
                (g, w) => assert_eq!(g, w, "arrival {n}"),
            }
        }
    }

    #[test]
    fn ramp_from_zero_follows_the_integral() {
        // 0 → 100/s over 10 s: 500 arrivals in all, n due at sqrt(2n·10/100).
        let s = Schedule::new(
            0.0,
            vec![Stage {
                duration: secs(10.0),
                target: 100.0,
            }],
        );
        assert!((s.arrivals_by(secs(10.0)) - 500.0).abs() < 1e-9);
        for n in [1u64, 10, 125, 499] {
            let want = (2.0 * n as f64 * 10.0 / 100.0).sqrt();
            let got = s.time_of_arrival(n).unwrap().as_secs_f64();
            assert!((got - want).abs() < 1e-9, "arrival {n}: {got} vs {want}");
        }
        assert_eq!(s.time_of_arrival(500), None);
    }

    #[test]
    fn ramp_down_and_multi_stage() {
        let s = Schedule::new(
            100.0,
            vec![
                Stage {
                    duration: secs(1.0),
                    target: 100.0,
                },
                Stage {
                    duration: secs(2.0),
                    target: 0.0,
                },
            ],
        );
        assert!((s.arrivals_by(secs(3.0)) - 200.0).abs() < 1e-9);
        assert!((s.value_at(secs(2.0)) - 50.0).abs() < 1e-9);
        // Arrival 175 is due where the ramp down has let 75 more through:
        // 100τ - 25τ² = 75 → τ = 2 - 1 = 1 → t = 2 s.
        let t = s.time_of_arrival(175).unwrap().as_secs_f64();
        assert!((t - 2.0).abs() < 1e-9, "{t}");
        assert_eq!(s.time_of_arrival(200), None);
    }

    #[test]
    fn arrival_times_are_monotonic_and_match_the_integral() {
        let s = Schedule::new(
            10.0,
            vec![
                Stage {
                    duration: secs(2.0),
                    target: 300.0,
                },
                Stage {
                    duration: secs(3.0),
                    target: 300.0,
                },
                Stage {
                    duration: secs(1.0),
                    target: 40.0,
                },
            ],
        );
        let mut last = Duration::ZERO;
        let mut n = 0;
        while let Some(t) = s.time_of_arrival(n) {
            assert!(t >= last);
            assert!((s.arrivals_by(t) - n as f64).abs() < 1e-6);
            last = t;
            n += 1;
        }
        assert_eq!(n as f64, s.arrivals_by(s.duration()).ceil());
    }
}
