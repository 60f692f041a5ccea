//! One HTTP/2 client connection (h2 over TLS, or h2c with prior knowledge), driven by
//! the `h2` crate, on which the engine sends many requests at once.
//!
//! [`Connection::handshake`] sends the preface and our SETTINGS, waits for the server's
//! SETTINGS (so its MAX_CONCURRENT_STREAMS is known before the first request), then
//! spawns the task that drives the connection. [`Connection::send`] opens one stream
//! per request and reads the whole response. Concurrency has two caps: ours,
//! [`Settings::streams`], a semaphore a request waits on; and the server's
//! MAX_CONCURRENT_STREAMS, for which `h2` queues a stream until another one closes.
//! A request waiting at either cap is still timed from its schedule by the engine.
//!
//! Every part of a response that is buffered has a limit: the header list
//! ([`Limits::head`](crate::http1::Limits), advertised to the server as
//! SETTINGS_MAX_HEADER_LIST_SIZE and enforced by `h2` while decoding), a kept body
//! ([`Limits::kept_body`](crate::http1::Limits) and the shared
//! [`BodyBudget`]), and what the server may send before we read it (the flow-control
//! windows of [`Settings`]). A discarded body is read frame by frame and its window
//! given back at once, whatever its length. Failures map to error kinds ([`Failure`]):
//! RST_STREAM → `stream_reset`, GOAWAY → `goaway`, a closed or failed connection →
//! `reset`, anything malformed or over a limit → `protocol`.
//!
//! Nothing here assumes TCP: the stream may be a TLS session (after ALPN chose `h2`).

pub(crate) mod body;
mod error;
mod raw;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_hostile;
#[cfg(test)]
mod tests_lifecycle;
#[cfg(test)]
mod tests_server;
mod watch;

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use bytes::Bytes;
use h2::client::SendRequest;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Semaphore;

use crate::http1::{BodyBudget, Limits};
pub use error::{Failure, HandshakeError};
pub use raw::{RawBody, RawResponse};
use watch::{GoawayWatch, Watched};

/// Default per-stream receive window: 8 MiB.
///
/// Why not h2load's 2^30-1: a window is credit, not memory, but it is also the most a
/// server may send before we read it. We read and give the window back as each frame
/// arrives, so normally only a frame or two is buffered; the window only matters when
/// the generator's thread falls behind, and then 1000 connections × 1 GiB is no bound
/// at all. 8 MiB per stream and 16 MiB per connection keep that worst case at 16 GiB
/// for 1000 connections but 16 MiB per connection, while staying "large" in the sense
/// that matters: flow control never limits throughput below a bandwidth-delay product
/// of 16 MiB per connection (1 Gbit/s at 130 ms, 10 Gbit/s at 13 ms), a kept body up to
/// the default kept-body limit (8 MiB) arrives without waiting for a WINDOW_UPDATE,
/// and the connection window is refilled once per 8 MiB received, so the
/// WINDOW_UPDATE frames cost nothing per request.
pub const DEFAULT_STREAM_WINDOW: u32 = 8 * 1024 * 1024;
/// Default connection receive window: 16 MiB (see [`DEFAULT_STREAM_WINDOW`]).
pub const DEFAULT_CONNECTION_WINDOW: u32 = 16 * 1024 * 1024;

/// `h2`'s stream cap until the server's SETTINGS arrive: a value no SETTINGS frame can
/// carry (it is 32 bits), so the handshake can tell when they have been applied.
const AWAITING_SETTINGS: usize = usize::MAX - 1;

/// How an HTTP/2 connection is set up and what it may buffer.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Most streams we open at once on one connection (`--streams`); the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS lowers it. 0 counts as 1.
    pub streams: u32,
    /// Receive window of each stream (SETTINGS_INITIAL_WINDOW_SIZE).
    pub stream_window: u32,
    /// Receive window of the whole connection.
    pub connection_window: u32,
    /// `head` bounds the response header list (SETTINGS_MAX_HEADER_LIST_SIZE);
    /// `kept_body` a kept body. The chunk and trailer limits are HTTP/1.1's only.
    pub limits: Limits,
    /// Bounds the kept bodies of all connections together.
    pub budget: BodyBudget,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            streams: 100,
            stream_window: DEFAULT_STREAM_WINDOW,
            connection_window: DEFAULT_CONNECTION_WINDOW,
            limits: Limits::default(),
            budget: BodyBudget::process(),
        }
    }
}

/// A response read to its end.
#[derive(Debug)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// When the response HEADERS arrived: the end of time to first byte.
    pub first_byte: Instant,
    /// Body bytes received, kept or not.
    pub body_len: u64,
    /// The body when it was kept; empty otherwise. Its bytes count against the
    /// [`BodyBudget`] until this response is dropped.
    pub body: Bytes,
    /// The response's header fields (moved out of the decoded head, not copied).
    pub headers: http::HeaderMap,
    /// The budget held by `body`, given back on drop.
    _charge: body::Charge,
}

/// One HTTP/2 connection. Single-threaded use: the engine keeps it in an `Rc` and
/// sends requests on it from many tasks of one runtime; [`Connection::send`] takes
/// `&self`. Dropping it (once no request is in flight) closes the connection.
#[derive(Debug)]
pub struct Connection {
    /// Cloned for each request; polled directly only to learn if the connection ended.
    send: RefCell<SendRequest<Bytes>>,
    /// Our stream cap.
    slots: Arc<Semaphore>,
    /// Whether streams opened with [`Connection::open_raw`] take a slot too (a
    /// connection of the shared pool).
    raw_slots: Cell<bool>,
    /// Permits `slots` started with.
    streams: usize,
    /// GOAWAY frames received.
    goaway: GoawayWatch,
    /// Set when the driver task ends (connection closed or failed).
    ended: Arc<AtomicBool>,
    limits: Limits,
    budget: BodyBudget,
}

impl Response {
    /// A response read to its end (HTTP/3's too: the engine judges both alike).
    pub(crate) fn new(
        status: u16,
        first_byte: Instant,
        body_len: u64,
        body: Bytes,
        headers: http::HeaderMap,
        charge: body::Charge,
    ) -> Response {
        Response {
            status,
            first_byte,
            body_len,
            body,
            headers,
            _charge: charge,
        }
    }
}

impl Connection {
    /// Sets up HTTP/2 over `io` (a connected TCP stream or a TLS session whose ALPN
    /// chose `h2`): sends the preface and our SETTINGS (push disabled, the windows and
    /// header-list limit of `settings`), waits for the server's SETTINGS, then spawns
    /// the task driving the connection with `tokio::spawn` (so it runs on a
    /// current-thread runtime, inside a `LocalSet` or not). Has no timeout of its own:
    /// the caller bounds it.
    ///
    /// A TCP `io` must have TCP_NODELAY set (the connector does): HTTP/2 writes small
    /// frames (WINDOW_UPDATE, SETTINGS ACK, PING ACK) that the server waits for, and
    /// Nagle's algorithm holds each until the previous write is acknowledged, which
    /// with delayed ACKs stalls a body larger than its window for ~40 ms per window
    /// (measured: a 10 MiB body over 64 KiB windows took 14 s instead of 40 ms).
    pub async fn handshake<S>(io: S, settings: &Settings) -> Result<Connection, HandshakeError>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (io, goaway) = Watched::new(io);
        let mut builder = h2::client::Builder::new();
        builder
            .enable_push(false)
            .initial_window_size(settings.stream_window)
            .initial_connection_window_size(settings.connection_window)
            .max_header_list_size(u32::try_from(settings.limits.head).unwrap_or(u32::MAX))
            .initial_max_send_streams(AWAITING_SETTINGS);
        let (send, mut conn) = builder.handshake::<_, Bytes>(io).await?;
        // Why wait: until the server's SETTINGS are applied, h2 would open any number
        // of streams, and a server with a lower MAX_CONCURRENT_STREAMS refuses the
        // extra ones. Driving the connection here (before spawning it) also turns a
        // server that does not speak HTTP/2 into a handshake error, not request errors.
        // Timing: the server sends its SETTINGS as soon as it sees our preface (or on
        // accept), so this costs at most one round trip, counted in the handshake's
        // time rather than in the first request's.
        poll_fn(|cx| match Pin::new(&mut conn).poll(cx) {
            Poll::Ready(Ok(())) => Poll::Ready(Err(HandshakeError::Closed)),
            Poll::Ready(Err(e)) => Poll::Ready(Err(HandshakeError::H2(e))),
            Poll::Pending if send.current_max_send_streams() != AWAITING_SETTINGS => {
                Poll::Ready(Ok(()))
            }
            Poll::Pending => Poll::Pending,
        })
        .await?;
        let ended = Arc::new(AtomicBool::new(false));
        let done = ended.clone();
        tokio::spawn(async move {
            // The connection's own error reaches every open stream; nothing to add.
            let _ = conn.await;
            done.store(true, Ordering::Relaxed);
        });
        let streams = settings.streams.max(1) as usize;
        Ok(Connection {
            send: RefCell::new(send),
            slots: Arc::new(Semaphore::new(streams)),
            raw_slots: Cell::new(false),
            streams,
            goaway,
            ended,
            limits: settings.limits,
            budget: settings.budget.clone(),
        })
    }

    /// Sends `request` (with `body`, if any) on a new stream and reads the whole
    /// response. Waits first for a stream: one of ours ([`Settings::streams`]), then
    /// for the server's MAX_CONCURRENT_STREAMS (h2 holds the stream until one closes).
    /// With `keep_body` the body is kept in [`Response::body`] (past the kept-body
    /// limit: `protocol`; past the shared budget: `generator`); otherwise each DATA
    /// frame is dropped as it arrives. `head`: the request was HEAD, so no body is
    /// read (a stream not ended by its HEADERS is reset). Cancel-safe: dropping the
    /// future resets the stream and frees its slot.
    pub async fn send(
        &self,
        request: http::Request<()>,
        body: Option<Bytes>,
        keep_body: bool,
        head: bool,
    ) -> Result<Response, Failure> {
        // The semaphore is never closed, so acquiring only ever waits.
        let _slot = self.slots.acquire().await.ok();
        let fail =
            |e: &h2::Error, id: Option<u32>| Failure::from_h2(e, id, self.goaway.last_stream_id());
        // A fresh clone has no stream of its own pending, so `ready` only reports a
        // connection that can open no more streams (GOAWAY received, or failed).
        let sender = self.send.borrow().clone();
        let mut sender = sender.ready().await.map_err(|e| fail(&e, None))?;
        let (response, mut stream) = sender
            .send_request(request, body.is_none())
            .map_err(|e| fail(&e, None))?;
        let id = response.stream_id().as_u32();
        if let Some(body) = body {
            stream
                .send_data(body, true)
                .map_err(|e| fail(&e, Some(id)))?;
        }
        let response = response.await.map_err(|e| fail(&e, Some(id)))?;
        // Stamped when this task resumes after the driver task decoded the HEADERS: one
        // task switch on the same thread later than the bytes arrived, as the HTTP/1.1
        // path stamps after its read returns. A 1xx head does not end the wait (h2
        // skips informational responses), so time to first byte is to the final head.
        let first_byte = Instant::now();
        let status = response.status().as_u16();
        let (parts, mut recv) = response.into_parts();
        let headers = parts.headers;
        if head {
            return Ok(Response {
                status,
                first_byte,
                body_len: 0,
                body: Bytes::new(),
                headers,
                _charge: body::Charge::default(),
            });
        }
        let keep = keep_body.then_some(body::Keep {
            limit: self.limits.kept_body,
            budget: &self.budget,
        });
        let read = body::read(&mut recv, keep, |e| fail(e, Some(id))).await?;
        Ok(Response {
            status,
            first_byte,
            body_len: read.len,
            body: read.kept,
            headers,
            _charge: read.charge,
        })
    }

    /// Whether new requests may be sent: false once the server sent GOAWAY or the
    /// connection closed or failed. The engine then opens a new connection (requests
    /// already in flight below the GOAWAY's last stream id still complete).
    pub fn is_open(&self) -> bool {
        if self.ended.load(Ordering::Relaxed) || self.goaway.last_stream_id().is_some() {
            return false;
        }
        // With no stream pending on this handle, poll_ready returns at once: ready, or
        // the error that keeps new streams from opening.
        let mut cx = Context::from_waker(Waker::noop());
        !matches!(
            self.send.borrow_mut().poll_ready(&mut cx),
            Poll::Ready(Err(_))
        )
    }

    /// Requests in flight on this connection now (holding one of our stream slots,
    /// whether or not the server's limit let their stream open yet).
    pub fn in_flight(&self) -> usize {
        self.streams - self.slots.available_permits()
    }

    /// Our stream cap: [`Settings::streams`] (at least 1).
    pub fn streams(&self) -> usize {
        self.streams
    }

    /// Makes streams opened with [`Connection::open_raw`] (gRPC calls, SSE streams) take
    /// one of our stream slots for as long as they are open, as requests do: for a
    /// connection of the shared pool, whose checkout balances by [`Connection::in_flight`].
    /// A connection of one user's does not: a server stream held for the whole run
    /// must not starve the user's requests under a small `--streams`.
    pub fn slots_for_raw_streams(&self) {
        self.raw_slots.set(true);
    }
}
