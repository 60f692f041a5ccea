//! The encrypted control channel: TLS 1.3 (rustls) between a coordinator and each of
//! its shards, keyed from the run's secret so that no certificate authority is needed.
//!
//! Both sides derive one Ed25519 key pair from the secret ([`super::auth::derive`]).
//! The coordinator serves a self-signed certificate of that key; a shard ignores the
//! certificate's contents and checks the handshake's signature against the public key
//! *it* derived: only something that knows the secret can complete the handshake as
//! the coordinator, so a man in the middle, a stale coordinator of another run or any
//! other TLS server is refused before a byte of the run is sent. The shard's own proof
//! (the HMAC handshake of [`super::auth`]) then travels inside the channel. TLS 1.3
//! only (no downgrade to 1.2 is offered or accepted), no session tickets, no
//! resumption; every record is encrypted and authenticated with its sequence number,
//! so an altered, replayed, reordered or dropped record ends the channel with an error.
//!
//! A [`Channel`] is a blocking `Read + Write` over one TCP connection. Its handles
//! ([`Channel::try_clone`]) share one rustls session: one thread reads while others
//! write. Why two locks: a writer holds the socket's lock while its records go out, and
//! the session's only while it encrypts, so a reader always gets the session to decrypt
//! what it read; if a writer held the session while blocked on a full socket, two peers
//! writing at once could each wait for a reader that waits for that writer.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, Connection, DigitallySignedStruct, ServerConfig, SignatureScheme};

use super::auth;

/// The name the coordinator's certificate carries and a shard asks for (never looked
/// up: the key, not the name, is what is checked).
const NAME: &str = "headroom-coordinator";
/// The key derivation's label: a new one makes every older shard refuse the channel.
const KEY_LABEL: &str = "headroom shard channel: coordinator key 1";
/// PKCS#8 v1 of an Ed25519 private key, up to its 32-byte seed (RFC 8410, section 7).
const ED25519_PKCS8_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];
/// Most bytes read from the socket at once.
const READ_CHUNK: usize = 16 << 10;

/// Why a channel could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    /// The key or configuration could not be made (a bug, or an unusable provider).
    #[error("cannot set up the encrypted channel: {0}")]
    Setup(String),
    /// The TLS handshake failed: the peer does not know the run's secret, is not a
    /// headroom peer of this version, or the connection failed.
    #[error("{0}")]
    Handshake(#[source] io::Error),
}

impl ChannelError {
    /// Whether the handshake failed on TLS itself (a wrong key, an alert, bytes that are
    /// not TLS 1.3) rather than on the connection.
    pub fn is_tls(&self) -> bool {
        match self {
            ChannelError::Handshake(e) => tls_error(e).is_some(),
            ChannelError::Setup(_) => false,
        }
    }
}

/// The rustls error inside an I/O error, when that is what it is.
pub fn tls_error(e: &io::Error) -> Option<&rustls::Error> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The run's key pair, derived from its secret.
fn key_pair(secret: &str) -> Result<(rcgen::KeyPair, Vec<u8>), ChannelError> {
    let mut pkcs8 = ED25519_PKCS8_PREFIX.to_vec();
    pkcs8.extend_from_slice(&auth::derive(secret, KEY_LABEL));
    let der = PrivatePkcs8KeyDer::from(pkcs8.as_slice());
    let pair = rcgen::KeyPair::from_pkcs8_der_and_sign_algo(&der, &rcgen::PKCS_ED25519)
        .map_err(|e| ChannelError::Setup(e.to_string()))?;
    Ok((pair, pkcs8))
}

/// The coordinator's side: its certificate and key, made once per run.
#[derive(Clone)]
pub struct ServerKeys(Arc<ServerConfig>);

impl ServerKeys {
    /// The configuration that serves the key `secret` derives.
    pub fn from_secret(secret: &str) -> Result<ServerKeys, ChannelError> {
        let (pair, pkcs8) = key_pair(secret)?;
        let setup = |e: &dyn std::fmt::Display| ChannelError::Setup(e.to_string());
        let cert = rcgen::CertificateParams::new(vec![NAME.to_string()])
            .and_then(|params| params.self_signed(&pair))
            .map_err(|e| setup(&e))?;
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| setup(&e))?
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pkcs8)),
            )
            .map_err(|e| setup(&e))?;
        // Nothing resumes: each shard connects once.
        config.send_tls13_tickets = 0;
        Ok(ServerKeys(Arc::new(config)))
    }
}

/// A shard's side: the public key it expects the coordinator to sign with.
#[derive(Clone)]
pub struct ClientKeys(Arc<ClientConfig>);

impl ClientKeys {
    /// The configuration that accepts only the key `secret` derives.
    pub fn from_secret(secret: &str) -> Result<ClientKeys, ChannelError> {
        let (pair, _) = key_pair(secret)?;
        let provider = provider();
        let verifier = PinnedKey {
            public_key: pair.public_key_raw().to_vec(),
            algorithms: provider.signature_verification_algorithms,
        };
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| ChannelError::Setup(e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        config.resumption = rustls::client::Resumption::disabled();
        config.enable_sni = false;
        Ok(ClientKeys(Arc::new(config)))
    }
}

/// Accepts the coordinator whose handshake is signed by the key the run's secret
/// derives, whatever certificate it shows (a raw public key, pinned).
#[derive(Debug)]
struct PinnedKey {
    public_key: Vec<u8>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for PinnedKey {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // The certificate proves nothing here: the handshake's signature, checked
        // against the pinned key below, is what proves the secret.
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        // Never offered (the configuration is TLS 1.3 only); refused if ever asked.
        Err(rustls::Error::General(
            "TLS 1.2 is not accepted on the shard channel".into(),
        ))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        _cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let bad = || rustls::Error::InvalidCertificate(rustls::CertificateError::BadSignature);
        if dss.scheme != SignatureScheme::ED25519 {
            return Err(bad());
        }
        let algorithms = self
            .algorithms
            .mapping
            .iter()
            .find(|(scheme, _)| *scheme == SignatureScheme::ED25519)
            .map(|(_, algorithms)| *algorithms)
            .unwrap_or_default();
        let signed = algorithms.iter().any(|alg| {
            alg.verify_signature(&self.public_key, message, dss.signature())
                .is_ok()
        });
        match signed {
            true => Ok(HandshakeSignatureValid::assertion()),
            false => Err(bad()),
        }
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        vec![SignatureScheme::ED25519]
    }
}

/// One end of an encrypted channel; see the module.
pub struct Channel {
    shared: Arc<Shared>,
    /// This handle's socket, for reading (every handle's is the same connection).
    sock: TcpStream,
}

struct Shared {
    session: Mutex<Session>,
    /// The socket records are written to, held while they go out (see the module).
    out: Mutex<TcpStream>,
}

struct Session {
    conn: Connection,
    /// Bytes read from the socket that rustls has not taken yet.
    pending: Vec<u8>,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("peer", &self.sock.peer_addr().ok())
            .finish()
    }
}

/// The coordinator's end: a TLS 1.3 handshake on `sock` with the run's key, within
/// the socket's read timeout.
pub fn accept(sock: TcpStream, keys: &ServerKeys) -> Result<Channel, ChannelError> {
    let conn = rustls::ServerConnection::new(keys.0.clone())
        .map_err(|e| ChannelError::Setup(e.to_string()))?;
    handshake(sock, Connection::Server(conn))
}

/// A shard's end: a TLS 1.3 handshake on `sock` that only the run's coordinator can
/// complete, within the socket's read timeout.
pub fn connect(sock: TcpStream, keys: &ClientKeys) -> Result<Channel, ChannelError> {
    let name = ServerName::try_from(NAME).expect("a valid DNS name");
    let conn = rustls::ClientConnection::new(keys.0.clone(), name)
        .map_err(|e| ChannelError::Setup(e.to_string()))?;
    handshake(sock, Connection::Client(conn))
}

fn handshake(mut sock: TcpStream, mut conn: Connection) -> Result<Channel, ChannelError> {
    while conn.is_handshaking() {
        if let Err(e) = conn.complete_io(&mut sock) {
            // Tell the peer why, when rustls has an alert for it.
            let _ = conn.write_tls(&mut sock);
            return Err(ChannelError::Handshake(e));
        }
    }
    while conn.wants_write() {
        conn.write_tls(&mut sock).map_err(ChannelError::Handshake)?;
    }
    let out = sock.try_clone().map_err(ChannelError::Handshake)?;
    Ok(Channel {
        shared: Arc::new(Shared {
            session: Mutex::new(Session {
                conn,
                pending: Vec::new(),
            }),
            out: Mutex::new(out),
        }),
        sock,
    })
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A TLS failure as the I/O error the frame reader reports.
fn invalid(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

impl Channel {
    /// Another handle on the same channel (one reads while the others write).
    pub fn try_clone(&self) -> io::Result<Channel> {
        Ok(Channel {
            shared: self.shared.clone(),
            sock: self.sock.try_clone()?,
        })
    }

    /// Bounds how long a read waits for the peer (`None`: for ever).
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.sock.set_read_timeout(timeout)
    }

    /// Hands what rustls has taken to its state machine; whatever it has to say back
    /// (an alert) is returned to be sent once the session is unlocked.
    fn process(session: &mut Session) -> (Result<(), rustls::Error>, Vec<u8>) {
        let result = session.conn.process_new_packets().map(|_| ());
        let mut reply = Vec::new();
        while session.conn.wants_write() {
            if session.conn.write_tls(&mut reply).is_err() {
                break;
            }
        }
        (result, reply)
    }

    fn send_raw(&self, bytes: &[u8]) -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        lock(&self.shared.out).write_all(bytes)
    }
}

/// What a read found under the session's lock, when it had no plaintext to return.
enum Found {
    /// Nothing pending: the socket must be read.
    Nothing,
    /// Pending bytes were given to rustls: what it made of them, and its reply.
    Fed(Result<(), rustls::Error>, Vec<u8>),
}

impl Read for Channel {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let found = {
                let mut guard = lock(&self.shared.session);
                let session = &mut *guard;
                match session.conn.reader().read(buf) {
                    Ok(n) => return Ok(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                if session.pending.is_empty() {
                    Found::Nothing
                } else {
                    let mut rest = &session.pending[..];
                    let before = rest.len();
                    let taken = session.conn.read_tls(&mut rest);
                    let took = before - rest.len();
                    session.pending.drain(..took);
                    taken?;
                    if took == 0 {
                        // rustls holds a full buffer and has no plaintext to give:
                        // nothing this reader can do would change that.
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            "the encrypted channel stalled with a full buffer",
                        ));
                    }
                    let (result, reply) = Channel::process(session);
                    Found::Fed(result, reply)
                }
            };
            if let Found::Fed(result, reply) = found {
                self.send_raw(&reply)?;
                result.map_err(invalid)?;
                continue;
            }
            // Nothing buffered: wait for the peer, holding no lock.
            let mut raw = [0u8; READ_CHUNK];
            let n = (&self.sock).read(&mut raw)?;
            let mut guard = lock(&self.shared.session);
            if n == 0 {
                // The peer closed: after its close_notify this is a clean end (Ok(0));
                // a connection cut mid-stream is an unexpected end.
                let session = &mut *guard;
                let _ = session.conn.read_tls(&mut &[][..]);
                let (result, _) = Channel::process(session);
                result.map_err(invalid)?;
                return match session.conn.reader().read(buf) {
                    Ok(n) => Ok(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        Err(io::ErrorKind::UnexpectedEof.into())
                    }
                    Err(e) => Err(e),
                };
            }
            guard.pending.extend_from_slice(&raw[..n]);
        }
    }
}

impl Write for Channel {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // The socket first, then the session: records leave in the order they were
        // sealed, and no reader waits on a blocked socket (see the module).
        let mut out = lock(&self.shared.out);
        let mut sent = 0;
        while sent < buf.len() {
            let mut records = Vec::new();
            {
                let mut session = lock(&self.shared.session);
                let n = session.conn.writer().write(&buf[sent..])?;
                while session.conn.wants_write() {
                    session.conn.write_tls(&mut records)?;
                }
                if n == 0 && records.is_empty() {
                    return Err(io::ErrorKind::WriteZero.into());
                }
                sent += n;
            }
            out.write_all(&records)?;
        }
        Ok(sent)
    }

    fn flush(&mut self) -> io::Result<()> {
        lock(&self.shared.out).flush()
    }
}

#[cfg(test)]
#[path = "channel_tests.rs"]
mod tests;
