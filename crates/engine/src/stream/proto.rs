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
use std::time::Duration;

use super::url::Endpoint;
use super::{grpc, sse, ws, Failure, Inbox};
use crate::thread::ThreadState;
use headroom_plan::{Protocol, StreamStep};

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
    /// True while a gRPC call waits for its answer (a unary reply, a server stream's
    /// response head): a timeout then is the call's, counted as `timeout`.
    pub(crate) calling: &'a std::cell::Cell<bool>,
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
    /// A server-streaming gRPC call (receives only; closing cancels it).
    Grpc(grpc::GrpcWriter),
    /// A stream that only receives and has nothing to close (a unary call's, over).
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
            Writer::Sse(_) | Writer::Grpc(_) | Writer::ReceiveOnly => {
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
            Writer::Grpc(w) => {
                w.close();
                Ok(())
            }
            Writer::ReceiveOnly => Ok(()),
        }
    }
}
