//! [`Protocols`]: the connection builders (HTTP/1.1, h2c, TLS with ALPN) that every
//! accepted connection is served by (`conn.rs`), made once per target.

use std::sync::Arc;

use hyper::header::HeaderValue;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use hyper_util::server::conn::auto;
use tokio_rustls::TlsAcceptor;

/// The connection builders, made once and shared by every connection.
pub(crate) struct Protocols {
    /// HTTP/1.1, or HTTP/2 when the connection opens with its preface.
    pub(crate) auto: auto::Builder<TokioExecutor>,
    /// HTTP/1.1 only (ALPN `http/1.1`).
    pub(crate) http1: auto::Builder<TokioExecutor>,
    /// HTTP/2 only (ALPN `h2`).
    pub(crate) h2: auto::Builder<TokioExecutor>,
    /// The TLS server side, with `--tls`.
    pub(crate) tls: Option<TlsAcceptor>,
    /// `Alt-Svc` on every response over TCP when HTTP/3 is served too.
    pub(crate) alt_svc: Option<HeaderValue>,
}

impl Protocols {
    /// Builders with HTTP/2 allowing `max_streams` concurrent streams per connection,
    /// serving TLS when `tls` holds a configuration.
    /// With `h3_port`, every response advertises HTTP/3 on that UDP port.
    pub(crate) fn new(
        max_streams: u32,
        tls: Option<Arc<rustls::ServerConfig>>,
        h3_port: Option<u16>,
    ) -> Self {
        let mut auto = auto::Builder::new(TokioExecutor::new());
        // The timer gives HTTP/1.1 its header read timeout, as the target always had.
        auto.http1().timer(TokioTimer::new());
        auto.http2()
            .timer(TokioTimer::new())
            .max_concurrent_streams(max_streams);
        Protocols {
            http1: auto.clone().http1_only(),
            h2: auto.clone().http2_only(),
            auto,
            tls: tls.map(TlsAcceptor::from),
            // A day, as Caddy and nginx advertise it.
            alt_svc: h3_port.map(|port| {
                HeaderValue::try_from(format!("h3=\":{port}\"; ma=86400"))
                    .expect("a valid header value")
            }),
        }
    }
}
