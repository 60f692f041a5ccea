//! One HTTP/1.1 keep-alive connection: send a request's bytes, read one response.
//!
//! [`Conn::round_trip`] writes the request in one call, parses the response head with
//! `httparse`, then consumes the body by `Content-Length`, chunked encoding, or until
//! the peer closes. Errors are classified into [`ErrorKind`](headroom_metrics::ErrorKind)s,
//! never propagated as run errors: a failed hit is counted and the engine moves on.
//!
//! Every part of a response that is buffered has a limit ([`Limits`]): the head (with
//! any interim 1xx heads), each chunk-size line with its extensions, the trailers, and
//! a body kept for checks. The read buffer never grows past the largest of the first
//! three. A body that is not kept is streamed through the buffer, whatever its length.
//! Past a limit the exchange fails as `protocol`, naming the limit, and the connection
//! is closed. Kept bodies of all connections together stay within a [`BodyBudget`]
//! (past it: the generator's own error). Defaults: head 64 KiB, chunk-size line 4 KiB,
//! trailers 16 KiB, kept body 8 MiB, all kept bodies of the process 32 MiB.
//!
//! The kept-body defaults are what keeps a run's memory within 64 MiB of an idle
//! run's when every response in flight is an endless body that must be kept (see
//! `tests/hostile.rs`): the sum is bounded by the budget, and bodies of at most 8 MiB
//! keep the allocator's retained free space small.

mod budget;
mod buffer;
mod chunked;
mod error;
mod framing;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_limits;
mod try_io;

use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::Poll;
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

pub use budget::{BodyBudget, DEFAULT_BODY_BUDGET};
pub use error::RoundTripError;
use framing::{framing_of, Framing};
use std::mem::MaybeUninit;
pub use try_io::TryIo;

/// Initial read buffer. Small, because a run may hold thousands of connections.
const READ_CHUNK: usize = 4 * 1024;
/// Most headers parsed per response: a login page sets a dozen cookies, and a
/// `Set-Cookie` flood must reach the jar's own bound (counted, not stored) rather
/// than fail the response. Uninitialised slots: more costs no memset.
const MAX_HEADERS: usize = 128;
/// A kept body's space is given back before the next exchange when it grew past this,
/// so an idle connection does not hold on to its largest body.
const RETAINED_BODY: usize = 64 * 1024;

/// The most a connection buffers of each part of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The response head, interim (1xx) heads before it included.
    pub head: usize,
    /// One chunk-size line, chunk extensions and CRLF included.
    pub chunk_line: usize,
    /// All trailer fields of a chunked body together.
    pub trailers: usize,
    /// A body kept for checks and captures (a discarded body has no limit).
    pub kept_body: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            head: 64 * 1024,
            chunk_line: 4 * 1024,
            trailers: 16 * 1024,
            kept_body: 8 * 1024 * 1024,
        }
    }
}

impl Limits {
    /// The most the read buffer may hold: the largest part that must be contiguous.
    pub fn buffer(&self) -> usize {
        self.head.max(self.chunk_line).max(self.trailers).max(1)
    }
}

/// The outcome of one successful exchange (any status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Body bytes received (kept or not).
    pub body_len: u64,
    /// When the first byte of the response (of an interim 1xx head, if any) was read:
    /// the end of time to first byte and the start of receive. `None` when the read
    /// that brought it brought the whole response: it then arrived when it ended.
    pub first_byte: Option<Instant>,
}

/// Response headers a request keeps: the names asked for (lower case) and the values
/// of the last response, by index into the names. Bounded by the head limit, as the
/// head they were copied from.
#[derive(Debug)]
struct Kept {
    names: Vec<String>,
    values: Vec<(usize, Vec<u8>)>,
}

/// A keep-alive HTTP/1.1 connection over a byte stream (TCP by default).
#[derive(Debug)]
pub struct Conn<S = TcpStream> {
    stream: S,
    limits: Limits,
    /// Bytes read but not yet consumed live in `buf[start..end]`.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// The last response's body, when the caller asked to keep it.
    body: Vec<u8>,
    /// Shared by the connections whose kept bodies it bounds together.
    budget: BodyBudget,
    /// Bytes of `budget` reserved for `body`.
    charged: usize,
    /// Whether any byte of the current response arrived.
    got_byte: bool,
    /// When it did: taken once per response, and only when the read that brought it
    /// did not bring the whole response (see `fill`).
    first_byte: Option<Instant>,
    /// Set when the peer asked to close, the body ran until close, or an exchange failed.
    closed: bool,
    /// Requests completed on this connection.
    served: u64,
    /// The response headers the current request keeps (see
    /// [`Conn::round_trip_keeping`]), made on first use: boxed, so a connection that
    /// keeps none stays small.
    kept: Option<Box<Kept>>,
}

impl Conn<TcpStream> {
    /// Opens a TCP connection (with `TCP_NODELAY`, as every load generator does).
    pub async fn connect(addr: SocketAddr) -> io::Result<Conn<TcpStream>> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Conn::new(stream, Limits::default(), BodyBudget::process()))
    }
}

impl<S: AsyncRead + AsyncWrite + TryIo + Unpin> Conn<S> {
    /// A connection over an established stream, buffering no more than `limits`, its
    /// kept bodies taken from `budget`.
    pub fn new(stream: S, limits: Limits, budget: BodyBudget) -> Conn<S> {
        Conn {
            stream,
            buf: vec![0; READ_CHUNK.min(limits.buffer())],
            limits,
            start: 0,
            end: 0,
            body: Vec::new(),
            budget,
            charged: 0,
            got_byte: false,
            first_byte: None,
            closed: false,
            served: 0,
            kept: None,
        }
    }

    /// Whether the connection can carry another request.
    pub fn reusable(&self) -> bool {
        !self.closed
    }

    /// Requests completed on this connection so far.
    pub fn served(&self) -> u64 {
        self.served
    }

    /// The body of the last response when `keep_body` was set (else empty).
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// The headers of the last response whose names [`Conn::round_trip_keeping`] was
    /// asked to keep: (index into that list, value), in the order they came.
    pub fn kept_headers(&self) -> &[(usize, Vec<u8>)] {
        self.kept.as_ref().map_or(&[], |k| k.values.as_slice())
    }

    /// Frees the kept body and gives its space back to the budget. Call it once the
    /// body has been judged, so an idle connection holds none of the budget.
    pub fn release_body(&mut self) {
        self.body = Vec::new();
        self.budget.give(self.charged);
        self.charged = 0;
    }

    /// Sends `request` (complete wire bytes) and reads one response. With `keep_body`
    /// the body is kept for [`Conn::body`]; otherwise it is read and discarded.
    /// `head` marks a HEAD request, whose response has no body.
    ///
    /// On error the connection must not be reused. [`RoundTripError::stale`] tells a
    /// reused connection that the peer had already closed before any response byte
    /// arrived (or that it held unsolicited bytes and was not used): the request may
    /// be retried once on a fresh connection, subject to [`RoundTripError::sent`].
    pub async fn round_trip(
        &mut self,
        request: &[u8],
        keep_body: bool,
        head: bool,
    ) -> Result<Response, RoundTripError> {
        self.round_trip_keeping(request, keep_body, head, &[]).await
    }

    /// [`Conn::round_trip`], keeping the values of the response headers named in
    /// `keep` (lower case) for [`Conn::kept_headers`]: `set-cookie` for the user's
    /// jar, `location` for a redirect, a header a capture reads.
    pub async fn round_trip_keeping(
        &mut self,
        request: &[u8],
        keep_body: bool,
        head: bool,
        keep: &[String],
    ) -> Result<Response, RoundTripError> {
        match (&mut self.kept, keep.is_empty()) {
            (Some(k), _) => {
                k.values.clear();
                if k.names != keep {
                    k.names = keep.to_vec();
                }
            }
            (None, true) => {}
            (None, false) => {
                self.kept = Some(Box::new(Kept {
                    names: keep.to_vec(),
                    values: Vec::new(),
                }))
            }
        }
        let reused = self.served > 0;
        if self.body.capacity() > RETAINED_BODY {
            self.release_body();
        }
        self.body.clear();
        self.got_byte = false;
        self.first_byte = None;
        let result = async {
            if reused {
                self.check_idle().await?;
            }
            self.write(request).await?;
            self.read_response(keep_body, head)
                .await
                .map_err(|e| RoundTripError { sent: true, ..e })
        }
        .await;
        match result {
            Ok(response) => {
                self.served += 1;
                // We never pipeline: bytes beyond the response are nobody's answer.
                self.closed |= self.end > self.start;
                Ok(response)
            }
            Err(mut e) => {
                self.closed = true;
                self.release_body();
                e.stale |= reused && !self.got_byte && e.peer_closed();
                Err(e)
            }
        }
    }

    /// Before reusing an idle connection: fails (stale, nothing sent) when the peer
    /// closed it or sent bytes no request asked for (an extra response to an earlier
    /// request, which would otherwise be taken as this request's answer).
    async fn check_idle(&mut self) -> Result<(), RoundTripError> {
        if self.end > self.start {
            return Err(RoundTripError::unsolicited());
        }
        self.start = 0;
        self.end = 0;
        // Plain TCP answers from the socket's cached readiness, usually without a
        // system call (see `try_io`); another stream gets one poll, never a wait.
        // Either way, nothing to read is the normal case.
        let read = match self.stream.try_read_now(&mut self.buf) {
            Some(Err(e)) if e.kind() == io::ErrorKind::WouldBlock => None,
            Some(read) => Some(read),
            None => {
                let Conn { stream, buf, .. } = self;
                poll_fn(|cx| {
                    let mut read = ReadBuf::new(buf);
                    Poll::Ready(match Pin::new(&mut *stream).poll_read(cx, &mut read) {
                        Poll::Pending => None,
                        Poll::Ready(r) => Some(r.map(|()| read.filled().len())),
                    })
                })
                .await
            }
        };
        match read {
            None => Ok(()),
            Some(Ok(0)) => Err(RoundTripError::closed_while_idle()),
            Some(Ok(_)) => Err(RoundTripError::unsolicited()),
            Some(Err(e)) => Err(RoundTripError {
                stale: true,
                ..RoundTripError::io(&e)
            }),
        }
    }

    async fn write(&mut self, request: &[u8]) -> Result<(), RoundTripError> {
        let mut rest = request;
        match self.stream.try_write_now(rest) {
            // Plain TCP with room in its send buffer, the usual case: written, and a
            // socket has nothing to flush.
            Some(Ok(n)) if n == rest.len() => return Ok(()),
            Some(Ok(n)) => rest = &rest[n..],
            Some(Err(e)) if e.kind() == io::ErrorKind::WouldBlock => {}
            Some(Err(e)) => return Err(RoundTripError::io(&e)),
            None => {}
        }
        self.stream
            .write_all(rest)
            .await
            .map_err(|e| RoundTripError::io(&e))?;
        // A no-op on TCP; a buffering stream (TLS) sends its records here.
        self.stream
            .flush()
            .await
            .map_err(|e| RoundTripError::io(&e))
    }

    async fn read_response(
        &mut self,
        keep_body: bool,
        head: bool,
    ) -> Result<Response, RoundTripError> {
        // Bytes of interim (1xx) heads already consumed count against the head limit.
        let mut interim = 0usize;
        let (status, framing, head_len) = loop {
            if self.end > self.start {
                // Uninitialised slots: httparse writes the ones it fills, and zeroing all
                // 48 (1.5 KiB) on every parse was a memset per response.
                let mut headers = [const { MaybeUninit::uninit() }; MAX_HEADERS];
                let mut parsed = httparse::Response::new(&mut []);
                match httparse::ParserConfig::default().parse_response_with_uninit_headers(
                    &mut parsed,
                    &self.buf[self.start..self.end],
                    &mut headers,
                ) {
                    Ok(httparse::Status::Complete(len)) => {
                        if interim + len > self.limits.head {
                            return Err(RoundTripError::too_large(
                                "response head",
                                self.limits.head,
                            ));
                        }
                        let status = parsed.code.unwrap_or(0);
                        if status == 101 {
                            // We never ask to switch protocols.
                            return Err(RoundTripError::protocol(
                                "unrequested 101 Switching Protocols",
                            ));
                        }
                        if (100..200).contains(&status) {
                            // An interim response (100 Continue, 103 Early Hints): skip it.
                            self.start += len;
                            interim += len;
                            continue;
                        }
                        if status < 100 {
                            return Err(RoundTripError::protocol(format!(
                                "bad status {status:03}"
                            )));
                        }
                        let (framing, close) =
                            framing_of(status, head, parsed.headers, parsed.version)?;
                        if let Some(kept) = self.kept.as_mut() {
                            for h in parsed.headers.iter() {
                                if let Some(i) = kept
                                    .names
                                    .iter()
                                    .position(|k| h.name.eq_ignore_ascii_case(k))
                                {
                                    kept.values.push((i, h.value.to_vec()));
                                }
                            }
                        }
                        self.closed |= close;
                        break (status, framing, len);
                    }
                    Ok(httparse::Status::Partial) => {
                        if interim + (self.end - self.start) >= self.limits.head {
                            return Err(RoundTripError::too_large(
                                "response head",
                                self.limits.head,
                            ));
                        }
                    }
                    Err(e) => {
                        return Err(RoundTripError::protocol(format!("bad response head: {e}")))
                    }
                }
            }
            if self.fill().await? == 0 {
                return Err(RoundTripError::closed());
            }
        };
        self.start += head_len;
        let body_len = match framing {
            Framing::None => 0,
            Framing::Length(n) => {
                if keep_body {
                    if n > self.limits.kept_body as u64 {
                        return Err(RoundTripError::too_large(
                            "kept response body",
                            self.limits.kept_body,
                        ));
                    }
                    self.reserve_body(n as usize)?;
                }
                self.consume_exact(n, keep_body).await?;
                n
            }
            Framing::Chunked => self.consume_chunked(keep_body).await?,
            Framing::UntilClose => {
                self.closed = true;
                self.consume_until_close(keep_body).await?
            }
        };
        Ok(Response {
            status,
            body_len,
            first_byte: self.first_byte,
        })
    }
}
