//! [`Tracker`]: the registry of correlation ids and every delivery count.
//!
//! Bounded: at most `max_ids` ids are held (registered ids stay after delivery so a
//! second delivery is recognised as a duplicate); one registered beyond the cap is
//! counted in `registry_overflow` and not tracked. The per-second timeline is capped at
//! [`MAX_SECONDS`] entries. One mutex guards it all: a delivery holds it for a map
//! lookup and a histogram record, far below the sink's own network costs.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::options::Fail;
use super::summary::{DeliveryLatency, DeliverySummary};

/// Longest per-second timeline kept (one day).
pub const MAX_SECONDS: usize = 86_400;

/// What registering an id did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registered {
    /// Now tracked.
    Tracked,
    /// Already registered (the same id rendered twice): the first send time is kept.
    Again,
    /// The registry is full: not tracked, counted in `registry_overflow`.
    Overflow,
}

/// What the sink does with one delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Accepted: answer with the configured status.
    Accept,
    /// Refused by the failure share: answer with this status.
    Refuse(u16),
}

#[derive(Debug)]
struct Entry {
    /// When the request carrying the id was sent (`None`: first seen in a delivery,
    /// standalone sink).
    sent: Option<Instant>,
    accepted: bool,
    /// Chosen by the failure share.
    chosen: bool,
    /// Deliveries of this id so far, refused ones included.
    attempts: u32,
}

#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    registered: u64,
    delivered: u64,
    duplicated: u64,
    refused: u64,
    unknown: u64,
    no_id: u64,
    bad_body: u64,
    too_large: u64,
    registry_overflow: u64,
    /// Distinct ids seen in deliveries (for the exact failure share).
    distinct: u64,
    /// Registered ids accepted so far (`registered - this` are outstanding).
    registered_delivered: u64,
}

#[derive(Debug)]
struct Inner {
    ids: HashMap<String, Entry>,
    latency_us: Histogram<u64>,
    counts: Counts,
    /// Accepted first deliveries per second since `start`.
    per_second: Vec<u64>,
    /// When the latest delivery with an id arrived (accepted, refused or duplicate).
    last: Option<Instant>,
}

/// The registry and counts shared by the load run (which registers) and the sink's
/// handlers (which deliver).
#[derive(Debug)]
pub struct Tracker {
    inner: Mutex<Inner>,
    start: Instant,
    max_ids: usize,
    fail: Option<Fail>,
    /// Standalone (`headroom sink`): nothing registers, so an id first seen in a
    /// delivery is tracked then (for duplicates), not counted unknown.
    standalone: bool,
}

impl Tracker {
    /// A tracker whose timeline starts at `start`.
    pub fn new(start: Instant, max_ids: usize, fail: Option<Fail>, standalone: bool) -> Tracker {
        Tracker {
            inner: Mutex::new(Inner {
                ids: HashMap::new(),
                // 1 µs to 1 hour, 3 significant digits (ARCHITECTURE.md rule 3).
                latency_us: Histogram::new_with_bounds(1, 3_600_000_000, 3)
                    .expect("valid histogram bounds"),
                counts: Counts::default(),
                per_second: Vec::new(),
                last: None,
            }),
            start,
            max_ids,
            fail,
            standalone,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers `id` as sent at `sent`.
    pub fn register(&self, id: &str, sent: Instant) -> Registered {
        let mut inner = self.lock();
        if inner.ids.contains_key(id) {
            return Registered::Again;
        }
        if inner.ids.len() >= self.max_ids {
            inner.counts.registry_overflow += 1;
            return Registered::Overflow;
        }
        inner.counts.registered += 1;
        inner.ids.insert(
            id.to_string(),
            Entry {
                sent: Some(sent),
                accepted: false,
                chosen: false,
                attempts: 0,
            },
        );
        Registered::Tracked
    }

    /// A delivery whose body was too large.
    pub fn too_large(&self) {
        self.lock().counts.too_large += 1;
    }

    /// A delivery whose body was not JSON (when the id is looked for in it).
    pub fn bad_body(&self) {
        self.lock().counts.bad_body += 1;
    }

    /// A delivery with no id where the id should be.
    pub fn no_id(&self) {
        self.lock().counts.no_id += 1;
    }

    /// A delivery carrying `id`, received at `at`: counts it and decides the answer.
    pub fn deliver(&self, id: &str, at: Instant) -> Verdict {
        let mut inner = self.lock();
        let inner = &mut *inner;
        inner.last = Some(inner.last.map_or(at, |l| l.max(at)));
        let full = inner.ids.len() >= self.max_ids;
        let entry = match inner.ids.get_mut(id) {
            Some(entry) => entry,
            None if self.standalone && !full => inner.ids.entry(id.to_string()).or_insert(Entry {
                sent: None,
                accepted: false,
                chosen: false,
                attempts: 0,
            }),
            None => {
                // Unknown ids are answered normally: the sender did nothing wrong that
                // the sink could tell; it is the run that cannot place them.
                inner.counts.unknown += 1;
                return Verdict::Accept;
            }
        };
        if entry.attempts == 0 {
            // The failure share over distinct ids, exact: id number n (from 0) is
            // chosen when ⌊(n+1)·share⌋ > ⌊n·share⌋, so of n ids ⌊n·share⌋ are.
            if let Some(fail) = self.fail {
                let n = inner.counts.distinct as f64;
                entry.chosen = ((n + 1.0) * fail.share).floor() > (n * fail.share).floor();
            }
            inner.counts.distinct += 1;
        }
        entry.attempts += 1;
        if let Some(fail) = self.fail.filter(|_| entry.chosen && !entry.accepted) {
            if fail.every_attempt || entry.attempts == 1 {
                inner.counts.refused += 1;
                return Verdict::Refuse(fail.status);
            }
        }
        if entry.accepted {
            inner.counts.duplicated += 1;
            return Verdict::Accept;
        }
        entry.accepted = true;
        inner.counts.delivered += 1;
        if entry.sent.is_some() {
            inner.counts.registered_delivered += 1;
        }
        if let Some(sent) = entry.sent {
            let us = at.saturating_duration_since(sent).as_micros();
            inner
                .latency_us
                .saturating_record(u64::try_from(us).unwrap_or(u64::MAX).max(1));
        }
        let second = at.saturating_duration_since(self.start).as_secs() as usize;
        if second < MAX_SECONDS {
            if inner.per_second.len() <= second {
                inner.per_second.resize(second + 1, 0);
            }
            inner.per_second[second] += 1;
        }
        Verdict::Accept
    }

    /// Deliveries accepted so far (first deliveries only).
    pub fn delivered(&self) -> u64 {
        self.lock().counts.delivered
    }

    /// Ids registered and not delivered yet.
    pub fn outstanding(&self) -> u64 {
        // Counted, not scanned: the run polls this through its grace period.
        let c = self.lock().counts;
        c.registered - c.registered_delivered
    }

    /// When the latest delivery carrying an id arrived, if any did.
    pub fn last_delivery(&self) -> Option<Instant> {
        self.lock().last
    }

    /// Accepted first deliveries per second since the tracker's start.
    pub fn per_second(&self) -> Vec<u64> {
        self.lock().per_second.clone()
    }

    /// The counts now; every registered id not delivered yet counts as lost (call it
    /// after the grace period).
    pub fn summary(&self, grace: Duration) -> DeliverySummary {
        let inner = self.lock();
        let c = inner.counts;
        let lost = c.registered - c.registered_delivered;
        let share = |n: u64| {
            if c.registered == 0 {
                0.0
            } else {
                n as f64 / c.registered as f64
            }
        };
        DeliverySummary {
            registered: c.registered,
            delivered: c.delivered,
            lost,
            lost_rate: share(lost),
            duplicated: c.duplicated,
            duplicated_rate: share(c.duplicated),
            refused: c.refused,
            unknown: c.unknown,
            no_id: c.no_id,
            bad_body: c.bad_body,
            too_large: c.too_large,
            registry_overflow: c.registry_overflow,
            grace_s: grace.as_secs_f64(),
            latency_ms: DeliveryLatency::of(&inner.latency_us),
            per_second: inner.per_second.clone(),
        }
    }
}
