//! [`Client`]: the engine's one way to send a request. One per engine thread; it opens
//! connections, keeps the thread's shared pool, speaks the plan's protocol, and times
//! each request's connection work into a [`Trace`]. A [`Session`] is what one user
//! (closed model) or one arrival (open model) sends through: its own connection, the
//! shared pool, or a new connection per request, as the plan's [`ConnectionModel`] says.
//!
//! The engine renders a request into a [`Payload`] (no await while it holds the
//! thread's random source), then awaits [`Client::send`], which returns what the
//! caller's `judge` made of the status and body while the connection was still held:
//! an HTTP/1.1 body lives in its connection's buffer, and judging it there saves a copy.

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use super::connect::{ConnectError, Connection, Connector, Opened};
use super::request::{render, PreparedRequest};
use super::{ConnectionModel, Protocol};
use crate::metrics::recorder::Timing;
use crate::metrics::ErrorKind;
use crate::plan::{ClientPlan, Target};
use crate::template::RenderContext;

/// Sends requests for one engine thread (never shared across threads).
pub struct Client {
    connector: Arc<Connector>,
    target: Target,
    protocol: Protocol,
    model: ConnectionModel,
    pool: Pool,
}

/// What one user or one arrival sends through.
pub enum Session {
    /// Its own connection, kept between its requests (`per-user`).
    Own(Option<Link>),
    /// A connection of the thread's shared pool for each request (`shared`).
    Shared,
    /// A new connection for each request, closed after it (`per-request`).
    PerRequest,
}

impl Session {
    /// Drops the session's own connection, if it has one: a request given up on
    /// (timed out) may have left the rest of its response unread on it.
    pub fn forget(&mut self) {
        if let Session::Own(slot) = self {
            *slot = None;
        }
    }
}

/// One open connection.
pub enum Link {
    /// HTTP/1.1 over TCP or TLS.
    H1(Connection),
}

/// The thread's shared connections: idle HTTP/1.1 connections, and the cap on how
/// many may be in use at once (none: one per request in flight).
struct Pool {
    idle: RefCell<Vec<Connection>>,
    slots: Option<Semaphore>,
}

/// A request rendered for sending: borrowed prebuilt bytes, or this send's rendering.
pub enum Payload<'a> {
    /// HTTP/1.1 wire bytes.
    H1(&'a [u8]),
}

/// Reused space for rendering requests, so a warm task renders without allocating.
#[derive(Default)]
pub struct Scratch {
    wire: Vec<u8>,
    render: Vec<u8>,
}

/// Why a request got no judged response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The error kind it counts as.
    pub kind: ErrorKind,
    /// For a connection that could not be opened: the reason, for the run's message.
    pub note: Option<Note>,
}

/// The reason a connection could not be opened, kept for the end-of-run message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// TCP did not connect.
    Connect(String),
    /// The TLS handshake (or the ALPN agreement) failed.
    Tls(String),
}

impl Failure {
    fn kind(kind: ErrorKind) -> Failure {
        Failure { kind, note: None }
    }
}

/// The instants of one request's exchange that its [`Timing`] is made of.
#[derive(Debug, Default)]
pub struct Trace {
    /// Connect time of the connection this request opened.
    connect: Option<Duration>,
    /// Its TLS handshake time (TLS only).
    tls: Option<Duration>,
    /// When that connection was ready to write on.
    ready: Option<Instant>,
    /// When the first byte of a complete response arrived.
    first_byte: Option<Instant>,
    /// The request went out on a connection that was open before it.
    reused: bool,
    /// The request was sent a second time (stale connection, refused stream).
    pub retried: bool,
}

impl Trace {
    /// Notes a connection opened by this request, ready now, and what opening it took.
    fn opened(&mut self, took: Opened) {
        self.connect = Some(took.connect);
        self.tls = took.tls;
        self.ready = Some(Instant::now());
        self.reused = false;
    }

    /// The request's timing: `sent` when it began, `done` when its response ended.
    pub fn timing(&self, sent: Instant, done: Instant) -> Timing {
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
            reused: self.reused && self.connect.is_none(),
        }
    }
}

impl Client {
    /// A client for one engine thread. `pool` is this thread's share of a shared
    /// pool's connections (`None`: no cap).
    pub fn new(
        connector: Arc<Connector>,
        target: Target,
        plan: &ClientPlan,
        pool: Option<usize>,
    ) -> Client {
        Client {
            connector,
            target,
            protocol: plan.protocol,
            model: plan.connection,
            pool: Pool {
                idle: RefCell::default(),
                slots: pool.map(Semaphore::new),
            },
        }
    }

    /// A new session for a user or an arrival, as the connection model says.
    pub fn session(&self) -> Session {
        match self.model {
            ConnectionModel::PerUser => Session::Own(None),
            ConnectionModel::Shared(_) => Session::Shared,
            ConnectionModel::PerRequest => Session::PerRequest,
        }
    }

    /// The address connections go to.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.connector.addr()
    }

    /// Whether connections handshake TLS.
    pub fn is_tls(&self) -> bool {
        self.connector.is_tls()
    }

    /// What the run's connections speak.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// Renders `request` for sending: its prebuilt form when it has one, else a fresh
    /// rendering into `scratch` with `ctx`.
    pub fn payload<'a>(
        &self,
        request: &'a PreparedRequest,
        ctx: &mut RenderContext<'_>,
        scratch: &'a mut Scratch,
    ) -> Payload<'a> {
        match &request.wire {
            Some(wire) => Payload::H1(wire),
            None => {
                render(
                    &request.template,
                    &self.target,
                    ctx,
                    &mut scratch.wire,
                    &mut scratch.render,
                );
                Payload::H1(&scratch.wire)
            }
        }
    }

    /// Sends `payload` through `session` and reads the response, handing its status
    /// and body (empty unless `request.keep_body`) to `judge` while the connection is
    /// held. `connecting` is set while a connection is being opened (a timeout then
    /// is the target's refusal to connect, not a slow response); `trace` takes the
    /// connection's timings.
    pub async fn send<R>(
        &self,
        session: &mut Session,
        request: &PreparedRequest,
        payload: &Payload<'_>,
        connecting: &Cell<bool>,
        trace: &mut Trace,
        judge: impl FnOnce(u16, &[u8]) -> R,
    ) -> Result<R, Failure> {
        match session {
            Session::Own(slot) => {
                self.exchange(slot, request, payload, connecting, trace, judge)
                    .await
            }
            Session::PerRequest => {
                let mut slot = None;
                self.exchange(&mut slot, request, payload, connecting, trace, judge)
                    .await
            }
            Session::Shared => {
                // Waiting for a pooled connection is part of the request: the caller
                // times it from the schedule and bounds it by the request's timeout.
                let _permit = match &self.pool.slots {
                    Some(slots) => Some(slots.acquire().await.expect("never closed")),
                    None => None,
                };
                let mut slot = self.pool.idle.borrow_mut().pop().map(Link::H1);
                let result = self
                    .exchange(&mut slot, request, payload, connecting, trace, judge)
                    .await;
                if let Some(Link::H1(c)) = slot {
                    self.pool.idle.borrow_mut().push(c);
                }
                result
            }
        }
    }

    /// Opens a connection into `slot` if it has none, sends, and reads one response;
    /// leaves in `slot` only a connection fit for another request. When a reused
    /// connection turns out to have been closed by the peer before any response
    /// byte, the request is sent once more on a fresh connection, but only when that
    /// cannot duplicate a write in the target: its method is idempotent, or not one
    /// byte of it reached the connection.
    async fn exchange<R>(
        &self,
        slot: &mut Option<Link>,
        request: &PreparedRequest,
        payload: &Payload<'_>,
        connecting: &Cell<bool>,
        trace: &mut Trace,
        judge: impl FnOnce(u16, &[u8]) -> R,
    ) -> Result<R, Failure> {
        let Payload::H1(bytes) = payload;
        for attempt in 0..2 {
            trace.reused = slot.is_some();
            if slot.is_none() {
                *slot = Some(self.open(connecting, trace).await?);
            }
            let Some(Link::H1(c)) = slot.as_mut() else {
                unreachable!("opened above")
            };
            match c.round_trip(bytes, request.keep_body, request.head).await {
                Ok(response) => {
                    trace.first_byte = Some(response.first_byte);
                    let verdict = judge(response.status, c.body());
                    // Judged: an idle connection must not hold its share of the budget.
                    if request.keep_body {
                        c.release_body();
                    }
                    if !c.reusable() {
                        *slot = None;
                    }
                    return Ok(verdict);
                }
                Err(e) if e.stale && attempt == 0 && (request.idempotent || !e.sent) => {
                    // Only a request that reached the old connection is sent twice.
                    trace.retried |= e.sent;
                    *slot = None;
                }
                Err(e) => {
                    *slot = None;
                    return Err(Failure::kind(e.kind));
                }
            }
        }
        Err(Failure::kind(ErrorKind::Reset))
    }

    /// Opens a connection of the run's protocol.
    async fn open(&self, connecting: &Cell<bool>, trace: &mut Trace) -> Result<Link, Failure> {
        connecting.set(true);
        let opened = self.connector.connect().await;
        connecting.set(false);
        match opened {
            Ok((c, took)) => {
                trace.opened(took);
                Ok(Link::H1(c))
            }
            Err(ConnectError::Tcp(e)) => {
                let kind = connect_error_kind(&e);
                let note = (kind == ErrorKind::Connect).then(|| Note::Connect(e.to_string()));
                Err(Failure { kind, note })
            }
            Err(ConnectError::Tls(reason)) => Err(Failure {
                kind: ErrorKind::Tls,
                note: Some(Note::Tls(reason)),
            }),
        }
    }
}

/// The kind of a failed connect: the generator's own when it ran out of file
/// descriptors or local ports (those say nothing about the target), else `connect`.
pub fn connect_error_kind(e: &std::io::Error) -> ErrorKind {
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
