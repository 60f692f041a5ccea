//! [`SecondBucket`]: what one thread saw during one second, and the per-name counts
//! ([`NameCounts`]) it keeps for the live dashboard.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::{new_histogram, SECOND_SIGFIG};
use crate::ErrorKind;

/// What one thread saw during one second of the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SecondBucket {
    /// Second index since the start of the run.
    pub t: u64,
    /// Corrected latency of requests completed in this second, microseconds.
    #[serde(with = "super::hdr_serde")]
    pub latency: Histogram<u64>,
    /// Of those, errors.
    pub errors: u64,
    /// Iterations dropped in this second.
    pub dropped: u64,
    /// Iterations in flight when the second ended.
    pub in_flight: u64,
    /// Users running when the second ended (closed model).
    pub users: u64,
    /// Largest schedule lag of an arrival started in this second, microseconds.
    pub max_lag_us: u64,
    /// CPU time the engine thread(s) used in this second, microseconds.
    pub cpu_us: u64,
    /// Of the errors, how many of each kind, indexed as [`ErrorKind::ALL`].
    pub error_kinds: [u64; ErrorKind::COUNT],
    /// Requests completed in this second per request name, indexed by `name_id` (a
    /// name with no request yet in this second may be missing from the end).
    pub by_name: Vec<NameCounts>,
}

/// Requests one name completed, and its errors by kind: a second's counts, which the
/// live dashboard adds up into its `/metrics` counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct NameCounts {
    /// Requests completed, successful or not.
    pub requests: u64,
    /// Errors by kind, indexed as [`ErrorKind::ALL`].
    pub errors: [u64; ErrorKind::COUNT],
}

impl NameCounts {
    /// The counts by outcome, as `/metrics` and OTLP label them: `ok` (always, zero
    /// included), then each error kind that occurred.
    pub fn outcomes(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        let failed: u64 = self.errors.iter().sum();
        std::iter::once(("ok", self.requests - failed)).chain(
            ErrorKind::ALL
                .iter()
                .map(|k| (k.as_str(), self.errors[*k as usize]))
                .filter(|&(_, n)| n > 0),
        )
    }

    /// Adds `other` into these counts.
    pub fn add(&mut self, other: &NameCounts) {
        self.requests += other.requests;
        for (a, b) in self.errors.iter_mut().zip(other.errors) {
            *a += b;
        }
    }
}

/// Adds `from` into `into` name by name, growing `into` to the longer of the two.
pub fn add_by_name(into: &mut Vec<NameCounts>, from: &[NameCounts]) {
    if into.len() < from.len() {
        into.resize(from.len(), NameCounts::default());
    }
    for (a, b) in into.iter_mut().zip(from) {
        a.add(b);
    }
}

impl Default for SecondBucket {
    /// An empty bucket for second 0.
    fn default() -> Self {
        SecondBucket::new(0)
    }
}

impl SecondBucket {
    /// An empty bucket for second `t`.
    pub fn new(t: u64) -> SecondBucket {
        SecondBucket {
            t,
            latency: new_histogram(SECOND_SIGFIG),
            errors: 0,
            dropped: 0,
            in_flight: 0,
            users: 0,
            max_lag_us: 0,
            cpu_us: 0,
            error_kinds: [0; ErrorKind::COUNT],
            by_name: Vec::new(),
        }
    }

    /// Adds another thread's bucket for the same second.
    pub fn merge(&mut self, other: &SecondBucket) {
        self.latency
            .add(&other.latency)
            .expect("auto-resizing histograms always merge");
        self.errors += other.errors;
        self.dropped += other.dropped;
        self.in_flight += other.in_flight;
        self.users += other.users;
        self.max_lag_us = self.max_lag_us.max(other.max_lag_us);
        self.cpu_us += other.cpu_us;
        for (a, b) in self.error_kinds.iter_mut().zip(other.error_kinds) {
            *a += b;
        }
        add_by_name(&mut self.by_name, &other.by_name);
    }
}
