//! What can stop the built-in target from starting: one error type for [`spawn`] and
//! [`serve_forever`], each variant naming the step that failed; the cause is its
//! [`source`](std::error::Error::source), so a printer that walks the chain shows it once.
//!
//! [`spawn`]: crate::spawn
//! [`serve_forever`]: crate::serve_forever

use std::net::SocketAddr;
use std::path::PathBuf;

/// The target could not start.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The options do not make a usable server.
    #[error(transparent)]
    Options(#[from] OptionsError),
    /// The self-signed certificate or the TLS configuration could not be made.
    #[error(transparent)]
    Tls(#[from] crate::TargetTlsError),
    /// The certificate could not be written to `--tls-cert-out`.
    #[error("writing the certificate to {}", path.display())]
    WriteCertificate {
        /// Where it was to be written.
        path: PathBuf,
        /// Why it could not be.
        source: std::io::Error,
    },
    /// The listening address could not be bound (taken, or not local).
    #[error("binding the target to {addr}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why it could not be bound.
        source: std::io::Error,
    },
    /// The tasks store's PostgreSQL could not be reached.
    #[error("connecting the tasks store to PostgreSQL: {0}")]
    Postgres(String),
    /// The runtime, a thread or a signal handler could not be made.
    #[error("{what}")]
    Start {
        /// What was being started.
        what: &'static str,
        /// Why it could not be.
        source: std::io::Error,
    },
    /// The server thread ended before it said it was ready.
    #[error("the target thread stopped before it was ready")]
    ThreadStopped,
    /// The Ctrl-C handler could not be set.
    #[error("setting the Ctrl-C handler")]
    Signal(#[source] ctrlc::Error),
}

/// Options that do not make a usable server, named as the user wrote them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    /// No worker would serve `/work`.
    #[error("target workers must be at least 1")]
    NoWorkers,
    /// No thread would run the server.
    #[error("target threads must be at least 1")]
    NoThreads,
    /// No HTTP/2 stream would be allowed per connection.
    #[error("target h2 max streams must be at least 1")]
    NoH2Streams,
    /// The GraphQL error share is not a share.
    #[error("--graphql-error-share must be between 0 and 1")]
    GraphqlErrorShare,
    /// A certificate path was given without TLS.
    #[error("--tls-cert-out needs --tls")]
    CertOutWithoutTls,
}
