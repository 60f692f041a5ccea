//! The open model's pacer: given the elapsed time and the arrivals this thread has
//! already started, how long to wait before the next one, or whether to stop.
//!
//! Each engine thread paces its [`Slice`] of the run's [`Schedule`]: every n-th arrival
//! (thread `k` of `n` takes arrivals `k, k+n, k+2n, ...`; inside shard `i` of `N`,
//! every `N·n`-th), so together they follow the schedule exactly and their arrivals
//! interleave evenly instead of bunching.

use std::time::Duration;

use headroom_plan::{Schedule, Slice};

/// What the pacer says to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// Start the next arrival after waiting this long (zero: it is due or late).
    Wait(Duration),
    /// The schedule has no more arrivals for this thread.
    Stop,
}

/// One thread's share of an arrival schedule.
#[derive(Debug, Clone)]
pub struct Pacer {
    schedule: Schedule,
    slice: Slice,
}

impl Pacer {
    /// The pacer of `slice` of `schedule` (an engine thread's, within its shard's).
    pub fn new(schedule: Schedule, slice: Slice) -> Pacer {
        Pacer { schedule, slice }
    }

    /// When this thread's arrival number `sent` is due, from the start of the run.
    pub fn due(&self, sent: u64) -> Option<Duration> {
        self.slice.time_of_arrival(&self.schedule, sent)
    }

    /// Given the elapsed time and the arrivals already started, how long to wait
    /// before starting the next one.
    pub fn pace(&self, elapsed: Duration, sent: u64) -> Pace {
        match self.due(sent) {
            Some(due) => Pace::Wait(due.saturating_sub(elapsed)),
            None => Pace::Stop,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_plan::Stage;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn constant_rate_table() {
        // 100/s for 1 s over 2 threads: thread 1 owns arrivals 1, 3, 5... at 10, 30, 50 ms.
        let p = Pacer::new(
            Schedule::constant(100.0, ms(1000)),
            Slice::new(1, 2).unwrap(),
        );
        let cases = [
            (ms(0), 0, Pace::Wait(ms(10))),
            (ms(10), 0, Pace::Wait(ms(0))),
            (ms(25), 1, Pace::Wait(ms(5))),
            (ms(80), 1, Pace::Wait(ms(0))), // late: go now
            (ms(0), 49, Pace::Wait(ms(990))),
            (ms(0), 50, Pace::Stop),
        ];
        for (elapsed, sent, want) in cases {
            let got = p.pace(elapsed, sent);
            match (got, want) {
                (Pace::Wait(g), Pace::Wait(w)) => {
                    assert!(
                        g.abs_diff(w) < Duration::from_micros(1),
                        "{elapsed:?},{sent}: {g:?} vs {w:?}"
                    )
                }
                _ => assert_eq!(got, want, "{elapsed:?},{sent}"),
            }
        }
    }

    #[test]
    fn threads_together_cover_every_arrival_once() {
        let s = Schedule::new(
            0.0,
            vec![Stage {
                duration: ms(2000),
                target: 300.0,
            }],
        );
        let total = s.arrivals_by(s.duration()).ceil() as usize;
        let mut times = Vec::new();
        for k in 0..3 {
            let p = Pacer::new(s.clone(), Slice::new(k, 3).unwrap());
            let mut sent = 0;
            while let Some(t) = p.due(sent) {
                times.push(t);
                sent += 1;
            }
        }
        assert_eq!(times.len(), total);
        times.sort();
        for (n, t) in times.iter().enumerate() {
            assert_eq!(Some(*t), s.time_of_arrival(n as u64));
        }
    }
}
