//! One iteration: pick a weighted item and run it — a single request, or a flow's
//! steps in order with captured variables — on the caller's connection, recording
//! every request in the thread's recorder. Hit errors are recorded, never returned.
//!
//! Every request is a [`Pending`] from the moment the run sets out to send it until
//! its result is recorded; one dropped unrecorded (the run ended first) counts as
//! abandoned. So each scheduled request lands in exactly one count (DESIGN.md rule 6).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;

use crate::check;
use crate::client::connect::{ConnectError, Connection as Conn, Connector, Opened};
use crate::client::request;
use crate::engine::work::{Prepared, PreparedStep, Work, Workload};
use crate::metrics::recorder::{Hit, Recorder, Timing};
use crate::metrics::ErrorKind;
use crate::plan::{Plan, Think};
use crate::template::{RenderContext, Vars};

/// State shared by every task of one engine thread (never across threads).
pub(crate) struct ThreadState {
    /// The plan being run.
    pub(crate) plan: Arc<Plan>,
    /// Its prepared items.
    pub(crate) workload: Arc<Workload>,
    /// Opens connections to the target (TCP or TLS).
    pub(crate) connector: Arc<Connector>,
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
    /// First failed TLS handshake seen by the run, for the end-of-run message.
    pub(crate) tls_failure: Arc<Mutex<Option<String>>>,
    /// The current phase: `WARMING` during a warm-up, then `MEASURING` (see attack.rs).
    /// A request records only into the phase it began in.
    pub(crate) phase: Cell<u32>,
}

impl ThreadState {
    /// Whether the run was asked to stop early.
    pub(crate) fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// One request the run has set out to send, until its result is recorded.
///
/// Begun when the request is scheduled (an open-model arrival that waits for a pooled
/// connection already is one), so the wait is inside its accounting as it is inside
/// its latency. Recorded, it counts as completed or failed; dropped unrecorded, because
/// the drain gave up or the run was interrupted with it in flight, it counts as
/// abandoned. A request begun in the warm-up belongs to the warm-up's discarded record:
/// it counts nowhere in the measured window's, neither as scheduled nor as done.
pub(crate) struct Pending {
    state: Rc<ThreadState>,
    phase: u32,
    open: bool,
}

impl Pending {
    /// Counts a request as scheduled in the current phase.
    pub(crate) fn begin(state: &Rc<ThreadState>) -> Pending {
        state.recorder.borrow_mut().scheduled += 1;
        Pending {
            state: state.clone(),
            phase: state.phase.get(),
            open: true,
        }
    }

    fn current(&self) -> bool {
        self.phase == self.state.phase.get()
    }

    /// Records the request's result.
    pub(crate) fn record(mut self, hit: &Hit) {
        self.open = false;
        if self.current() {
            self.state.recorder.borrow_mut().record(hit);
        }
    }

    /// Takes back a request that will not be sent after all (a flow with no request).
    fn cancel(mut self) {
        self.open = false;
        if self.current() {
            self.state.recorder.borrow_mut().scheduled -= 1;
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if self.open && self.current() {
            self.state.recorder.borrow_mut().abandoned += 1;
        }
    }
}

/// Per-task scratch space, reused across iterations so a warm task does not allocate.
#[derive(Default)]
pub(crate) struct Scratch {
    wire: Vec<u8>,
    render: Vec<u8>,
    vars: Vars,
}

/// Picks the next iteration's item by weight.
pub(crate) fn pick(state: &ThreadState) -> &Work {
    let mut rng = state.rng.borrow_mut();
    state.workload.pick(&mut *rng)
}

/// Runs one iteration of `work` on `conn` (opened or replaced as needed). `intended`
/// is when the iteration was meant to start: the schedule in the open model, now in
/// the closed one. `first` is the iteration's first request, already counted as
/// scheduled. Returns false when a connection could not be opened, so closed users can
/// back off instead of spinning on a dead target.
pub(crate) async fn run_iteration(
    state: &Rc<ThreadState>,
    work: &Work,
    first: Pending,
    conn: &mut Option<Conn>,
    intended: Instant,
    scratch: &mut Scratch,
) -> bool {
    scratch.vars.clear();
    match work {
        Work::Request(prepared) => {
            send(state, prepared, first, conn, intended, scratch).await != Sent::ConnectFailed
        }
        Work::Flow(steps) => {
            let mut first = Some(first);
            let mut intended = intended;
            for step in steps {
                match step {
                    PreparedStep::Request(prepared) => {
                        let pending = first.take().unwrap_or_else(|| Pending::begin(state));
                        match send(state, prepared, pending, conn, intended, scratch).await {
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
            if let Some(unused) = first {
                unused.cancel();
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
    pending: Pending,
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
    // Latency runs from the intended start, but never from a point after the actual
    // send: a send a few microseconds early (see timer.rs) must not shrink latency.
    let from = intended.min(sent);
    // The timeout runs from the same point: a request that waited for a pooled
    // connection, or started late, has had that long already. Its corrected latency
    // can then never exceed the timeout by more than the timer's slack.
    let deadline = from + prepared.template.timeout_in(plan);
    let connecting = Cell::new(false);
    let had_conn = conn.is_some();
    let mut trace = Trace::default();
    let outcome = tokio::time::timeout_at(
        deadline.into(),
        exchange(state, prepared, conn, bytes, &connecting, &mut trace),
    )
    .await;
    let done = Instant::now();
    let error = match outcome {
        Err(_elapsed) if connecting.get() => {
            // The handshake never completed (a full accept backlog drops the SYN, a
            // host that does not answer): the target did not take the connection.
            // A TLS handshake that runs out of time counts alike: the connection was
            // never ready to carry a request, as with a dropped SYN, and the closed
            // model's users back off the same way.
            *conn = None;
            let reason = if state.connector.is_tls() {
                "connect or TLS handshake timed out"
            } else {
                "connect timed out"
            };
            note_connect_failure(state, reason);
            Some(ErrorKind::Connect)
        }
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
            let verdict = check::judge(
                &prepared.template.expect,
                &prepared.captures,
                status,
                body,
                &mut scratch.vars,
            )
            .err();
            // Judged: an idle connection must not hold its share of the body budget.
            if let Some(c) = conn.as_mut().filter(|_| prepared.keep_body) {
                c.release_body();
            }
            verdict
        }
    };
    if conn.as_ref().is_some_and(|c| !c.reusable()) {
        *conn = None;
    }
    pending.record(&Hit {
        name_id: prepared.template.name_id,
        corrected: done - from,
        uncorrected: done - sent,
        error,
        timing: trace.timing(had_conn, sent, done),
    });
    state.last_done.set(Some(done));
    match error {
        None => Sent::Ok,
        Some(ErrorKind::Connect) => Sent::ConnectFailed,
        Some(_) => Sent::Failed,
    }
}

/// The instants of one request's exchange that its [`Timing`] is made of.
#[derive(Default)]
struct Trace {
    /// Connect time of the connection this request opened.
    connect: Option<Duration>,
    /// Its TLS handshake time (TLS only).
    tls: Option<Duration>,
    /// When that connection was ready to write on.
    ready: Option<Instant>,
    /// When the first byte of a complete response arrived.
    first_byte: Option<Instant>,
}

impl Trace {
    /// Notes a connection opened by this request, ready now, and what opening it took.
    fn opened(&mut self, took: Opened) {
        self.connect = Some(took.connect);
        self.tls = took.tls;
        self.ready = Some(Instant::now());
    }

    /// The request's timing: `had_conn` whether it began with an open connection,
    /// `sent` when it began, `done` when its response ended.
    fn timing(&self, had_conn: bool, sent: Instant, done: Instant) -> Timing {
        // The write starts when the connection is ready: right after `sent` on a
        // reused one (only an idle check lies between), after the connect on a new
        // one. Taking these instants instead of one more clock read per request keeps
        // the hot path as it was.
        let write = self.ready.unwrap_or(sent);
        Timing {
            connect: self.connect,
            // Counted in `connections.handshakes` too; plain TCP has none.
            tls: self.tls,
            ttfb: self.first_byte.map(|b| b.saturating_duration_since(write)),
            receive: self.first_byte.map(|b| done.saturating_duration_since(b)),
            // A stale kept-alive connection replaced by a new one does not count.
            reused: had_conn && self.connect.is_none(),
        }
    }
}

/// Opens a connection if needed, sends, and reads one response. When a reused
/// connection turns out to have been closed by the peer before any response byte, the
/// request is sent once more on a fresh connection, but only when that cannot
/// duplicate a write in the target: its method is idempotent, or not one byte of it
/// reached the connection. `connecting` is set while a connection is being opened;
/// `trace` takes the connect time and the response's first byte.
async fn exchange(
    state: &Rc<ThreadState>,
    prepared: &Prepared,
    conn: &mut Option<Conn>,
    bytes: &[u8],
    connecting: &Cell<bool>,
    trace: &mut Trace,
) -> Result<u16, ErrorKind> {
    for attempt in 0..2 {
        if conn.is_none() {
            connecting.set(true);
            let opened = state.connector.connect().await;
            connecting.set(false);
            match opened {
                Ok((c, took)) => {
                    trace.opened(took);
                    *conn = Some(c)
                }
                Err(ConnectError::Tcp(e)) => {
                    let kind = connect_error_kind(&e);
                    if kind == ErrorKind::Connect {
                        note_connect_failure(state, &e.to_string());
                    }
                    return Err(kind);
                }
                Err(ConnectError::Tls(reason)) => {
                    note_first(&state.tls_failure, state, &reason);
                    return Err(ErrorKind::Tls);
                }
            }
        }
        let c = conn.as_mut().expect("connected above");
        match c.round_trip(bytes, prepared.keep_body, prepared.head).await {
            Ok(response) => {
                trace.first_byte = Some(response.first_byte);
                return Ok(response.status);
            }
            Err(e) if e.stale && attempt == 0 && (prepared.idempotent || !e.sent) => {
                // Only a request that reached the old connection is sent twice.
                if e.sent {
                    state.recorder.borrow_mut().retries += 1;
                }
                *conn = None;
            }
            Err(e) => return Err(e.kind),
        }
    }
    Err(ErrorKind::Reset)
}

/// The kind of a failed connect: the generator's own when it ran out of file
/// descriptors or local ports (those say nothing about the target), else `connect`.
pub(crate) fn connect_error_kind(e: &std::io::Error) -> ErrorKind {
    use nix::errno::Errno;
    match e.raw_os_error().map(Errno::from_raw) {
        Some(Errno::EMFILE | Errno::ENFILE | Errno::EADDRNOTAVAIL | Errno::ENOBUFS) => {
            ErrorKind::Generator
        }
        // The handshake completed and the target then reset the connection before
        // the connect call returned: it took the connection, as a reset after it.
        Some(Errno::ECONNRESET | Errno::ECONNABORTED) => ErrorKind::Reset,
        _ => ErrorKind::Connect,
    }
}

/// Keeps the run's first connect failure for the end-of-run message.
fn note_connect_failure(state: &ThreadState, reason: &str) {
    note_first(&state.connect_failure, state, reason);
}

/// Keeps the run's first failure of one sort, as `address: reason`.
fn note_first(slot: &Mutex<Option<String>>, state: &ThreadState, reason: &str) {
    let mut first = slot.lock().unwrap_or_else(|p| p.into_inner());
    first.get_or_insert_with(|| format!("{}: {reason}", state.connector.addr()));
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
