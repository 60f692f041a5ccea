//! The hand-over of one engine thread's measurements: every second of the measured
//! window, a thread sends what it recorded in it to the coordinating thread (so a run
//! killed later still has it), with its live gauges (requests in flight, users, CPU);
//! and the warm-up's end, which discards what was recorded before it.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::cpu::{thread_cpu_time, thread_times, ThreadTimes};
use crate::lanes::Lane;
use crate::thread::{ThreadState, MEASURING, WARMING};
use headroom_metrics::recorder::{Recorder, SecondBucket};

/// What an engine thread sends to the coordinating thread.
pub(crate) enum Report {
    /// A finished second of this thread, and everything it recorded during it (a
    /// finished recorder of that second alone: the run's measurements so far are the
    /// sum of these, so a run killed later still has them; see [`Timeline`]).
    ///
    /// [`Timeline`]: super::Timeline
    Second(SecondBucket, Box<Recorder>),
    /// This thread crossed from the warm-up into the measured window and discarded
    /// what it had recorded.
    Measuring,
    /// The thread is done: what it recorded since its last [`Report::Second`] (all of
    /// it for a thread that ended before its first), the final partial second, its
    /// CPU use, and when its last request ended.
    Done(Box<Recorder>, SecondBucket, ThreadTimes, Option<Instant>),
}

/// Live gauges of one thread, read when a second is handed over.
pub(crate) struct Gauges {
    /// Each load's lane, whose counts add up to the thread's.
    pub(crate) lanes: Vec<Rc<Lane>>,
    /// The thread's CPU times when the measured window began (after a warm-up).
    pub(crate) measuring_since: Cell<Option<ThreadTimes>>,
    /// Woken when this thread enters the measured window.
    measuring: Notify,
    /// Where the thread's reports go.
    tx: Sender<Report>,
}

impl Gauges {
    pub(crate) fn new(tx: Sender<Report>, lanes: Vec<Rc<Lane>>) -> Gauges {
        Gauges {
            lanes,
            measuring_since: Cell::default(),
            measuring: Notify::new(),
            tx,
        }
    }
}

/// Ends this thread's warm-up (if it is still in it): discards everything recorded so
/// far and starts the measured window's record. Connections, pools and the target's
/// caches stay warm; nothing of the warm-up leaks into the figures.
pub(crate) fn enter_measured(state: &ThreadState, gauges: &Gauges) {
    if state.phase.get() != WARMING {
        return;
    }
    *state.recorder.borrow_mut() = Recorder::new(state.plan.names.len());
    state.take_opened(false);
    state.phase.set(MEASURING);
    gauges.measuring_since.set(Some(thread_times()));
    gauges.measuring.notify_one();
    let _ = gauges.tx.send(Report::Measuring);
}

/// Hands each finished second to the coordinator, on the second boundaries of the
/// measured window. After a warm-up, the window starts when this thread enters it.
///
/// Which side of the boundary a request falls on is decided by its schedule, not by
/// whichever of two timers due at the same instant fires first: in the open model the
/// pacer enters the window right before the first arrival scheduled in it (which the
/// early window may start up to 2 ms ahead), so a window of N seconds at R/s holds
/// exactly N × R arrivals. The closed model has no schedule of arrivals and enters it
/// by the clock.
pub(crate) async fn hand_over_seconds(state: Rc<ThreadState>, gauges: Rc<Gauges>) {
    let warmup = state.plan.warmup;
    if state.phase.get() == WARMING {
        if state.plan.loads().all(|(load, _)| load.is_open()) {
            gauges.measuring.notified().await
        } else {
            tokio::time::sleep_until((state.start + warmup).into()).await;
            enter_measured(&state, &gauges);
        }
    }
    let from = state.start + warmup;
    let mut t = 0u64;
    let mut cpu_before = thread_cpu_time();
    loop {
        tokio::time::sleep_until((from + Duration::from_secs(t + 1)).into()).await;
        // Connections are counted into the second they opened in, so the run's
        // measurements so far hold them too.
        state.take_opened(true);
        let (mut bucket, delta) = {
            let mut recorder = state.recorder.borrow_mut();
            let bucket = recorder.take_second(t + 1);
            let names = recorder.by_name.len();
            let mut fresh = Recorder::new(names);
            fresh.second.t = t + 1;
            // Why hand over the whole recorder every second rather than only at the
            // end: what a thread measured must leave it while the run goes, or a
            // `kill -9` loses it. A fresh recorder costs a few small allocations per
            // second (its histograms grow as values arrive), nothing per request.
            (bucket, std::mem::replace(&mut *recorder, fresh).finish())
        };
        bucket.in_flight = gauges.lanes.iter().map(|l| l.in_flight.get()).sum();
        bucket.users = gauges.lanes.iter().map(|l| l.users.get()).sum();
        // Read from /proc: a thread out of file descriptors reads nothing (zero),
        // which must neither go back in time nor panic and lose this second.
        let cpu_now = thread_cpu_time().max(cpu_before);
        bucket.cpu_us = cpu_now.saturating_sub(cpu_before).as_micros() as u64;
        cpu_before = cpu_now;
        if gauges
            .tx
            .send(Report::Second(bucket, Box::new(delta)))
            .is_err()
        {
            return;
        }
        t += 1;
        if t.is_multiple_of(CLOSE_UNUSED_EVERY_S) && state.client.close_unused() > 0 {
            crate::heap::give_back();
        }
    }
}

/// How often a thread closes the pooled connections that no request took meanwhile
/// (see `Client::close_unused`), so a connection goes after 90 to 180 s unused: the
/// order of hyper's and Go's 90 s idle timeouts. Not shorter: a pool that closes what
/// a slow minute will need again pays a handshake per reopened connection.
const CLOSE_UNUSED_EVERY_S: u64 = 90;
