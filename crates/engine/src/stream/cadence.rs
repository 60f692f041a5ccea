//! A stream's stated cadence (`every:` on its opening step) and the lateness of each
//! message against it: message k (the first is k = 0) is due at the first message's
//! arrival + k·every, and its lateness is max(0, arrival − due). The first message
//! anchors the schedule, so the time the server takes to send it (`first_message_ms`)
//! is not counted again; a message that comes early counts as on time, and a late one
//! does not move the schedule of those after it (the server's pace is judged, not each
//! gap on its own: that is `gap_ms`).

use std::time::{Duration, Instant};

/// The schedule one stream's messages are judged against.
#[derive(Debug, Clone)]
pub(crate) struct Cadence {
    every: Duration,
    first: Option<Instant>,
    /// The index of the next message.
    next: u64,
}

impl Cadence {
    /// One message every `every` (above zero: the scenario refuses 0).
    pub(crate) fn new(every: Duration) -> Cadence {
        Cadence {
            every,
            first: None,
            next: 0,
        }
    }

    /// The next message arrived at `at`: how late it is.
    pub(crate) fn arrived(&mut self, at: Instant) -> Duration {
        let first = *self.first.get_or_insert(at);
        let k = self.next;
        self.next += 1;
        lateness(first, k, self.every, at)
    }
}

/// How late message `k` arriving at `at` is, when message 0 arrived at `first` and one
/// is due every `every`: max(0, at − (first + k·every)). A due time past what an
/// `Instant` can hold is never reached, so the message is on time.
pub(crate) fn lateness(first: Instant, k: u64, every: Duration, at: Instant) -> Duration {
    let due = u32::try_from(k)
        .ok()
        .and_then(|k| every.checked_mul(k))
        .and_then(|offset| first.checked_add(offset));
    due.map_or(Duration::ZERO, |due| at.saturating_duration_since(due))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn lateness_is_measured_against_the_first_message_plus_k_periods() {
        let t0 = Instant::now();
        let every = 100 * MS;
        // On time, early and late against first + k·every.
        assert_eq!(lateness(t0, 0, every, t0), Duration::ZERO);
        assert_eq!(lateness(t0, 3, every, t0 + 300 * MS), Duration::ZERO);
        assert_eq!(lateness(t0, 3, every, t0 + 250 * MS), Duration::ZERO);
        assert_eq!(lateness(t0, 3, every, t0 + 340 * MS), 40 * MS);
        // Past u32 periods, or past what an Instant holds: on time, never a panic.
        assert_eq!(lateness(t0, u64::MAX, every, t0), Duration::ZERO);
        assert_eq!(lateness(t0, 2, Duration::MAX, t0 + 5 * MS), Duration::ZERO);
    }

    #[test]
    fn a_late_message_does_not_move_the_schedule_of_the_next() {
        let t0 = Instant::now();
        let mut c = Cadence::new(100 * MS);
        // The first message anchors: however long it took, it is on time.
        assert_eq!(c.arrived(t0), Duration::ZERO);
        assert_eq!(c.arrived(t0 + 100 * MS), Duration::ZERO);
        // Message 2 is 150 ms late; message 3, right behind it, is still 50 ms late
        // (due at 300 ms), and message 4 back on the beat is on time.
        assert_eq!(c.arrived(t0 + 350 * MS), 150 * MS);
        assert_eq!(c.arrived(t0 + 350 * MS), 50 * MS);
        assert_eq!(c.arrived(t0 + 400 * MS), Duration::ZERO);
        // A server twice as slow as stated falls behind by one period per message.
        let mut slow = Cadence::new(100 * MS);
        let late: Vec<_> = (0..5).map(|k| slow.arrived(t0 + k * 200 * MS)).collect();
        assert_eq!(late, [0, 100, 200, 300, 400].map(|n| n * MS));
    }
}
