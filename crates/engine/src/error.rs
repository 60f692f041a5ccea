//! [`EngineError`]: a run that could not be carried out at all, and
//! [`UnsendableRequest`]: a request of the plan the run's protocol cannot carry.

use headroom_client::connect::ServerNameError;
use headroom_client::request::H2RequestError;

/// A request of the plan that cannot be sent in the run's protocol.
#[derive(Debug, thiserror::Error)]
#[error("request {name:?} cannot be sent over HTTP/2: {source}")]
pub struct UnsendableRequest {
    /// The request's name.
    pub name: String,
    /// Why HTTP/2 cannot carry it.
    #[source]
    pub source: H2RequestError,
}

/// A share that does not fit the plan it claims to be part of.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("shard {shard}'s result does not fit the plan: {reason}")]
pub struct ShareMismatch {
    /// The share's shard index.
    pub shard: u64,
    /// What does not fit.
    #[source]
    pub reason: Misfit,
}

/// What in a share does not fit its plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Misfit {
    /// Another number of request names.
    #[error("{got} request names, the plan has {plan}")]
    Names {
        /// The share's.
        got: usize,
        /// The plan's.
        plan: usize,
    },
    /// More streams than the plan has.
    #[error("more streams than the plan's {plan}")]
    Streams {
        /// The plan's.
        plan: usize,
    },
    /// A second out of order, or past the run and an hour of drain.
    #[error("second {t} out of order or past the run")]
    Second {
        /// The second.
        t: u64,
    },
    /// A second counting more request names than the plan has.
    #[error("second {t} counts unknown request names")]
    UnknownNames {
        /// The second.
        t: u64,
    },
}

/// A run that could not be carried out at all (as opposed to failed requests).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The target host did not resolve.
    #[error("cannot resolve target {host}:{port}: {source}")]
    Resolve {
        /// Host as given.
        host: String,
        /// Port.
        port: u16,
        /// The resolver's error.
        #[source]
        source: std::io::Error,
    },
    /// The target host resolved to no address.
    #[error("cannot resolve target {host}:{port}: no address")]
    NoAddress {
        /// Host as given.
        host: String,
        /// Port.
        port: u16,
    },
    /// The target's host name is not a valid TLS server name.
    #[error(transparent)]
    ServerName(#[from] ServerNameError),
    /// The run's TLS configuration cannot carry QUIC (`--http3`).
    #[error("--http3: {0}")]
    Quic(String),
    /// A request of the plan cannot be sent in the run's protocol.
    #[error(transparent)]
    Request(#[from] UnsendableRequest),
    /// An engine thread could not start or its runtime could not be built.
    #[error("engine thread failed: {0}")]
    Thread(#[source] std::io::Error),
    /// An engine thread panicked.
    #[error("engine thread failed: an engine thread panicked")]
    Panicked,
    /// The start was given up before any request was sent (a shard whose coordinator
    /// went away or refused it).
    #[error("the run was given up before it started")]
    NotStarted,
    /// A shard of a sharded run failed or was lost; the message names it and says why
    /// (the shard layer words it: process exit, pod status, lost connection).
    #[error("{0}")]
    Shard(String),
}
