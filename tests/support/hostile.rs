//! A misbehaving HTTP server on 127.0.0.1 for the hostile-target tests: every
//! connection gets the same [`Mode`] of misbehaviour, from floods and endless parts to
//! resets, garbage and responses nobody asked for; [`Hostile::full_backlog`] is a
//! listener that never accepts, its queue filled so new connects hang.
//!
//! Bounded: at most [`MAX_CONNECTIONS`] connections are served, each on its own thread
//! for at most [`CONNECTION_LIFETIME`], and everything stops when the [`Hostile`] is
//! dropped.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Most connections one server accepts.
pub(crate) const MAX_CONNECTIONS: usize = 300;
/// Longest a connection is served.
pub(crate) const CONNECTION_LIFETIME: Duration = Duration::from_secs(15);
/// How often a blocked read or write looks at the stop flag and the lifetime.
const POLL: Duration = Duration::from_millis(50);

/// A well-formed answer.
const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// How the server misbehaves, on every connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Behaves: `200 ok` on a keep-alive connection (the idle baseline).
    Ok,
    /// A chunked response whose first chunk-size line `5;` never ends.
    ChunkExtensionFlood,
    /// A response head with a header that never ends.
    EndlessHeader,
    /// A body without a length that never ends, as fast as the socket takes it;
    /// `paced`: 8 KiB every 10 ms.
    EndlessBody {
        /// Sends slowly, so a discarding client costs little CPU.
        paced: bool,
    },
    /// A complete body of this many bytes (`Content-Length`), as fast as possible.
    HugeBody(usize),
    /// `Content-Length: 100` but five bytes, then a close.
    ShortBody,
    /// A valid response, one byte per second.
    Drip,
    /// Reads the request and never answers.
    NeverAnswer,
    /// Resets the connection (SO_LINGER 0) right after accepting it.
    ResetOnAccept,
    /// Sends the head and part of the body, then resets.
    ResetMidBody,
    /// Answers bytes that are not HTTP.
    Garbage,
    /// `HTTP/1.0` without a length, body until the close.
    Http10UntilClose,
    /// `100 Continue` and `103 Early Hints` before the final `200`.
    Interim,
    /// `204` and `304` (with a `Content-Length`) by turns, without a body, keep-alive.
    NoBody,
    /// `Content-Length: 1000` and no body: right only for HEAD.
    HeadOnly,
    /// Each answer followed at once by a second, unasked `500`.
    ExtraResponse,
    /// Answers, then shuts down its sending side (the connection half-closed).
    HalfClose,
}

/// A running misbehaving server; stops when dropped.
pub(crate) struct Hostile {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    /// Requests read on each connection, in accept order.
    requests: Arc<Mutex<Vec<u64>>>,
    /// For [`Hostile::full_backlog`]: the listener that never accepts and the
    /// connections filling its queue.
    _held: Option<(socket2::Socket, Vec<TcpStream>)>,
}

impl Hostile {
    /// Starts a server misbehaving as `mode` on a free loopback port.
    pub(crate) fn start(mode: Mode) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("listener address");
        let stop = Arc::new(AtomicBool::new(false));
        let requests: Arc<Mutex<Vec<u64>>> = Arc::default();
        let (stop2, requests2) = (stop.clone(), requests.clone());
        thread::spawn(move || {
            for stream in listener.incoming().take(MAX_CONNECTIONS) {
                if stop2.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let index = {
                    let mut r = requests2.lock().unwrap();
                    r.push(0);
                    r.len() - 1
                };
                let (stop, requests) = (stop2.clone(), requests2.clone());
                thread::spawn(move || {
                    let conn = Connection::new(stream, &stop);
                    serve(conn, mode, |n| requests.lock().unwrap()[index] = n);
                });
            }
        });
        Hostile {
            addr,
            stop,
            requests,
            _held: None,
        }
    }

    /// A listener with a backlog of 0 that never accepts, its queue already full:
    /// a new connect gets no answer to its SYN and hangs.
    pub(crate) fn full_backlog() -> Hostile {
        let (socket, addr) = super::ports::bound_loopback();
        socket.listen(0).expect("listen");
        let mut fill = Vec::new();
        let filled =
            (0..16).any(
                |_| match TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
                    Ok(s) => {
                        fill.push(s);
                        false
                    }
                    Err(_) => true,
                },
            );
        assert!(
            filled,
            "{} connects to a listener with backlog 0 all completed",
            fill.len()
        );
        Hostile {
            addr,
            stop: Arc::new(AtomicBool::new(false)),
            requests: Arc::default(),
            _held: Some((socket, fill)),
        }
    }

    /// The server's base URL.
    pub(crate) fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Requests read on each connection accepted so far.
    pub(crate) fn requests_per_connection(&self) -> Vec<u64> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if self._held.is_none() {
            // Wake the accept loop so it sees the flag.
            let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(100));
        }
    }
}

/// One accepted connection with its deadline.
struct Connection<'a> {
    stream: TcpStream,
    stop: &'a AtomicBool,
    until: Instant,
}

impl Connection<'_> {
    fn new(stream: TcpStream, stop: &AtomicBool) -> Connection<'_> {
        // Short timeouts so a blocked read or write notices the stop flag.
        let _ = stream.set_read_timeout(Some(POLL));
        let _ = stream.set_write_timeout(Some(POLL));
        let _ = stream.set_nodelay(true);
        Connection {
            stream,
            stop,
            until: Instant::now() + CONNECTION_LIFETIME,
        }
    }

    fn alive(&self) -> bool {
        !self.stop.load(Ordering::Relaxed) && Instant::now() < self.until
    }

    /// Reads one request head (headroom's requests here have no body); false at the
    /// end of the stream, on an error, or when the server stops.
    fn read_request(&mut self) -> bool {
        let mut seen = Vec::new();
        let mut buf = [0u8; 1024];
        while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
            match self.stream.read(&mut buf) {
                Ok(0) => return false,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
                Err(e) if timed_out(&e) && self.alive() => {}
                Err(_) => return false,
            }
            if seen.len() > 64 * 1024 {
                return false;
            }
        }
        true
    }

    /// Writes all of `bytes`; false when the peer went away or the server stops.
    fn send(&mut self, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            match self.stream.write(bytes) {
                Ok(0) => return false,
                Ok(n) => bytes = &bytes[n..],
                Err(e) if timed_out(&e) && self.alive() => {}
                Err(_) => return false,
            }
        }
        true
    }

    /// Writes `head`, then `filler` bytes until the peer goes away or the server stops.
    fn flood(&mut self, head: &[u8], filler: u8, pace: Option<Duration>) {
        let block = vec![filler; if pace.is_some() { 8 * 1024 } else { 64 * 1024 }];
        if !self.send(head) {
            return;
        }
        while self.alive() && self.send(&block) {
            if let Some(pause) = pace {
                thread::sleep(pause);
            }
        }
    }

    /// Waits until the peer closes (or the server stops), discarding what it sends.
    fn hold(&mut self) {
        while self.alive() && self.read_request() {}
    }

    /// Closes with an RST instead of a FIN.
    fn reset(self) {
        let _ = socket2::SockRef::from(&self.stream).set_linger(Some(Duration::ZERO));
    }
}

fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Serves one connection as `mode`; `count` is told the requests read so far.
fn serve(mut c: Connection<'_>, mode: Mode, count: impl Fn(u64)) {
    if mode == Mode::ResetOnAccept {
        return c.reset();
    }
    let mut requests = 0;
    loop {
        if !c.read_request() {
            return;
        }
        requests += 1;
        count(requests);
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;";
        match mode {
            Mode::Ok => {
                if !c.send(OK) {
                    return;
                }
            }
            Mode::ChunkExtensionFlood => return c.flood(chunked, b'e', None),
            Mode::EndlessHeader => return c.flood(b"HTTP/1.1 200 OK\r\nX-Endless: ", b'h', None),
            Mode::EndlessBody { paced } => {
                let pace = paced.then_some(Duration::from_millis(10));
                return c.flood(b"HTTP/1.1 200 OK\r\n\r\n", b'b', pace);
            }
            Mode::HugeBody(n) => {
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n\r\n");
                if !c.send(head.as_bytes()) {
                    return;
                }
                let block = vec![b'b'; 64 * 1024];
                let mut left = n;
                while left > 0 {
                    let k = left.min(block.len());
                    if !c.send(&block[..k]) {
                        return;
                    }
                    left -= k;
                }
            }
            Mode::ShortBody => {
                c.send(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort");
                return;
            }
            Mode::Drip => {
                for &b in OK {
                    if !c.alive() || !c.send(&[b]) {
                        return;
                    }
                    thread::sleep(Duration::from_secs(1));
                }
            }
            Mode::NeverAnswer => return c.hold(),
            Mode::ResetOnAccept => unreachable!("handled above"),
            Mode::ResetMidBody => {
                c.send(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial");
                thread::sleep(Duration::from_millis(20));
                return c.reset();
            }
            Mode::Garbage => {
                c.send(b"\x16\x03\x01 this is not HTTP\r\n\r\n");
                return;
            }
            Mode::Http10UntilClose => {
                c.send(b"HTTP/1.0 200 OK\r\n\r\nuntil the close");
                return;
            }
            Mode::Interim => {
                let reply = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                if !c.send(reply) {
                    return;
                }
            }
            Mode::NoBody => {
                // A 304 may state the length of the body it does not send.
                let reply: &[u8] = if requests % 2 == 1 {
                    b"HTTP/1.1 204 No Content\r\n\r\n"
                } else {
                    b"HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n"
                };
                if !c.send(reply) {
                    return;
                }
            }
            Mode::HeadOnly => {
                if !c.send(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n") {
                    return;
                }
            }
            Mode::ExtraResponse => {
                let two = [OK, b"HTTP/1.1 500 Unasked\r\nContent-Length: 0\r\n\r\n"].concat();
                if !c.send(&two) {
                    return;
                }
            }
            Mode::HalfClose => {
                if c.send(OK) {
                    let _ = c.stream.shutdown(Shutdown::Write);
                    // Count anything the client still sends on the half-closed connection.
                    while c.alive() && c.read_request() {
                        requests += 1;
                        count(requests);
                    }
                }
                return;
            }
        }
    }
}
