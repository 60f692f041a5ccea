//! Why a request got no judged response: the error kind it counts as, and for a
//! connection that could not be opened, the reason the run's message gives.

use headroom_metrics::ErrorKind;

/// Why a request got no judged response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The error kind it counts as.
    pub kind: ErrorKind,
    /// For a connection that could not be opened: the reason, for the run's message.
    pub note: Option<Note>,
}

/// The reason a connection could not be opened, kept for the end-of-run message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// TCP did not connect.
    Connect(String),
    /// The TLS handshake (or the ALPN agreement) failed.
    Tls(String),
}

impl Failure {
    pub(super) fn kind(kind: ErrorKind) -> Failure {
        Failure { kind, note: None }
    }
}

/// A multiplexed request's failure (HTTP/2's or HTTP/3's) as the engine counts it. A
/// `tls` one keeps its reason for the run's warning: TLS 1.3 gives the client no answer
/// to its Finished, so a server that refuses the handshake then (no client
/// certificate, or one it does not trust) closes a connection the client already held
/// as open, and only the request that was on it can say why.
impl From<crate::http2::Failure> for Failure {
    fn from(f: crate::http2::Failure) -> Failure {
        let note = (f.kind == ErrorKind::Tls).then_some(Note::Tls(f.reason));
        Failure { kind: f.kind, note }
    }
}
