//! WebSocket streams (`ws:` steps), ws and wss, with tokio-tungstenite over the client
//! layer's own TCP/TLS stream (so `--resolve`, `--insecure`, `--cacert` apply; ALPN
//! http/1.1). The writer stays with the user's steps; a pump task reads.

use std::rc::Rc;
use std::time::Instant;

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{self, Error as WsError, Message as WsMessage};
use tokio_tungstenite::WebSocketStream;

use super::cx::{OpenCx, Opened};
use super::{Failure, Inbox, Message};
use headroom_client::connect::Stream;
use headroom_metrics::recorder::Speaks;
use headroom_metrics::ErrorKind;

/// Largest message (and frame) accepted from a peer: a bigger one fails the stream as
/// `protocol` instead of being buffered.
pub(crate) const MAX_MESSAGE: usize = 1 << 20;

/// The sending half of a WebSocket.
pub(crate) struct Writer {
    sink: SplitSink<WebSocketStream<Stream>, WsMessage>,
}

/// Bytes tungstenite reads from the socket at a time (and the read buffer's starting
/// capacity). Its default, 128 KiB, is zero-filled before every read, so each open
/// connection kept 128 KiB resident and every message paid for a 128 KiB memset: at
/// 10,000 connections that was 147 KiB of RSS per connection. A load generator's
/// messages are small; a bigger frame still arrives whole (the buffer grows to the
/// frame's length, up to `MAX_MESSAGE`), it only takes more reads.
pub(crate) const READ_CHUNK: usize = 4096;

/// The protocol's configuration: bounded messages and frames, small read chunks, and
/// no write buffering (every send is flushed at once anyway).
pub(crate) fn config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE))
        .read_buffer_size(READ_CHUNK)
        .write_buffer_size(0)
}

/// Connects, upgrades, and starts the pump.
pub(crate) async fn open(cx: &OpenCx<'_>, inbox: &Rc<Inbox>) -> Result<Opened<Writer>, Failure> {
    let began = Instant::now();
    let e = &cx.endpoint;
    let connector = cx.state.streams.http1(&cx.state.plan, e).await?;
    let stream = cx.connect(&connector, Speaks::WebSocket).await?;
    let scheme = if e.tls { "wss" } else { "ws" };
    let mut request = format!("{scheme}://{}{}", e.authority, e.path)
        .into_client_request()
        .map_err(|err| Failure::stream(format!("bad WebSocket URL: {err}")))?;
    for (name, value) in &cx.headers {
        let name = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|err| Failure::stream(format!("header {name:?}: {err}")))?;
        let value = http::HeaderValue::from_str(value)
            .map_err(|err| Failure::stream(format!("header {name}: {err}")))?;
        request.headers_mut().insert(name, value);
    }
    let (ws, _response) =
        tokio_tungstenite::client_async_with_config(request, stream, Some(config()))
            .await
            .map_err(handshake_failure)?;
    let connect = began.elapsed();
    let (sink, source) = ws.split();
    let pump = tokio::task::spawn_local(pump(source, inbox.clone()));
    Ok(Opened {
        writer: Writer { sink },
        pump,
        connect,
    })
}

fn handshake_failure(err: WsError) -> Failure {
    match err {
        WsError::Http(response) => {
            let status = response.status().as_u16();
            let kind = ErrorKind::for_status(status).unwrap_or(ErrorKind::Stream);
            Failure::new(
                kind,
                format!("the server refused the WebSocket upgrade with {status}"),
            )
        }
        WsError::Io(io) => Failure::new(
            ErrorKind::Reset,
            format!("during the WebSocket handshake: {io}"),
        ),
        other => Failure::stream(format!("WebSocket handshake: {other}")),
    }
}

/// Bytes a server frame of `len` payload bytes takes on the wire (unmasked).
fn frame_bytes(len: usize, masked: bool) -> usize {
    let header = match len {
        0..=125 => 2,
        126..=65535 => 4,
        _ => 10,
    };
    header + len + if masked { 4 } else { 0 }
}

/// Reads until the stream ends or its owner closes it, handing messages to `inbox`.
async fn pump(mut source: SplitStream<WebSocketStream<Stream>>, inbox: Rc<Inbox>) {
    while let Some(item) = source.next().await {
        match item {
            Ok(WsMessage::Text(t)) => inbox.message(Message {
                event: None,
                wire_bytes: frame_bytes(t.len(), false),
                data: t.as_str().to_owned(),
            }),
            Ok(WsMessage::Binary(b)) => inbox.message(Message {
                event: None,
                wire_bytes: frame_bytes(b.len(), false),
                data: String::from_utf8_lossy(&b).into_owned(),
            }),
            Ok(WsMessage::Ping(_) | WsMessage::Pong(_) | WsMessage::Frame(_)) => {}
            Ok(WsMessage::Close(frame)) => {
                let code = frame.map_or(1005, |f| u16::from(f.code));
                inbox.closed(code.to_string());
                return;
            }
            Err(err) => {
                let (kind, reason) = read_failure(&err);
                inbox.failed(kind, reason);
                return;
            }
        }
    }
    inbox.closed("1006".into());
}

fn read_failure(err: &WsError) -> (ErrorKind, String) {
    match err {
        WsError::Capacity(c) => (
            ErrorKind::Protocol,
            format!("oversized WebSocket message: {c}"),
        ),
        WsError::Protocol(tungstenite::error::ProtocolError::ResetWithoutClosingHandshake) => (
            ErrorKind::Stream,
            "the connection dropped without a close frame".into(),
        ),
        other => (ErrorKind::Stream, format!("WebSocket: {other}")),
    }
}

impl Writer {
    /// Sends one text message; returns its size on the wire (client frames are masked).
    pub(crate) async fn send(&mut self, text: String) -> Result<usize, Failure> {
        let bytes = frame_bytes(text.len(), true);
        self.sink
            .send(WsMessage::Text(text.into()))
            .await
            .map_err(|err| Failure::stream(format!("WebSocket send: {err}")))?;
        Ok(bytes)
    }

    /// Sends a close frame with `code`.
    pub(crate) async fn close(&mut self, code: u16) -> Result<(), Failure> {
        let frame = CloseFrame {
            code: CloseCode::from(code),
            reason: "".into(),
        };
        match self.sink.send(WsMessage::Close(Some(frame))).await {
            Ok(()) | Err(WsError::ConnectionClosed | WsError::AlreadyClosed) => Ok(()),
            Err(err) => Err(Failure::stream(format!("WebSocket close: {err}"))),
        }
    }
}
