//! Measurement: per-thread [`recorder::Recorder`]s fed by the engine, merged into a
//! [`summary::Summary`] and judged by [`threshold::Threshold`]s.

pub mod figures;
pub mod first_request;
pub mod quic;
pub mod recorder;
pub mod streams;
pub mod summary;
pub mod threshold;
/// Per-workload figures (`by_workload`), kept in the summary's module.
pub mod workloads {
    pub use crate::summary::WorkloadSummary;
}

use std::fmt;

/// The kind of a failed request (ARCHITECTURE.md rule 4). A hit error is counted
/// by kind and never stops the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorKind {
    /// The TCP connection could not be opened.
    Connect,
    /// No complete response within the request timeout.
    Timeout,
    /// The connection was closed or reset before the response was complete.
    Reset,
    /// A 4xx status that the request did not expect.
    Status4xx,
    /// A 5xx status that the request did not expect.
    Status5xx,
    /// An expectation (status, body, JSON path) or a capture failed.
    Check,
    /// The response could not be parsed as HTTP, or a part of it (head, chunk line,
    /// trailers, kept body) was larger than its limit.
    Protocol,
    /// The generator itself failed, not the target: no file descriptor left (EMFILE,
    /// ENFILE), no local port (EADDRNOTAVAIL). Feeds the generator-bound verdict.
    Generator,
    /// The TLS handshake failed: an invalid or untrusted certificate, a name mismatch,
    /// no protocol version or cipher in common, an alert from the server, or the
    /// connection closed or reset during it (after TCP connected). A handshake that
    /// runs out of time is `Connect`, as a connection that never became usable.
    Tls,
    /// HTTP/2: the server shut the connection down with GOAWAY before this stream
    /// completed (the stream was above the GOAWAY's last stream id, or the connection
    /// closed after the GOAWAY while the stream was still open).
    Goaway,
    /// HTTP/2: the server reset the stream with RST_STREAM (any error code,
    /// REFUSED_STREAM included).
    StreamReset,
    /// GraphQL: a response whose body has a non-empty `errors` array (whatever its
    /// status), or that is not a GraphQL response at all.
    Graphql,
    /// A stream (WebSocket, SSE, gRPC stream) failed: a bad handshake, an expected
    /// message that did not come in time, a connection dropped while it was held, a
    /// message over its size limit, or a close the step did not ask for.
    Stream,
    /// gRPC: a call ended with a status other than OK (the status is counted by name
    /// beside it; DEADLINE_EXCEEDED is `timeout`).
    Grpc,
    /// Redirects: a redirect loop (a location already visited on the way) or more
    /// redirects than the request allows.
    Redirect,
}

impl ErrorKind {
    /// Every kind, in a fixed order; `kind as usize` indexes it.
    pub const ALL: [ErrorKind; ErrorKind::COUNT] = [
        ErrorKind::Connect,
        ErrorKind::Timeout,
        ErrorKind::Reset,
        ErrorKind::Status4xx,
        ErrorKind::Status5xx,
        ErrorKind::Check,
        ErrorKind::Protocol,
        ErrorKind::Generator,
        ErrorKind::Tls,
        ErrorKind::Goaway,
        ErrorKind::StreamReset,
        ErrorKind::Graphql,
        ErrorKind::Stream,
        ErrorKind::Grpc,
        ErrorKind::Redirect,
    ];

    /// How many kinds there are.
    pub const COUNT: usize = 15;

    /// The name used in summaries and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Reset => "reset",
            ErrorKind::Status4xx => "status_4xx",
            ErrorKind::Status5xx => "status_5xx",
            ErrorKind::Check => "check",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Generator => "generator",
            ErrorKind::Tls => "tls",
            ErrorKind::Goaway => "goaway",
            ErrorKind::StreamReset => "stream_reset",
            ErrorKind::Graphql => "graphql",
            ErrorKind::Stream => "stream",
            ErrorKind::Grpc => "grpc",
            ErrorKind::Redirect => "redirect",
        }
    }

    /// The kind a summary or report names `name` (the inverse of [`ErrorKind::as_str`]),
    /// or `None` for a name that is no kind.
    pub fn from_name(name: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The kind for an unexpected status code (`None` below 400).
    pub fn for_status(status: u16) -> Option<ErrorKind> {
        match status {
            400..=499 => Some(ErrorKind::Status4xx),
            500.. => Some(ErrorKind::Status5xx),
            _ => None,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorKind;

    #[test]
    fn every_kind_has_its_index_and_a_name_that_reads_back() {
        for (i, kind) in ErrorKind::ALL.into_iter().enumerate() {
            assert_eq!(kind as usize, i, "{kind}");
            assert_eq!(ErrorKind::from_name(kind.as_str()), Some(kind));
        }
        assert_eq!(ErrorKind::Redirect.as_str(), "redirect");
        assert_eq!(ErrorKind::from_name("nope"), None);
    }
}
