//! Opening connections for the engine: TCP, then a TLS handshake for `https://`
//! targets. The engine asks a [`Connector`] for a [`Connection`] and knows nothing of
//! TLS; plain HTTP goes through one `match` per read or write on [`Stream`].
//!
//! Every connection the generator opens passes through [`Connector::open`], which
//! counts it into the thread's [`Opens`] under what it was opened to speak: requests',
//! WebSockets', SSE streams' and gRPC calls' alike, so none goes uncounted.

use std::cell::Cell;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use rustls::ClientConfig;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use super::http1::{BodyBudget, Conn, Limits, TryIo};
use headroom_metrics::recorder::{ByProtocol, Speaks};
use headroom_metrics::ErrorKind;

pub use headroom_plan::connection::{Resolve, ResolveError};

/// A target host that cannot be a TLS server name.
#[derive(Debug, thiserror::Error)]
#[error("{host:?} is not a valid TLS server name: {source}")]
pub struct ServerNameError {
    /// The host as given.
    pub host: String,
    /// Why rustls refused it.
    #[source]
    pub source: rustls::pki_types::InvalidDnsNameError,
}

/// The address `--resolve` entries give for `host:port`, if any.
pub fn resolved(entries: &[Resolve], host: &str, port: u16) -> Option<SocketAddr> {
    entries
        .iter()
        .find(|r| r.port == port && r.host.eq_ignore_ascii_case(host))
        .map(|r| SocketAddr::new(r.addr, port))
}

/// A connection's byte stream: plain TCP or TLS over TCP.
#[derive(Debug)]
pub enum Stream {
    /// Plain TCP (`http://`).
    Tcp(TcpStream),
    /// TLS over TCP (`https://`); boxed, as the TLS state is large.
    Tls(Box<TlsStream<TcpStream>>),
}

/// The engine's HTTP/1.1 connection over either stream.
pub type Connection = Conn<Stream>;

impl TryIo for Stream {
    fn try_read_now(&mut self, buf: &mut [u8]) -> Option<io::Result<usize>> {
        match self {
            Stream::Tcp(s) => s.try_read_now(buf),
            Stream::Tls(_) => None,
        }
    }

    fn try_write_now(&mut self, buf: &[u8]) -> Option<io::Result<usize>> {
        match self {
            Stream::Tcp(s) => s.try_write_now(buf),
            Stream::Tls(_) => None,
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Why a connection could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The TCP connection failed.
    #[error("{0}")]
    Tcp(io::Error),
    /// TCP connected, the TLS handshake did not complete or agreed to the wrong protocol.
    #[error("{0}")]
    Tls(#[from] TlsFailure),
}

/// Why a TLS connection could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsFailure {
    /// The handshake failed: rustls' own error when it has one ("invalid peer
    /// certificate: UnknownIssuer"), else what happened to the connection.
    #[error("{}", handshake_reason(.0))]
    Handshake(#[source] io::Error),
    /// `--http2`: the server refused `h2` with the `no_application_protocol` alert.
    #[error(
        "the server did not agree to HTTP/2 by ALPN (it refused h2 with the \
         no_application_protocol alert); without --http2 the run speaks HTTP/1.1"
    )]
    H2Refused(#[source] io::Error),
    /// `--http2`: the server picked another protocol (or none) by ALPN.
    #[error(
        "the server did not agree to HTTP/2 by ALPN (it chose {chosen}); \
         without --http2 the run speaks HTTP/1.1"
    )]
    H2NotChosen {
        /// The protocol chosen, or `no protocol`.
        chosen: String,
    },
}

/// Opens the run's connections: where to connect, and how to handshake. Built once
/// per run and shared by every engine thread.
#[derive(Debug, Clone)]
pub struct Connector {
    addr: SocketAddr,
    tls: Option<(Arc<ClientConfig>, ServerName<'static>)>,
    /// TLS connections must agree to `h2` by ALPN (`--http2` on `https://`).
    h2: bool,
    /// HTTP/3 (`--http3`): the QUIC configuration, made of the TLS one.
    quic: Option<crate::http3::QuicConfig>,
}

impl Connector {
    /// Plain TCP to `addr`.
    pub fn tcp(addr: SocketAddr) -> Connector {
        Connector {
            addr,
            tls: None,
            h2: false,
            quic: None,
        }
    }

    /// TLS to `addr`, verifying (and naming by SNI, unless an address literal) `host`.
    pub fn tls(
        addr: SocketAddr,
        host: &str,
        config: Arc<ClientConfig>,
    ) -> Result<Connector, ServerNameError> {
        let name = ServerName::try_from(host.to_string()).map_err(|source| ServerNameError {
            host: host.to_string(),
            source,
        })?;
        Ok(Connector {
            addr,
            tls: Some((config, name)),
            h2: false,
            quic: None,
        })
    }

    /// The address connections go to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Whether connections handshake TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Requires TLS connections to agree to HTTP/2 by ALPN: a server that picks
    /// HTTP/1.1 (or nothing) fails the connection as `tls`, with the reason, rather
    /// than falling back in silence to a protocol the user did not ask to measure.
    pub fn require_h2(mut self) -> Connector {
        self.h2 = true;
        self
    }

    /// Makes the run's connections QUIC (`--http3`), with this connector's TLS
    /// configuration (which must offer ALPN `h3` and TLS 1.3) and server name. A
    /// connector without TLS is returned as it is: HTTP/3 needs an `https://` target,
    /// which the scenario checks first.
    pub fn require_h3(mut self) -> Result<Connector, crate::http3::QuicConfigError> {
        if let Some((config, name)) = &self.tls {
            let name = name.to_str();
            self.quic = Some(crate::http3::QuicConfig::new(config.clone(), &name)?);
        }
        Ok(self)
    }

    /// The QUIC configuration of an `--http3` run.
    pub fn quic(&self) -> Option<&crate::http3::QuicConfig> {
        self.quic.as_ref()
    }

    /// Opens an HTTP/1.1 connection: [`Connector::open`], then the connection loop.
    pub async fn connect(&self, opens: &Opens) -> Result<(Connection, Opened), ConnectError> {
        let (stream, opened) = self.open(Speaks::Http1, opens).await?;
        let conn = Conn::new(stream, Limits::default(), BodyBudget::process());
        Ok((conn, opened))
    }

    /// Opens a stream (with `TCP_NODELAY`, as every load generator does) and, for
    /// TLS, completes the handshake; says how long each part took. A connection that
    /// opens is counted in `opens` under `speaks` (and its TLS handshake); one that
    /// fails is not: its failure is the request's or the step's error.
    pub async fn open(
        &self,
        speaks: Speaks,
        opens: &Opens,
    ) -> Result<(Stream, Opened), ConnectError> {
        let (stream, opened) = self.open_uncounted().await?;
        opens.count(speaks, opened.tls.is_some());
        Ok((stream, opened))
    }

    async fn open_uncounted(&self) -> Result<(Stream, Opened), ConnectError> {
        let began = Instant::now();
        let tcp = TcpStream::connect(self.addr)
            .await
            .map_err(ConnectError::Tcp)?;
        tcp.set_nodelay(true).map_err(ConnectError::Tcp)?;
        let connected = Instant::now();
        let (stream, tls) = match &self.tls {
            None => (Stream::Tcp(tcp), None),
            Some((config, name)) => {
                let tls = TlsConnector::from(config.clone())
                    .connect(name.clone(), tcp)
                    .await
                    .map_err(|e| self.handshake_failure(e))?;
                if self.h2 {
                    let chosen = tls.get_ref().1.alpn_protocol();
                    if chosen != Some(b"h2".as_slice()) {
                        let chosen = chosen.map_or_else(
                            || "no protocol".to_string(),
                            |p| String::from_utf8_lossy(p).into_owned(),
                        );
                        return Err(TlsFailure::H2NotChosen { chosen }.into());
                    }
                }
                (Stream::Tls(Box::new(tls)), Some(connected.elapsed()))
            }
        };
        let opened = Opened {
            connect: connected - began,
            tls,
        };
        Ok((stream, opened))
    }
}

/// The connections one engine thread opened, by what they were opened to speak, and
/// their TLS handshakes: counted by [`Connector::open`], taken by the engine into the
/// thread's recorder ([`Opens::take`]). Single-threaded, like the thread's client.
#[derive(Debug, Default)]
pub struct Opens {
    by_protocol: Cell<ByProtocol>,
    handshakes: Cell<u64>,
}

impl Opens {
    /// Counts one connection opened to speak `speaks` (and its TLS handshake).
    pub(crate) fn count(&self, speaks: Speaks, tls: bool) {
        let mut by = self.by_protocol.get();
        by.count(speaks);
        self.by_protocol.set(by);
        self.handshakes.set(self.handshakes.get() + u64::from(tls));
    }

    /// The counts so far (by protocol, TLS handshakes), leaving zeros.
    pub fn take(&self) -> (ByProtocol, u64) {
        (self.by_protocol.take(), self.handshakes.take())
    }
}

/// How long opening a connection took, part by part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// The TCP handshake.
    pub connect: Duration,
    /// The TLS handshake after it (`None` for plain TCP).
    pub tls: Option<Duration>,
}

impl Connector {
    /// A failed handshake in words; with `--http2`, a server's refusal of every
    /// protocol offered by ALPN says that it is HTTP/2 it refused.
    fn handshake_failure(&self, e: io::Error) -> ConnectError {
        let refused_alpn = e
            .get_ref()
            .and_then(|i| i.downcast_ref::<rustls::Error>())
            .is_some_and(|t| {
                matches!(
                    t,
                    rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol)
                )
            });
        if self.h2 && refused_alpn {
            return TlsFailure::H2Refused(e).into();
        }
        TlsFailure::Handshake(e).into()
    }
}

/// A failed handshake in words: rustls' own error when it has one ("invalid peer
/// certificate: UnknownIssuer", "received fatal alert: HandshakeFailure"), else what
/// happened to the connection.
fn handshake_reason(e: &io::Error) -> String {
    if let Some(tls) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        return tls.to_string();
    }
    match e.kind() {
        io::ErrorKind::UnexpectedEof => {
            "the server closed the connection during the handshake".into()
        }
        _ => e.to_string(),
    }
}

/// The kind of a failed connect: the generator's own when it ran out of file
/// descriptors or local ports (those say nothing about the target), else `connect`.
pub fn connect_error_kind(e: &std::io::Error) -> ErrorKind {
    use nix::errno::Errno;
    match e.raw_os_error().map(Errno::from_raw) {
        Some(Errno::EMFILE | Errno::ENFILE | Errno::EADDRNOTAVAIL | Errno::ENOBUFS) => {
            ErrorKind::Generator
        }
        // The handshake completed and the target then reset the connection before
        // the connect call returned: it took the connection, as a reset after it.
        Some(Errno::ECONNRESET | Errno::ECONNABORTED) => ErrorKind::Reset,
        _ => ErrorKind::Connect,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    #[test]
    fn resolve_entries_parse_like_curl() {
        let r: Resolve = "Example.com:443:127.0.0.1".parse().unwrap();
        assert_eq!(
            r,
            Resolve {
                host: "example.com".into(),
                port: 443,
                addr: "127.0.0.1".parse().unwrap()
            }
        );
        let r: Resolve = "localhost:8443:[::1]".parse().unwrap();
        assert_eq!(r.addr, "::1".parse::<IpAddr>().unwrap());
        let r: Resolve = "localhost:8443:::1".parse().unwrap();
        assert_eq!(r.addr, "::1".parse::<IpAddr>().unwrap());
        let entries = [r];
        assert_eq!(
            resolved(&entries, "LOCALHOST", 8443),
            Some("[::1]:8443".parse().unwrap())
        );
        assert_eq!(resolved(&entries, "localhost", 443), None);
        assert_eq!(resolved(&entries, "other", 8443), None);
    }

    #[test]
    fn bad_resolve_entries_are_refused() {
        for bad in [
            "",
            "example.com",
            "example.com:443",
            ":443:127.0.0.1",
            "example.com:x:127.0.0.1",
            "example.com:70000:127.0.0.1",
            "example.com:443:not-an-ip",
            "example.com:443:localhost",
            "[::1]:443:127.0.0.1",
            "example.com:443:127.0.0.1:80",
        ] {
            let err = bad.parse::<Resolve>().unwrap_err().to_string();
            assert!(err.contains("expected HOST:PORT:ADDR"), "{bad}: {err}");
        }
    }
}
