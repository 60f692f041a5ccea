//! [`Counted`]: a verifier that counts, per engine thread, the server certificates it
//! verified. Over QUIC a handshake that resumed a session verifies none, so a run's
//! resumed connections are its handshakes minus its verifications: rustls says
//! nothing else about a resumption that quinn passes on.
//!
//! Why per thread: an engine thread's QUIC connections are driven on its own runtime,
//! so their handshakes verify on that thread, and the count is taken with the thread's
//! other connection figures, without a shared atomic on the handshake path.

use std::cell::Cell;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

thread_local! {
    static VERIFIED: Cell<u64> = const { Cell::new(0) };
}

/// The certificates verified on this thread since the last call, leaving zero.
pub fn take_verified() -> u64 {
    VERIFIED.with(Cell::take)
}

/// Counts each certificate `0` accepts.
#[derive(Debug)]
pub(super) struct Counted(pub(super) Arc<dyn ServerCertVerifier>);

impl ServerCertVerifier for Counted {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verified = self.0.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )?;
        VERIFIED.with(|v| v.set(v.get() + 1));
        Ok(verified)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
