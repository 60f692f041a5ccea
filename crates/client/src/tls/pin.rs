//! `--cacert` with a self-signed server certificate: the verifier that trusts a
//! certificate of the file as the server's own leaf when the server presents exactly it.
//!
//! `openssl req -x509 …` makes a certificate that is its own CA (`basicConstraints
//! CA:TRUE`). Given with `--cacert`, it is a trust anchor, and webpki refuses it as the
//! server's end entity (`CaUsedAsEndEntity`: a CA must not serve as a leaf). curl and
//! wrk accept it: OpenSSL's chain building finds the presented certificate in the trust
//! store and stops there. [`PinnedLeaf`] does the same for that one case: every
//! verification goes through rustls' [`WebPkiServerVerifier`] first, and only its
//! `CaUsedAsEndEntity` refusal is reconsidered, accepted when the presented end entity
//! is byte for byte a certificate of the `--cacert` file and valid for the name asked
//! for. Its validity period has held by then: webpki checks an end entity's dates before
//! its basic constraints, so `CaUsedAsEndEntity` is only ever returned for a leaf that
//! is within them (the unit tests pin that order). The handshake's signatures are
//! verified by the WebPki verifier, with the provider's default algorithms.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};

/// rustls' WebPki verifier over the `--cacert` roots, plus the file's certificates
/// trusted as leaves when a server presents one of them itself (see the module).
#[derive(Debug)]
pub(crate) struct PinnedLeaf {
    webpki: Arc<WebPkiServerVerifier>,
    pinned: Vec<CertificateDer<'static>>,
}

impl PinnedLeaf {
    /// `webpki` verifies against the `--cacert` file's roots; `pinned` are the file's
    /// certificates, DER, as read.
    pub(crate) fn new(
        webpki: Arc<WebPkiServerVerifier>,
        pinned: Vec<CertificateDer<'static>>,
    ) -> PinnedLeaf {
        PinnedLeaf { webpki, pinned }
    }

    fn is_pinned(&self, end_entity: &CertificateDer<'_>) -> bool {
        self.pinned
            .iter()
            .any(|p| p.as_ref() == end_entity.as_ref())
    }
}

/// Whether rustls refused the end entity for being a CA certificate.
fn ca_used_as_end_entity(e: &rustls::Error) -> bool {
    match e {
        rustls::Error::InvalidCertificate(CertificateError::Other(other)) => matches!(
            other.0.downcast_ref::<webpki::Error>(),
            Some(webpki::Error::CaUsedAsEndEntity)
        ),
        _ => false,
    }
}

impl ServerCertVerifier for PinnedLeaf {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(e) if ca_used_as_end_entity(&e) && self.is_pinned(end_entity) => {
                // The dates held (see the module); the name must still match.
                let cert = ParsedCertificate::try_from(end_entity)?;
                rustls::client::verify_server_name(&cert, server_name)?;
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, SanType};
    use rustls::RootCertStore;

    /// A day as (year, month, day).
    type Day = (i32, u8, u8);

    /// A self-signed certificate as `openssl req -x509` makes it (its own CA when
    /// `ca`), for `names`, valid from `from` to `to`.
    fn self_signed(names: &[&str], ca: bool, from: Day, to: Day) -> CertificateDer<'static> {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, names[0]);
        for name in names {
            params.subject_alt_names.push(match name.parse() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName((*name).try_into().unwrap()),
            });
        }
        if ca {
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        }
        params.not_before = rcgen::date_time_ymd(from.0, from.1, from.2);
        params.not_after = rcgen::date_time_ymd(to.0, to.1, to.2);
        params.self_signed(&key).unwrap().der().clone()
    }

    fn verifier(file: &[CertificateDer<'static>]) -> PinnedLeaf {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = RootCertStore::empty();
        for cert in file {
            roots.add(cert.clone()).unwrap();
        }
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .unwrap();
        PinnedLeaf::new(webpki, file.to_vec())
    }

    /// The verification time: 2027-01-15 08:00 UTC.
    const NOW: u64 = 1_800_000_000;

    fn verify(v: &PinnedLeaf, leaf: &CertificateDer<'_>, name: &str) -> Result<(), rustls::Error> {
        let name = ServerName::try_from(name.to_string()).unwrap();
        let now = UnixTime::since_unix_epoch(std::time::Duration::from_secs(NOW));
        v.verify_server_cert(leaf, &[], &name, &[], now).map(|_| ())
    }

    fn around_now() -> (Day, Day) {
        ((2027, 1, 1), (2027, 2, 1))
    }

    #[test]
    fn a_pinned_self_signed_ca_is_trusted_as_the_leaf_for_its_names() {
        let (from, to) = around_now();
        let cert = self_signed(&["localhost", "127.0.0.1"], true, from, to);
        let v = verifier(std::slice::from_ref(&cert));
        verify(&v, &cert, "localhost").unwrap();
        verify(&v, &cert, "127.0.0.1").unwrap();
        // Not for another name: the name check still applies.
        let err = verify(&v, &cert, "other").unwrap_err();
        assert!(
            matches!(
                err,
                rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. })
            ),
            "{err:?}"
        );
    }

    #[test]
    fn only_the_very_certificate_of_the_file_is_pinned() {
        let (from, to) = around_now();
        let trusted = self_signed(&["localhost"], true, from, to);
        let other = self_signed(&["localhost"], true, from, to);
        let v = verifier(&[trusted]);
        // Another self-signed CA with the same name: webpki's refusal stands.
        let err = verify(&v, &other, "localhost").unwrap_err();
        assert!(ca_used_as_end_entity(&err), "{err:?}");
    }

    #[test]
    fn a_pinned_certificate_out_of_its_dates_is_refused() {
        let expired = self_signed(&["localhost"], true, (2026, 1, 1), (2026, 12, 31));
        let v = verifier(std::slice::from_ref(&expired));
        let err = verify(&v, &expired, "localhost").unwrap_err();
        assert!(
            matches!(
                err,
                rustls::Error::InvalidCertificate(CertificateError::ExpiredContext { .. })
            ),
            "{err:?}"
        );
        let future = self_signed(&["localhost"], true, (2027, 6, 1), (2027, 7, 1));
        let v = verifier(std::slice::from_ref(&future));
        let err = verify(&v, &future, "localhost").unwrap_err();
        assert!(
            matches!(
                err,
                rustls::Error::InvalidCertificate(CertificateError::NotValidYetContext { .. })
            ),
            "{err:?}"
        );
    }

    #[test]
    fn what_webpki_accepts_is_accepted_untouched() {
        // A self-signed leaf that is no CA is a trust anchor of itself for webpki:
        // accepted without the pin, and refused for another name.
        let (from, to) = around_now();
        let leaf = self_signed(&["localhost"], false, from, to);
        let v = verifier(std::slice::from_ref(&leaf));
        verify(&v, &leaf, "localhost").unwrap();
        let err = verify(&v, &leaf, "other").unwrap_err();
        assert!(!ca_used_as_end_entity(&err), "{err:?}");
    }
}
