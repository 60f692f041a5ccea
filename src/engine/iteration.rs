//! One iteration: pick a weighted item and run it — a single request, or a flow's
//! steps in order with captured variables — on the caller's connection, recording
//! every request in the thread's recorder. Hit errors are recorded, never returned.

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;

use crate::check;
use crate::client::http1::Conn;
use crate::client::request;
use crate::engine::work::{Prepared, PreparedStep, Work, Workload};
use crate::metrics::recorder::{Hit, Recorder};
use crate::metrics::ErrorKind;
use crate::plan::{Plan, Think};
use crate::template::{RenderContext, Vars};

/// State shared by every task of one engine thread (never across threads).
pub(crate) struct ThreadState {
    /// The plan being run.
    pub(crate) plan: Arc<Plan>,
    /// Its prepared items.
    pub(crate) workload: Arc<Workload>,
    /// Resolved target address.
    pub(crate) addr: SocketAddr,
    /// When the run started (the same instant on every thread).
    pub(crate) start: Instant,
    /// This thread's measurements.
    pub(crate) recorder: RefCell<Recorder>,
    /// When this thread's latest request ended (none yet: `None`).
    pub(crate) last_done: Cell<Option<Instant>>,
    /// This thread's random source.
    pub(crate) rng: RefCell<SmallRng>,
    /// Set to stop early (Ctrl-C).
    pub(crate) stop: Arc<AtomicBool>,
    /// First connect failure seen by the run, for the end-of-run message.
    pub(crate) connect_failure: Arc<Mutex<Option<String>>>,
}

impl ThreadState {
    /// Whether the run was asked to stop early.
    pub(crate) fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Per-task scratch space, reused across iterations so a warm task does not allocate.
#[derive(Default)]
pub(crate) struct Scratch {
    wire: Vec<u8>,
    render: Vec<u8>,
    vars: Vars,
}

/// Runs one weighted iteration on `conn` (opened or replaced as needed). `intended`
/// is when the iteration was meant to start: the schedule in the open model, now in
/// the closed one. Returns false when a connection could not be opened, so closed
/// users can back off instead of spinning on a dead target.
pub(crate) async fn run_iteration(
    state: &Rc<ThreadState>,
    conn: &mut Option<Conn>,
    intended: Instant,
    scratch: &mut Scratch,
) -> bool {
    let work = {
        let mut rng = state.rng.borrow_mut();
        state.workload.pick(&mut *rng)
    };
    match work {
        Work::Request(prepared) => {
            scratch.vars.clear();
            send(state, prepared, conn, intended, scratch).await != Sent::ConnectFailed
        }
        Work::Flow(steps) => {
            scratch.vars.clear();
            let mut intended = intended;
            for step in steps {
                match step {
                    PreparedStep::Request(prepared) => {
                        match send(state, prepared, conn, intended, scratch).await {
                            Sent::Ok => intended = Instant::now(),
                            Sent::Failed => return true,
                            Sent::ConnectFailed => return false,
                        }
                    }
                    PreparedStep::Think(think) => {
                        think_for(state, *think).await;
                        intended = Instant::now();
                    }
                }
            }
            true
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Sent {
    Ok,
    Failed,
    ConnectFailed,
}

async fn send(
    state: &Rc<ThreadState>,
    prepared: &Prepared,
    conn: &mut Option<Conn>,
    intended: Instant,
    scratch: &mut Scratch,
) -> Sent {
    let plan = &state.plan;
    let bytes: &[u8] = match &prepared.wire {
        Some(wire) => wire,
        None => {
            let mut rng = state.rng.borrow_mut();
            let mut ctx = RenderContext {
                rng: &mut rng,
                vars: &scratch.vars,
            };
            request::render(
                &prepared.template,
                &plan.target,
                &mut ctx,
                &mut scratch.wire,
                &mut scratch.render,
            );
            &scratch.wire
        }
    };
    let sent = Instant::now();
    let deadline = sent + prepared.template.timeout_in(plan);
    let outcome =
        tokio::time::timeout_at(deadline.into(), exchange(state, prepared, conn, bytes)).await;
    let done = Instant::now();
    let error = match outcome {
        Err(_elapsed) => {
            *conn = None;
            Some(ErrorKind::Timeout)
        }
        Ok(Err(kind)) => {
            *conn = None;
            Some(kind)
        }
        Ok(Ok(status)) => {
            let body = conn.as_ref().map(Conn::body).unwrap_or_default();
            check::judge(
                &prepared.template.expect,
                &prepared.captures,
                status,
                body,
                &mut scratch.vars,
            )
            .err()
        }
    };
    if conn.as_ref().is_some_and(|c| !c.reusable()) {
        *conn = None;
    }
    // Latency runs from the intended start, but never from a point after the actual
    // send: a send a few microseconds early (see timer.rs) must not shrink latency.
    let from = intended.min(sent);
    state.recorder.borrow_mut().record(&Hit {
        name_id: prepared.template.name_id,
        corrected: done - from,
        uncorrected: done - sent,
        error,
    });
    state.last_done.set(Some(done));
    match error {
        None => Sent::Ok,
        Some(ErrorKind::Connect) => Sent::ConnectFailed,
        Some(_) => Sent::Failed,
    }
}

/// Opens a connection if needed, sends, and reads one response; retries once on a
/// fresh connection when a reused one turns out to have been closed by the peer.
async fn exchange(
    state: &Rc<ThreadState>,
    prepared: &Prepared,
    conn: &mut Option<Conn>,
    bytes: &[u8],
) -> Result<u16, ErrorKind> {
    for attempt in 0..2 {
        if conn.is_none() {
            match Conn::connect(state.addr).await {
                Ok(c) => *conn = Some(c),
                Err(e) => {
                    let mut first = state
                        .connect_failure
                        .lock()
                        .unwrap_or_else(|p| p.into_inner());
                    first.get_or_insert_with(|| format!("{}: {e}", state.addr));
                    return Err(ErrorKind::Connect);
                }
            }
        }
        let c = conn.as_mut().expect("connected above");
        match c.round_trip(bytes, prepared.keep_body, prepared.head).await {
            Ok(response) => return Ok(response.status),
            Err(e) if e.stale && attempt == 0 => *conn = None,
            Err(e) => return Err(e.kind),
        }
    }
    Err(ErrorKind::Reset)
}

/// Sleeps for a think time, cut short when the run is stopping.
pub(crate) async fn think_for(state: &ThreadState, think: Think) {
    let pause = match think {
        Think::None => return,
        Think::Fixed(d) => d,
        Think::Uniform(lo, hi) => {
            use rand::Rng;
            let span = (hi - lo).as_nanos() as u64;
            lo + Duration::from_nanos(state.rng.borrow_mut().random_range(0..=span))
        }
    };
    let end = state.start + state.plan.duration();
    let until = (Instant::now() + pause).min(end.max(Instant::now()));
    tokio::time::sleep_until(until.into()).await;
}
