//! The loads an engine thread drives side by side: one for a plan of one load, one per
//! workload (`workloads:`). A [`Lane`] is one load's own part of a thread: its live
//! counts (its in-flight cap and users are its own), its start instant, its items and
//! its iteration budget ([`Quota`], for a load counted in `iterations`). A leaf of the
//! engine: the attack loop uses it and it imports nothing of the loop.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::work::Workload;
use headroom_plan::{Iterations, Plan, Slice};

/// How many iterations a closed-model user may still start.
#[derive(Debug, Clone)]
pub(crate) enum Quota {
    /// As many as the schedule lets it.
    Unlimited,
    /// This many per user (`iterations: {per_user: K}`).
    PerUser(u64),
    /// What is left of a count the users share (`iterations: {shared: K}`): one
    /// counter for every thread of this process, holding this shard's share.
    Shared(Arc<AtomicU64>),
}

impl Quota {
    /// This shard's budget for `iterations` (the shared count split over shards as
    /// users are).
    pub(crate) fn new(iterations: Option<Iterations>, shard: Slice) -> Quota {
        match iterations {
            None => Quota::Unlimited,
            Some(Iterations::PerUser(k)) => Quota::PerUser(k),
            Some(Iterations::Shared(k)) => Quota::Shared(Arc::new(AtomicU64::new(shard.users(k)))),
        }
    }

    /// Whether a user that has run `done` iterations may start one more; a shared
    /// budget gives it one, or none once it is spent.
    pub(crate) fn take(&self, done: u64) -> bool {
        match self {
            Quota::Unlimited => true,
            Quota::PerUser(k) => done < *k,
            Quota::Shared(left) => left
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok(),
        }
    }

    /// Whether the budget ends the load (a user that spent it stops for good).
    pub(crate) fn counted(&self) -> bool {
        !matches!(self, Quota::Unlimited)
    }
}

/// What a process gives its threads for one load: the items (a workload's own; `None`:
/// the plan's, which every thread holds) and the budget.
#[derive(Debug, Clone)]
pub(crate) struct LaneSeed {
    /// A workload's prepared items.
    pub(crate) items: Option<Arc<Workload>>,
    /// Its iteration budget.
    pub(crate) quota: Quota,
}

/// Each load's seed, in the order of [`Plan::loads`]: `workloads` are the plan's
/// workloads' prepared items (empty for a plan of one load).
pub(crate) fn seeds(plan: &Plan, shard: Slice, workloads: &[Arc<Workload>]) -> Vec<LaneSeed> {
    plan.loads()
        .enumerate()
        .map(|(i, (load, _))| LaneSeed {
            items: workloads.get(i).cloned(),
            quota: Quota::new(load.iterations(), shard),
        })
        .collect()
}

/// One load's part of one engine thread.
pub(crate) struct Lane {
    /// Iterations of this load in flight on this thread (open model).
    pub(crate) in_flight: Cell<u64>,
    /// Users of this load running on this thread (closed model).
    pub(crate) users: Cell<u64>,
    /// When this load's schedule starts (the run's start plus its `start:`).
    pub(crate) at: Instant,
    /// Its items; `None`: the plan's.
    pub(crate) items: Option<Arc<Workload>>,
    /// Its iteration budget.
    pub(crate) quota: Quota,
}

impl Lane {
    /// The lane of `seed` starting at `at`.
    pub(crate) fn new(seed: LaneSeed, at: Instant) -> Lane {
        Lane {
            in_flight: Cell::default(),
            users: Cell::default(),
            at,
            items: seed.items,
            quota: seed.quota,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_budget_is_split_over_shards_and_spent_once() {
        let shares: Vec<u64> = (0..3)
            .map(
                |i| match Quota::new(Some(Iterations::Shared(17)), Slice::new(i, 3).unwrap()) {
                    Quota::Shared(n) => n.load(Ordering::Relaxed),
                    other => panic!("{other:?}"),
                },
            )
            .collect();
        assert_eq!(shares, [6, 6, 5]);
        let q = Quota::new(Some(Iterations::Shared(3)), Slice::WHOLE);
        let taken = (0..10).filter(|_| q.take(0)).count();
        assert_eq!(taken, 3);
        let each = Quota::new(Some(Iterations::PerUser(2)), Slice::WHOLE);
        assert!(each.take(0) && each.take(1) && !each.take(2) && each.counted());
        assert!(Quota::Unlimited.take(u64::MAX) && !Quota::Unlimited.counted());
    }
}
