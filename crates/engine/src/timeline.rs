//! The live timeline: per-second buckets from several parts of a run (the engine
//! threads of one process; the shards of a run, for a coordinator) merged second by
//! second, each second emitted to the [`Observer`] as [`Live`] figures once every part
//! has reported it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::spill::Seconds;
use super::{summarize, Live, Observer};
use headroom_metrics::recorder::{Recorder, SecondBucket};
use headroom_plan::Plan;

/// Collects the parts' seconds and emits each second once every part reported it.
/// Seconds are aligned by their index (`SecondBucket::t`), counted from the start of
/// the measured window every part shares.
///
/// Within a process the parts are the engine threads. A coordinator of N shards can
/// use one over N parts, fed each shard's completed seconds (a shard's
/// [`Live::last_bucket`] and [`Live::delta`]) as they arrive; the seconds a shard could
/// not complete before it ended come with its [`super::Share`].
///
/// Each part's report of a second may come with what the part recorded during it (a
/// finished [`Recorder`] of that second alone). Those add up, second by second, into
/// [`Live::so_far`], and [`Live::checkpoint`] is the summary of them: the run's figures
/// through the second just emitted, which the run store keeps so that a run killed
/// later still has its numbers.
pub struct Timeline<'a> {
    plan: &'a Plan,
    parts: usize,
    pending: BTreeMap<u64, Pending>,
    done: Seconds,
    live: Live,
    so_far: Arc<Recorder>,
}

/// A second not yet reported by every part: their buckets and recorders merged.
struct Pending {
    bucket: SecondBucket,
    delta: Option<Recorder>,
    parts: usize,
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
            done: Seconds::new(),
            live,
            so_far: Arc::new(Recorder::new(plan.names.len())),
        }
    }

    /// Adds one part's bucket of a second, with what the part recorded during it when
    /// it sent that (`delta`, finished); `last` marks a part's final, partial second.
    /// Emits to `observer` every second now complete, in order.
    pub fn add(
        &mut self,
        bucket: SecondBucket,
        delta: Option<Recorder>,
        last: bool,
        observer: &mut dyn Observer,
    ) {
        if last && bucket.latency.is_empty() && bucket.dropped == 0 && bucket.errors == 0 {
            // An empty tail is no second of the run; count the report and move on.
            self.count_only(bucket.t, delta);
        } else {
            let t = bucket.t;
            let entry = self.pending.entry(t).or_insert_with(|| Pending {
                bucket: SecondBucket::new(t),
                delta: None,
                parts: 0,
            });
            entry.bucket.merge(&bucket);
            merge_into(&mut entry.delta, delta);
            entry.parts += 1;
        }
        while let Some(entry) = self.pending.first_entry() {
            if entry.get().parts < self.parts {
                break;
            }
            let pending = entry.remove();
            self.emit(pending.bucket, pending.delta, observer);
        }
    }

    /// Counts a part's report of second `t` that brought no second to it; what the
    /// part recorded meanwhile (`delta`: requests abandoned at its end, connections)
    /// still counts.
    pub fn count_only(&mut self, t: u64, delta: Option<Recorder>) {
        match self.pending.get_mut(&t) {
            Some(entry) => {
                entry.parts += 1;
                merge_into(&mut entry.delta, delta);
            }
            None => {
                if let Some(delta) = delta {
                    Arc::make_mut(&mut self.so_far).merge(&delta);
                }
            }
        }
    }

    fn emit(&mut self, bucket: SecondBucket, delta: Option<Recorder>, observer: &mut dyn Observer) {
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
        self.done.push(bucket);
        self.live.delta = None;
        self.live.checkpoint = None;
        if let Some(delta) = delta {
            // No copy: the observer was handed the last `Arc` only for its call.
            Arc::make_mut(&mut self.so_far).merge(&delta);
            self.live.delta = Some(Box::new(delta));
            let summary = super::checkpoint::summary(
                self.plan,
                &self.so_far,
                self.done.covered(),
                self.done.cpu_us(),
            );
            self.live.checkpoint = Some(Arc::new(summary));
            self.live.so_far = Some(self.so_far.clone());
        }
        observer.second(&self.live);
        self.live.so_far = None;
    }

    /// Everything measured so far: the sum of every part's recorders handed over
    /// with its seconds (the whole run, once [`Timeline::finish`] emitted the rest).
    pub fn so_far(&self) -> &Recorder {
        &self.so_far
    }

    /// Every second with something in it, merged and in order, and the sum of what
    /// the parts recorded ([`Timeline::so_far`]). The seconds not every part reported
    /// (a part whose work ended earlier sends no later second) are complete now that
    /// all parts are done: `observer` hears them too, so that what it added up (the
    /// dashboard's and OTLP's counters) ends equal to the totals.
    pub fn finish(mut self, observer: &mut dyn Observer) -> (Vec<SecondBucket>, Recorder) {
        let rest: Vec<Pending> = std::mem::take(&mut self.pending).into_values().collect();
        for pending in rest {
            self.emit(pending.bucket, pending.delta, observer);
        }
        let mut done = self.done.into_vec();
        done.sort_by_key(|s| s.t);
        let so_far = Arc::try_unwrap(self.so_far).unwrap_or_else(|kept| (*kept).clone());
        (done, so_far)
    }
}

/// Adds `delta` to what `into` holds (nothing yet: it becomes it).
fn merge_into(into: &mut Option<Recorder>, delta: Option<Recorder>) {
    match (into.as_mut(), delta) {
        (Some(into), Some(delta)) => into.merge(&delta),
        (None, Some(delta)) => *into = Some(delta),
        (_, None) => {}
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
        timeline.add(bucket(0, 4, 2), None, false, &mut observer);
        timeline.add(bucket(1, 1, 2), None, false, &mut observer);
        assert!(
            seen.borrow().is_empty(),
            "second 0 waits for the other part"
        );
        timeline.add(bucket(0, 3, 1), None, false, &mut observer);
        assert_eq!(*seen.borrow(), [(Duration::from_secs(1), 7, Some(3))]);
        // The other part ends with an empty tail in second 1: it counts, adds nothing.
        timeline.add(SecondBucket::new(1), None, true, &mut observer);
        assert_eq!(seen.borrow().len(), 2);
        assert_eq!(seen.borrow()[1], (Duration::from_secs(2), 8, Some(2)));
        // A part's last second that no other part reports waits for the finish, which
        // tells the observer of it too: the observer's sum ends equal to the totals.
        timeline.add(bucket(2, 2, 0), None, true, &mut observer);
        assert_eq!(seen.borrow().len(), 2);
        let done: Vec<(u64, u64)> = timeline
            .finish(&mut observer)
            .0
            .iter()
            .map(|b| (b.t, b.latency.len()))
            .collect();
        assert_eq!(done, [(0, 7), (1, 1), (2, 2)]);
        assert_eq!(seen.borrow().len(), 3);
        assert_eq!(seen.borrow()[2], (Duration::from_secs(3), 10, Some(0)));
    }
}
