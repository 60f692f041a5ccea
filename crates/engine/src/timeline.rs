//! The live timeline: per-second buckets from several parts of a run (the engine
//! threads of one process; the shards of a run, for a coordinator) merged second by
//! second, each second emitted to the [`Observer`] as [`Live`] figures once every part
//! has reported it.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{summarize, Live, Observer};
use headroom_metrics::recorder::SecondBucket;
use headroom_plan::Plan;

/// Collects the parts' seconds and emits each second once every part reported it.
/// Seconds are aligned by their index (`SecondBucket::t`), counted from the start of
/// the measured window every part shares.
///
/// Within a process the parts are the engine threads. A coordinator of N shards can
/// use one over N parts, fed each shard's completed seconds (a shard's
/// [`Live::last_bucket`]) as they arrive; the seconds a shard could not complete
/// before it ended come with its [`super::Share`].
pub struct Timeline<'a> {
    plan: &'a Plan,
    parts: usize,
    pending: BTreeMap<u64, (SecondBucket, usize)>,
    done: Vec<SecondBucket>,
    live: Live,
}

impl<'a> Timeline<'a> {
    /// A timeline of `plan`'s run made of `parts` parts.
    pub fn new(plan: &'a Plan, parts: usize) -> Timeline<'a> {
        let live = Live {
            total: plan.measured(),
            ..Live::default()
        };
        Timeline {
            plan,
            parts,
            pending: BTreeMap::new(),
            done: Vec::new(),
            live,
        }
    }

    /// Adds one part's bucket of a second; `last` marks a part's final, partial
    /// second. Emits to `observer` every second now complete, in order.
    pub fn add(&mut self, bucket: SecondBucket, last: bool, observer: &mut dyn Observer) {
        if last && bucket.latency.is_empty() && bucket.dropped == 0 && bucket.errors == 0 {
            // An empty tail is no second of the run; count the report and move on.
            self.count_only(bucket.t);
        } else {
            let t = bucket.t;
            let entry = self
                .pending
                .entry(t)
                .or_insert_with(|| (SecondBucket::new(t), 0));
            entry.0.merge(&bucket);
            entry.1 += 1;
        }
        while let Some(entry) = self.pending.first_entry() {
            if entry.get().1 < self.parts {
                break;
            }
            let (bucket, _) = entry.remove();
            self.emit(bucket, observer);
        }
    }

    /// Counts a part's report of second `t` that brought nothing to it.
    pub fn count_only(&mut self, t: u64) {
        if let Some(entry) = self.pending.get_mut(&t) {
            entry.1 += 1;
        }
    }

    fn emit(&mut self, bucket: SecondBucket, observer: &mut dyn Observer) {
        let second = summarize::second(&bucket, self.plan);
        self.live.elapsed = Duration::from_secs(bucket.t + 1);
        self.live.requests += second.requests;
        self.live.errors += second.errors;
        self.live.dropped += second.dropped;
        self.live.in_flight = bucket.in_flight;
        let closed = self.plan.loads().any(|(load, _)| !load.is_open());
        self.live.users = closed.then_some(bucket.users);
        self.live.last = second;
        self.live.last_bucket = bucket.clone();
        observer.second(&self.live);
        self.done.push(bucket);
    }

    /// Every second with something in it, merged and in order. The seconds not every
    /// part reported (a part whose work ended earlier sends no later second) are
    /// complete now that all parts are done: `observer` hears them too, so that what it
    /// added up (the dashboard's and OTLP's counters) ends equal to the totals.
    pub fn finish(mut self, observer: &mut dyn Observer) -> Vec<SecondBucket> {
        let rest: Vec<SecondBucket> = std::mem::take(&mut self.pending)
            .into_values()
            .map(|(b, _)| b)
            .collect();
        for bucket in rest {
            self.emit(bucket, observer);
        }
        self.done.sort_by_key(|s| s.t);
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_scenario::{self as scenario, Overrides};

    fn bucket(t: u64, requests: u64, users: u64) -> SecondBucket {
        let mut b = SecondBucket::new(t);
        for i in 0..requests {
            b.latency.record(1_000 + i).unwrap();
        }
        b.users = users;
        b
    }

    #[test]
    fn a_second_is_emitted_once_every_part_reported_it_merged() {
        let overrides = Overrides {
            url: Some("http://127.0.0.1:9/".into()),
            users: Some(3),
            ..Overrides::default()
        };
        let plan = scenario::load(None, &overrides).unwrap();
        let seen = std::cell::RefCell::new(Vec::new());
        let mut observer = |live: &Live| {
            seen.borrow_mut()
                .push((live.elapsed, live.requests, live.users))
        };
        let mut timeline = Timeline::new(&plan, 2);
        timeline.add(bucket(0, 4, 2), false, &mut observer);
        timeline.add(bucket(1, 1, 2), false, &mut observer);
        assert!(
            seen.borrow().is_empty(),
            "second 0 waits for the other part"
        );
        timeline.add(bucket(0, 3, 1), false, &mut observer);
        assert_eq!(*seen.borrow(), [(Duration::from_secs(1), 7, Some(3))]);
        // The other part ends with an empty tail in second 1: it counts, adds nothing.
        timeline.add(SecondBucket::new(1), true, &mut observer);
        assert_eq!(seen.borrow().len(), 2);
        assert_eq!(seen.borrow()[1], (Duration::from_secs(2), 8, Some(2)));
        // A part's last second that no other part reports waits for the finish, which
        // tells the observer of it too: the observer's sum ends equal to the totals.
        timeline.add(bucket(2, 2, 0), true, &mut observer);
        assert_eq!(seen.borrow().len(), 2);
        let done: Vec<(u64, u64)> = timeline
            .finish(&mut observer)
            .iter()
            .map(|b| (b.t, b.latency.len()))
            .collect();
        assert_eq!(done, [(0, 7), (1, 1), (2, 2)]);
        assert_eq!(seen.borrow().len(), 3);
        assert_eq!(seen.borrow()[2], (Duration::from_secs(3), 10, Some(0)));
    }
}
