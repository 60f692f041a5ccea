//! [`RoundTripError`]: why one exchange failed, with what the engine needs to decide
//! on a retry.

use std::io;

use headroom_metrics::ErrorKind;

/// Why an exchange failed.
#[derive(Debug, thiserror::Error)]
#[error("{detail}")]
pub struct RoundTripError {
    /// The kind to count the hit under.
    pub kind: ErrorKind,
    /// True when a reused connection turned out to be closed by the peer (end of
    /// stream or reset) before any byte of the response arrived, or when it carried
    /// bytes nobody asked for: the request may be retried once on a fresh connection
    /// (if [`RoundTripError::sent`] allows it).
    pub stale: bool,
    /// True once the request's bytes were completely handed to the socket: the peer
    /// may have acted on it. False when the exchange failed before or while writing.
    pub sent: bool,
    /// Details for messages; a limit that was exceeded is named here.
    pub detail: String,
}

impl RoundTripError {
    /// A socket error while writing or reading.
    pub(super) fn io(e: &io::Error) -> RoundTripError {
        let kind = match e.kind() {
            io::ErrorKind::TimedOut => ErrorKind::Timeout,
            _ => ErrorKind::Reset,
        };
        RoundTripError {
            kind,
            stale: false,
            sent: false,
            detail: e.to_string(),
        }
    }

    /// The peer closed before the response was complete.
    pub(super) fn closed() -> RoundTripError {
        RoundTripError {
            kind: ErrorKind::Reset,
            stale: false,
            sent: false,
            detail: "connection closed before the response was complete".into(),
        }
    }

    /// The peer closed an idle keep-alive connection before the request was written.
    pub(super) fn closed_while_idle() -> RoundTripError {
        RoundTripError {
            kind: ErrorKind::Reset,
            stale: true,
            sent: false,
            detail: "connection closed by the peer while idle".into(),
        }
    }

    /// An idle keep-alive connection held bytes no request asked for (a second
    /// response to an earlier request): it is not used for the next request.
    pub(super) fn unsolicited() -> RoundTripError {
        RoundTripError {
            kind: ErrorKind::Protocol,
            stale: true,
            sent: false,
            detail: "unsolicited bytes on an idle connection; not reused".into(),
        }
    }

    /// A malformed response.
    pub(super) fn protocol(detail: impl Into<String>) -> RoundTripError {
        RoundTripError {
            kind: ErrorKind::Protocol,
            stale: false,
            sent: false,
            detail: detail.into(),
        }
    }

    /// A part of the response larger than its limit.
    pub(super) fn too_large(part: &str, limit: usize) -> RoundTripError {
        RoundTripError::protocol(format!("{part} exceeds its limit of {limit} bytes"))
    }

    /// A kept body that did not fit in what the generator allows all kept bodies
    /// together: the generator's limit, not the target's fault.
    pub(super) fn over_budget(cap: usize) -> RoundTripError {
        RoundTripError {
            kind: ErrorKind::Generator,
            stale: false,
            sent: false,
            detail: format!(
                "kept response bodies of all connections together exceed the generator's budget of {cap} bytes"
            ),
        }
    }

    /// Whether the peer closing (or resetting) the connection caused this error: the
    /// mark of a stale keep-alive connection when no response byte had arrived.
    pub(super) fn peer_closed(&self) -> bool {
        self.kind == ErrorKind::Reset
    }
}
