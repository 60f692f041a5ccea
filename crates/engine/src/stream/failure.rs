//! [`Failure`]: why a stream operation failed, in a leaf module every stream module
//! (and the engine's per-thread connectors) can import.

use headroom_metrics::ErrorKind;

/// Why a stream operation failed: the error kind it counts as, and the reason in words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub(crate) struct Failure {
    /// The kind recorded.
    pub(crate) kind: ErrorKind,
    /// What happened.
    pub(crate) reason: String,
}

impl Failure {
    /// A failure of `kind`.
    pub(crate) fn new(kind: ErrorKind, reason: impl Into<String>) -> Failure {
        Failure {
            kind,
            reason: reason.into(),
        }
    }

    /// A `stream` failure.
    pub(crate) fn stream(reason: impl Into<String>) -> Failure {
        Failure::new(ErrorKind::Stream, reason)
    }
}
