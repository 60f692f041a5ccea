//! The one place stream protocols plug in. Each protocol module provides
//!
//! - `async fn open(cx: &OpenCx<'_>, inbox: &Rc<Inbox>) -> Result<Opened, Failure>`:
//!   connect, handshake, spawn its pump with `tokio::task::spawn_local` (the pump loops
//!   reading and calls `inbox.message/closed/failed/reconnected` until the stream ends
//!   or `inbox.closing()`), and return its writer and the pump's handle;
//! - a writer variant below with `send` and `close`.
//!
//! and is added to the two `match`es here.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use super::url::Endpoint;
use super::{grpc, sse, ws, Failure, Inbox};
use crate::client::connect::Connector;
use crate::engine::iteration::ThreadState;
use crate::metrics::ErrorKind;
use crate::plan::{Protocol, StreamStep};

/// What a protocol's `open` is given.
pub(crate) struct OpenCx<'a> {
    /// The engine thread (plan, connectors, recorder).
    pub(crate) state: &'a Rc<ThreadState>,
    /// The step opening the stream.
    pub(crate) step: &'a StreamStep,
    /// Where to.
    pub(crate) endpoint: Endpoint,
    /// Rendered extra headers.
    pub(crate) headers: Vec<(String, String)>,
    /// For a gRPC call: the rendered request message (JSON text), else `None`.
    pub(crate) message: Option<String>,
    /// The user's HTTP/2 connection for gRPC calls (kept in its [`super::Streams`]).
    pub(crate) h2: super::H2Slot,
    /// True while connecting: a protocol whose `open` goes on past its handshake (a gRPC
    /// call) clears it then, so a timeout after that is not counted as `connect`.
    pub(crate) opening: &'a std::cell::Cell<bool>,
}

/// An opened stream.
pub(crate) struct Opened {
    /// Its sending side.
    pub(crate) writer: Writer,
    /// Its pump task.
    pub(crate) pump: tokio::task::JoinHandle<()>,
    /// Connect + TLS + protocol handshake.
    pub(crate) connect: Duration,
}

/// The sending side of an open stream.
pub(crate) enum Writer {
    /// A WebSocket.
    Ws(ws::Writer),
    /// An SSE stream (receives only; closing it ends it).
    Sse(sse::Writer),
    /// A stream that only receives (SSE, a server-streaming gRPC call).
    ReceiveOnly,
}

/// Opens `cx.step`'s stream; its pump delivers to `inbox`.
pub(crate) async fn open(cx: &OpenCx<'_>, inbox: &Rc<Inbox>) -> Result<Opened, Failure> {
    match cx.step.protocol {
        Protocol::Ws => ws::open(cx, inbox).await,
        Protocol::Sse => sse::open(cx, inbox).await,
        Protocol::Grpc => grpc::open(cx, inbox).await,
    }
}

impl Writer {
    /// Sends one text message; returns its size on the wire.
    pub(crate) async fn send(&mut self, text: String) -> Result<usize, Failure> {
        match self {
            Writer::Ws(w) => w.send(text).await,
            Writer::Sse(_) | Writer::ReceiveOnly => {
                Err(Failure::stream("this stream only receives"))
            }
        }
    }

    /// Starts the protocol's close (a WebSocket close frame with `code`); the pump
    /// reports the peer's answer. Receive-only streams have nothing to send.
    pub(crate) async fn close(&mut self, code: u16) -> Result<(), Failure> {
        match self {
            Writer::Ws(w) => w.close(code).await,
            Writer::Sse(w) => {
                w.close();
                Ok(())
            }
            Writer::ReceiveOnly => Ok(()),
        }
    }
}

/// Per-thread connectors for streams: HTTP/1.1 by ALPN (a WebSocket upgrade and SSE are
/// HTTP/1.1 requests even when the run speaks HTTP/2).
pub(crate) struct Connectors {
    http1: Arc<Connector>,
    /// gRPC: the target with ALPN `h2` only (required) over TLS, h2c over TCP.
    h2: Arc<Connector>,
}

impl Connectors {
    /// From the run's connector and TLS configuration.
    pub(crate) fn new(run: &Arc<Connector>, plan: &crate::plan::Plan) -> Connectors {
        let http1 = match &plan.client.tls {
            Some(config) if config.alpn_protocols != [b"http/1.1".to_vec()] => {
                let mut config = (**config).clone();
                config.alpn_protocols = vec![b"http/1.1".to_vec()];
                Connector::tls(run.addr(), &plan.target.host, Arc::new(config))
                    .map(Arc::new)
                    .unwrap_or_else(|_| run.clone())
            }
            _ => run.clone(),
        };
        let h2 = match &plan.client.tls {
            Some(config) => {
                let mut config = (**config).clone();
                config.alpn_protocols = vec![b"h2".to_vec()];
                Connector::tls(run.addr(), &plan.target.host, Arc::new(config))
                    .map(|c| Arc::new(c.require_h2()))
                    .unwrap_or_else(|_| run.clone())
            }
            None => run.clone(),
        };
        Connectors { http1, h2 }
    }

    /// The connector for gRPC calls to the target (HTTP/2 whatever the run speaks).
    pub(crate) fn h2(&self) -> Arc<Connector> {
        self.h2.clone()
    }

    /// The connector for an HTTP/1.1 stream to `endpoint`: the run's (with `--resolve`,
    /// TLS settings, certificates) for the target's origin; for another origin, plain
    /// TCP to its resolved address, or TLS with the run's configuration.
    pub(crate) async fn http1(
        &self,
        plan: &crate::plan::Plan,
        endpoint: &Endpoint,
    ) -> Result<Arc<Connector>, Failure> {
        if endpoint.same_origin {
            return Ok(self.http1.clone());
        }
        let addr = match crate::client::connect::resolved(
            &plan.client.resolve,
            &endpoint.host,
            endpoint.port,
        ) {
            Some(a) => a,
            None => tokio::net::lookup_host((endpoint.host.as_str(), endpoint.port))
                .await
                .ok()
                .and_then(|mut a| a.next())
                .ok_or_else(|| {
                    Failure::new(
                        ErrorKind::Connect,
                        format!("cannot resolve {}", endpoint.host),
                    )
                })?,
        };
        if !endpoint.tls {
            return Ok(Arc::new(Connector::tcp(addr)));
        }
        let mut config = match &plan.client.tls {
            Some(c) => (**c).clone(),
            None => (*crate::client::tls::client_config(&Default::default())
                .map_err(|e| Failure::new(ErrorKind::Tls, e.to_string()))?)
            .clone(),
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Connector::tls(addr, &endpoint.host, Arc::new(config))
            .map(Arc::new)
            .map_err(|e| Failure::new(ErrorKind::Tls, e.to_string()))
    }
}
