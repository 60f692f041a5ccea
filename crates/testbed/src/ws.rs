//! The target's WebSockets: `/ws/echo[?delay_ms=N]` sends every text or binary message
//! back after N ms (at most [`MAX_DELAY_MS`]), and `/ws/room/{name}` is a broadcast
//! room: every message a member sends goes to every member (the sender too), and a
//! joiner first gets `{"type":"joined","room":NAME,"members":N}`.
//!
//! Limits: messages and frames up to [`MAX_MESSAGE`] bytes (a bigger one closes the
//! connection with 1009), room names up to 64 characters of `[A-Za-z0-9_.-]`, and the
//! rooms' own bounds (`rooms.rs`: how many rooms, members and queued messages; a
//! request beyond them is refused with 503).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, UPGRADE};
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::reply::{self, Reply};
use super::state::State;

/// Largest message or frame the target accepts.
pub(crate) const MAX_MESSAGE: usize = 64 << 10;
/// Bytes read from a socket at a time. Small on purpose: tungstenite's default 128 KiB
/// read buffer is zero-filled before every read and stays resident per connection, and
/// the target holds thousands of them; a bigger message is read in several chunks.
pub(crate) const READ_CHUNK: usize = 4096;

/// The server side's protocol configuration: bounded messages and frames, small read
/// chunks, and no write buffering (every send is flushed at once anyway).
pub(crate) fn config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE))
        .read_buffer_size(READ_CHUNK)
        .write_buffer_size(0)
}
/// Longest echo delay.
pub(crate) const MAX_DELAY_MS: u64 = 60_000;

/// What a `/ws/...` path asks for.
enum Route {
    Echo(Duration),
    Room(String),
}

/// Why a `/ws/...` request names no WebSocket of the target (answered 404 with it).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum RouteError {
    /// `delay_ms` out of range or not a number.
    #[error("delay_ms: expected 0..={MAX_DELAY_MS}")]
    Delay,
    /// A query parameter the echo does not take.
    #[error("unknown parameter {0:?}")]
    Parameter(String),
    /// No such socket.
    #[error("expected /ws/echo or /ws/room/NAME (up to 64 of A-Z a-z 0-9 _ . -)")]
    Path,
}

fn route(path: &str, query: Option<&str>) -> Result<Route, RouteError> {
    match path
        .trim_matches('/')
        .split('/')
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["ws", "echo"] => {
            let mut delay = 0;
            for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
                match pair.split_once('=') {
                    Some(("delay_ms", v)) => {
                        delay = v
                            .parse::<u64>()
                            .ok()
                            .filter(|d| *d <= MAX_DELAY_MS)
                            .ok_or(RouteError::Delay)?;
                    }
                    _ => return Err(RouteError::Parameter(pair.to_owned())),
                }
            }
            Ok(Route::Echo(Duration::from_millis(delay)))
        }
        ["ws", "room", name]
            if !name.is_empty()
                && name.len() <= 64
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b)) =>
        {
            Ok(Route::Room(name.to_string()))
        }
        _ => Err(RouteError::Path),
    }
}

/// Whether `req` is for a target WebSocket.
pub(crate) fn is_ws(req: &Request<Incoming>) -> bool {
    req.uri().path().starts_with("/ws/")
}

/// Answers a `/ws/...` request: 101 and a task serving the socket, or an error status.
pub(crate) fn upgrade(state: Arc<State>, mut req: Request<Incoming>) -> Reply {
    let route = match route(req.uri().path(), req.uri().query()) {
        Ok(r) => r,
        Err(e) => return reply::text(StatusCode::NOT_FOUND, format!("{e}\n")),
    };
    let upgrade_asked = req
        .headers()
        .get(UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let Some(key) = req
        .headers()
        .get(SEC_WEBSOCKET_KEY)
        .filter(|_| upgrade_asked)
    else {
        return reply::text(StatusCode::BAD_REQUEST, "expected a WebSocket upgrade\n");
    };
    let accept = derive_accept_key(key.as_bytes());
    let room = match &route {
        Route::Room(name) => match state.rooms.join(name) {
            Some(joined) => Some((name.clone(), joined)),
            None => return reply::text(StatusCode::SERVICE_UNAVAILABLE, "room limit reached\n"),
        },
        Route::Echo(_) => None,
    };
    let on_upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let Ok(upgraded) = on_upgrade.await else {
            if let Some((name, (id, _, _))) = room {
                state.rooms.leave(&name, id);
            }
            return;
        };
        let config = config();
        let ws =
            WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config))
                .await;
        match (route, room) {
            (Route::Echo(delay), _) => echo(&state, ws, delay).await,
            (Route::Room(_), Some((name, (id, rx, members)))) => {
                serve_room(&state, ws, &name, rx, members).await;
                state.rooms.leave(&name, id);
            }
            (Route::Room(_), None) => {}
        }
    });
    let mut res = reply::empty(StatusCode::SWITCHING_PROTOCOLS);
    let h = res.headers_mut();
    h.insert(UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(
        SEC_WEBSOCKET_ACCEPT,
        HeaderValue::from_str(&accept).expect("base64 is a header value"),
    );
    res
}

type Socket = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

async fn echo(state: &State, mut ws: Socket, delay: Duration) {
    while let Some(Ok(message)) = ws.next().await {
        match message {
            Message::Text(_) | Message::Binary(_) => {
                if !delay.is_zero() {
                    // The precise timer: tokio's wheel would add up to 1 ms to every
                    // delay, and tests read the delay back to ±2 ms.
                    state.timer.sleep_until(Instant::now() + delay).await;
                }
                if ws.send(message).await.is_err() {
                    return;
                }
            }
            Message::Close(_) => {
                // tungstenite queued the answering close frame when it read this one;
                // a flush writes it (`close()` would refuse: the peer already closed).
                let _ = ws.flush().await;
                return;
            }
            Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {}
        }
    }
}

async fn serve_room(
    state: &State,
    ws: Socket,
    name: &str,
    mut rx: mpsc::Receiver<Message>,
    members: usize,
) {
    let (mut sink, mut source) = ws.split();
    let joined = serde_json::json!({"type": "joined", "room": name, "members": members});
    if sink
        .send(Message::Text(joined.to_string().into()))
        .await
        .is_err()
    {
        return;
    }
    loop {
        tokio::select! {
            incoming = source.next() => match incoming {
                Some(Ok(m @ (Message::Text(_) | Message::Binary(_)))) => state.rooms.broadcast(name, &m),
                Some(Ok(Message::Close(_))) => {
                    // Writes the answering close frame tungstenite queued (see `echo`).
                    let _ = sink.flush().await;
                    return;
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return,
            },
            outgoing = rx.recv() => match outgoing {
                Some(m) => if sink.send(m).await.is_err() { return },
                None => return,
            },
        }
    }
}

#[cfg(test)]
#[path = "tests_ws.rs"]
mod tests;
