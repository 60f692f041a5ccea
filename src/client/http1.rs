//! One HTTP/1.1 keep-alive connection: send a request's bytes, read one response.
//!
//! [`Conn::round_trip`] writes the request in one call, parses the response head with
//! `httparse`, then consumes the body by `Content-Length`, chunked encoding, or until
//! the peer closes. Errors are classified into [`ErrorKind`]s, never propagated as
//! run errors: a failed hit is counted and the engine moves on.

use std::io;
use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::metrics::ErrorKind;

/// Largest response head accepted; beyond it the response is a `protocol` error.
const MAX_HEAD: usize = 64 * 1024;
/// Initial read buffer. Small, because a run may hold thousands of connections.
const READ_CHUNK: usize = 4 * 1024;
/// Most headers parsed per response.
const MAX_HEADERS: usize = 48;

/// The outcome of one successful exchange (any status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Body bytes received (kept or not).
    pub body_len: usize,
}

/// How the body of a response is delimited.
#[derive(Debug, Clone, Copy)]
enum Framing {
    None,
    Length(usize),
    Chunked,
    UntilClose,
}

/// A keep-alive HTTP/1.1 connection to one address.
#[derive(Debug)]
pub struct Conn {
    stream: TcpStream,
    /// Bytes read but not yet consumed live in `buf[start..end]`.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// The last response's body, when the caller asked to keep it.
    body: Vec<u8>,
    /// Set when the peer asked to close, or the body ran until close.
    closed: bool,
    /// Requests completed on this connection.
    served: u64,
}

impl Conn {
    /// Opens a connection (with `TCP_NODELAY`, as every load generator does).
    pub async fn connect(addr: SocketAddr) -> io::Result<Conn> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            buf: vec![0; READ_CHUNK],
            start: 0,
            end: 0,
            body: Vec::new(),
            closed: false,
            served: 0,
        })
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

    /// Sends `request` (complete wire bytes) and reads one response. With `keep_body`
    /// the body is kept for [`Conn::body`]; otherwise it is read and discarded.
    /// `head` marks a HEAD request, whose response has no body.
    ///
    /// On error the connection must not be reused. [`RoundTripError::stale`] tells a
    /// reused connection that the peer had already closed before any response byte
    /// arrived: the request may be retried once on a fresh connection.
    pub async fn round_trip(
        &mut self,
        request: &[u8],
        keep_body: bool,
        head: bool,
    ) -> Result<Response, RoundTripError> {
        let fresh = self.served == 0;
        if let Err(e) = self.stream.write_all(request).await {
            self.closed = true;
            return Err(RoundTripError::io(e, !fresh));
        }
        let result = self.read_response(keep_body, head).await;
        match result {
            Ok(response) => {
                self.served += 1;
                Ok(response)
            }
            Err(mut e) => {
                self.closed = true;
                e.stale &= !fresh;
                Err(e)
            }
        }
    }

    async fn read_response(
        &mut self,
        keep_body: bool,
        head: bool,
    ) -> Result<Response, RoundTripError> {
        self.body.clear();
        let mut got_any = self.end > self.start;
        let (status, framing, head_len) = loop {
            if self.end > self.start {
                let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
                let mut parsed = httparse::Response::new(&mut headers);
                match parsed.parse(&self.buf[self.start..self.end]) {
                    Ok(httparse::Status::Complete(len)) => {
                        let status = parsed.code.unwrap_or(0);
                        if (100..200).contains(&status) && status != 101 {
                            // An interim response (100 Continue): skip it, read on.
                            self.start += len;
                            continue;
                        }
                        let (framing, close) =
                            framing_of(status, head, parsed.headers, parsed.version)?;
                        self.closed |= close;
                        break (status, framing, len);
                    }
                    Ok(httparse::Status::Partial) => {
                        if self.end - self.start >= MAX_HEAD {
                            return Err(RoundTripError::protocol("response head too large"));
                        }
                    }
                    Err(e) => return Err(RoundTripError::protocol(e.to_string())),
                }
            }
            if self.fill().await? == 0 {
                return Err(RoundTripError::closed(!got_any));
            }
            got_any = true;
        };
        self.start += head_len;
        let body_len = match framing {
            Framing::None => 0,
            Framing::Length(n) => self.consume_exact(n, keep_body).await?,
            Framing::Chunked => self.consume_chunked(keep_body).await?,
            Framing::UntilClose => {
                self.closed = true;
                self.consume_until_close(keep_body).await?
            }
        };
        Ok(Response { status, body_len })
    }

    /// Reads more bytes into the buffer; returns how many (0 at end of stream).
    async fn fill(&mut self) -> Result<usize, RoundTripError> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else {
                let grown = self.buf.len() * 2;
                self.buf.resize(grown, 0);
            }
        }
        let n = self
            .stream
            .read(&mut self.buf[self.end..])
            .await
            .map_err(|e| RoundTripError::io(e, false))?;
        self.end += n;
        Ok(n)
    }

    /// Takes up to `n` buffered bytes, keeping them if asked; returns how many.
    fn take(&mut self, n: usize, keep: bool) -> usize {
        let k = n.min(self.end - self.start);
        if keep {
            self.body
                .extend_from_slice(&self.buf[self.start..self.start + k]);
        }
        self.start += k;
        k
    }

    async fn consume_exact(&mut self, n: usize, keep: bool) -> Result<usize, RoundTripError> {
        let mut left = n;
        loop {
            left -= self.take(left, keep);
            if left == 0 {
                return Ok(n);
            }
            if self.fill().await? == 0 {
                return Err(RoundTripError::closed(false));
            }
        }
    }

    async fn consume_until_close(&mut self, keep: bool) -> Result<usize, RoundTripError> {
        let mut total = 0;
        loop {
            total += self.take(usize::MAX, keep);
            if self.fill().await? == 0 {
                return Ok(total);
            }
        }
    }

    async fn consume_chunked(&mut self, keep: bool) -> Result<usize, RoundTripError> {
        let mut total = 0;
        loop {
            let size = loop {
                match httparse::parse_chunk_size(&self.buf[self.start..self.end]) {
                    Ok(httparse::Status::Complete((used, size))) => {
                        self.start += used;
                        break size as usize;
                    }
                    Ok(httparse::Status::Partial) => {
                        if self.fill().await? == 0 {
                            return Err(RoundTripError::closed(false));
                        }
                    }
                    Err(_) => return Err(RoundTripError::protocol("bad chunk size")),
                }
            };
            if size == 0 {
                self.skip_trailers().await?;
                return Ok(total);
            }
            total += self.consume_exact(size, keep).await?;
            self.expect_crlf().await?;
        }
    }

    async fn expect_crlf(&mut self) -> Result<(), RoundTripError> {
        while self.end - self.start < 2 {
            if self.fill().await? == 0 {
                return Err(RoundTripError::closed(false));
            }
        }
        if &self.buf[self.start..self.start + 2] != b"\r\n" {
            return Err(RoundTripError::protocol("chunk not followed by CRLF"));
        }
        self.start += 2;
        Ok(())
    }

    /// Skips optional trailer fields and the final empty line of a chunked body.
    async fn skip_trailers(&mut self) -> Result<(), RoundTripError> {
        loop {
            if let Some(pos) = self.buf[self.start..self.end]
                .windows(2)
                .position(|w| w == b"\r\n")
            {
                self.start += pos + 2;
                if pos == 0 {
                    return Ok(());
                }
                continue;
            }
            if self.fill().await? == 0 {
                return Err(RoundTripError::closed(false));
            }
        }
    }
}

fn framing_of(
    status: u16,
    head: bool,
    headers: &[httparse::Header<'_>],
    version: Option<u8>,
) -> Result<(Framing, bool), RoundTripError> {
    let mut length = None;
    let mut chunked = false;
    // HTTP/1.0 closes unless told to keep alive; HTTP/1.1 keeps alive unless told to close.
    let mut close = version == Some(0);
    for h in headers {
        if h.name.eq_ignore_ascii_case("content-length") {
            let text = std::str::from_utf8(h.value).ok();
            let n = text.and_then(|t| t.trim().parse::<usize>().ok());
            length = Some(n.ok_or_else(|| RoundTripError::protocol("bad content-length"))?);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = h
                .value
                .windows(7)
                .any(|w| w.eq_ignore_ascii_case(b"chunked"));
        } else if h.name.eq_ignore_ascii_case("connection") {
            if h.value.eq_ignore_ascii_case(b"close") {
                close = true;
            } else if h.value.eq_ignore_ascii_case(b"keep-alive") {
                close = false;
            }
        }
    }
    let framing = if head || status == 204 || status == 304 {
        Framing::None
    } else if chunked {
        Framing::Chunked
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        Framing::UntilClose
    };
    Ok((framing, close))
}

/// Why an exchange failed.
#[derive(Debug)]
pub struct RoundTripError {
    /// The kind to count the hit under.
    pub kind: ErrorKind,
    /// True when a reused connection turned out to be closed by the peer before any
    /// response byte: safe to retry once on a fresh connection.
    pub stale: bool,
    /// Details for messages.
    pub detail: String,
}

impl RoundTripError {
    fn io(e: io::Error, stale: bool) -> RoundTripError {
        let kind = match e.kind() {
            io::ErrorKind::TimedOut => ErrorKind::Timeout,
            _ => ErrorKind::Reset,
        };
        let stale = stale
            && matches!(
                e.kind(),
                io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
            );
        RoundTripError {
            kind,
            stale,
            detail: e.to_string(),
        }
    }

    fn closed(before_any_byte: bool) -> RoundTripError {
        RoundTripError {
            kind: ErrorKind::Reset,
            stale: before_any_byte,
            detail: "connection closed before the response was complete".into(),
        }
    }

    fn protocol(detail: impl Into<String>) -> RoundTripError {
        RoundTripError {
            kind: ErrorKind::Protocol,
            stale: false,
            detail: detail.into(),
        }
    }
}
