//! Opening one event stream: a connection from the run's [`Connector`] (TCP or TLS,
//! `--resolve`, `--cacert`, `--insecure` all apply), hyper's client connection over it
//! (HTTP/1.1, or HTTP/2 with `--http2`), a `GET` with `Accept: text/event-stream`,
//! `Cache-Control: no-cache` and `Last-Event-ID` when resuming, and the checks on the
//! response the spec makes before reading any event: status 200 and content type
//! `text/event-stream` (204 means "stop", as the spec says).
//!
//! Each stream has a connection of its own: a stream holds it for minutes, and an
//! HTTP/1.1 connection carries nothing else while it does.

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, ACCEPT, CACHE_CONTROL, CONTENT_TYPE, HOST};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::task::JoinHandle;

use crate::connect::{connect_error_kind, ConnectError, Connector, Stream};
use crate::Protocol;
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
            OpenError::Request(_) => ErrorKind::Check,
            OpenError::NoContent | OpenError::Status(_) | OpenError::ContentType { .. } => {
                ErrorKind::Stream
            }
        }
    }
}

/// An open stream's body, read chunk by chunk. Dropping it closes the connection.
#[derive(Debug)]
pub struct Response {
    body: Incoming,
    /// The task driving the connection (hyper's dispatcher); aborted on drop.
    conn: JoinHandle<()>,
}

impl Response {
    /// The next chunk of the body: `Ok(None)` when the server ended it, `Err` when the
    /// connection broke.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, hyper::Error> {
        loop {
            match self.body.frame().await {
                None => return Ok(None),
                Some(Err(e)) => return Err(e),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        return Ok(Some(data));
                    } // trailers: nothing for us
                }
            }
        }
    }
}

impl Drop for Response {
    fn drop(&mut self) {
        self.conn.abort();
    }
}

/// Opens `req` through `connector` in `protocol`, sending `last_event_id` (when not
/// empty), and checks the response. No timeout here: the caller bounds it (a server
/// that never answers holds this for ever).
pub async fn open(
    connector: &Connector,
    protocol: Protocol,
    req: &SseRequest,
    last_event_id: Option<&str>,
) -> Result<Response, OpenError> {
    let (stream, _opened) = connector.open().await?;
    let io = TokioIo::new(stream);
    let request = build(protocol, req, last_event_id)?;
    let (response, conn) = match protocol {
        Protocol::Http1 => {
            let (mut sender, conn) = hyper::client::conn::http1::Builder::new()
                .max_buf_size(MAX_HEAD)
                .handshake::<TokioIo<Stream>, Empty<Bytes>>(io)
                .await?;
            let conn = tokio::spawn(async move {
                let _ = conn.await;
            });
            (sender.send_request(request).await, conn)
        }
        Protocol::Http2 => {
            let (mut sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
                .max_header_list_size(MAX_HEAD as u32)
                .handshake::<TokioIo<Stream>, Empty<Bytes>>(io)
                .await?;
            let conn = tokio::spawn(async move {
                let _ = conn.await;
            });
            (sender.send_request(request).await, conn)
        }
    };
    let response = match response {
        Ok(response) => response,
        Err(e) => {
            conn.abort();
            return Err(e.into());
        }
    };
    let checked = check(&response);
    let response = Response {
        body: response.into_body(),
        conn,
    };
    checked.map(|()| response)
}

fn build(
    protocol: Protocol,
    req: &SseRequest,
    last_event_id: Option<&str>,
) -> Result<Request<Empty<Bytes>>, OpenError> {
    let uri = match protocol {
        Protocol::Http1 => req.path.parse::<Uri>(),
        Protocol::Http2 => Uri::builder()
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
fn check<B>(response: &http::Response<B>) -> Result<(), OpenError> {
    match response.status() {
        StatusCode::OK => {}
        StatusCode::NO_CONTENT => return Err(OpenError::NoContent),
        other => return Err(OpenError::Status(other)),
    }
    let Some(value) = response.headers().get(CONTENT_TYPE) else {
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

    fn response(status: u16, content_type: Option<&str>) -> http::Response<()> {
        let mut b = http::Response::builder().status(status);
        if let Some(ct) = content_type {
            b = b.header(CONTENT_TYPE, ct);
        }
        b.body(()).unwrap()
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
