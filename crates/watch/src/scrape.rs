//! The Prometheus watch's GET: reqwest's blocking client (the crate OTLP pushes with)
//! over plain TCP or rustls, given the run's trust settings (`--cacert`, `--insecure`)
//! or Mozilla's roots. One client per watch, kept for the run; no proxy, no redirects,
//! HTTP/1.1; the body read up to [`MAX_BODY`] and refused past it.

use std::io::Read;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use rustls::ClientConfig;

use super::error::{Chain, HttpError, MAX_BODY};

/// The TLS configuration of `https://` scrapes when the run gives none: rustls with
/// the `ring` provider, TLS 1.3 and 1.2, Mozilla's roots (compiled in, as the run's own).
pub fn default_tls() -> Result<Arc<ClientConfig>, HttpError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(HttpError::TlsConfig)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// Where an `http://` or `https://` URL points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    /// Host name or address, without IPv6 brackets.
    pub(crate) host: String,
    /// Port, the scheme's default when none is written.
    pub(crate) port: u16,
    /// `https://`.
    pub(crate) tls: bool,
}

impl Endpoint {
    /// Parses `url`; the error says what is wrong with it.
    pub(crate) fn parse(url: &str) -> Result<Endpoint, HttpError> {
        let uri: http::Uri = url.parse().map_err(|source| HttpError::BadUrl {
            url: url.to_string(),
            source,
        })?;
        let tls = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => {
                return Err(HttpError::NotHttp {
                    url: url.to_string(),
                })
            }
        };
        let host = uri.host().ok_or_else(|| HttpError::NoHost {
            url: url.to_string(),
        })?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        Ok(Endpoint { host, port, tls })
    }
}

/// Resolves a name with the system's resolver, as the hand-written client did, and
/// remembers the outcome, so a failed scrape names the address it tried first, or why
/// the name did not resolve, in that client's words. Every address is handed on: the
/// connector tries the next when one refuses (`localhost` as `::1`, then `127.0.0.1`).
#[derive(Debug, Default)]
struct Resolver {
    last: Mutex<Option<Result<SocketAddr, HttpError>>>,
}

impl Resolver {
    fn take(&self) -> Option<Result<SocketAddr, HttpError>> {
        self.last.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    fn lookup(host: &str) -> Result<Vec<SocketAddr>, HttpError> {
        let addrs: Vec<SocketAddr> = (host, 0)
            .to_socket_addrs()
            .map_err(|source| HttpError::Resolve {
                host: host.to_string(),
                source,
            })?
            .collect();
        if addrs.is_empty() {
            return Err(HttpError::NoAddress {
                host: host.to_string(),
            });
        }
        Ok(addrs)
    }
}

impl Resolve for Resolver {
    fn resolve(&self, name: Name) -> Resolving {
        let found = Resolver::lookup(name.as_str());
        let answer: Result<Addrs, Box<dyn std::error::Error + Send + Sync>> = match &found {
            Ok(addrs) => Ok(Box::new(addrs.clone().into_iter())),
            Err(e) => Err(e.to_string().into()),
        };
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Some(found.map(|a| a[0]));
        Box::pin(std::future::ready(answer))
    }
}

/// A client for one endpoint.
pub(crate) struct Scraper {
    url: String,
    endpoint: Endpoint,
    client: reqwest::blocking::Client,
    resolver: Arc<Resolver>,
    timeout: Duration,
    /// The run's own trust was given (`--cacert`, `--insecure`): a refused certificate
    /// is not answered with advice to give it.
    own_trust: bool,
}

impl Scraper {
    /// A client for `url` with `timeout` per GET (connect, TLS, head and body), trusting
    /// what `tls` trusts for an `https://` URL (Mozilla's roots when `None`).
    pub(crate) fn new(
        url: &str,
        tls: Option<Arc<ClientConfig>>,
        timeout: Duration,
    ) -> Result<Scraper, HttpError> {
        let endpoint = Endpoint::parse(url)?;
        let resolver = Arc::new(Resolver::default());
        let own_trust = tls.is_some();
        // Given even for `http://`: with `rustls-no-provider`, reqwest cannot build a
        // client without a configuration (it would look for a process-wide provider).
        let tls = match tls {
            Some(tls) => tls,
            None => default_tls()?,
        };
        let client = reqwest::blocking::Client::builder()
            .http1_only()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout)
            .timeout(timeout)
            .dns_resolver(resolver.clone())
            .tls_backend_preconfigured((*tls).clone())
            .build()
            .map_err(|e| HttpError::Client(Chain::of(&e)))?;
        Ok(Scraper {
            url: url.to_string(),
            endpoint,
            client,
            resolver,
            timeout,
            own_trust,
        })
    }

    /// GETs the URL and returns the status and body.
    pub(crate) fn get(&self) -> Result<(u16, Vec<u8>), HttpError> {
        self.resolver.take();
        let response = self
            .client
            .get(&self.url)
            .header(http::header::ACCEPT, "text/plain")
            .send()
            .map_err(|e| self.failure(&e))?;
        let status = response.status().as_u16();
        let mut body = Vec::new();
        response
            .take(MAX_BODY + 1)
            .read_to_end(&mut body)
            .map_err(|e| self.body_failure(e))?;
        if body.len() as u64 > MAX_BODY {
            return Err(HttpError::BodyTooLarge);
        }
        Ok((status, body))
    }

    /// The address connected to: the literal in the URL or the one the resolver gave.
    fn addr(&self) -> Option<Result<SocketAddr, HttpError>> {
        match self.endpoint.host.parse::<IpAddr>() {
            Ok(ip) => Some(Ok(SocketAddr::new(ip, self.endpoint.port))),
            Err(_) => self
                .resolver
                .take()
                .map(|r| r.map(|a| SocketAddr::new(a.ip(), self.endpoint.port))),
        }
    }

    /// What a failed send means, in the hand-written client's words where it had them.
    fn failure(&self, e: &reqwest::Error) -> HttpError {
        if e.is_timeout() {
            return HttpError::TimedOut {
                within: self.timeout,
            };
        }
        let addr = match self.addr() {
            Some(Err(unresolved)) => return unresolved,
            Some(Ok(addr)) => Some(addr),
            None => None,
        };
        if let Some(known) =
            known_cause(e, &format!("{}:{}", self.endpoint.host, self.endpoint.port))
        {
            return self.with_trust(known);
        }
        match (e.is_connect(), addr, find_io(e)) {
            (true, Some(addr), Some(io)) => HttpError::Connect {
                addr,
                source: copy_io(io),
            },
            _ => HttpError::Client(Chain::of(e)),
        }
    }

    /// `known` as this scraper's: a TLS failure says whether the run's own trust refused it.
    fn with_trust(&self, known: HttpError) -> HttpError {
        match known {
            HttpError::Tls { server, source, .. } => HttpError::Tls {
                server,
                source,
                own_trust: self.own_trust,
            },
            other => other,
        }
    }

    /// What a failed body read means.
    fn body_failure(&self, e: std::io::Error) -> HttpError {
        let server = format!("{}:{}", self.endpoint.host, self.endpoint.port);
        match e.get_ref().and_then(|inner| known_cause(inner, &server)) {
            Some(known) => self.with_trust(known),
            None if e.kind() == std::io::ErrorKind::TimedOut => HttpError::TimedOut {
                within: self.timeout,
            },
            None => HttpError::Read(e),
        }
    }
}

/// The cause in `e`'s chain that has a name of its own: a TLS failure, a response that
/// is not HTTP, a head too large, a connection closed early, a body read past its
/// limit. `server` is `host:port`, for the TLS message.
pub(crate) fn known_cause(
    e: &(dyn std::error::Error + 'static),
    server: &str,
) -> Option<HttpError> {
    let mut found = None;
    walk(e, &mut |cause| {
        found = name_of(cause, server);
        found.is_some()
    });
    found
}

/// The name [`known_cause`] gives to `cause` itself, if any.
fn name_of(cause: &(dyn std::error::Error + 'static), server: &str) -> Option<HttpError> {
    if let Some(source) = cause.downcast_ref::<rustls::Error>() {
        return Some(HttpError::Tls {
            server: server.to_string(),
            source: source.clone(),
            own_trust: false,
        });
    }
    if cause.is::<http_body_util::LengthLimitError>() {
        return Some(HttpError::BodyTooLarge);
    }
    let h = cause.downcast_ref::<hyper::Error>()?;
    if h.is_parse_too_large() {
        Some(HttpError::HeadTooLarge)
    } else if h.is_incomplete_message() {
        Some(HttpError::Incomplete)
    } else if h.is_parse() {
        Some(HttpError::Malformed(Chain::of(h)))
    } else {
        None
    }
}

/// Calls `stop` on `e` and every cause under it until it returns true, including the
/// error an `io::Error` wraps (its `source()` skips that one: it returns the wrapped
/// error's own source), as connectors wrap rustls' error in one or two of them.
fn walk(
    e: &(dyn std::error::Error + 'static),
    stop: &mut dyn FnMut(&(dyn std::error::Error + 'static)) -> bool,
) -> bool {
    let mut next = Some(e);
    // A chain is a few links; the bound only guards against a cycle.
    for _ in 0..32 {
        let Some(cause) = next else { return false };
        if stop(cause) {
            return true;
        }
        let wrapped = cause
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref());
        if let Some(inner) = wrapped {
            if walk(inner, stop) {
                return true;
            }
        }
        next = cause.source();
    }
    false
}

/// The first I/O error in `e`'s chain.
fn find_io<'e>(e: &'e (dyn std::error::Error + 'static)) -> Option<&'e std::io::Error> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(cause) = next {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        next = cause.source();
    }
    None
}

/// An owned I/O error that reads as `io` does.
fn copy_io(io: &std::io::Error) -> std::io::Error {
    match io.raw_os_error() {
        Some(code) => std::io::Error::from_raw_os_error(code),
        None => std::io::Error::new(io.kind(), io.to_string()),
    }
}

#[cfg(test)]
#[path = "scrape_tests.rs"]
mod tests;
