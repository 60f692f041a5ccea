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

use std::cell::{Cell, OnceCell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{Notify, Semaphore};

use super::connect::{connect_error_kind, ConnectError, Connection, Connector, Opens};
use super::http2;
use super::http3;
use super::prepared::PreparedRequest;
use super::request::{h2_request, render, Prebuilt};
use super::trace::FirstByte;
pub use super::trace::Trace;
use super::{ConnectionModel, Protocol};
use headroom_metrics::recorder::Speaks;
use headroom_metrics::ErrorKind;
use headroom_plan::{ClientPlan, Target};
use headroom_template::RenderContext;

mod failure;
mod idle;
mod payload;
mod pool;
mod quic;

pub use failure::{Failure, Note};
use idle::IdleStack;

use payload::judge_muxed;
pub use payload::{H2Payload, Payload, Reply};

/// Sends requests for one engine thread (never shared across threads).
pub struct Client {
    connector: Arc<Connector>,
    target: Target,
    protocol: Protocol,
    model: ConnectionModel,
    /// How HTTP/2 connections are set up (streams, windows, limits).
    h2: http2::Settings,
    /// How HTTP/3 connections are set up (streams, limits).
    h3: http3::Settings,
    /// The thread's UDP socket for HTTP/3, bound on the first connection.
    endpoint: OnceCell<http3::Endpoint>,
    pool: Pool,
    /// Every connection this thread opened, counted by the connector.
    opens: Rc<Opens>,
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
    /// A session beside this one, for a request sent at the same time as this
    /// session's (`parallel:`): the same HTTP/2 connection (another stream on it), a
    /// connection of its own for HTTP/1.1 (opened on first use), or the same pool.
    pub fn sibling(&self) -> Session {
        match self {
            Session::Own(Some(Link::H2(c))) => Session::Own(Some(Link::H2(c.clone()))),
            Session::Own(Some(Link::H3(c))) => Session::Own(Some(Link::H3(c.clone()))),
            Session::Own(_) => Session::Own(None),
            Session::Shared => Session::Shared,
            Session::PerRequest => Session::PerRequest,
        }
    }

    /// Drops the session's own HTTP/1.1 connection, if it has one: a request given up
    /// on (timed out) may have left the rest of its response unread on it. An HTTP/2
    /// connection stays: the given-up request's stream was reset, the others go on.
    pub fn forget(&mut self) {
        if let Session::Own(slot @ Some(Link::H1(_))) = self {
            *slot = None;
        }
    }
}

/// One open connection.
pub enum Link {
    /// HTTP/1.1 over TCP or TLS.
    H1(Connection),
    /// HTTP/2 over TCP (h2c) or TLS (h2); shared by the requests on it.
    H2(Rc<http2::Connection>),
    /// HTTP/3 over QUIC; shared by the requests on it.
    H3(Rc<http3::Connection>),
}

/// The thread's shared connections. HTTP/1.1: idle connections, and the cap on how
/// many may be in use at once (none: one per request in flight). HTTP/2: the open
/// connections, each carrying up to `streams` requests, and the cap on their number.
struct Pool {
    idle: RefCell<IdleStack<Connection>>,
    slots: Option<Semaphore>,
    cap: Option<usize>,
    h2: RefCell<Vec<Rc<http2::Connection>>>,
    h3: RefCell<Vec<Rc<http3::Connection>>>,
    /// HTTP/2 (or HTTP/3) connections being opened, and requests waiting for one of them.
    opening: Cell<usize>,
    waiting: Cell<usize>,
    /// Woken when an HTTP/2 connection finished opening (or failed to).
    opened: Notify,
}

/// Reused space for rendering requests, so a warm task renders without allocating.
#[derive(Default)]
pub struct Scratch {
    wire: Vec<u8>,
    render: Vec<u8>,
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
            h2: http2::Settings {
                streams: plan.streams,
                ..http2::Settings::default()
            },
            h3: http3::Settings {
                streams: plan.streams,
                ..http3::Settings::default()
            },
            endpoint: OnceCell::new(),
            pool: Pool {
                idle: RefCell::default(),
                slots: pool.map(Semaphore::new),
                cap: pool,
                h2: RefCell::default(),
                h3: RefCell::default(),
                opening: Cell::new(0),
                waiting: Cell::new(0),
                opened: Notify::new(),
            },
            opens: Rc::default(),
        }
    }

    /// Closes the shared pool's HTTP/1.1 connections that no request took since the
    /// previous call (the first call: since the client was made), and returns how
    /// many it closed.
    ///
    /// Why: a burst (a slow second of the target, a ramp's peak) opens connections
    /// that a steady rate never needs again; kept forever they hold descriptors and
    /// the target's worker slots, and a long run's descriptor count only ever climbs.
    /// Called every 90 s, a connection goes after 90 to 180 s unused, the order of
    /// the idle timeouts of hyper's and Go's pools. A connection's idleness is read from the stack's low-water mark, so the request
    /// path pays one comparison and no clock read.
    pub fn close_unused(&self) -> usize {
        self.pool.idle.borrow_mut().close_unused()
    }

    /// Closes the shared pool's HTTP/2 and HTTP/3 connections (at the end of a run, once
    /// no request is in flight), so each HTTP/3 connection's figures reach the tally
    /// before the thread's last hand-over.
    pub fn close_shared(&self) {
        self.pool.h2.borrow_mut().clear();
        self.pool.h3.borrow_mut().clear();
    }

    /// The connections this thread opened so far (requests' and streams'): every
    /// connector open of the thread counts into it.
    pub fn opens(&self) -> &Rc<Opens> {
        &self.opens
    }

    /// The connection model requests share connections by.
    pub fn model(&self) -> ConnectionModel {
        self.model
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

    /// Renders `request` for sending: its prebuilt form when it has one and there are
    /// no `extra` headers (the user's cookies), else a fresh rendering into `scratch`
    /// with `ctx`.
    pub fn payload<'a>(
        &self,
        request: &'a PreparedRequest,
        ctx: &mut RenderContext<'_>,
        extra: &[(&str, &[u8])],
        scratch: &'a mut Scratch,
    ) -> Payload<'a> {
        if self.protocol.multiplexed() {
            if let (Some(prebuilt), true) = (&request.h2, extra.is_empty()) {
                return Payload::H2(H2Payload::Prebuilt(prebuilt));
            }
            return Payload::H2(
                match h2_request(
                    &request.template,
                    &self.target,
                    ctx,
                    extra,
                    &mut scratch.render,
                ) {
                    Ok((request, body)) => {
                        H2Payload::Rendered(Box::new(Prebuilt::from_request(request, body)))
                    }
                    Err(e) => H2Payload::Invalid(e.to_string()),
                },
            );
        }
        match &request.wire {
            Some(wire) if extra.is_empty() => Payload::H1(wire),
            _ => {
                render(
                    &request.template,
                    &self.target,
                    ctx,
                    extra,
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
        judge: impl FnOnce(&Reply<'_>) -> R,
    ) -> Result<R, Failure> {
        let bytes = match payload {
            Payload::H1(bytes) => bytes,
            Payload::H2(h2) if self.protocol == Protocol::Http3 => {
                return self
                    .send_h3(session, request, h2, connecting, trace, judge)
                    .await
            }
            Payload::H2(h2) => {
                return self
                    .send_h2(session, request, h2, connecting, trace, judge)
                    .await
            }
        };
        match session {
            Session::Own(slot) => {
                self.exchange(slot, request, bytes, connecting, trace, judge)
                    .await
            }
            Session::PerRequest => {
                let mut slot = None;
                self.exchange(&mut slot, request, bytes, connecting, trace, judge)
                    .await
            }
            Session::Shared => {
                // Waiting for a pooled connection is part of the request: the caller
                // times it from the schedule and bounds it by the request's timeout.
                let _permit = match &self.pool.slots {
                    Some(slots) => {
                        let permit = slots.acquire().await.expect("never closed");
                        // One clock read, only where a wait is possible.
                        trace.leased = Some(Instant::now());
                        Some(permit)
                    }
                    None => None,
                };
                let mut slot = self.pool.idle.borrow_mut().take().map(Link::H1);
                let result = self
                    .exchange(&mut slot, request, bytes, connecting, trace, judge)
                    .await;
                if let Some(Link::H1(c)) = slot {
                    self.pool.idle.borrow_mut().put(c);
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
        bytes: &[u8],
        connecting: &Cell<bool>,
        trace: &mut Trace,
        judge: impl FnOnce(&Reply<'_>) -> R,
    ) -> Result<R, Failure> {
        for attempt in 0..2 {
            trace.reused = slot.is_some();
            if slot.is_none() {
                *slot = Some(self.open(connecting, trace).await?);
            }
            let Some(Link::H1(c)) = slot.as_mut() else {
                unreachable!("an HTTP/1.1 run opens HTTP/1.1 connections")
            };
            match c
                .round_trip_keeping(
                    bytes,
                    request.keep_body,
                    request.head,
                    &request.keep_headers,
                )
                .await
            {
                Ok(response) => {
                    trace.first_byte = Some(match response.first_byte {
                        Some(at) => FirstByte::At(at),
                        None => FirstByte::WithTheEnd,
                    });
                    let verdict = judge(&Reply {
                        status: response.status,
                        headers: c.kept_headers(),
                        body: c.body(),
                    });
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

    /// Sends an HTTP/2 request through `session`: on the session's own connection
    /// (reopened once the server sent GOAWAY), the least loaded of the shared pool's,
    /// or a new one. A stream the server refused unprocessed (REFUSED_STREAM, or above
    /// a GOAWAY's last stream id) is sent once more, on another connection if that
    /// one is closing: whatever its method, it never reached the application.
    async fn send_h2<R>(
        &self,
        session: &mut Session,
        request: &PreparedRequest,
        payload: &H2Payload<'_>,
        connecting: &Cell<bool>,
        trace: &mut Trace,
        judge: impl FnOnce(&Reply<'_>) -> R,
    ) -> Result<R, Failure> {
        let Some(prebuilt) = payload.prebuilt() else {
            return Err(Failure::kind(ErrorKind::Protocol));
        };
        for attempt in 0..2 {
            let conn = match session {
                Session::Own(Some(Link::H2(c))) if c.is_open() => {
                    trace.reused = true;
                    c.clone()
                }
                Session::Own(slot) => {
                    let c = Rc::new(self.open_h2(Speaks::Http2, connecting, trace).await?);
                    *slot = Some(Link::H2(c.clone()));
                    c
                }
                Session::PerRequest => {
                    Rc::new(self.open_h2(Speaks::Http2, connecting, trace).await?)
                }
                Session::Shared => {
                    let c = self.checkout_h2(connecting, trace).await?;
                    if trace.connect.is_none() {
                        trace.leased.get_or_insert_with(Instant::now);
                    }
                    c
                }
            };
            let (head, body) = prebuilt.request();
            match conn.send(head, body, request.keep_body, request.head).await {
                Ok(response) => return Ok(judge_muxed(request, &response, trace, judge)),
                Err(failure) if failure.refused && attempt == 0 => trace.retried = true,
                Err(failure) => return Err(failure.into()),
            }
        }
        Err(Failure::kind(ErrorKind::StreamReset))
    }

    /// Opens an HTTP/2 connection: the stream, then the HTTP/2 handshake (our
    /// SETTINGS, and the server's, so its stream limit is known before the first
    /// request). A server that does not speak HTTP/2 fails it, with the reason kept.
    async fn open_h2(
        &self,
        speaks: Speaks,
        connecting: &Cell<bool>,
        trace: &mut Trace,
    ) -> Result<http2::Connection, Failure> {
        connecting.set(true);
        let stream = self.open_stream(speaks, trace).await;
        let connection = match stream {
            Ok(stream) => http2::Connection::handshake(stream, &self.h2)
                .await
                .map_err(|e| Failure {
                    kind: e.kind(),
                    note: Some(Note::Connect(e.to_string())),
                }),
            Err(failure) => Err(failure),
        };
        connecting.set(false);
        connection
    }

    /// Opens an HTTP/1.1 connection.
    async fn open(&self, connecting: &Cell<bool>, trace: &mut Trace) -> Result<Link, Failure> {
        connecting.set(true);
        let stream = self.open_stream(Speaks::Http1, trace).await;
        connecting.set(false);
        Ok(Link::H1(Connection::new(
            stream?,
            super::http1::Limits::default(),
            super::http1::BodyBudget::process(),
        )))
    }

    /// Opens a stream (TCP, then TLS for `https://`), noting what it took in `trace`.
    async fn open_stream(
        &self,
        speaks: Speaks,
        trace: &mut Trace,
    ) -> Result<super::connect::Stream, Failure> {
        match self.connector.open(speaks, &self.opens).await {
            Ok((stream, took)) => {
                trace.opened(took);
                Ok(stream)
            }
            Err(ConnectError::Tcp(e)) => {
                let kind = connect_error_kind(&e);
                let note = (kind == ErrorKind::Connect).then(|| Note::Connect(e.to_string()));
                Err(Failure { kind, note })
            }
            Err(ConnectError::Tls(reason)) => Err(Failure {
                kind: ErrorKind::Tls,
                note: Some(Note::Tls(reason.to_string())),
            }),
        }
    }
}
