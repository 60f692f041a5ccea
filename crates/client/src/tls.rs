//! The TLS client configuration of a run, built once from [`TlsOptions`] and shared by
//! every engine thread: rustls with the `ring` provider, TLS 1.3 and 1.2, ALPN
//! `http/1.1` or `h2`, Mozilla's roots (or `--cacert`, whose certificates are also trusted
//! as the server's own leaf when it presents one of them: `pin.rs`), an optional client
//! certificate, and rustls' in-memory session cache so reconnections resume their sessions.

mod counted;
mod pin;

pub use counted::take_verified;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{VerifierBuilderError, WebPkiServerVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// The most bytes read from one PEM file: a certificate chain or key is a few KiB.
pub const MAX_PEM_BYTES: u64 = 1 << 20;

/// How the run's TLS connections are set up (`--insecure`, `--cacert`, `--cert`, `--key`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// Accept any server certificate (no verification at all).
    pub insecure: bool,
    /// PEM file of trusted CA certificates, used instead of the built-in roots; a
    /// self-signed certificate in it is also trusted as the server's own (pinned).
    pub cacert: Option<PathBuf>,
    /// PEM file of the client certificate chain (mTLS); needs `key`.
    pub cert: Option<PathBuf>,
    /// PEM file of the client certificate's private key; needs `cert`.
    pub key: Option<PathBuf>,
    /// Offer `h2` by ALPN instead of `http/1.1` (`--http2`).
    pub http2: bool,
    /// Offer `h3` by ALPN, TLS 1.3 only, for QUIC (`--http3`).
    pub http3: bool,
    /// `--h3-resume`: keep session tickets for new QUIC connections.
    pub h3_resume: bool,
    /// `--h3-0rtt`: send a new QUIC connection's first request as early data (implies
    /// resumption).
    pub h3_0rtt: bool,
}

/// Why the TLS configuration could not be built (bad input: each names its file).
#[derive(Debug, thiserror::Error)]
pub enum TlsConfigError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file is above [`MAX_PEM_BYTES`].
    #[error(
        "cannot read {path}: larger than {} KiB; a PEM file of certificates or a key is a few KiB",
        MAX_PEM_BYTES >> 10
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// A file holds no usable PEM item of the expected kind.
    #[error("{path}: {problem}")]
    Pem {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        problem: PemProblem,
    },
    /// Only one of `cert` and `key` was given.
    #[error("a client certificate needs both --cert FILE and --key FILE (or `cert` and `key` under `client:`)")]
    HalfClientAuth,
    /// rustls refused the protocol versions.
    #[error("TLS configuration: {0}")]
    Rustls(#[source] rustls::Error),
    /// rustls could not build the verifier of the `--cacert` roots.
    #[error("TLS configuration: {path}: {source}")]
    Verifier {
        /// The CA file.
        path: PathBuf,
        /// Why.
        #[source]
        source: VerifierBuilderError,
    },
    /// rustls refused the client certificate and key (a key that does not match its
    /// certificate...).
    #[error("TLS configuration: {cert} and {key}: {source}")]
    ClientAuth {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// Why rustls refused them.
        #[source]
        source: rustls::Error,
    },
}

/// What is wrong with a PEM file.
#[derive(Debug, thiserror::Error)]
pub enum PemProblem {
    /// Certificates expected, and the PEM does not parse.
    #[error("not a PEM certificate file ({0})")]
    NotCertificates(#[source] rustls::pki_types::pem::Error),
    /// No certificate in the file.
    #[error("no PEM certificate (BEGIN CERTIFICATE) in the file")]
    NoCertificate,
    /// No private key in the file.
    #[error("no PEM private key ({0})")]
    NoKey(#[source] rustls::pki_types::pem::Error),
    /// A CA certificate rustls cannot use.
    #[error("not a usable CA certificate ({0})")]
    BadCa(#[source] rustls::Error),
}

fn read_pem(path: &Path) -> Result<Vec<u8>, TlsConfigError> {
    use std::io::Read;
    let read = |source| TlsConfigError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(read)?
        .take(MAX_PEM_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read)?;
    if bytes.len() as u64 > MAX_PEM_BYTES {
        return Err(TlsConfigError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    Ok(bytes)
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    let pem = |problem| TlsConfigError::Pem {
        path: path.to_path_buf(),
        problem,
    };
    let bytes = read_pem(path)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem(PemProblem::NotCertificates(e)))?;
    if certs.is_empty() {
        return Err(pem(PemProblem::NoCertificate));
    }
    Ok(certs)
}

fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsConfigError> {
    let bytes = read_pem(path)?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| TlsConfigError::Pem {
        path: path.to_path_buf(),
        problem: PemProblem::NoKey(e),
    })
}

/// Builds the run's client configuration. Called once per plan; the result is shared.
pub fn client_config(options: &TlsOptions) -> Result<Arc<ClientConfig>, TlsConfigError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // QUIC carries TLS 1.3 only (RFC 9001 §4.2).
    let versions: &[&rustls::SupportedProtocolVersion] = if options.http3 {
        &[&rustls::version::TLS13]
    } else {
        &[&rustls::version::TLS13, &rustls::version::TLS12]
    };
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .map_err(TlsConfigError::Rustls)?;
    let verifier: Option<Arc<dyn ServerCertVerifier>> = if options.insecure {
        Some(Arc::new(AcceptAnyServerCertificate(provider.clone())))
    } else if let Some(path) = &options.cacert {
        let pinned = certificates(path)?;
        let mut roots = RootCertStore::empty();
        for cert in &pinned {
            roots.add(cert.clone()).map_err(|e| TlsConfigError::Pem {
                path: path.clone(),
                problem: PemProblem::BadCa(e),
            })?;
        }
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|source| TlsConfigError::Verifier {
                path: path.clone(),
                source,
            })?;
        Some(Arc::new(pin::PinnedLeaf::new(webpki, pinned)))
    } else if options.http3 {
        let webpki =
            WebPkiServerVerifier::builder_with_provider(Arc::new(mozilla_roots()), provider)
                .build()
                .map_err(|e| TlsConfigError::Rustls(rustls::Error::General(e.to_string())))?;
        Some(webpki)
    } else {
        None
    };
    // Over QUIC, each certificate verified is a full handshake: the ones that verified
    // none resumed (`counted.rs`).
    let verifier = match verifier {
        Some(v) if options.http3 => {
            Some(Arc::new(counted::Counted(v)) as Arc<dyn ServerCertVerifier>)
        }
        other => other,
    };
    let builder = match verifier {
        Some(v) => builder.dangerous().with_custom_certificate_verifier(v),
        None => builder.with_root_certificates(mozilla_roots()),
    };
    let mut config = match (&options.cert, &options.key) {
        (None, None) => builder.with_no_client_auth(),
        (Some(cert), Some(key)) => builder
            .with_client_auth_cert(certificates(cert)?, private_key(key)?)
            .map_err(|source| TlsConfigError::ClientAuth {
                cert: cert.clone(),
                key: key.clone(),
                source,
            })?,
        _ => return Err(TlsConfigError::HalfClientAuth),
    };
    // One protocol offered, the one asked for: a server that cannot speak it says so
    // in the handshake (or picks none), and the connector turns that into an error
    // instead of measuring another protocol than the user meant.
    config.alpn_protocols = if options.http3 {
        vec![b"h3".to_vec()]
    } else if options.http2 {
        vec![b"h2".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    if options.http3 {
        // A new QUIC connection handshakes in full unless `--h3-resume` keeps the
        // run's session tickets (shared by its users, as one client's cache would be)
        // or `--h3-0rtt` also sends the first request as early data.
        config.resumption = if options.h3_resume || options.h3_0rtt {
            rustls::client::Resumption::in_memory_sessions(H3_SESSIONS)
        } else {
            rustls::client::Resumption::disabled()
        };
        config.enable_early_data = options.h3_0rtt;
    }
    // Over TCP, resumption: rustls' default, an in-memory cache of 256 sessions, stays on.
    Ok(Arc::new(config))
}

/// Mozilla's roots, compiled in.
fn mozilla_roots() -> RootCertStore {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    roots
}

/// Sessions kept for `--h3-resume`: rustls keeps each server name's few newest tickets;
/// one target name needs one entry.
const H3_SESSIONS: usize = 256;

/// `--insecure`: no verification at all, as the flag says. Every server certificate is
/// accepted, whoever issued it and whatever name it carries, and the handshake's
/// signature is not checked either: it would only prove that the server holds the key
/// of a certificate nobody checks, which guards against nothing, and an ECDSA or RSA
/// verification per handshake is the largest part of a generator's CPU per request
/// when every request handshakes (`--connection per-request`). The server's side of
/// the handshake, what such a run measures, is the same either way: it signs.
#[derive(Debug)]
struct AcceptAnyServerCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyServerCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options_with(field: &str, path: PathBuf) -> TlsOptions {
        let mut o = TlsOptions::default();
        match field {
            "cacert" => o.cacert = Some(path),
            "cert" => {
                o.cert = Some(path.clone());
                o.key = Some(path);
            }
            _ => unreachable!(),
        }
        o
    }

    #[test]
    fn the_default_configuration_builds() {
        let config = client_config(&TlsOptions::default()).unwrap();
        assert_eq!(config.alpn_protocols, [b"http/1.1".to_vec()]);
        let insecure = TlsOptions {
            insecure: true,
            ..TlsOptions::default()
        };
        client_config(&insecure).unwrap();
    }

    #[test]
    fn bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let err = client_config(&options_with("cacert", missing.clone())).unwrap_err();
        assert!(matches!(err, TlsConfigError::Read { .. }), "{err}");
        assert!(err.to_string().contains("missing.pem"), "{err}");

        let text = dir.path().join("not.pem");
        std::fs::write(&text, "hello, not a certificate\n").unwrap();
        for field in ["cacert", "cert"] {
            let err = client_config(&options_with(field, text.clone())).unwrap_err();
            assert!(matches!(err, TlsConfigError::Pem { .. }), "{field}: {err}");
            assert!(err.to_string().contains("not.pem"), "{field}: {err}");
        }

        let garbled = dir.path().join("garbled.pem");
        std::fs::write(
            &garbled,
            "-----BEGIN CERTIFICATE-----\nnot base64 !!\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let err = client_config(&options_with("cacert", garbled)).unwrap_err();
        assert!(err.to_string().contains("garbled.pem"), "{err}");

        let huge = dir.path().join("huge.pem");
        std::fs::write(&huge, vec![b'A'; MAX_PEM_BYTES as usize + 1]).unwrap();
        let err = client_config(&options_with("cacert", huge)).unwrap_err();
        assert!(err.to_string().contains("larger than"), "{err}");

        let half = TlsOptions {
            cert: Some(text),
            ..TlsOptions::default()
        };
        assert!(matches!(
            client_config(&half).unwrap_err(),
            TlsConfigError::HalfClientAuth
        ));
    }
}
