//! The one place stream protocols plug in. Each protocol module provides
//!
//! - `async fn open(cx: &OpenCx<'_>, inbox: &Rc<Inbox>) -> Result<Opened<W>, Failure>`:
//!   connect, handshake, spawn its pump with `tokio::task::spawn_local` (the pump loops
//!   reading and calls `inbox.message/closed/failed/reconnected` until the stream ends
//!   or `inbox.closing()`), and return its own writer `W` and the pump's handle;
//! - a variant of [`Writer`] below that wraps `W`, with `send` and `close`.
//!
//! and is added to the two `match`es here. [`OpenCx`] and [`Opened`] live in the leaf
//! `super::cx`, so the protocols never import this dispatcher that imports them. A
//! protocol opens its connections through `OpenCx::connect` or `OpenCx::h2`, which
//! count each (the client layer's connector does) and keep the run's first connect or
//! TLS failure, as requests' do.

use std::rc::Rc;

use super::cx::{OpenCx, Opened};
use super::{grpc, sse, ws, Failure, Inbox};
use headroom_plan::Protocol;

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
pub(crate) async fn open(cx: &OpenCx<'_>, inbox: &Rc<Inbox>) -> Result<Opened<Writer>, Failure> {
    Ok(match cx.step.protocol {
        Protocol::Ws => ws::open(cx, inbox).await?.map(Writer::Ws),
        Protocol::Sse => sse::open(cx, inbox).await?.map(Writer::Sse),
        Protocol::Grpc => grpc::open(cx, inbox)
            .await?
            .map(|w| w.map_or(Writer::ReceiveOnly, Writer::Grpc)),
    })
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
