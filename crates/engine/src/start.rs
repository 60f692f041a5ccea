//! The start line of a run: the one instant every engine thread counts its schedule
//! from, fixed only once every thread has built its runtime and is ready to send.
//!
//! Fixing it beforehand ("now + a margin") charges a slow thread start to the target:
//! on a busy machine a thread that needs longer than the margin to come up finds its
//! first arrivals already due, starts them late, and that lag both inflates latency
//! (timed from the schedule) and marks the run generator-bound.
//!
//! A shard of a sharded run does not fix its own instant: once its threads are ready
//! it tells the coordinator, which gives every shard the same absolute start
//! ([`StartLine::external`], [`StartLine::wait_ready`], [`StartLine::open`]). The skew
//! between shards is then bounded by their clocks, not by how long each took to start.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How far after the last thread is ready the schedule starts, so that a thread
/// woken a little later than the others still finds its first arrival ahead.
const MARGIN: Duration = Duration::from_millis(5);

/// Shared by the engine threads of one run and the thread that started them.
#[derive(Debug)]
pub(crate) struct StartLine {
    gate: Mutex<Gate>,
    opened: Condvar,
    /// Whether the instant comes from outside rather than "ready + margin".
    external: bool,
}

#[derive(Debug, Clone, Copy)]
enum Gate {
    /// Threads still to arrive.
    Waiting(usize),
    /// Everyone arrived; the start instant comes from outside ([`StartLine::open`]).
    Ready,
    /// Everyone arrived; the schedule starts at this instant.
    Open(Instant),
    /// The run was given up before it started (a thread could not be spawned).
    Closed,
}

impl StartLine {
    /// A start line for `threads` engine threads.
    pub(crate) fn new(threads: usize) -> StartLine {
        StartLine {
            gate: Mutex::new(Gate::Waiting(threads)),
            opened: Condvar::new(),
            external: false,
        }
    }

    /// A start line for `threads` engine threads whose instant is given by
    /// [`StartLine::open`] once they are all ready (a shard's, from its coordinator).
    pub(crate) fn external(threads: usize) -> StartLine {
        StartLine {
            external: true,
            ..StartLine::new(threads)
        }
    }

    /// Waits until every thread is ready (true) or the line was closed (false).
    pub(crate) fn wait_ready(&self) -> bool {
        let gate = self
            .opened
            .wait_while(self.lock(), |g| matches!(g, Gate::Waiting(_)))
            .unwrap_or_else(|p| p.into_inner());
        !matches!(*gate, Gate::Closed)
    }

    /// Starts the schedule at `at` (an externally started line whose threads are all
    /// ready). No effect on a line that is open or closed already.
    pub(crate) fn open(&self, at: Instant) {
        let mut gate = self.lock();
        if let Gate::Ready = *gate {
            *gate = Gate::Open(at);
            self.opened.notify_all();
        }
    }

    /// Waits until every thread is ready, then returns the common start instant;
    /// `None` when the run was given up ([`StartLine::close`]). Every thread must call
    /// this exactly once, even one about to fail, or the others wait for it.
    pub(crate) fn wait(&self) -> Option<Instant> {
        let mut gate = self.lock();
        if let Gate::Waiting(left) = *gate {
            *gate = match left {
                0 | 1 if self.external => Gate::Ready,
                0 | 1 => Gate::Open(Instant::now() + MARGIN),
                _ => Gate::Waiting(left - 1),
            };
            self.opened.notify_all();
        }
        let gate = self
            .opened
            .wait_while(gate, |g| matches!(g, Gate::Waiting(_) | Gate::Ready))
            .unwrap_or_else(|p| p.into_inner());
        match *gate {
            Gate::Open(at) => Some(at),
            Gate::Waiting(_) | Gate::Ready | Gate::Closed => None,
        }
    }

    /// Gives the run up before it starts: threads waiting, or still to arrive, get
    /// `None` and return without sending anything. No effect once the line is open.
    pub(crate) fn close(&self) {
        let mut gate = self.lock();
        if let Gate::Waiting(_) | Gate::Ready = *gate {
            *gate = Gate::Closed;
            self.opened.notify_all();
        }
    }

    /// The start instant, once the threads have fixed it.
    pub(crate) fn fixed(&self) -> Option<Instant> {
        match *self.lock() {
            Gate::Open(at) => Some(at),
            Gate::Waiting(_) | Gate::Ready | Gate::Closed => None,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Gate> {
        self.gate.lock().unwrap_or_else(|p| p.into_inner())
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
        let starts: Vec<Instant> = handles
            .into_iter()
            .map(|h| h.join().unwrap().expect("the line opened"))
            .collect();
        assert!(starts.iter().all(|s| *s == starts[0]));
        assert!(
            starts[0] >= before + slow,
            "the start waited for the slow thread"
        );
        assert_eq!(line.fixed(), Some(starts[0]));
    }

    #[test]
    fn an_external_line_opens_at_the_instant_given_once_all_are_ready() {
        let line = Arc::new(StartLine::external(2));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let line = line.clone();
                std::thread::spawn(move || line.wait())
            })
            .collect();
        assert!(line.wait_ready());
        assert_eq!(line.fixed(), None, "ready is not open");
        let at = Instant::now() + Duration::from_millis(40);
        line.open(at);
        for h in handles {
            assert_eq!(h.join().unwrap(), Some(at));
        }
        line.close();
        assert_eq!(
            line.fixed(),
            Some(at),
            "closing an open line changes nothing"
        );
    }

    #[test]
    fn closing_the_line_releases_the_threads_that_came() {
        let line = Arc::new(StartLine::new(3));
        let early = {
            let line = line.clone();
            std::thread::spawn(move || line.wait())
        };
        std::thread::sleep(Duration::from_millis(20));
        line.close();
        assert_eq!(early.join().unwrap(), None);
        assert_eq!(line.wait(), None, "a thread arriving after the close");
        assert_eq!(line.fixed(), None);
    }
}
