//! The dashboard's HTTP server: HTTP/1.1 on its own thread and current-thread tokio
//! runtime, so serving the page never takes time from an engine thread.
//!
//! Routes: `GET /` (the page), `GET /assets/...` (its script, style and uPlot, all
//! embedded: nothing is fetched from elsewhere), `GET /events` (the page's event
//! stream: one message per completed second, see [`Board::message`]), `GET /state`
//! (the same message, whole, as JSON), `POST /stop` (stop the command as Ctrl-C does)
//! and `GET /metrics` (Prometheus).
//!
//! It parses requests from the network, so everything it holds per request is
//! bounded: a request head of at most [`MAX_HEAD`] bytes and [`MAX_HEADERS`] headers,
//! read within [`HEAD_TIMEOUT`]; no request body is read (one announced over
//! [`MAX_BODY`] bytes is refused); at most [`MAX_CONNECTIONS`] connections are served
//! at once (more are closed on accept). `Host` must be loopback, an IP address or
//! `localhost` (a DNS-rebinding page cannot reach it), and `/stop` wants a header a
//! cross-site form cannot send. With a token ([`Access`]), a request without it is
//! refused (401) before anything else is read.

use std::convert::Infallible;
use std::net::TcpListener as StdListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream;
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{
    CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, HOST, SET_COOKIE, WWW_AUTHENTICATE,
};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch, Semaphore};

use super::access::{Access, Grant};
use super::assets;
use super::board::Board;
use super::prom;
use crate::engine::Control;

/// Largest request head (request line and headers) read, bytes.
pub const MAX_HEAD: usize = 16 * 1024;
/// Most headers in a request.
pub const MAX_HEADERS: usize = 64;
/// Largest request body announced; the server never reads one.
pub const MAX_BODY: u64 = 1024;
/// Most connections served at once.
pub const MAX_CONNECTIONS: usize = 64;
/// Longest wait for a request head once a connection is idle or opened.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// The header `/stop` requires. A cross-site page can only send it after a CORS
/// preflight, which this server never grants.
pub const STOP_HEADER: &str = "x-headroom-stop";
/// Comment sent on a quiet event stream so proxies and the browser keep it open.
const KEEPALIVE: Duration = Duration::from_secs(15);

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// What every connection shares.
pub(crate) struct Shared {
    pub(crate) board: Arc<Mutex<Board>>,
    pub(crate) changes: watch::Receiver<u64>,
    pub(crate) control: Control,
    /// Event streams open now (the dashboard waits for them to take the last message).
    pub(crate) streams: Arc<AtomicUsize>,
    /// Who may use it.
    pub(crate) access: Access,
}

/// Serves `listener` on a new thread until `stop` fires; then every connection is
/// dropped and the thread ends.
pub(crate) fn spawn(
    listener: StdListener,
    shared: Arc<Shared>,
    stop: oneshot::Receiver<()>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    listener.set_nonblocking(true)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name("headroom-dashboard".into())
        .spawn(move || {
            runtime.block_on(accept_loop(listener, shared, stop));
            // Open connections (a tab's event stream among them) are dropped here: the
            // process never waits on a browser (k6#3619).
            runtime.shutdown_timeout(Duration::from_millis(100));
        })
}

async fn accept_loop(listener: StdListener, shared: Arc<Shared>, mut stop: oneshot::Receiver<()>) {
    let Ok(listener) = TcpListener::from_std(listener) else {
        return;
    };
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let (stream, _) = tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // Out of descriptors for a moment: try again shortly.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // Over the cap, the connection is closed at once (dropped).
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let _ = stream.set_nodelay(true);
            let service = service_fn(move |req| {
                let shared = shared.clone();
                async move { Ok::<_, Infallible>(route(&shared, req)) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .max_buf_size(MAX_HEAD)
                .max_headers(MAX_HEADERS)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(CONTENT_TYPE, content_type)
        .header(CACHE_CONTROL, "no-store")
        .body(Full::new(body.into()).boxed_unsync())
        .expect("a valid response")
}

fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    full(status, "text/plain; charset=utf-8", body)
}

/// Whether `Host` names this machine by address or as `localhost`: a page served from
/// another name that resolves here (DNS rebinding) is refused.
fn host_allowed(req: &Request<Incoming>) -> bool {
    let Some(host) = req.headers().get(HOST).and_then(|h| h.to_str().ok()) else {
        return false;
    };
    let name = match host.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
        _ => host,
    };
    let name = name.trim_start_matches('[').trim_end_matches(']');
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok()
}

fn route(shared: &Shared, req: Request<Incoming>) -> Response<Body> {
    if !host_allowed(&req) {
        return text(
            StatusCode::FORBIDDEN,
            "forbidden: Host must be an IP address or localhost\n",
        );
    }
    let grant = shared.access.check(&req);
    if grant == Grant::Denied {
        return Response::builder()
            .status(StatusCode::UNAUTHORIZED)
            .header(CONTENT_TYPE, "text/plain; charset=utf-8")
            .header(WWW_AUTHENTICATE, "Bearer realm=\"headroom\"")
            .body(
                Full::new(Bytes::from_static(
                    b"unauthorized: this dashboard wants the token printed where it started \
                      (open its URL with ?token=, or send Authorization: Bearer TOKEN)\n",
                ))
                .boxed_unsync(),
            )
            .expect("a valid response");
    }
    let mut response = serve(shared, req);
    if grant == Grant::AllowedSetCookie {
        if let Some(cookie) = shared.access.cookie().and_then(|c| c.parse().ok()) {
            response.headers_mut().insert(SET_COOKIE, cookie);
        }
    }
    response
}

fn serve(shared: &Shared, req: Request<Incoming>) -> Response<Body> {
    let announced = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|n| n > MAX_BODY) {
        return text(StatusCode::PAYLOAD_TOO_LARGE, "request body too large\n");
    }
    let path = req.uri().path();
    match (req.method(), path) {
        (&Method::GET, "/") => full(
            StatusCode::OK,
            "text/html; charset=utf-8",
            assets::INDEX_HTML,
        ),
        (&Method::GET, "/metrics") => {
            let board = shared.board.lock().unwrap_or_else(|p| p.into_inner());
            let (totals, names) = board.totals();
            full(
                StatusCode::OK,
                prom::CONTENT_TYPE,
                prom::encode(totals, names),
            )
        }
        (&Method::GET, "/state") => {
            let board = shared.board.lock().unwrap_or_else(|p| p.into_inner());
            full(
                StatusCode::OK,
                "application/json",
                board.message(0, true).to_json(),
            )
        }
        (&Method::GET, "/events") => events(shared),
        (&Method::POST, "/stop") => {
            if !req.headers().contains_key(STOP_HEADER) {
                return text(
                    StatusCode::FORBIDDEN,
                    "forbidden: /stop wants the x-headroom-stop header\n",
                );
            }
            let first = !shared.control.is_stopped();
            // Exactly what Ctrl-C does (`commands::common::stop_on_ctrl_c`).
            shared.control.stop();
            shared
                .board
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .stopping();
            if first {
                eprintln!("dashboard: stop asked from the page; stopping as Ctrl-C does");
            }
            full(
                StatusCode::ACCEPTED,
                "application/json",
                "{\"stopping\":true}",
            )
        }
        (&Method::GET, _) => match assets::find(path) {
            Some((content_type, body)) => full(StatusCode::OK, content_type, body),
            None => text(StatusCode::NOT_FOUND, "not found\n"),
        },
        _ => text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n"),
    }
}

/// Decrements the open-stream count when a stream ends or its connection drops.
struct StreamGuard(Arc<AtomicUsize>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Where an event stream is.
struct Cursor {
    board: Arc<Mutex<Board>>,
    changes: watch::Receiver<u64>,
    next_row: usize,
    generation: u64,
    first: bool,
    done: bool,
    _guard: StreamGuard,
}

/// `GET /events`: a Server-Sent Events stream. The first message holds everything
/// (`reset`); each later one the new rows and the current figures. It ends after the
/// message that reports the end, so the page closes it.
fn events(shared: &Shared) -> Response<Body> {
    shared.streams.fetch_add(1, Ordering::SeqCst);
    let mut changes = shared.changes.clone();
    changes.mark_changed();
    let cursor = Cursor {
        board: shared.board.clone(),
        changes,
        next_row: 0,
        generation: 0,
        first: true,
        done: false,
        _guard: StreamGuard(shared.streams.clone()),
    };
    let frames = stream::unfold(cursor, |mut c| async move {
        if c.done {
            return None;
        }
        let changed = tokio::time::timeout(KEEPALIVE, c.changes.changed()).await;
        let frame = match changed {
            Err(_) => Bytes::from_static(b": keepalive\n\n"),
            // The dashboard is gone: end the stream.
            Ok(Err(_)) => return None,
            Ok(Ok(())) => {
                let board = c.board.lock().unwrap_or_else(|p| p.into_inner());
                // Rows thinned since the last message: the page starts over with them.
                let reset = c.first || board.generation() != c.generation;
                c.generation = board.generation();
                let from = if reset { 0 } else { c.next_row };
                let message = board.message(from, reset).to_json();
                c.next_row = board.rows();
                c.done = board.is_finished();
                drop(board);
                c.first = false;
                Bytes::from(format!("data: {message}\n\n"))
            }
        };
        Some((Ok::<_, Infallible>(Frame::data(frame)), c))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(CONTENT_TYPE, "text/event-stream")
        .header(CACHE_CONTROL, "no-store")
        .body(BodyExt::boxed_unsync(StreamBody::new(frames)))
        .expect("a valid response")
}
