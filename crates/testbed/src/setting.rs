//! [`DurationSetting`]: a duration the admin endpoints change while requests read it
//! (`/work`'s service time, its contention cost), lock-free.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A duration read and replaced atomically, kept in whole nanoseconds (saturating at
/// about 584 years). Relaxed: a request reads the value once when it starts, and a
/// change applies to the requests that start after it; nothing else is ordered by it.
#[derive(Debug)]
pub(crate) struct DurationSetting(AtomicU64);

impl DurationSetting {
    /// A setting holding `d`.
    pub(crate) fn new(d: Duration) -> Self {
        DurationSetting(AtomicU64::new(nanos(d)))
    }

    /// The duration now.
    pub(crate) fn get(&self) -> Duration {
        Duration::from_nanos(self.0.load(Ordering::Relaxed))
    }

    /// Replaces it with `d`.
    pub(crate) fn set(&self, d: Duration) {
        self.0.store(nanos(d), Ordering::Relaxed);
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
