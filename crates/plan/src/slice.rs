//! A [`Slice`] is one part of a run's load out of `count` equal parts: a shard's share
//! of the whole run, or an engine thread's share of its shard. It is pure arithmetic
//! over the plan's [`Schedule`], with no clock, so every part can work out its own
//! share alone and the parts together are exactly the whole.
//!
//! - Open model: part `index` takes arrivals `index, index + count, index + 2·count, ...`
//!   of the one schedule ([`Slice::arrival`], [`Slice::time_of_arrival`]). N parts
//!   together offer the single-process schedule arrival for arrival, and their
//!   arrivals interleave instead of bunching.
//! - Closed model: a user count splits evenly, the first `total mod count` parts taking
//!   one more ([`Slice::users`]); a staged count splits the same way at every instant,
//!   so the parts always add up to the schedule's count.
//!
//! Slices nest: thread `j` of `T` inside shard `i` of `N` is [`Slice::within`], still a
//! plain stride over the one schedule for arrivals (`i + N·j + N·T·s`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Schedule;

/// Part `index` of `count` equal parts of a run's load. `Slice::WHOLE` is the whole.
/// Always `index < count`, also when read from elsewhere (serde checks it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "Parts")]
pub struct Slice {
    index: u64,
    count: u64,
}

/// A slice as it arrives, before its index is checked.
#[derive(Deserialize)]
struct Parts {
    index: u64,
    count: u64,
}

impl TryFrom<Parts> for Slice {
    type Error = BadSlice;
    fn try_from(p: Parts) -> Result<Slice, BadSlice> {
        Slice::new(p.index, p.count)
    }
}

/// A slice index out of range (`index >= count`, or `count` zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("part {index} of {count} does not exist (parts are numbered 0 to count - 1)")]
pub struct BadSlice {
    /// The index asked for.
    pub index: u64,
    /// The number of parts.
    pub count: u64,
}

impl Default for Slice {
    fn default() -> Self {
        Slice::WHOLE
    }
}

impl Slice {
    /// The whole load: part 0 of 1.
    pub const WHOLE: Slice = Slice { index: 0, count: 1 };

    /// Part `index` of `count`; an error unless `index < count`.
    pub fn new(index: u64, count: u64) -> Result<Slice, BadSlice> {
        if index < count {
            Ok(Slice { index, count })
        } else {
            Err(BadSlice { index, count })
        }
    }

    /// This part's index, `0..count`.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// How many parts the load is split into.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Whether this is the whole load.
    pub fn is_whole(&self) -> bool {
        self.count == 1
    }

    /// Part `inner` of this part, as a slice of the whole, for arrivals: this part's
    /// arrivals taken `inner.index, inner.index + inner.count, ...`.
    pub fn within(&self, inner: Slice) -> Slice {
        Slice {
            index: self.index + self.count * inner.index,
            count: self.count * inner.count,
        }
    }

    /// The schedule's number of this part's arrival `n` (both 0-based).
    pub fn arrival(&self, n: u64) -> u64 {
        // Saturating: past u64::MAX no schedule has arrivals left anyway.
        n.saturating_mul(self.count).saturating_add(self.index)
    }

    /// When this part's arrival `n` is due in `schedule` (a rate per second), from the
    /// start of the run; `None` once the schedule has no more arrivals for this part.
    pub fn time_of_arrival(&self, schedule: &Schedule, n: u64) -> Option<Duration> {
        schedule.time_of_arrival(self.arrival(n))
    }

    /// This part's share of `total` users (or of any count split evenly): the first
    /// `total mod count` parts take one more, so the parts sum to `total`.
    pub fn users(&self, total: u64) -> u64 {
        total / self.count + u64::from(self.index < total % self.count)
    }

    /// This part's share of the users `schedule` (a user count) calls for at `elapsed`:
    /// the count rounded to whole users, then split by [`Slice::users`]. The parts add
    /// up to the rounded count at every instant of every stage.
    pub fn users_at(&self, schedule: &Schedule, elapsed: Duration) -> u64 {
        self.users(schedule.value_at(elapsed).round().max(0.0) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Stage;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    fn stage(s: f64, target: f64) -> Stage {
        Stage {
            duration: secs(s),
            target,
        }
    }

    /// Schedules to slice: a constant rate, a ramp up from zero, stages up, hold and
    /// down, and a rate that does not divide evenly into seconds.
    fn schedules() -> Vec<Schedule> {
        vec![
            Schedule::constant(100.0, secs(1.0)),
            Schedule::constant(37.0, secs(2.5)),
            Schedule::new(0.0, vec![stage(3.0, 200.0)]),
            Schedule::new(
                10.0,
                vec![stage(1.0, 300.0), stage(1.5, 300.0), stage(0.7, 40.0)],
            ),
            Schedule::new(250.0, vec![stage(2.0, 0.0)]),
        ]
    }

    /// Every arrival of `slice` in `schedule`, as (schedule number, due time).
    fn arrivals(slice: Slice, schedule: &Schedule) -> Vec<(u64, Duration)> {
        let mut out = Vec::new();
        let mut n = 0;
        while let Some(t) = slice.time_of_arrival(schedule, n) {
            out.push((slice.arrival(n), t));
            n += 1;
        }
        out
    }

    #[test]
    fn n_slices_together_are_the_single_schedule_arrival_for_arrival() {
        for schedule in schedules() {
            let whole = arrivals(Slice::WHOLE, &schedule);
            assert!(!whole.is_empty());
            for count in 1..=8 {
                let mut union: Vec<(u64, Duration)> = (0..count)
                    .flat_map(|i| arrivals(Slice::new(i, count).unwrap(), &schedule))
                    .collect();
                union.sort();
                // Same arrivals, same due times, none twice, none missing.
                assert_eq!(union, whole, "{count} slices of {schedule:?}");
            }
        }
    }

    #[test]
    fn a_slice_takes_every_nth_arrival_and_arrival_k_goes_to_k_mod_n() {
        let schedule = Schedule::constant(1000.0, secs(0.1));
        for count in 1..=8u64 {
            for index in 0..count {
                for (k, t) in arrivals(Slice::new(index, count).unwrap(), &schedule) {
                    assert_eq!(k % count, index);
                    assert_eq!(Some(t), schedule.time_of_arrival(k));
                }
            }
        }
    }

    #[test]
    fn threads_within_shards_still_cover_the_schedule_exactly() {
        for schedule in schedules() {
            let whole = arrivals(Slice::WHOLE, &schedule);
            for shards in 1..=4 {
                for threads in 1..=3 {
                    let mut union = Vec::new();
                    for i in 0..shards {
                        let shard = Slice::new(i, shards).unwrap();
                        for j in 0..threads {
                            let thread = shard.within(Slice::new(j, threads).unwrap());
                            union.extend(arrivals(thread, &schedule));
                        }
                    }
                    union.sort();
                    assert_eq!(union, whole, "{shards} shards × {threads} threads");
                }
            }
        }
    }

    #[test]
    fn users_split_evenly_the_first_ones_taking_the_remainder() {
        let split = |total, count| -> Vec<u64> {
            (0..count)
                .map(|i| Slice::new(i, count).unwrap().users(total))
                .collect()
        };
        assert_eq!(split(10, 3), [4, 3, 3]);
        assert_eq!(split(2, 4), [1, 1, 0, 0]);
        assert_eq!(split(0, 2), [0, 0]);
        assert_eq!(split(7, 1), [7]);
        for total in 0..50 {
            for count in 1..=8 {
                let parts = split(total, count);
                assert_eq!(parts.iter().sum::<u64>(), total);
                assert!(parts.iter().max().unwrap() - parts.iter().min().unwrap() <= 1);
            }
        }
    }

    #[test]
    fn staged_users_add_up_to_the_schedule_at_every_instant() {
        // Ramp 0 → 25 users, hold, ramp down to 3: sampled every 10 ms.
        let schedule = Schedule::new(
            0.0,
            vec![stage(2.0, 25.0), stage(1.0, 25.0), stage(1.5, 3.0)],
        );
        let mut t = Duration::ZERO;
        while t <= schedule.duration() + secs(0.1) {
            let want = schedule.value_at(t).round() as u64;
            for shards in 1..=8 {
                let mut sum = 0;
                for i in 0..shards {
                    let shard = Slice::new(i, shards).unwrap();
                    let mine = shard.users_at(&schedule, t);
                    // A shard's users split again over its threads, still adding up.
                    let threads: u64 = (0..3).map(|j| Slice::new(j, 3).unwrap().users(mine)).sum();
                    assert_eq!(threads, mine);
                    sum += mine;
                }
                assert_eq!(sum, want, "{shards} shards at {t:?}");
            }
            t += Duration::from_millis(10);
        }
    }

    #[test]
    fn an_index_out_of_range_is_refused() {
        assert_eq!(Slice::new(3, 3), Err(BadSlice { index: 3, count: 3 }));
        assert!(Slice::new(0, 0).is_err());
        assert_eq!(Slice::new(0, 1), Ok(Slice::WHOLE));
        let inner = Slice::new(2, 4).unwrap().within(Slice::new(1, 3).unwrap());
        assert_eq!((inner.index(), inner.count()), (6, 12));
        // Read from a peer, a slice is checked the same way.
        let read = |text: &str| serde_json::from_str::<Slice>(text);
        assert!(read(r#"{"index":0,"count":0}"#).is_err());
        assert!(read(r#"{"index":5,"count":5}"#).is_err());
        assert_eq!(
            read(r#"{"index":1,"count":5}"#).unwrap(),
            Slice::new(1, 5).unwrap()
        );
        let text = serde_json::to_string(&inner).unwrap();
        assert_eq!(read(&text).unwrap(), inner);
    }
}
