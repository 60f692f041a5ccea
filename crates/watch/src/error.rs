//! Why a watch cannot start or missed a sample: [`SpecError`] for a spec that does not
//! parse, [`HttpError`] for the GET the Prometheus and Docker watches make, and
//! [`ProbeError`] for a sampler that cannot reach or read what it watches.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The kinds a spec may start with, for error messages.
pub(crate) const KINDS: &str =
    "pid:N, process:NAME, cgroup:PATH, docker:NAME, postgres:URL, prometheus:URL[#metric,...]";

/// A `--watch` spec that does not parse; the message says what was expected.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// No `KIND:` prefix.
    #[error("expected KIND:VALUE, one of {}", KINDS)]
    NoKind,
    /// `KIND:` with nothing after the colon.
    #[error("`{kind}:` needs a value after the colon")]
    NoValue {
        /// The kind given.
        kind: String,
    },
    /// `pid:` followed by something that is not a positive process id.
    #[error("pid: expected a process id, found {found:?}")]
    Pid {
        /// What followed the colon.
        found: String,
    },
    /// `postgres:` followed by something that is not a PostgreSQL URL.
    #[error("postgres: expected a postgres:// or postgresql:// URL, found {found:?}")]
    PostgresUrl {
        /// What followed the colon.
        found: String,
    },
    /// `prometheus:` followed by something that is not an `http://` or `https://` URL.
    #[error("prometheus: expected an http:// or https:// URL, found {found:?}")]
    PrometheusUrl {
        /// The URL given.
        found: String,
    },
    /// A kind headroom does not know.
    #[error("unknown kind `{kind}`: expected one of {}", KINDS)]
    UnknownKind {
        /// The kind given.
        kind: String,
    },
}

/// Largest response body read by a scrape or a Docker Engine API call (a big
/// exposition is a few MiB); a larger one is cut there and refused.
pub const MAX_BODY: u64 = 16 * 1024 * 1024;

/// An HTTP GET of the Prometheus or Docker watch that failed.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The response body could not be read.
    #[error("read: {0}")]
    Read(#[source] io::Error),
    /// The connection closed before the response ended.
    #[error("incomplete response")]
    Incomplete,
    /// The response is not HTTP.
    #[error("malformed response: {0}")]
    Malformed(#[source] Chain),
    /// The response head is above the client's limit (hyper's, about 400 KiB).
    #[error("response head too large")]
    HeadTooLarge,
    /// The response body is above [`MAX_BODY`]: reading stopped there.
    #[error("response body larger than {} MiB", MAX_BODY >> 20)]
    BodyTooLarge,
    /// No complete answer within the limit.
    #[error("no answer within {within:?}")]
    TimedOut {
        /// How long it was given.
        within: Duration,
    },
    /// The URL does not parse.
    #[error("bad URL {url:?}: {source}")]
    BadUrl {
        /// The URL given.
        url: String,
        /// Why it does not parse.
        #[source]
        source: http::uri::InvalidUri,
    },
    /// The URL is neither `http://` nor `https://`.
    #[error("expected an http:// or https:// URL, found {url:?}")]
    NotHttp {
        /// The URL given.
        url: String,
    },
    /// The URL has no host.
    #[error("no host in {url:?}")]
    NoHost {
        /// The URL given.
        url: String,
    },
    /// The host name does not resolve.
    #[error("cannot resolve {host}: {source}")]
    Resolve {
        /// The host name.
        host: String,
        /// The resolver's error.
        #[source]
        source: io::Error,
    },
    /// The host name resolves to no address.
    #[error("no address for {host}")]
    NoAddress {
        /// The host name.
        host: String,
    },
    /// The TCP connection failed.
    #[error("connect {addr}: {source}")]
    Connect {
        /// The address tried.
        addr: SocketAddr,
        /// The connect error.
        #[source]
        source: io::Error,
    },
    /// The TLS handshake failed: an untrusted or misnamed certificate, a protocol
    /// the server does not speak...
    #[error("TLS handshake with {server}: {source}{}", tls_advice(source, *own_trust))]
    Tls {
        /// `host:port` of the server.
        server: String,
        /// rustls' reason.
        #[source]
        source: rustls::Error,
        /// The run gave its own trust (`--cacert`): the advice is not to give it.
        own_trust: bool,
    },
    /// The TLS configuration could not be built.
    #[error("TLS configuration: {0}")]
    TlsConfig(#[source] rustls::Error),
    /// The HTTP client could not be built, or failed in a way none of the above names.
    #[error("{0}")]
    Client(#[source] Chain),
}

/// An error and its causes, shown as `error: cause: cause` (a client error alone
/// often says only "error sending request").
#[derive(Debug)]
pub struct Chain(pub(crate) String);

impl Chain {
    /// The chain of `e` and its sources, each once.
    pub(crate) fn of(e: &(dyn std::error::Error + 'static)) -> Chain {
        let mut text = e.to_string();
        let mut next = e.source();
        while let Some(cause) = next {
            let part = cause.to_string();
            if !text.contains(&part) {
                text.push_str(": ");
                text.push_str(&part);
            }
            next = cause.source();
        }
        Chain(text)
    }
}

impl std::fmt::Display for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Chain {}

/// A watch that cannot reach or read what it watches: at start, the watch is refused;
/// mid-run, the sample is missed and becomes a gap.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// No process has this name.
    #[error("no process named {name:?}")]
    NoProcessNamed {
        /// The name watched.
        name: String,
    },
    /// The process exited (or its id was reused by another).
    #[error("process {pid} is gone")]
    ProcessGone {
        /// The process id watched.
        pid: u32,
    },
    /// Every process of a `pid:` watch was a zombie or unreadable.
    #[error("Pid({pid}): no readable process")]
    NoReadablePid {
        /// The process id watched.
        pid: u32,
    },
    /// Every process of a `process:` watch was a zombie or unreadable.
    #[error("Name({name:?}): no readable process")]
    NoReadableName {
        /// The name watched.
        name: String,
    },
    /// No cgroup2 file system is mounted.
    #[error("cgroup v2 is not mounted on this machine")]
    NoCgroup2,
    /// The cgroup's directory could not be read at start.
    #[error("{}: {source}", dir.display())]
    Cgroup {
        /// The cgroup's directory.
        dir: PathBuf,
        /// What failed there.
        #[source]
        source: Box<ProbeError>,
    },
    /// The cgroup's `cpu.stat` could not be read.
    #[error("cannot read cpu.stat: {0}")]
    CpuStat(#[source] io::Error),
    /// The cgroup's `cpu.stat` has no `usage_usec` line.
    #[error("cpu.stat has no usage_usec")]
    NoUsage,
    /// The Docker engine's socket does not accept connections.
    #[error("no Docker engine is reachable at {socket} ({source}); start one or watch the container's cgroup:PATH instead")]
    NoDocker {
        /// The socket's path.
        socket: String,
        /// The connect error.
        #[source]
        source: io::Error,
    },
    /// The Docker engine knows no such container.
    #[error("the Docker engine knows no container {name:?}")]
    NoContainer {
        /// The container's name.
        name: String,
    },
    /// The Docker engine answered with an unexpected status.
    #[error("the Docker engine answered {status} for container {name:?}")]
    DockerStatus {
        /// The HTTP status.
        status: u16,
        /// The container's name.
        name: String,
    },
    /// The Docker engine's reply is not the JSON expected.
    #[error("Docker engine reply: {0}")]
    DockerReply(#[source] serde_json::Error),
    /// The container has no running process.
    #[error("container {name:?} is not running")]
    NotRunning {
        /// The container's name.
        name: String,
    },
    /// The container's process has no cgroup v2 entry.
    #[error("no cgroup v2 entry for container {name:?} (pid {pid})")]
    NoContainerCgroup {
        /// The container's name.
        name: String,
        /// Its main process.
        pid: u64,
    },
    /// The runtime for the PostgreSQL or Docker client could not be built.
    #[error("{0}")]
    Runtime(#[source] io::Error),
    /// The database did not answer the connection in time.
    #[error("no answer within {within:?}")]
    NoAnswer {
        /// How long it was given.
        within: Duration,
    },
    /// The PostgreSQL client or server failed.
    #[error("{0}")]
    Postgres(#[from] tokio_postgres::Error),
    /// No connection to the database is open.
    #[error("not connected")]
    NotConnected,
    /// A query did not answer in time.
    #[error("query timed out")]
    QueryTimedOut,
    /// The scrape's GET failed.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// The endpoint answered something other than 200.
    #[error("{url} answered {status}")]
    Status {
        /// The endpoint.
        url: String,
        /// The HTTP status.
        status: u16,
    },
    /// The scraped text is not a Prometheus exposition.
    #[error("cannot parse the exposition: {0}")]
    Exposition(#[source] io::Error),
}

/// The way out of a refused server certificate, never a flag already given: a name it
/// is not valid for, a certificate the run's `--cacert` file did not verify, or one the
/// built-in roots do not know.
fn tls_advice(source: &rustls::Error, own_trust: bool) -> &'static str {
    use rustls::CertificateError as C;
    match source {
        rustls::Error::InvalidCertificate(
            C::NotValidForName | C::NotValidForNameContext { .. },
        ) => {
            "; the certificate is not valid for that host name (skip verification with --insecure)"
        }
        rustls::Error::InvalidCertificate(_) if own_trust => {
            "; it did not verify against the run's --cacert file, which must hold the CA that \
             issued it or the server's own certificate (or skip verification with --insecure)"
        }
        rustls::Error::InvalidCertificate(_) => {
            "; trust its certificate with --cacert FILE (or skip verification with --insecure)"
        }
        _ => "",
    }
}
