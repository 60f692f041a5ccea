//! `--tls`: the target's self-signed certificate, made at start, and the rustls server
//! configuration around it (the `ring` provider as the client uses, TLS 1.3 and 1.2,
//! ALPN `h2` then `http/1.1`, an in-memory session cache so clients can resume), and
//! QUIC's (TLS 1.3, ALPN `h3`) with the same certificate.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::ServerSessionMemoryCache;
use rustls::ServerConfig;

/// ALPN protocol id of HTTP/2 over TLS.
pub(crate) const ALPN_H2: &[u8] = b"h2";
/// ALPN protocol id of HTTP/1.1.
pub(crate) const ALPN_HTTP1: &[u8] = b"http/1.1";
/// ALPN protocol id of HTTP/3 (QUIC).
pub(crate) const ALPN_H3: &[u8] = b"h3";

/// Sessions the server remembers for resumption. rustls' default (256) is smaller than
/// the connection counts of a load test; an entry is a few hundred bytes.
const SESSION_CACHE: usize = 4096;

/// Why the TLS set-up failed.
#[derive(Debug, thiserror::Error)]
pub enum TargetTlsError {
    /// rcgen could not make the key or certificate.
    #[error("making the self-signed certificate")]
    Certificate(#[from] rcgen::Error),
    /// rustls refused the configuration.
    #[error("TLS server configuration")]
    Rustls(#[from] rustls::Error),
}

/// The certificate made at start and the server configuration that presents it.
pub(crate) struct SelfSigned {
    /// The certificate, PEM: what a client trusts with `--cacert`.
    pub(crate) cert_pem: String,
    /// The rustls server configuration, shared by every connection.
    pub(crate) config: Arc<ServerConfig>,
    /// The same certificate for QUIC: TLS 1.3 only, ALPN `h3`.
    pub(crate) quic: Arc<ServerConfig>,
}

/// The names the certificate is valid for: `localhost`, `127.0.0.1`, `::1`, and the
/// listen address when it is a specific one (not `0.0.0.0` or `::`).
pub(crate) fn names(listen: SocketAddr) -> Vec<String> {
    let mut names = vec![
        "localhost".to_owned(),
        IpAddr::V4(Ipv4Addr::LOCALHOST).to_string(),
        IpAddr::V6(Ipv6Addr::LOCALHOST).to_string(),
    ];
    let host = listen.ip();
    if !host.is_unspecified() && !names.contains(&host.to_string()) {
        names.push(host.to_string());
    }
    names
}

/// Makes a fresh key pair and a self-signed certificate for [`names`] of `listen`, and
/// the server configuration presenting it.
pub(crate) fn self_signed(listen: SocketAddr) -> Result<SelfSigned, TargetTlsError> {
    let certified = rcgen::generate_simple_self_signed(names(listen))?;
    let cert_pem = certified.cert.pem();
    let chain = vec![CertificateDer::from(certified.cert.der().to_vec())];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        certified.signing_key.serialize_der(),
    ));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_no_client_auth()
        .with_single_cert(chain.clone(), key.clone_key())?;
    // The server's preference order: h2 when the client offers it.
    config.alpn_protocols = vec![ALPN_H2.to_vec(), ALPN_HTTP1.to_vec()];
    config.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE);
    // QUIC carries TLS 1.3 only (RFC 9001 §4.2).
    let mut quic = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    quic.alpn_protocols = vec![ALPN_H3.to_vec()];
    quic.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE);
    // 0-RTT: a resumed client may send its first request as early data. QUIC takes
    // exactly this value (RFC 9001 §4.6.1); the flow control bounds what it may send.
    quic.max_early_data_size = u32::MAX;
    Ok(SelfSigned {
        cert_pem,
        config: Arc::new(config),
        quic: Arc::new(quic),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cover_loopback_and_a_specific_listen_address() {
        let loopback = names("127.0.0.1:0".parse().unwrap());
        assert_eq!(loopback, ["localhost", "127.0.0.1", "::1"]);
        let any = names("0.0.0.0:8443".parse().unwrap());
        assert_eq!(any.len(), 3, "{any:?}");
        let specific = names("127.0.0.2:8443".parse().unwrap());
        assert_eq!(specific.last().map(String::as_str), Some("127.0.0.2"));
    }

    #[test]
    fn makes_a_certificate_and_a_config_offering_h2_first() {
        let made = self_signed("127.0.0.1:0".parse().unwrap()).unwrap();
        assert!(made.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert_eq!(
            made.config.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        // Every start makes a new key: two certificates differ.
        let again = self_signed("127.0.0.1:0".parse().unwrap()).unwrap();
        assert_ne!(made.cert_pem, again.cert_pem);
    }
}
