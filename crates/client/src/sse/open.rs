//! Opening one event stream: a `GET` with `Accept: text/event-stream`,
//! `Cache-Control: no-cache` and `Last-Event-ID` when resuming, and the checks on the
//! response the spec makes before reading any event: status 200 and content type
//! `text/event-stream` (204 means "stop", as the spec says).
//!
//! Over HTTP/1.1 ([`open`]) each stream has a connection of its own, from the run's
//! [`Connector`] (TCP or TLS, `--resolve`, `--cacert`, `--insecure` all apply) read by
//! hyper's client: a stream holds it for minutes, and an HTTP/1.1 connection carries
//! nothing else while it does. Over HTTP/2 ([`open_h2`]) the stream is one stream of
//! a connection of the client layer's own HTTP/2 implementation ([`http2`]), which
//! it may share with requests and other streams; its body is read frame by frame, each
//! frame's flow-control window given back as it is handed out, so what is buffered is
//! what the caller's parser keeps.

use std::rc::Rc;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, ACCEPT, CACHE_CONTROL, CONTENT_TYPE, HOST};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::task::JoinHandle;

use crate::connect::{connect_error_kind, ConnectError, Connector, Opens, Stream};
use crate::http2::{self, RawBody};
use crate::Protocol;
use headroom_metrics::recorder::Speaks;
use headroom_metrics::ErrorKind;

/// Largest response head (and read buffer) hyper may hold for one stream.
const MAX_HEAD: usize = 64 * 1024;

/// What to ask the server for.
#[derive(Debug, Clone)]
pub struct SseRequest {
    /// `https` or `http` (HTTP/2's `:scheme`).
    pub scheme: &'static str,
    /// `host[:port]` as the URL gives it (`Host`, or HTTP/2's `:authority`).
    pub authority: String,
    /// The path and query.
    pub path: String,
    /// Extra headers (authorization, cookies) from the scenario.
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

/// Why a stream could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// No connection (TCP or TLS).
    #[error("{0}")]
    Connect(#[from] ConnectError),
    /// The connection broke before a response head came, or the head was malformed.
    #[error("no response: {0}")]
    Http(#[from] hyper::Error),
    /// HTTP/2: the stream or its connection failed before a response head came.
    #[error("no response: {0}")]
    H2(#[from] http2::Failure),
    /// HTTP/2: a new connection did not complete the HTTP/2 handshake.
    #[error("{0}")]
    H2Handshake(#[from] http2::HandshakeError),
    /// The request could not be built (a header or path HTTP cannot carry).
    #[error("bad request: {0}")]
    Request(#[from] BadRequest),
    /// 204 No Content: the server says there is no stream (a client must not reconnect).
    #[error("the server answered 204 No Content: no stream")]
    NoContent,
    /// A status other than 200.
    #[error("the server answered {0}, not 200")]
    Status(StatusCode),
    /// A content type other than `text/event-stream`.
    #[error("the content type is {found:?}, not text/event-stream")]
    ContentType {
        /// The response's content type (its first 100 characters; empty when absent).
        found: String,
    },
}

/// A stream request HTTP cannot carry.
#[derive(Debug, thiserror::Error)]
pub enum BadRequest {
    /// The path is not a URI path.
    #[error("{path:?}: {source}")]
    Path {
        /// The path.
        path: String,
        /// Why it does not parse.
        #[source]
        source: http::uri::InvalidUri,
    },
    /// The `Last-Event-ID` to resume from cannot be a header value.
    #[error("the last event id {id:?} cannot be a header")]
    LastEventId {
        /// The id.
        id: String,
    },
    /// The request could not be built (a header HTTP cannot carry).
    #[error("{0}")]
    Build(#[source] http::Error),
}

impl OpenError {
    /// The error kind it counts as.
    pub fn kind(&self) -> ErrorKind {
        match self {
            OpenError::Connect(ConnectError::Tcp(e)) => connect_error_kind(e),
            OpenError::Connect(ConnectError::Tls(_)) => ErrorKind::Tls,
            OpenError::Http(e) if e.is_parse() || e.is_parse_too_large() => ErrorKind::Protocol,
            OpenError::Http(_) => ErrorKind::Reset,
            OpenError::H2(f) => f.kind,
            OpenError::H2Handshake(e) => e.kind(),
            OpenError::Request(_) => ErrorKind::Check,
            OpenError::NoContent | OpenError::Status(_) | OpenError::ContentType { .. } => {
                ErrorKind::Stream
            }
        }
    }
}

/// An open stream's body, read chunk by chunk. Dropping it ends the stream: over
/// HTTP/1.1 it closes the connection; over HTTP/2 it resets the stream (and the
/// connection closes if nothing else holds it).
#[derive(Debug)]
pub struct Response {
    body: Body,
}

#[derive(Debug)]
enum Body {
    Http1 {
        body: Incoming,
        /// The task driving the connection (hyper's dispatcher); aborted on drop.
        conn: JoinHandle<()>,
    },
    Http2 {
        body: RawBody,
        /// Keeps the connection open while the stream is read.
        _conn: Rc<http2::Connection>,
    },
}

/// Why reading an open stream's body failed: its connection or its HTTP/2 stream broke.
#[derive(Debug, thiserror::Error)]
pub enum ChunkError {
    /// HTTP/1.1: the connection broke.
    #[error("{0}")]
    Http1(#[from] hyper::Error),
    /// HTTP/2: the stream was reset or its connection failed.
    #[error("{0}")]
    Http2(#[from] http2::Failure),
}

impl Response {
    /// The next chunk of the body: `Ok(None)` when the server ended it, `Err` when the
    /// connection (or the HTTP/2 stream) broke.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, ChunkError> {
        match &mut self.body {
            Body::Http1 { body, .. } => loop {
                match body.frame().await {
                    None => return Ok(None),
                    Some(Err(e)) => return Err(e.into()),
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            return Ok(Some(data));
                        } // trailers: nothing for us
                    }
                }
            },
            Body::Http2 { body, .. } => loop {
                match body.data().await {
                    None => return Ok(None),
                    Some(Err(e)) => return Err(e.into()),
                    // An empty DATA frame (END_STREAM alone) carries nothing.
                    Some(Ok(data)) if data.is_empty() => {}
                    Some(Ok(data)) => return Ok(Some(data)),
                }
            },
        }
    }
}

impl Drop for Response {
    fn drop(&mut self) {
        if let Body::Http1 { conn, .. } = &self.body {
            conn.abort();
        }
    }
}

/// Opens `req` over HTTP/1.1 on a new connection from `connector` (counted in `opens`
/// as an SSE connection), sending `last_event_id` (when not empty), and checks the
/// response. No timeout here: the caller bounds it (a server that never answers holds
/// this for ever).
pub async fn open(
    connector: &Connector,
    opens: &Opens,
    req: &SseRequest,
    last_event_id: Option<&str>,
) -> Result<Response, OpenError> {
    let (stream, _opened) = connector.open(Speaks::Sse, opens).await?;
    let io = TokioIo::new(stream);
    let request = build(Protocol::Http1, req, last_event_id)?;
    let (mut sender, conn) = hyper::client::conn::http1::Builder::new()
        .max_buf_size(MAX_HEAD)
        .handshake::<TokioIo<Stream>, Empty<Bytes>>(io)
        .await?;
    let conn = tokio::spawn(async move {
        let _ = conn.await;
    });
    let response = match sender.send_request(request).await {
        Ok(response) => response,
        Err(e) => {
            conn.abort();
            return Err(e.into());
        }
    };
    let checked = check(response.status(), response.headers());
    let response = Response {
        body: Body::Http1 {
            body: response.into_body(),
            conn,
        },
    };
    checked.map(|()| response)
}

/// Opens a new HTTP/2 connection of a stream's own from `connector` (h2c with prior
/// knowledge, or TLS whose ALPN chose h2), counted in `opens` as an SSE connection.
pub async fn connect_h2(
    connector: &Connector,
    opens: &Opens,
) -> Result<Rc<http2::Connection>, OpenError> {
    let (stream, _opened) = connector.open(Speaks::Sse, opens).await?;
    let conn = http2::Connection::handshake(stream, &http2::Settings::default()).await?;
    Ok(Rc::new(conn))
}

/// Opens `req` as a new stream of the HTTP/2 connection `conn` (which may carry
/// requests and other streams too; its response head is bounded by the connection's
/// header-list limit), sending `last_event_id` (when not empty), and checks the
/// response. No timeout here: the caller bounds it.
pub async fn open_h2(
    conn: Rc<http2::Connection>,
    req: &SseRequest,
    last_event_id: Option<&str>,
) -> Result<Response, OpenError> {
    let request = build(Protocol::Http2, req, last_event_id)?.map(|_| ());
    let raw = conn.open_raw(request, None).await?;
    check(raw.head.status, &raw.head.headers)?;
    Ok(Response {
        body: Body::Http2 {
            body: raw.body,
            _conn: conn,
        },
    })
}

fn build(
    protocol: Protocol,
    req: &SseRequest,
    last_event_id: Option<&str>,
) -> Result<Request<Empty<Bytes>>, OpenError> {
    let uri = match protocol {
        Protocol::Http1 => req.path.parse::<Uri>(),
        Protocol::Http2 | Protocol::Http3 => Uri::builder()
            .scheme(req.scheme)
            .authority(req.authority.as_str())
            .path_and_query(req.path.as_str())
            .build()
            .map_err(|_| req.path.parse::<Uri>().unwrap_err()),
    }
    .map_err(|source| BadRequest::Path {
        path: req.path.clone(),
        source,
    })?;
    let mut builder = Request::builder().method(Method::GET).uri(uri);
    if protocol == Protocol::Http1 {
        builder = builder.header(HOST, req.authority.as_str());
    }
    builder = builder
        .header(ACCEPT, "text/event-stream")
        .header(CACHE_CONTROL, "no-cache");
    if let Some(id) = last_event_id.filter(|id| !id.is_empty()) {
        let value = HeaderValue::from_str(id)
            .map_err(|_| BadRequest::LastEventId { id: id.to_string() })?;
        builder = builder.header("last-event-id", value);
    }
    for (name, value) in &req.headers {
        builder = builder.header(name, value);
    }
    builder
        .body(Empty::new())
        .map_err(|e| BadRequest::Build(e).into())
}

/// Status 200 and `text/event-stream` (any parameters, any case), as the spec requires
/// before a stream is announced open.
fn check(status: StatusCode, headers: &http::HeaderMap) -> Result<(), OpenError> {
    match status {
        StatusCode::OK => {}
        StatusCode::NO_CONTENT => return Err(OpenError::NoContent),
        other => return Err(OpenError::Status(other)),
    }
    let Some(value) = headers.get(CONTENT_TYPE) else {
        return Err(OpenError::ContentType {
            found: String::new(),
        });
    };
    let text = String::from_utf8_lossy(value.as_bytes());
    let essence = text.split(';').next().unwrap_or("").trim();
    if essence.eq_ignore_ascii_case("text/event-stream") {
        Ok(())
    } else {
        Err(OpenError::ContentType {
            found: text.chars().take(100).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(status: u16, content_type: Option<&str>) -> (StatusCode, http::HeaderMap) {
        let mut headers = http::HeaderMap::new();
        if let Some(ct) = content_type {
            headers.insert(CONTENT_TYPE, HeaderValue::from_str(ct).unwrap());
        }
        (StatusCode::from_u16(status).unwrap(), headers)
    }

    fn check(r: &(StatusCode, http::HeaderMap)) -> Result<(), OpenError> {
        super::check(r.0, &r.1)
    }

    #[test]
    fn only_200_event_streams_are_accepted() {
        assert!(check(&response(200, Some("text/event-stream"))).is_ok());
        assert!(check(&response(200, Some("Text/Event-Stream; charset=utf-8"))).is_ok());
        assert!(matches!(
            check(&response(204, None)),
            Err(OpenError::NoContent)
        ));
        let err = check(&response(503, Some("text/event-stream"))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the server answered 503 Service Unavailable, not 200"
        );
        assert_eq!(err.kind(), ErrorKind::Stream);
        let err = check(&response(200, Some("text/plain"))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the content type is \"text/plain\", not text/event-stream"
        );
        assert!(check(&response(200, None)).is_err());
        assert!(check(&response(200, Some("text/event-streams"))).is_err());
    }

    #[test]
    fn requests_carry_the_sse_headers() {
        let req = SseRequest {
            scheme: "http",
            authority: "127.0.0.1:8080".into(),
            path: "/sse/ticker?every_ms=50".into(),
            headers: vec![(
                HeaderName::from_static("authorization"),
                HeaderValue::from_static("Bearer x"),
            )],
        };
        let r = build(Protocol::Http1, &req, Some("41")).unwrap();
        assert_eq!(r.uri(), "/sse/ticker?every_ms=50");
        let h = r.headers();
        assert_eq!(h[HOST], "127.0.0.1:8080");
        assert_eq!(h[ACCEPT], "text/event-stream");
        assert_eq!(h[CACHE_CONTROL], "no-cache");
        assert_eq!(h["last-event-id"], "41");
        assert_eq!(h["authorization"], "Bearer x");
        // HTTP/2: a full URI (hyper makes :scheme and :authority of it), no Host;
        // an empty last id sends no header.
        let r = build(Protocol::Http2, &req, Some("")).unwrap();
        assert_eq!(r.uri(), "http://127.0.0.1:8080/sse/ticker?every_ms=50");
        assert!(r.headers().get(HOST).is_none());
        assert!(r.headers().get("last-event-id").is_none());
        // An id with a line feed cannot be sent (a parser never yields one).
        assert!(build(Protocol::Http1, &req, Some("a\nb")).is_err());
    }
}
