//! One HTTP/3 client connection: QUIC by `quinn`, HTTP/3 framing and QPACK by `h3`,
//! on which the engine sends many requests at once, as on an HTTP/2 connection.
//!
//! [`Endpoint`] is an engine thread's UDP socket: every QUIC connection of the thread
//! goes through it (quinn demultiplexes by connection id), so a thread holds one
//! descriptor for its HTTP/3 connections however many there are. [`Connection::open`]
//! handshakes QUIC (TLS 1.3 inside, ALPN `h3`), sets up HTTP/3 (the control streams
//! and our SETTINGS) and spawns the task that drives it; [`Connection::send`] opens one
//! stream per request and reads the whole response.
//!
//! Every part of a response that is buffered has a limit: the header section
//! ([`Limits::head`], advertised as SETTINGS_MAX_FIELD_SECTION_SIZE and enforced by
//! `h3` while decoding), a kept body ([`Limits::kept_body`] and the shared
//! [`BodyBudget`]), and what the server may send before we read it (QUIC's flow-control
//! windows, [`DEFAULT_STREAM_WINDOW`] and [`DEFAULT_CONNECTION_WINDOW`], the HTTP/2
//! path's own sizes for the same reasons). Failures map to error kinds as HTTP/2's do:
//! a stream reset by the server → `stream_reset` (H3_REQUEST_REJECTED: refused, sent
//! again), GOAWAY → `goaway`, a connection closed or lost → `reset`, its idle timeout
//! → `timeout`, anything malformed or over a limit → `protocol`, a failed TLS
//! handshake (QUIC's crypto errors, ALPN refused) → `tls`.
//!
//! Each connection's transport figures (RTT, packets sent and lost) are read once, as
//! it is dropped, into the thread's [`QuicTally`].

use std::cell::RefCell;
use std::future::poll_fn;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use h3::client::SendRequest;
use headroom_metrics::recorder::{QuicSample, QuicTally};
use headroom_metrics::ErrorKind;
use tokio::sync::Semaphore;

use crate::http1::{BodyBudget, Limits};
use crate::http2::{body, Failure, Response};

/// Per-stream receive window: 8 MiB, as HTTP/2's ([`crate::http2::DEFAULT_STREAM_WINDOW`]
/// says why). quinn's own default connection window is unbounded.
pub const DEFAULT_STREAM_WINDOW: u32 = crate::http2::DEFAULT_STREAM_WINDOW;
/// Connection receive window: 16 MiB, as HTTP/2's.
pub const DEFAULT_CONNECTION_WINDOW: u32 = crate::http2::DEFAULT_CONNECTION_WINDOW;

/// What a thread's HTTP/3 connections are set up with.
#[derive(Clone)]
pub struct Settings {
    /// Most streams we open at once on one connection (`--streams`); the server's
    /// stream credit (MAX_STREAMS) may lower it. 0 counts as 1.
    pub streams: u32,
    /// `head` bounds the response header section, `kept_body` a kept body.
    pub limits: Limits,
    /// Bounds the kept bodies of all connections together.
    pub budget: BodyBudget,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            streams: 100,
            limits: Limits::default(),
            budget: BodyBudget::process(),
        }
    }
}

/// The QUIC side of a run's TLS configuration: built once per run from the rustls
/// configuration (ALPN `h3`, TLS 1.3 only), shared by every thread.
#[derive(Clone)]
pub struct QuicConfig {
    client: quinn::ClientConfig,
    server_name: String,
    /// `--h3-0rtt`: a connection opened for an idempotent request sends it as early
    /// data when a resumed session allows.
    early: bool,
}

impl std::fmt::Debug for QuicConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuicConfig")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

/// Why a QUIC configuration could not be made of a TLS one.
#[derive(Debug, thiserror::Error)]
#[error("HTTP/3 needs TLS 1.3 with an AES-128-GCM suite: {0}")]
pub struct QuicConfigError(String);

impl QuicConfig {
    /// The QUIC configuration for `tls` (which must offer TLS 1.3), naming the server
    /// `server_name` (SNI and verification, as for TLS over TCP).
    pub fn new(
        tls: Arc<rustls::ClientConfig>,
        server_name: &str,
    ) -> Result<QuicConfig, QuicConfigError> {
        let early = tls.enable_early_data;
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
            .map_err(|e| QuicConfigError(e.to_string()))?;
        let mut client = quinn::ClientConfig::new(Arc::new(crypto));
        let mut transport = quinn::TransportConfig::default();
        transport
            .stream_receive_window(quinn::VarInt::from_u32(DEFAULT_STREAM_WINDOW))
            .receive_window(quinn::VarInt::from_u32(DEFAULT_CONNECTION_WINDOW))
            // The server opens its control and QPACK streams (and may push none):
            // a few unidirectional streams, no bidirectional ones.
            .max_concurrent_bidi_streams(quinn::VarInt::from_u32(0))
            .max_concurrent_uni_streams(quinn::VarInt::from_u32(16));
        client.transport_config(Arc::new(transport));
        Ok(QuicConfig {
            client,
            server_name: server_name.to_string(),
            early,
        })
    }
}

/// Why an HTTP/3 connection could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// quinn refused to start the handshake (a name it cannot send, no socket).
    #[error("QUIC connection could not start: {0}")]
    Start(#[from] quinn::ConnectError),
    /// The QUIC handshake failed: the server's TLS alert, a transport error, or no
    /// answer within the idle timeout.
    #[error("QUIC handshake failed: {0}")]
    Handshake(#[from] quinn::ConnectionError),
    /// QUIC connected but HTTP/3's own setup (control streams, SETTINGS) failed.
    #[error("HTTP/3 setup failed: {0}")]
    H3(#[from] h3::error::ConnectionError),
}

impl OpenError {
    /// The kind a request that needed this connection is counted under.
    pub fn kind(&self) -> ErrorKind {
        match self {
            OpenError::Start(_) => ErrorKind::Connect,
            OpenError::Handshake(e) => connection_kind(e),
            OpenError::H3(_) => ErrorKind::Protocol,
        }
    }

    /// Whether the TLS handshake inside QUIC failed (a certificate, ALPN `h3`
    /// refused): the run's first such reason is reported as TLS's.
    pub fn is_tls(&self) -> bool {
        self.kind() == ErrorKind::Tls
    }
}

/// QUIC's crypto errors are 0x100 + a TLS alert (RFC 9001 §4.8).
fn is_crypto(code: quinn::TransportErrorCode) -> bool {
    (0x100..0x200).contains(&u64::from(code))
}

fn connection_kind(e: &quinn::ConnectionError) -> ErrorKind {
    use quinn::ConnectionError as E;
    match e {
        E::TransportError(t) if is_crypto(t.code) => ErrorKind::Tls,
        E::ConnectionClosed(c) if is_crypto(c.error_code) => ErrorKind::Tls,
        E::TimedOut => ErrorKind::Timeout,
        E::VersionMismatch | E::TransportError(_) => ErrorKind::Protocol,
        E::ConnectionClosed(_) | E::ApplicationClosed(_) | E::Reset | E::LocallyClosed => {
            ErrorKind::Reset
        }
        E::CidsExhausted => ErrorKind::Generator,
    }
}

/// One HTTP/3 connection. Single-threaded use, as [`crate::http2::Connection`]:
/// [`Connection::send`] takes `&self`; dropping the last handle closes the connection
/// and adds its figures to the thread's tally.
pub struct Connection {
    /// Cloned for each request.
    send: RefCell<SendRequest<h3_quinn::OpenStreams, Bytes>>,
    quic: quinn::Connection,
    /// Our stream cap.
    slots: Semaphore,
    /// Permits `slots` started with.
    streams: usize,
    /// Whether the server accepted the early data of a connection opened in 0-RTT,
    /// until its first request ends.
    zero_rtt: RefCell<Option<quinn::ZeroRttAccepted>>,
    /// Set when the driver task ends (connection closed, failed, or GOAWAY).
    ended: Arc<AtomicBool>,
    limits: Limits,
    budget: BodyBudget,
    tally: Rc<RefCell<QuicTally>>,
}

impl Connection {
    /// Opens a connection to `addr` through `endpoint`: the QUIC handshake, then
    /// HTTP/3's setup; returns it with the time until it could carry a request. Has no
    /// timeout of its own beyond QUIC's idle timeout: the caller bounds it.
    ///
    /// `early` (the request it is opened for is idempotent): with `--h3-0rtt` and a
    /// resumed session's keys, the connection is usable at once and its first request
    /// goes as 0-RTT early data; the time returned is then the time to that point, not
    /// the handshake's, which completes while the request is on its way.
    pub async fn open(
        endpoint: &Endpoint,
        config: &QuicConfig,
        addr: SocketAddr,
        settings: &Settings,
        early: bool,
    ) -> Result<(Connection, Duration), OpenError> {
        let began = Instant::now();
        let connecting =
            endpoint
                .quinn
                .connect_with(config.client.clone(), addr, &config.server_name)?;
        let (quic, zero_rtt) = if early && config.early {
            match connecting.into_0rtt() {
                Ok((quic, accepted)) => (quic, Some(accepted)),
                // No session to resume yet: a full handshake.
                Err(connecting) => (connecting.await?, None),
            }
        } else {
            (connecting.await?, None)
        };
        let handshake = began.elapsed();
        let max_head = u64::try_from(settings.limits.head).unwrap_or(u64::MAX);
        let built = h3::client::builder()
            .max_field_section_size(max_head)
            .send_grease(false)
            .build::<_, _, Bytes>(h3_quinn::Connection::new(quic.clone()))
            .await;
        let (mut driver, send) = match built {
            Ok(pair) => pair,
            // The connection closed under HTTP/3's setup: QUIC's reason is the cause (a
            // server that refused the client's certificate once the client had finished
            // its handshake), not h3's wrapper of it.
            Err(e) => {
                return Err(match quic.close_reason() {
                    Some(reason) => OpenError::Handshake(reason),
                    None => OpenError::H3(e),
                })
            }
        };
        let ended = Arc::new(AtomicBool::new(false));
        let done = ended.clone();
        tokio::spawn(async move {
            // Resolves when the connection closes (an error, a GOAWAY, or our close);
            // each open stream gets the reason itself.
            let _ = poll_fn(|cx| driver.poll_close(cx)).await;
            done.store(true, Ordering::Relaxed);
        });
        let streams = settings.streams.max(1) as usize;
        Ok((
            Connection {
                send: RefCell::new(send),
                quic,
                slots: Semaphore::new(streams),
                streams,
                zero_rtt: RefCell::new(zero_rtt),
                ended,
                limits: settings.limits,
                budget: settings.budget.clone(),
                tally: endpoint.tally.clone(),
            },
            handshake,
        ))
    }

    /// Sends `request` (with `body`, if any) on a new stream and reads the whole
    /// response, as [`crate::http2::Connection::send`] does: waits for one of our
    /// stream slots, then for the server's stream credit; keeps the body within its
    /// limit and the shared budget with `keep_body`, else drops each chunk as it
    /// arrives; reads no body for a HEAD. Cancel-safe: dropping the future resets the
    /// stream and frees its slot.
    pub async fn send(
        &self,
        request: http::Request<()>,
        body: Option<Bytes>,
        keep_body: bool,
        head: bool,
    ) -> Result<Response, Failure> {
        let result = self.exchange(request, body, keep_body, head).await;
        // The request that opened a 0-RTT connection went as early data: by its end the
        // handshake has said whether the server took it.
        let pending = self.zero_rtt.borrow_mut().take();
        if let Some(accepted) = pending {
            let accepted = accepted.await;
            let mut tally = self.tally.borrow_mut();
            tally.zero_rtt_sent += 1;
            if accepted {
                tally.zero_rtt_accepted += 1;
            } else {
                tally.zero_rtt_rejected += 1;
                // Streams of the early data are lost, HTTP/3's own control streams
                // among them: this connection carries nothing more, and the request,
                // unprocessed, goes again on a new one.
                self.ended.store(true, Ordering::Relaxed);
                if result.is_err() {
                    return Err(Failure::new(
                        ErrorKind::Reset,
                        true,
                        "the server rejected the 0-RTT early data",
                    ));
                }
            }
        }
        result
    }

    async fn exchange(
        &self,
        request: http::Request<()>,
        body: Option<Bytes>,
        keep_body: bool,
        head: bool,
    ) -> Result<Response, Failure> {
        let _slot = self.slots.acquire().await.ok();
        let mut sender = self.send.borrow().clone();
        // A stream never opened was never seen by the server: safe to send again.
        let mut stream = sender
            .send_request(request)
            .await
            .map_err(|e| self.stream_failure(&e, true))?;
        if let Some(body) = body {
            stream
                .send_data(body)
                .await
                .map_err(|e| self.stream_failure(&e, false))?;
        }
        stream
            .finish()
            .await
            .map_err(|e| self.stream_failure(&e, false))?;
        let response = stream
            .recv_response()
            .await
            .map_err(|e| self.stream_failure(&e, false))?;
        // Stamped when this task resumes after quinn's driver decoded the HEADERS, one
        // task switch later than the bytes arrived, as the HTTP/2 path stamps.
        let first_byte = Instant::now();
        let status = response.status().as_u16();
        let headers = response.into_parts().0.headers;
        let mut keep = keep_body.then(|| body::Keeper::new(self.limits.kept_body, &self.budget));
        let mut len = 0u64;
        if !head {
            while let Some(mut chunk) = stream
                .recv_data()
                .await
                .map_err(|e| self.stream_failure(&e, false))?
            {
                let n = chunk.remaining();
                len += n as u64;
                match &mut keep {
                    Some(keep) => keep.push(chunk.copy_to_bytes(n))?,
                    None => chunk.advance(n),
                }
            }
        }
        let (kept, charge) = keep.map(body::Keeper::finish).unwrap_or_default();
        Ok(Response::new(
            status, first_byte, len, kept, headers, charge,
        ))
    }

    /// Whether new requests may be sent: false once the connection closed, failed or
    /// the server sent GOAWAY (the driver task ends on each).
    pub fn is_open(&self) -> bool {
        !self.ended.load(Ordering::Relaxed) && self.quic.close_reason().is_none()
    }

    /// Requests in flight on this connection now.
    pub fn in_flight(&self) -> usize {
        self.streams - self.slots.available_permits()
    }

    /// Our stream cap: [`Settings::streams`] (at least 1).
    pub fn streams(&self) -> usize {
        self.streams
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        let stats = self.quic.stats();
        self.tally.borrow_mut().add(&QuicSample {
            min_rtt: stats.path.min_rtt,
            smoothed_rtt: stats.path.rtt,
            packets_sent: stats.path.sent_packets,
            packets_lost: stats.path.lost_packets,
            bytes_lost: stats.path.lost_bytes,
            datagrams_received: stats.udp_rx.datagrams,
            congestion_events: stats.path.congestion_events,
        });
        // H3_NO_ERROR: a client done with the connection (RFC 9114 §5.2).
        self.quic.close(quinn::VarInt::from_u32(0x100), b"");
    }
}

impl Connection {
    /// Maps an error `h3` gave for a stream. `unsent`: the request never left (its
    /// stream was not opened), so the server never saw it. An error of the whole
    /// connection is classified by QUIC's reason for closing it (h3 keeps its own
    /// copy out of reach).
    fn stream_failure(&self, e: &h3::error::StreamError, unsent: bool) -> Failure {
        use h3::error::StreamError as S;
        let (kind, refused) = match e {
            S::RemoteTerminate { code, .. } => (
                ErrorKind::StreamReset,
                *code == h3::error::Code::H3_REQUEST_REJECTED,
            ),
            S::RemoteClosing { .. } => (ErrorKind::Goaway, true),
            S::ConnectionError { .. } => match self.quic.close_reason() {
                // QUIC's own words for why the connection closed (a server that
                // refused the handshake after the client finished it: "the
                // cryptographic handshake failed: error 116"), not h3's wrapper.
                Some(reason) => {
                    return Failure::new(connection_kind(&reason), unsent, reason.to_string())
                }
                None => (ErrorKind::Protocol, false),
            },
            _ => (ErrorKind::Protocol, false),
        };
        Failure::new(kind, refused || unsent, e.to_string())
    }
}

mod endpoint;
pub use endpoint::{Endpoint, UDP_BUFFER};

#[cfg(test)]
mod tests;
