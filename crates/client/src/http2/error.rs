//! [`Failure`] and [`HandshakeError`]: why a stream or a connection failed, mapped from
//! `h2::Error` to an [`ErrorKind`].
//!
//! How `h2` (0.4) reports each cause to a stream, and the kind it is counted under:
//!
//! | cause | `h2::Error` | kind | refused |
//! |---|---|---|---|
//! | server RST_STREAM | `is_reset() && is_remote()`, `reason()` = its code | `stream_reset` | code is REFUSED_STREAM |
//! | server GOAWAY, stream above its last id | `is_go_away() && is_remote()` | `goaway` | yes |
//! | connection closed or failed after a GOAWAY | `is_io()` (a broken pipe) | `goaway` | stream above the last id |
//! | connection closed or failed, no GOAWAY | `is_io()` | `reset` | no |
//! | malformed frame, header list over the limit, bad HPACK | `is_library()`, or `reason()` only | `protocol` | no |
//!
//! The GOAWAY's last stream id comes from [`super::watch`], since `h2` does not expose it.

use headroom_metrics::ErrorKind;

/// Why one request on an HTTP/2 connection failed.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{kind}: {reason}")]
pub struct Failure {
    /// The kind to count the hit under.
    pub kind: ErrorKind,
    /// The server certainly did not process the request: it reset the stream with
    /// REFUSED_STREAM, or its GOAWAY named a last stream id below this stream's (or the
    /// stream was never opened). Safe to send again on a new connection.
    pub refused: bool,
    /// What happened, in words.
    pub reason: String,
}

impl Failure {
    pub(crate) fn new(kind: ErrorKind, refused: bool, reason: impl Into<String>) -> Failure {
        Failure {
            kind,
            refused,
            reason: reason.into(),
        }
    }

    /// A part of the response larger than its limit (the target's fault).
    pub(crate) fn too_large(part: &str, limit: usize) -> Failure {
        Failure::new(
            ErrorKind::Protocol,
            false,
            format!("{part} exceeds its limit of {limit} bytes"),
        )
    }

    /// A kept body that did not fit in what all kept bodies may hold together: the
    /// generator's own limit.
    pub(crate) fn over_budget(cap: usize) -> Failure {
        Failure::new(
            ErrorKind::Generator,
            false,
            format!(
                "kept response bodies of all connections together exceed the generator's budget of {cap} bytes"
            ),
        )
    }

    /// Maps an error `h2` gave for the stream `stream_id` (`None`: never opened, so
    /// refused), `goaway` being the last stream id of a GOAWAY received on the
    /// connection.
    pub(super) fn from_h2(e: &h2::Error, stream_id: Option<u32>, goaway: Option<u32>) -> Failure {
        let mut failure = Failure::classify(e, stream_id, goaway);
        // A stream never opened was never seen by the server, whatever ended the
        // connection.
        failure.refused |= stream_id.is_none();
        failure
    }

    fn classify(e: &h2::Error, stream_id: Option<u32>, goaway: Option<u32>) -> Failure {
        let above = |last: u32| stream_id.is_none_or(|id| id > last);
        if e.is_reset() && e.is_remote() {
            let reason = e.reason().unwrap_or(h2::Reason::NO_ERROR);
            let refused = reason == h2::Reason::REFUSED_STREAM;
            // Debug names the code (`REFUSED_STREAM`); Display only describes it.
            let detail = format!("stream reset by the server: {reason:?} ({e})");
            return Failure::new(ErrorKind::StreamReset, refused, detail);
        }
        if e.is_go_away() && e.is_remote() {
            // h2 fails a stream with the GOAWAY itself only when its id is above the
            // last one the server named (or a new stream is asked for after it).
            let refused = goaway.is_none_or(above);
            let reason = e.reason().unwrap_or(h2::Reason::NO_ERROR);
            let detail = format!("connection shut down by the server's GOAWAY: {reason:?} ({e})");
            return Failure::new(ErrorKind::Goaway, refused, detail);
        }
        if e.is_io() {
            return match goaway {
                Some(last) => Failure::new(
                    ErrorKind::Goaway,
                    above(last),
                    format!("connection closed after GOAWAY (last stream {last}): {e}"),
                ),
                None => Failure::new(ErrorKind::Reset, false, e.to_string()),
            };
        }
        Failure::new(ErrorKind::Protocol, false, e.to_string())
    }
}

/// Why an HTTP/2 connection could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    /// Sending the preface, or reading the server's SETTINGS, failed: the server is not
    /// speaking HTTP/2 (an HTTP/1.1-only server answers the preface with an error
    /// page), or closed the connection.
    #[error("HTTP/2 handshake failed: {0}")]
    H2(#[from] h2::Error),
    /// The connection ended before the server sent its SETTINGS.
    #[error("HTTP/2 handshake failed: the server closed the connection before its SETTINGS")]
    Closed,
}

impl HandshakeError {
    /// The kind a request that needed this connection is counted under: `reset` when
    /// the socket failed or closed, `protocol` when the server did not speak HTTP/2.
    pub fn kind(&self) -> ErrorKind {
        match self {
            HandshakeError::H2(e) if e.is_io() => ErrorKind::Reset,
            HandshakeError::H2(_) => ErrorKind::Protocol,
            HandshakeError::Closed => ErrorKind::Reset,
        }
    }
}
