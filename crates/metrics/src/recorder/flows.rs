//! What a flow did besides its requests: non-fatal checks ([`CheckCounts`], like k6's
//! `check()`), redirect hops followed, cookies ([`CookieCounts`]) and the duration of
//! `group:` steps ([`GroupTally`], like k6's `group_duration`). Each is recorded by
//! the engine into the thread's [`Recorder`] and merged with it; a warm-up discards
//! them with the rest of the recorder (the engine replaces it with a new one).

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::{new_histogram, put, Recorder, SIGFIG};

/// One check's outcomes: how many times it passed and failed. A failed check does not
/// fail its request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckCounts {
    /// Times the check held.
    pub passed: u64,
    /// Times it did not.
    pub failed: u64,
}

impl CheckCounts {
    /// Times the check ran.
    pub fn total(&self) -> u64 {
        self.passed + self.failed
    }

    /// Adds `other` into these counts.
    pub fn add(&mut self, other: &CheckCounts) {
        self.passed += other.passed;
        self.failed += other.failed;
    }
}

/// What the cookie jars did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CookieCounts {
    /// `Set-Cookie` headers stored in a jar.
    pub received: u64,
    /// Cookies attached to requests sent.
    pub sent: u64,
    /// `Set-Cookie` headers refused: a jar limit (50 per domain, 4 KiB each) was hit,
    /// or the header did not parse.
    pub dropped: u64,
}

impl CookieCounts {
    /// Adds `other` into these counts.
    pub fn add(&mut self, other: &CookieCounts) {
        self.received += other.received;
        self.sent += other.sent;
        self.dropped += other.dropped;
    }

    /// True when the jars did nothing.
    pub fn is_empty(&self) -> bool {
        *self == CookieCounts::default()
    }
}

/// One `group:` step's runs: how long each took (HDR histogram, microseconds) and how
/// many failed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupTally {
    /// Duration of every run of the group, failed ones included, microseconds.
    #[serde(with = "super::hdr_serde")]
    pub duration: Histogram<u64>,
    /// Runs of the group in which something failed.
    pub failed: u64,
}

impl Default for GroupTally {
    fn default() -> Self {
        GroupTally {
            duration: new_histogram(SIGFIG),
            failed: 0,
        }
    }
}

impl GroupTally {
    /// Times the group ran.
    pub fn count(&self) -> u64 {
        self.duration.len()
    }

    /// Adds `other` into this tally.
    pub fn add(&mut self, other: &GroupTally) {
        self.duration
            .add(&other.duration)
            .expect("auto-resizing histograms always merge");
        self.failed += other.failed;
    }
}

/// `v[id]`, growing `v` with defaults so that it exists.
fn slot<T: Default>(v: &mut Vec<T>, id: usize) -> &mut T {
    if v.len() <= id {
        v.resize_with(id + 1, T::default);
    }
    &mut v[id]
}

/// Adds `from` into `into` element by element, growing `into` to the longer length.
pub(super) fn add_all<T: Default>(into: &mut Vec<T>, from: &[T], add: impl Fn(&mut T, &T)) {
    if into.len() < from.len() {
        into.resize_with(from.len(), T::default);
    }
    for (a, b) in into.iter_mut().zip(from) {
        add(a, b);
    }
}

impl Recorder {
    /// Records one outcome of check `check_id` (an index into the plan's `checks`).
    /// The counts grow on demand; a failed check is counted here only, never as an
    /// error of its request.
    pub fn check(&mut self, check_id: usize, passed: bool) {
        let c = slot(&mut self.checks, check_id);
        if passed {
            c.passed += 1;
        } else {
            c.failed += 1;
        }
    }

    /// Records one run of group `group_id` (an index into the plan's `groups`) that
    /// took `took`, and whether something in it failed.
    pub fn group(&mut self, group_id: usize, took: Duration, failed: bool) {
        let g = slot(&mut self.groups, group_id);
        put(&mut g.duration, took);
        if failed {
            g.failed += 1;
        }
    }

    /// Adds another recorder's checks, redirects, cookies and groups into this one's.
    pub(super) fn merge_flows(&mut self, other: &Recorder) {
        add_all(&mut self.checks, &other.checks, CheckCounts::add);
        self.redirects += other.redirects;
        self.cookies.add(&other.cookies);
        add_all(&mut self.groups, &other.groups, GroupTally::add);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_grow_on_demand_and_count_each_outcome() {
        let mut r = Recorder::new(1);
        assert!(r.checks.is_empty(), "a new recorder has run no check");
        r.check(2, true);
        r.check(2, false);
        r.check(0, true);
        assert_eq!(
            r.checks,
            [
                CheckCounts {
                    passed: 1,
                    failed: 0
                },
                CheckCounts::default(),
                CheckCounts {
                    passed: 1,
                    failed: 1
                },
            ]
        );
        assert_eq!(r.checks[2].total(), 2);
    }

    #[test]
    fn groups_keep_a_histogram_and_the_failures() {
        let mut r = Recorder::new(1);
        r.group(1, Duration::from_millis(10), false);
        r.group(1, Duration::from_millis(30), true);
        assert_eq!(r.groups.len(), 2);
        assert_eq!(r.groups[0].count(), 0);
        let g = &r.groups[1];
        assert_eq!((g.count(), g.failed), (2, 1));
        assert!(g.duration.equivalent(g.duration.max(), 30_000));
    }

    /// Two threads' recorders, of different lengths, merge into the sums, as one
    /// recorder that saw everything would hold.
    #[test]
    fn every_flow_figure_merges_across_threads() {
        let (mut a, mut b, mut all) = (Recorder::new(1), Recorder::new(1), Recorder::new(1));
        let steps: [(usize, bool, u64); 5] = [
            (0, true, 5),
            (1, false, 7),
            (0, false, 9),
            (3, true, 11),
            (1, true, 13),
        ];
        for (n, &(id, ok, ms)) in steps.iter().enumerate() {
            let target = if n % 2 == 0 { &mut a } else { &mut b };
            for r in [target, &mut all] {
                r.check(id, ok);
                r.group(id, Duration::from_millis(ms), !ok);
                r.redirects += 2;
                r.cookies.received += 1;
                r.cookies.sent += 3;
                r.cookies.dropped += u64::from(!ok);
            }
        }
        let (mut a, b, all) = (a.finish(), b.finish(), all.finish());
        assert_ne!(a.checks.len(), b.checks.len(), "the lengths differ");
        a.merge(&b);
        assert_eq!(a.checks, all.checks);
        assert_eq!(a.redirects, 10);
        assert_eq!(a.redirects, all.redirects);
        assert_eq!(
            a.cookies,
            CookieCounts {
                received: 5,
                sent: 15,
                dropped: 2
            }
        );
        assert_eq!(a.groups.len(), all.groups.len());
        for (x, y) in a.groups.iter().zip(&all.groups) {
            assert_eq!(x.duration, y.duration);
            assert_eq!(x.failed, y.failed);
        }
        // Merged into an empty recorder (as the engine starts), nothing is lost.
        let mut merged = Recorder::new(1);
        merged.merge(&a);
        assert_eq!(merged.checks, all.checks);
        assert_eq!(merged.cookies, all.cookies);
    }

    /// The warm-up's record is discarded by replacing the recorder with a new one:
    /// these figures start empty there too, and a recorder read back without them (a
    /// shard of an older build) has them empty.
    #[test]
    fn a_new_recorder_has_no_flow_figures_and_old_json_reads_without_them() {
        let mut r = Recorder::new(1);
        r.check(0, true);
        r.group(0, Duration::from_millis(1), false);
        r.redirects = 4;
        r.cookies.sent = 1;
        let json = serde_json::to_value(r.finish()).unwrap();
        let back: Recorder = serde_json::from_value(json.clone()).unwrap();
        assert_eq!((back.checks.len(), back.groups.len()), (1, 1));
        assert_eq!((back.redirects, back.cookies.sent), (4, 1));
        let mut old = json;
        for key in ["checks", "redirects", "cookies", "groups"] {
            old.as_object_mut().unwrap().remove(key);
        }
        let old: Recorder = serde_json::from_value(old).unwrap();
        let fresh = Recorder::new(1);
        for r in [&old, &fresh] {
            assert!(r.checks.is_empty() && r.groups.is_empty());
            assert_eq!((r.redirects, r.cookies), (0, CookieCounts::default()));
        }
    }
}
