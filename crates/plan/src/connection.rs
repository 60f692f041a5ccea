//! How a run connects, as the plan states it: the protocol its connections speak, how
//! requests share connections, and `--resolve` overrides. The client layer acts on
//! these; they live here so the plan never imports the client.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// What the run's connections speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// HTTP/1.1: one request at a time per connection.
    #[default]
    Http1,
    /// HTTP/2 (`--http2`): h2 chosen by ALPN over TLS, h2c with prior knowledge over
    /// cleartext; many concurrent streams per connection.
    Http2,
    /// HTTP/3 (`--http3`): QUIC with ALPN `h3`, always over TLS 1.3; many concurrent
    /// streams per connection, as HTTP/2.
    Http3,
}

impl Protocol {
    /// `http/1.1` or `h2`, as ALPN and the summary name them.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Http1 => "http/1.1",
            Protocol::Http2 => "h2",
            Protocol::Http3 => "h3",
        }
    }

    /// Whether a connection carries many requests at once (HTTP/2 and HTTP/3 streams).
    pub fn multiplexed(self) -> bool {
        matches!(self, Protocol::Http2 | Protocol::Http3)
    }
}

/// How requests share connections (`--connection`, `client.connection`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ConnectionModel {
    /// Each closed-model user owns its connections, as k6, Gatling and real clients do
    /// (the users model's default).
    PerUser,
    /// A pool of at most N connections per run (unbounded for `None`) that every
    /// request takes from: HTTP/1.1 holds one for each request in flight, HTTP/2
    /// multiplexes up to `streams` requests on each (the arrival-rate model's default).
    Shared(Option<usize>),
    /// A new connection, with its handshakes, for every request, closed after it:
    /// what a TLS terminator's handshake capacity is measured with.
    PerRequest,
}

impl fmt::Display for ConnectionModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectionModel::PerUser => f.write_str("per-user"),
            ConnectionModel::Shared(None) => f.write_str("shared"),
            ConnectionModel::Shared(Some(n)) => write!(f, "shared:{n}"),
            ConnectionModel::PerRequest => f.write_str("per-request"),
        }
    }
}

/// A `--connections` value that is not a connection model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionModelError {
    /// Not one of the models.
    #[error("expected per-user, shared, shared:N or per-request, found {text:?}")]
    Unknown {
        /// The value given.
        text: String,
    },
    /// `shared:0`.
    #[error("shared:0: a pool needs at least one connection")]
    EmptyPool,
}

impl FromStr for ConnectionModel {
    type Err = ConnectionModelError;

    /// `per-user`, `shared`, `shared:N` or `per-request`.
    fn from_str(text: &str) -> Result<ConnectionModel, ConnectionModelError> {
        let expected = || ConnectionModelError::Unknown {
            text: text.to_string(),
        };
        match text.trim() {
            "per-user" => Ok(ConnectionModel::PerUser),
            "shared" => Ok(ConnectionModel::Shared(None)),
            "per-request" => Ok(ConnectionModel::PerRequest),
            other => {
                let n = other
                    .strip_prefix("shared:")
                    .ok_or_else(expected)?
                    .trim()
                    .parse::<usize>()
                    .map_err(|_| expected())?;
                if n == 0 {
                    return Err(ConnectionModelError::EmptyPool);
                }
                Ok(ConnectionModel::Shared(Some(n)))
            }
        }
    }
}

/// One `--resolve HOST:PORT:ADDR`: connections to `HOST:PORT` go to `ADDR` (same
/// port), while SNI, certificate checks and `Host` stay `HOST`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Resolve {
    /// The name as in the target URL (without brackets).
    pub host: String,
    /// The target's port.
    pub port: u16,
    /// The address to connect to instead.
    pub addr: IpAddr,
}

/// A `--resolve` entry that is not `HOST:PORT:ADDR`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected HOST:PORT:ADDR such as example.com:443:127.0.0.1, found {text:?}")]
pub struct ResolveError {
    /// The entry as given.
    pub text: String,
}

impl FromStr for Resolve {
    type Err = ResolveError;

    /// `HOST:PORT:ADDR`, like curl: `example.com:443:127.0.0.1`, `example.com:443:[::1]`.
    fn from_str(text: &str) -> Result<Resolve, ResolveError> {
        let expected = || ResolveError {
            text: text.to_string(),
        };
        let (host, rest) = text.split_once(':').ok_or_else(expected)?;
        let (port, addr) = rest.split_once(':').ok_or_else(expected)?;
        if host.is_empty() || host.contains(['[', ']', '/', ' ']) {
            return Err(expected());
        }
        let port = port.parse::<u16>().map_err(|_| expected())?;
        let addr = addr
            .strip_prefix('[')
            .and_then(|a| a.strip_suffix(']'))
            .unwrap_or(addr);
        let addr = addr.parse::<IpAddr>().map_err(|_| expected())?;
        Ok(Resolve {
            host: host.to_ascii_lowercase(),
            port,
            addr,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_models_parse_and_print_alike() {
        for text in ["per-user", "shared", "shared:4", "per-request"] {
            let model: ConnectionModel = text.parse().unwrap();
            assert_eq!(model.to_string(), text);
        }
        assert_eq!(
            "shared: 2".parse::<ConnectionModel>(),
            Ok(ConnectionModel::Shared(Some(2)))
        );
        for bad in ["", "pooled", "shared:", "shared:x", "shared:-1", "per_user"] {
            let err = bad.parse::<ConnectionModel>().unwrap_err().to_string();
            assert!(err.contains("expected per-user, shared"), "{bad}: {err}");
        }
        assert!("shared:0"
            .parse::<ConnectionModel>()
            .unwrap_err()
            .to_string()
            .contains("at least one"));
    }
}
