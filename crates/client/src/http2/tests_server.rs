//! Scripted HTTP/2 servers on 127.0.0.1 for the client's tests, each on its own thread
//! and runtime (so the client's thread measures only the client's allocations):
//! [`h2_server`], a real HTTP/2 server (`h2::server`) whose handler is the script; and
//! [`raw_server`], frames written by hand, for what a correct server never does
//! (a GOAWAY naming a chosen stream, an oversized header list, closing mid-stream).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use h2::server::SendResponse;
use h2::RecvStream;
use http::Request;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::{Connection, Settings};

/// Runs `f` on a current-thread runtime inside a `LocalSet`, as the engine does.
pub(super) fn local<F: Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, f)
}

/// Connects to `addr` over TCP and sets up HTTP/2.
pub(super) async fn connect(addr: SocketAddr, settings: &Settings) -> Connection {
    let tcp = TcpStream::connect(addr).await.unwrap();
    // As the engine's connector does: small frames (WINDOW_UPDATE, SETTINGS ACK) must
    // not wait for Nagle's algorithm.
    tcp.set_nodelay(true).unwrap();
    Connection::handshake(tcp, settings).await.unwrap()
}

/// A GET of `/path` for `addr`.
pub(super) fn get(addr: SocketAddr, path: &str) -> Request<()> {
    Request::get(format!("http://{addr}{path}"))
        .body(())
        .unwrap()
}

/// What the server saw.
#[derive(Debug, Default)]
pub(super) struct Seen {
    /// Connections accepted.
    pub(super) connections: AtomicUsize,
    /// Requests being handled now.
    pub(super) open: AtomicUsize,
    /// The most requests handled at once.
    pub(super) max_open: AtomicUsize,
    /// Requests received.
    pub(super) requests: AtomicUsize,
    /// Connections that ended (the client closed them, or they failed).
    pub(super) closed: AtomicUsize,
}

/// Counts a request as open while it lives.
struct OpenGuard(Arc<Seen>);

impl OpenGuard {
    fn new(seen: &Arc<Seen>) -> OpenGuard {
        seen.requests.fetch_add(1, Ordering::SeqCst);
        let now = seen.open.fetch_add(1, Ordering::SeqCst) + 1;
        seen.max_open.fetch_max(now, Ordering::SeqCst);
        OpenGuard(seen.clone())
    }
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A real HTTP/2 server (`builder`'s settings) on its own thread: every request is
/// handed to `handler` on a task of its own, and counted open until the task ends.
pub(super) fn h2_server<F, Fut>(builder: h2::server::Builder, handler: F) -> (SocketAddr, Arc<Seen>)
where
    F: Fn(Request<RecvStream>, SendResponse<Bytes>) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let seen = Arc::new(Seen::default());
    let counts = seen.clone();
    let addr = serve(move |tcp| {
        let builder = builder.clone();
        let handler = handler.clone();
        let seen = counts.clone();
        async move {
            seen.connections.fetch_add(1, Ordering::SeqCst);
            let Ok(mut conn) = builder.handshake::<_, Bytes>(tcp).await else {
                return;
            };
            while let Some(Ok((request, respond))) = conn.accept().await {
                let guard = OpenGuard::new(&seen);
                let handler = handler.clone();
                tokio::spawn(async move {
                    handler(request, respond).await;
                    drop(guard);
                });
            }
            seen.closed.fetch_add(1, Ordering::SeqCst);
        }
    });
    (addr, seen)
}

/// Accepts connections on 127.0.0.1 on a thread of its own, each served by `script`.
pub(super) fn serve<F, Fut>(script: F) -> SocketAddr
where
    F: Fn(TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    std_listener.set_nonblocking(true).unwrap();
    let addr = std_listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = TcpListener::from_std(std_listener).unwrap();
            while let Ok((tcp, _)) = listener.accept().await {
                let _ = tcp.set_nodelay(true);
                tokio::spawn(script(tcp));
            }
        });
    });
    addr
}

/// Frame types used by the raw scripts.
pub(super) const HEADERS: u8 = 0x1;
pub(super) const SETTINGS: u8 = 0x4;
pub(super) const GOAWAY: u8 = 0x7;
pub(super) const CONTINUATION: u8 = 0x9;
pub(super) const END_STREAM: u8 = 0x1;
pub(super) const END_HEADERS: u8 = 0x4;

/// One frame's bytes.
pub(super) fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// A GOAWAY naming `last` with error code `code`.
pub(super) fn goaway(last: u32, code: u32) -> Vec<u8> {
    let mut payload = last.to_be_bytes().to_vec();
    payload.extend_from_slice(&code.to_be_bytes());
    frame(GOAWAY, 0, 0, &payload)
}

/// A server connection spoken frame by frame.
pub(super) struct Raw {
    pub(super) tcp: TcpStream,
}

impl Raw {
    /// Reads the client's preface and sends an empty SETTINGS (no stream limit).
    pub(super) async fn accept(mut tcp: TcpStream) -> Raw {
        let mut preface = [0u8; 24];
        tcp.read_exact(&mut preface).await.unwrap();
        assert_eq!(&preface, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
        tcp.write_all(&frame(SETTINGS, 0, 0, &[])).await.unwrap();
        Raw { tcp }
    }

    /// The next frame: (type, flags, stream id, payload); `None` at end of stream.
    pub(super) async fn read(&mut self) -> Option<(u8, u8, u32, Vec<u8>)> {
        let mut head = [0u8; 9];
        self.tcp.read_exact(&mut head).await.ok()?;
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        let mut payload = vec![0; len];
        self.tcp.read_exact(&mut payload).await.ok()?;
        Some((head[3], head[4], stream, payload))
    }

    /// Reads frames until `n` requests (HEADERS frames) have arrived; their stream ids.
    pub(super) async fn requests(&mut self, n: usize) -> Vec<u32> {
        let mut ids = Vec::new();
        while ids.len() < n {
            let (kind, _, stream, _) = self.read().await.expect("client closed early");
            if kind == HEADERS {
                ids.push(stream);
            }
        }
        ids
    }

    /// Writes `bytes`.
    pub(super) async fn write(&mut self, bytes: &[u8]) {
        self.tcp.write_all(bytes).await.unwrap();
    }

    /// A `:status 200` response head on `stream` (HPACK static index 8), ending the
    /// stream when `end`.
    pub(super) async fn ok(&mut self, stream: u32, end: bool) {
        let flags = END_HEADERS | if end { END_STREAM } else { 0 };
        self.write(&frame(HEADERS, flags, stream, &[0x88])).await;
    }
}
