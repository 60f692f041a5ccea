//! The start line of a run: the one instant every engine thread counts its schedule
//! from, fixed only once every thread has built its runtime and is ready to send.
//!
//! Fixing it beforehand ("now + a margin") charges a slow thread start to the target:
//! on a busy machine a thread that needs longer than the margin to come up finds its
//! first arrivals already due, starts them late, and that lag both inflates latency
//! (timed from the schedule) and marks the run generator-bound.

use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

/// How far after the last thread is ready the schedule starts, so that a thread
/// woken a little later than the others still finds its first arrival ahead.
const MARGIN: Duration = Duration::from_millis(5);

/// Shared by the engine threads of one run.
#[derive(Debug)]
pub(crate) struct StartLine {
    ready: Barrier,
    at: Mutex<Option<Instant>>,
}

impl StartLine {
    /// A start line for `threads` engine threads.
    pub(crate) fn new(threads: usize) -> StartLine {
        StartLine {
            ready: Barrier::new(threads),
            at: Mutex::new(None),
        }
    }

    /// Waits until every thread is ready, then returns the common start instant.
    /// Every thread must call this exactly once, even one about to fail, or the
    /// others wait forever.
    pub(crate) fn wait(&self) -> Instant {
        self.ready.wait();
        *self.lock().get_or_insert_with(|| Instant::now() + MARGIN)
    }

    /// The start instant, once the threads have fixed it.
    pub(crate) fn fixed(&self) -> Option<Instant> {
        *self.lock()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.at.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn every_thread_gets_the_same_instant_after_the_slowest_is_ready() {
        let line = Arc::new(StartLine::new(3));
        let before = Instant::now();
        let slow = Duration::from_millis(30);
        let handles: Vec<_> = (0..3)
            .map(|i| {
                let line = line.clone();
                std::thread::spawn(move || {
                    if i == 2 {
                        std::thread::sleep(slow);
                    }
                    line.wait()
                })
            })
            .collect();
        let starts: Vec<Instant> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(starts.iter().all(|s| *s == starts[0]));
        assert!(
            starts[0] >= before + slow,
            "the start waited for the slow thread"
        );
        assert_eq!(line.fixed(), Some(starts[0]));
    }
}
