//! One gRPC call over an HTTP/2 connection: the request (`POST /package.Service/Method`,
//! `content-type: application/grpc`, `te: trailers`, `grpc-timeout`, the scenario's
//! metadata, one framed message), then the response's messages as they arrive and its
//! status from the trailers, or from the headers of a trailers-only response.

use std::time::Duration;

use http::{HeaderName, HeaderValue};

use super::frame::{self, Decoder, FrameError};
use super::proto::{Method, ProtoError};
use super::status::{self, Status};
use crate::http2::{Connection, Failure, RawBody};
use headroom_metrics::ErrorKind;

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The HTTP/2 stream or connection failed (`stream_reset`, `goaway`, `reset`,
    /// `protocol`, as for requests).
    #[error("{0}")]
    Http(#[from] Failure),
    /// The server ended the call with a non-OK status.
    #[error("{} {}", .0.name(), .0.message)]
    Status(Status),
    /// The body was not well-framed gRPC.
    #[error("{0}")]
    Frame(#[from] FrameError),
    /// A message did not decode as the method's output type.
    #[error("{0}")]
    Decode(#[from] ProtoError),
    /// Something else the gRPC protocol forbids (no status, a unary call with no reply
    /// or two, a response that is not gRPC).
    #[error("{0}")]
    Protocol(#[from] ProtocolError),
}

/// A call that broke the gRPC protocol, or a request that could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// The method's path is not a URI path.
    #[error("bad method path: {0}")]
    MethodPath(#[source] http::uri::InvalidUri),
    /// The target and the method's path do not make a URI.
    #[error("bad URI: {0}")]
    Uri(#[source] http::uri::InvalidUriParts),
    /// The request could not be built.
    #[error("bad request: {0}")]
    Request(#[source] http::Error),
    /// The response is not gRPC.
    #[error("response content-type is not application/grpc")]
    NotGrpc,
    /// The status was asked for after it had been read.
    #[error("status read twice")]
    StatusTwice,
    /// The trailers held no status.
    #[error("the call ended without a grpc-status")]
    NoStatus,
    /// A unary call with status OK and no reply.
    #[error("unary call ended with status OK but no reply")]
    NoReply,
    /// A unary call with two replies.
    #[error("unary call got two replies")]
    TwoReplies,
}

impl CallError {
    /// The kind the failed call is counted under: the status's (DEADLINE_EXCEEDED →
    /// `timeout`, others → `grpc`), the HTTP/2 failure's, or `protocol`.
    pub fn kind(&self) -> ErrorKind {
        match self {
            CallError::Http(f) => f.kind,
            CallError::Status(s) => s.error_kind().unwrap_or(ErrorKind::Grpc),
            CallError::Frame(_) | CallError::Decode(_) | CallError::Protocol(_) => {
                ErrorKind::Protocol
            }
        }
    }

    /// The status name to count this failure under in the streams summary: the
    /// server's, or `None` when the call ended without one.
    pub fn status_name(&self) -> Option<String> {
        match self {
            CallError::Status(s) => Some(s.name()),
            _ => None,
        }
    }
}

/// What a call sends besides its message.
#[derive(Debug, Clone)]
pub struct CallOptions {
    /// The target's scheme and authority (`http://host:port`); the method's path is
    /// appended.
    pub base: http::Uri,
    /// Sent as `grpc-timeout`, when set.
    pub timeout: Option<Duration>,
    /// Extra headers (`metadata:`).
    pub metadata: Vec<(HeaderName, HeaderValue)>,
    /// Most bytes one received message may have.
    pub max_message: usize,
}

/// A call whose response head has arrived: read its messages with [`Responses::next`],
/// then its status with [`Responses::status`].
#[derive(Debug)]
pub struct Responses {
    body: Option<RawBody>,
    decoder: Decoder,
    method: Method,
    /// The status of a trailers-only response (known from the head).
    early: Option<Status>,
}

/// A received message: as JSON, and its size on the wire (prefix included).
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The message in the protobuf JSON mapping.
    pub json: serde_json::Value,
    /// Prefix plus message bytes.
    pub wire_bytes: usize,
}

/// Starts a call: sends the request and waits for the response head.
pub async fn start(
    conn: &Connection,
    method: &Method,
    message: &[u8],
    options: &CallOptions,
) -> Result<Responses, CallError> {
    let uri = {
        let mut parts = options.base.clone().into_parts();
        parts.path_and_query = Some(method.path.parse().map_err(ProtocolError::MethodPath)?);
        http::Uri::from_parts(parts).map_err(ProtocolError::Uri)?
    };
    let mut request = http::Request::post(uri)
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header(
            "user-agent",
            concat!("headroom/", env!("CARGO_PKG_VERSION")),
        );
    if let Some(timeout) = options.timeout {
        request = request.header("grpc-timeout", status::encode_timeout(timeout));
    }
    let mut request = request.body(()).map_err(ProtocolError::Request)?;
    for (name, value) in &options.metadata {
        request.headers_mut().append(name.clone(), value.clone());
    }
    let response = conn.open_raw(request, Some(frame::encode(message))).await?;
    let head = response.head;
    let early = Status::from_headers(&head.headers);
    if head.status != http::StatusCode::OK {
        // The gRPC spec's mapping of HTTP statuses from something that is not a gRPC
        // server (a proxy's error page): counted as that status.
        let code = match head.status.as_u16() {
            400 => 13,
            401 => 16,
            403 => 7,
            404 => 12,
            429 | 502..=504 => 14,
            _ => 2,
        };
        return Err(CallError::Status(Status {
            code,
            message: format!("HTTP status {}", head.status.as_u16()),
        }));
    }
    let grpc_type = head
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/grpc"));
    if !grpc_type && early.is_none() {
        return Err(ProtocolError::NotGrpc.into());
    }
    if let Some(status) = early.as_ref().filter(|s| !s.is_ok()) {
        // Trailers-only: the call failed before any message.
        return Err(CallError::Status(status.clone()));
    }
    let encoding = head
        .headers
        .get("grpc-encoding")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    Ok(Responses {
        decoder: Decoder::new(options.max_message, encoding),
        body: Some(response.body),
        method: method.clone(),
        early,
    })
}

impl Responses {
    /// The next message, `None` once the body ended (then read [`Responses::status`]).
    pub async fn next(&mut self) -> Result<Option<Reply>, CallError> {
        loop {
            if let Some(message) = self.decoder.next_message()? {
                let wire_bytes = frame::PREFIX_LEN + message.len();
                let json = self.method.decode(&message)?;
                return Ok(Some(Reply { json, wire_bytes }));
            }
            if self.early.is_some() {
                return Ok(None);
            }
            let Some(body) = self.body.as_mut() else {
                return Ok(None);
            };
            match body.data().await {
                Some(data) => self.decoder.push(&data?)?,
                None => {
                    self.decoder.finish()?;
                    return Ok(None);
                }
            }
        }
    }

    /// The call's status, once every message was read: from a trailers-only head or
    /// the trailers. OK is `Ok`; any other status is [`CallError::Status`].
    pub async fn status(&mut self) -> Result<Status, CallError> {
        let status = match self.early.take() {
            Some(status) => status,
            None => {
                let body = self.body.as_mut().ok_or(ProtocolError::StatusTwice)?;
                let trailers = body.trailers().await?.unwrap_or_default();
                Status::from_headers(&trailers).ok_or(ProtocolError::NoStatus)?
            }
        };
        self.body = None;
        if status.is_ok() {
            Ok(status)
        } else {
            Err(CallError::Status(status))
        }
    }
}

/// A unary call: exactly one reply and status OK.
pub async fn unary(
    conn: &Connection,
    method: &Method,
    message: &[u8],
    options: &CallOptions,
) -> Result<Reply, CallError> {
    let mut responses = start(conn, method, message, options).await?;
    let first = responses.next().await?;
    let second = match first {
        Some(_) => responses.next().await?,
        None => None,
    };
    // The status comes first: a failed call has no reply, and its status says why.
    responses.status().await?;
    match (first, second) {
        (Some(reply), None) => Ok(reply),
        (None, _) => Err(ProtocolError::NoReply.into()),
        (Some(_), Some(_)) => Err(ProtocolError::TwoReplies.into()),
    }
}

/// Bytes of a request, framed, as sent: for byte counts.
pub fn framed_len(message: &[u8]) -> usize {
    frame::PREFIX_LEN + message.len()
}
