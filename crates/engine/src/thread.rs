//! One engine thread's state ([`ThreadState`], built from a [`Seed`] once the thread
//! runs) and the accounting of each request it sets out to send ([`Pending`]). A leaf
//! of the engine: the attack loop, the iteration and the stream steps all use it, and
//! it imports none of them.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::SeedableRng;

use crate::work::Workload;
use headroom_client::connect::Connector;
use headroom_client::session::Client;
use headroom_metrics::recorder::{Hit, Recorder};
use headroom_plan::Plan;

/// [`ThreadState::phase`] during a warm-up.
pub(crate) const WARMING: u32 = 0;
/// [`ThreadState::phase`] in the measured window.
pub(crate) const MEASURING: u32 = 1;

/// State shared by every task of one engine thread (never across threads).
pub(crate) struct ThreadState {
    /// The plan being run.
    pub(crate) plan: Arc<Plan>,
    /// Its prepared items.
    pub(crate) workload: Arc<Workload>,
    /// Sends this thread's requests: connections, protocol, shared pool.
    pub(crate) client: Client,
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
    /// First GraphQL error message seen by the run, for the summary and report.
    pub(crate) graphql_failure: Arc<Mutex<Option<String>>>,
    /// The current phase: `WARMING` during a warm-up, then `MEASURING` (see attack.rs).
    /// A request records only into the phase it began in.
    pub(crate) phase: Cell<u32>,
    /// Connectors for streams (`ws:`, `sse:`): HTTP/1.1 by ALPN.
    pub(crate) streams: crate::stream::connectors::Connectors,
    /// Clients of other origins redirects led to, by origin (see `chain.rs`).
    pub(crate) origins: RefCell<Vec<(String, Rc<Client>)>>,
}

/// What an engine thread is started with; it builds its [`ThreadState`] (whose
/// client holds the thread's own connections) once running.
pub(crate) struct Seed {
    /// The plan being run.
    pub(crate) plan: Arc<Plan>,
    /// Its prepared items.
    pub(crate) workload: Arc<Workload>,
    /// Opens connections to the target (TCP or TLS), for every thread.
    pub(crate) connector: Arc<Connector>,
    /// Set to stop early (Ctrl-C).
    pub(crate) stop: Arc<AtomicBool>,
    /// First connect failure seen by the run, for the end-of-run message.
    pub(crate) connect_failure: Arc<Mutex<Option<String>>>,
    /// First failed TLS handshake seen by the run, for the end-of-run message.
    pub(crate) tls_failure: Arc<Mutex<Option<String>>>,
    /// First GraphQL error message seen by the run, for the summary and report.
    pub(crate) graphql_failure: Arc<Mutex<Option<String>>>,
}

impl Seed {
    /// This thread's state, with `pool` connections of a capped shared pool.
    pub(crate) fn grow(self, start: Instant, pool: Option<usize>) -> ThreadState {
        let streams = crate::stream::connectors::Connectors::new(&self.connector, &self.plan);
        let client = Client::new(
            self.connector,
            self.plan.target.clone(),
            &self.plan.client,
            pool,
        );
        ThreadState {
            recorder: Recorder::new(self.plan.names.len()).into(),
            plan: self.plan,
            workload: self.workload,
            client,
            start,
            last_done: None.into(),
            rng: SmallRng::from_os_rng().into(),
            stop: self.stop,
            connect_failure: self.connect_failure,
            tls_failure: self.tls_failure,
            graphql_failure: self.graphql_failure,
            phase: 0.into(),
            streams,
            origins: RefCell::default(),
        }
    }
}

impl ThreadState {
    /// Whether the run was asked to stop early.
    pub(crate) fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Runs `f` with a rendering context of this thread's random source and a user's
    /// `vars` and `who` (its number and iteration). The source is borrowed only for `f`,
    /// which must not await.
    pub(crate) fn render<R>(
        &self,
        vars: &headroom_template::Vars,
        who: (u64, u64),
        f: impl FnOnce(&mut headroom_template::RenderContext<'_>) -> R,
    ) -> R {
        let mut rng = self.rng.borrow_mut();
        f(&mut headroom_template::RenderContext {
            rng: &mut rng,
            vars,
            user: who.0,
            iteration: who.1,
        })
    }

    /// Keeps `reason` as the run's first connect failure, unless one was kept already.
    pub(crate) fn note_connect_failure(&self, reason: &str) {
        self.note_first(&self.connect_failure, reason);
    }

    /// Keeps `reason` as the run's first TLS failure, unless one was kept already.
    pub(crate) fn note_tls_failure(&self, reason: &str) {
        self.note_first(&self.tls_failure, reason);
    }

    fn note_first(&self, slot: &Mutex<Option<String>>, reason: &str) {
        let mut first = slot.lock().unwrap_or_else(|p| p.into_inner());
        first.get_or_insert_with(|| format!("{}: {reason}", self.client.addr()));
    }

    /// Moves the connections the thread's connector counted so far into its recorder
    /// (at the hand-over), or discards them (at the end of a warm-up, with the rest of
    /// its record).
    pub(crate) fn take_opened(&self, keep: bool) {
        let (by_protocol, handshakes) = self.client.opens().take();
        let quic = self.client.take_quic();
        if keep {
            let mut recorder = self.recorder.borrow_mut();
            recorder.connections.add_opened(&by_protocol, handshakes);
            recorder.connections.quic.merge(&quic);
        }
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

    /// Applies `add` to the recorder when the request still belongs to the current
    /// phase: what it counted beside its hit (checks, redirects, cookies).
    pub(crate) fn also(&self, add: impl FnOnce(&mut Recorder)) {
        if self.current() {
            add(&mut self.state.recorder.borrow_mut());
        }
    }

    /// Takes back a request that will not be sent after all (a flow with no request,
    /// a stream step with nothing to do).
    pub(crate) fn cancel(mut self) {
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
