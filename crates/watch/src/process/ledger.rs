//! CPU time of a changing set of processes (a process tree, or same-named processes)
//! between two samples, when members are born and exit in between.
//!
//! Each member's counter is its own CPU (`utime + stime`) plus what it collected from
//! the children it reaped (`cutime + cstime`: the kernel adds a reaped child's own and
//! collected time to its parent's). Summed over the members, that total stays
//! continuous when a member exits and a member parent reaps it: the child's time moves
//! from its own counter into the parent's. The interval's CPU is therefore
//!
//! * the growth of every member present at both samples (a parent's growth includes
//!   the whole lifetime of the children it reaped in between, and of children that
//!   were born and reaped between two samples, which no scan ever saw),
//! * plus the whole counter of a member born during the interval (a fork starts at zero),
//! * minus, for each member that exited, what was already counted of it at the previous
//!   sample, taken back from the nearest surviving ancestor's collected growth (walking
//!   up through ancestors that exited too) — at most what that ancestor collected.
//!
//! When a member exits and no member collects its time (its parent ignores `SIGCHLD`,
//! it was reparented outside the set, or the set lost its parent), the time counted
//! before its last sample stays counted and what it used after that is missing: the
//! total never goes backwards, and [`Ledger::uncollected`] counts those exits so the
//! summary can say so instead of losing them silently.

use std::collections::HashMap;

/// A process, told apart from a later one that reuses its pid by its start time.
pub(crate) type Key = (i32, u64);

/// One member as read at a sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Reading {
    /// Pid and start time (clock ticks after boot).
    pub(crate) key: Key,
    /// Parent pid.
    pub(crate) ppid: i32,
    /// Own CPU, clock ticks (`utime + stime`).
    pub(crate) own: u64,
    /// CPU collected from reaped children, clock ticks (`cutime + cstime`).
    pub(crate) reaped: u64,
}

impl Reading {
    fn total(&self) -> u64 {
        self.own.saturating_add(self.reaped)
    }
}

/// The members at the previous sample and what has been counted.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    prev: HashMap<Key, Reading>,
    /// Clock ticks since boot when the previous sample started.
    prev_uptime: u64,
    /// Distinct members seen so far.
    seen: usize,
    /// Members that exited without a member collecting their CPU time.
    uncollected: usize,
}

impl Ledger {
    /// Starts from the members read at `uptime` (clock ticks since boot, read before
    /// the members): their CPU so far is the baseline, not counted.
    pub(crate) fn start(members: &[Reading], uptime: u64) -> Ledger {
        let mut l = Ledger::default();
        l.replace(members, uptime);
        l
    }

    /// Distinct processes seen since the start.
    pub(crate) fn seen(&self) -> usize {
        self.seen
    }

    /// Exits whose last interval of CPU could not be counted.
    pub(crate) fn uncollected(&self) -> usize {
        self.uncollected
    }

    /// Whether the previous sample had any member (so the next one has a CPU figure).
    pub(crate) fn has_baseline(&self) -> bool {
        !self.prev.is_empty()
    }

    /// CPU ticks used by the set since the previous sample, given the members read now
    /// (after reading `uptime`); they become the next baseline.
    pub(crate) fn advance(&mut self, members: &[Reading], uptime: u64) -> u64 {
        let now: HashMap<Key, &Reading> = members.iter().map(|r| (r.key, r)).collect();
        let mut used = 0u64;
        for r in members {
            used = used.saturating_add(match self.prev.get(&r.key) {
                Some(p) => r.total().saturating_sub(p.total()),
                // Born since the previous sample: everything it used is new. An older
                // process that joined the set (a name match, a subreaper's adoption)
                // starts from its current counter.
                None if r.key.1 >= self.prev_uptime => r.total(),
                None => 0,
            });
        }
        // What the exited members had at the previous sample, owed back by the
        // ancestor whose `reaped` counter now includes it.
        let mut owed: HashMap<Key, (u64, usize)> = HashMap::new();
        for gone in self.prev.values().filter(|p| !now.contains_key(&p.key)) {
            match self.surviving_ancestor(gone, &now) {
                Some(anc) => {
                    let e = owed.entry(anc).or_default();
                    e.0 = e.0.saturating_add(gone.total());
                    e.1 += 1;
                }
                None => self.uncollected += 1,
            }
        }
        for (anc, (debt, exits)) in owed {
            let collected = now[&anc]
                .reaped
                .saturating_sub(self.prev.get(&anc).map_or(0, |p| p.reaped));
            if collected < debt {
                // Some of them were not reaped by this ancestor (yet): a zombie still
                // shows in /proc, so these were collected elsewhere or not at all.
                self.uncollected += exits;
            }
            used = used.saturating_sub(debt.min(collected));
        }
        self.replace(members, uptime);
        used
    }

    /// The nearest ancestor of `gone` present now, following parents through members
    /// that exited since the previous sample too.
    fn surviving_ancestor(&self, gone: &Reading, now: &HashMap<Key, &Reading>) -> Option<Key> {
        // The parent started no later than its child; a later start is a reused pid.
        let find = |pid: i32, mut keys: Box<dyn Iterator<Item = &Key> + '_>| {
            keys.find(|k| k.0 == pid && k.1 <= gone.key.1).copied()
        };
        let mut ppid = gone.ppid;
        // A chain of exited members is at most as long as the previous member list.
        for _ in 0..=self.prev.len() {
            if let Some(k) = find(ppid, Box::new(now.keys())) {
                return Some(k);
            }
            let parent = find(ppid, Box::new(self.prev.keys()))?;
            ppid = self.prev[&parent].ppid;
        }
        None
    }

    fn replace(&mut self, members: &[Reading], uptime: u64) {
        self.seen += members
            .iter()
            .filter(|r| !self.prev.contains_key(&r.key))
            .count();
        self.prev = members.iter().map(|r| (r.key, *r)).collect();
        self.prev_uptime = uptime;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(pid: i32, start: u64, ppid: i32, own: u64, reaped: u64) -> Reading {
        Reading {
            key: (pid, start),
            ppid,
            own,
            reaped,
        }
    }

    #[test]
    fn growth_of_members_present_at_both_samples() {
        let mut l = Ledger::start(&[r(10, 5, 1, 100, 0), r(11, 6, 10, 50, 0)], 1000);
        assert_eq!(
            l.advance(&[r(10, 5, 1, 103, 0), r(11, 6, 10, 70, 0)], 1100),
            23
        );
        assert_eq!((l.seen(), l.uncollected()), (2, 0));
    }

    #[test]
    fn a_child_born_during_the_interval_counts_whole_an_old_newcomer_does_not() {
        let mut l = Ledger::start(&[r(10, 5, 1, 100, 0)], 1000);
        let now = [
            r(10, 5, 1, 100, 0),
            r(12, 1050, 10, 30, 0),
            r(13, 400, 1, 500, 0),
        ];
        assert_eq!(l.advance(&now, 1100), 30);
        assert_eq!(l.seen(), 3);
    }

    #[test]
    fn a_child_reaped_by_its_parent_neither_goes_backwards_nor_counts_twice() {
        // Child 11 had used 50 ticks at the first sample, then 20 more, exited, and its
        // parent reaped it (70 in the parent's collected time); the parent used 3.
        let mut l = Ledger::start(&[r(10, 5, 1, 100, 0), r(11, 6, 10, 50, 0)], 1000);
        assert_eq!(l.advance(&[r(10, 5, 1, 103, 70)], 1100), 23);
        assert_eq!(l.uncollected(), 0);
        // A grandchild reaped by the child, then the child by the root: the same.
        let mut l = Ledger::start(
            &[
                r(10, 5, 1, 100, 0),
                r(11, 6, 10, 50, 0),
                r(12, 7, 11, 40, 0),
            ],
            1000,
        );
        assert_eq!(l.advance(&[r(10, 5, 1, 100, 50 + 40 + 15)], 1100), 15);
        assert_eq!(l.uncollected(), 0);
    }

    #[test]
    fn a_short_lived_child_never_seen_counts_through_its_parent() {
        let mut l = Ledger::start(&[r(10, 5, 1, 100, 0)], 1000);
        assert_eq!(l.advance(&[r(10, 5, 1, 101, 40)], 1100), 41);
    }

    #[test]
    fn an_exit_nobody_collects_keeps_what_was_counted_and_is_reported() {
        let mut l = Ledger::start(&[r(10, 5, 1, 100, 0), r(11, 6, 10, 50, 0)], 1000);
        // The parent ignores SIGCHLD: nothing collected. The total does not go backwards.
        assert_eq!(l.advance(&[r(10, 5, 1, 102, 0)], 1100), 2);
        assert_eq!(l.uncollected(), 1);
        // A member whose parent is outside the set.
        let mut l = Ledger::start(&[r(20, 5, 1, 10, 0), r(21, 6, 1, 10, 0)], 1000);
        assert_eq!(l.advance(&[r(20, 5, 1, 15, 0)], 1100), 5);
        assert_eq!(l.uncollected(), 1);
    }

    #[test]
    fn a_reused_pid_is_a_new_process() {
        // Pid 11 exited (reaped: 50 collected) and a new 11 was born after the sample.
        let mut l = Ledger::start(&[r(10, 5, 1, 100, 0), r(11, 6, 10, 50, 0)], 1000);
        assert_eq!(
            l.advance(&[r(10, 5, 1, 100, 50), r(11, 1040, 10, 7, 0)], 1100),
            7
        );
        assert_eq!((l.seen(), l.uncollected()), (3, 0));
    }
}
