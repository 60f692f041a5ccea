//! A hostile HTTP/3 server on loopback (quinn and h3, written here to misbehave): each
//! path misbehaves one way, and `headroom run --http3` against it must classify the
//! failure, stay within its buffers and account for every request.
//!
//! - `/endless`: a 200 whose body never ends;
//! - `/stall`: a 200 and 1 KiB, then nothing;
//! - `/reset`: the stream reset (H3_INTERNAL_ERROR) once the request is read;
//! - `/reject`: the stream reset with H3_REQUEST_REJECTED (unprocessed: sent again);
//! - anything else: 200 "ok".
//!
//! [`Hostile::raw_big_head`] answers every request with a header section of 200 KiB,
//! written as raw HTTP/3 frames (h3's server would refuse to send past the
//! field-section limit the client announced, which is the point).
//!
//! A UDP socket that reads and never answers stands for a server that never
//! completes the handshake.

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::support::certs::{write, TestCa};

/// The hostile server, on its own thread and runtime; stops when dropped.
pub(crate) struct Hostile {
    pub(crate) addr: SocketAddr,
    /// The CA that issued its certificate, written to a file.
    pub(crate) ca: std::path::PathBuf,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Hostile {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Hostile {
    /// The h3 server whose paths misbehave.
    pub(crate) fn start(dir: &Path) -> Hostile {
        Hostile::serve(dir, false, false)
    }

    /// A server speaking raw HTTP/3 frames: a 200 with a 200 KiB header section.
    pub(crate) fn raw_big_head(dir: &Path) -> Hostile {
        Hostile::serve(dir, true, false)
    }

    /// The h3 server, issuing session tickets that allow early data but resuming none:
    /// every 0-RTT attempt is rejected (as after a server restart that lost its keys).
    pub(crate) fn forgetful(dir: &Path) -> Hostile {
        Hostile::serve(dir, false, true)
    }

    fn serve(dir: &Path, raw: bool, forgetful: bool) -> Hostile {
        let ca = TestCa::new("hostile h3 CA");
        let issued = ca.server(&["127.0.0.1"]);
        let ca_file = write(dir, "hostile-ca.pem", &ca.pem);
        let chain = vec![CertificateDer::from_pem_slice(issued.cert_pem.as_bytes()).unwrap()];
        let key = PrivateKeyDer::from_pem_slice(issued.key_pem.as_bytes()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        tls.alpn_protocols = vec![b"h3".to_vec()];
        if forgetful {
            tls.session_storage = Arc::new(Forgetful);
            tls.max_early_data_size = u32::MAX;
        }
        let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
        let config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let endpoint = {
            let _entered = runtime.enter();
            quinn::Endpoint::server(config, "127.0.0.1:0".parse().unwrap()).unwrap()
        };
        let addr = endpoint.local_addr().unwrap();
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            runtime.block_on(async move {
                loop {
                    tokio::select! {
                        _ = &mut stopped => break,
                        incoming = endpoint.accept() => match incoming {
                            Some(incoming) if raw => { tokio::spawn(big_head(incoming)); }
                            Some(incoming) => { tokio::spawn(connection(incoming)); }
                            None => break,
                        },
                    }
                }
                endpoint.close(0u32.into(), b"");
            });
        });
        Hostile {
            addr,
            ca: ca_file,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

async fn connection(incoming: quinn::Incoming) {
    let Ok(connecting) = incoming.accept() else {
        return;
    };
    let Ok(conn) = connecting.await else { return };
    let mut h3 = match h3::server::builder()
        .build::<_, Bytes>(h3_quinn::Connection::new(conn))
        .await
    {
        Ok(h3) => h3,
        Err(_) => return,
    };
    while let Ok(Some(resolver)) = h3.accept().await {
        tokio::spawn(async move {
            let Ok((req, mut stream)) = resolver.resolve_request().await else {
                return;
            };
            let path = req.uri().path().to_string();
            let ok = |status| http::Response::builder().status(status).body(()).unwrap();
            match path.as_str() {
                "/endless" => {
                    if stream.send_response(ok(200)).await.is_err() {
                        return;
                    }
                    let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
                    while stream.send_data(chunk.clone()).await.is_ok() {}
                }
                "/stall" => {
                    let _ = stream.send_response(ok(200)).await;
                    let _ = stream.send_data(Bytes::from(vec![b'x'; 1024])).await;
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
                "/reset" => stream.stop_stream(h3::error::Code::H3_INTERNAL_ERROR),
                "/reject" => stream.stop_stream(h3::error::Code::H3_REQUEST_REJECTED),
                _ => {
                    let _ = stream.send_response(ok(200)).await;
                    let _ = stream.send_data(Bytes::from_static(b"ok")).await;
                    let _ = stream.finish().await;
                }
            }
        });
    }
}

/// A UDP socket on loopback that reads everything and answers nothing: a QUIC server
/// that never completes the handshake. Reads on its own thread until dropped.
pub(crate) struct Silent {
    pub(crate) addr: SocketAddr,
    _socket: Arc<UdpSocket>,
}

impl Silent {
    pub(crate) fn start() -> Silent {
        let socket = Arc::new(UdpSocket::bind("127.0.0.1:0").unwrap());
        let addr = socket.local_addr().unwrap();
        let reader = socket.clone();
        reader
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            // Ends once the test dropped its handle and nothing arrives for a while.
            while Arc::strong_count(&reader) > 1 || reader.recv(&mut buf).is_ok() {
                let _ = reader.recv(&mut buf);
            }
        });
        Silent {
            addr,
            _socket: socket,
        }
    }
}

/// QPACK's prefixed integer (RFC 7541 §5.1): `value` after `first`'s flag bits, in a
/// `prefix`-bit field.
fn prefixed(out: &mut BytesMut, first: u8, prefix: u32, value: usize) {
    let max = (1usize << prefix) - 1;
    if value < max {
        out.put_u8(first | value as u8);
        return;
    }
    out.put_u8(first | max as u8);
    let mut rest = value - max;
    while rest >= 128 {
        out.put_u8((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    out.put_u8(rest as u8);
}

/// QUIC's variable-length integer, in its 4-byte form (values below 2^30).
fn varint4(out: &mut BytesMut, value: usize) {
    out.put_u32(0x8000_0000 | value as u32);
}

/// Every request stream of the connection answered with HEADERS carrying `:status
/// 200` and one 200 KiB field, after a control stream with empty SETTINGS.
async fn big_head(incoming: quinn::Incoming) {
    let Ok(connecting) = incoming.accept() else {
        return;
    };
    let Ok(conn) = connecting.await else { return };
    if let Ok(mut control) = conn.open_uni().await {
        // Stream type 0x00 (control), then SETTINGS (0x04) with no parameters.
        let _ = control.write_all(&[0x00, 0x04, 0x00]).await;
        // Kept open: closing a control stream is a connection error.
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(60)).await;
            drop(control);
        });
    }
    while let Ok((mut send, mut recv)) = conn.accept_bi().await {
        tokio::spawn(async move {
            let _ = recv.read_to_end(64 * 1024).await;
            let mut block = BytesMut::new();
            // Required insert count 0, base 0: nothing from the dynamic table.
            block.put_slice(&[0x00, 0x00]);
            // `:status: 200`, static table index 25.
            prefixed(&mut block, 0xC0, 6, 25);
            // A literal field with a literal name, no Huffman: `x-big: x…`.
            prefixed(&mut block, 0x20, 3, 5);
            block.put_slice(b"x-big");
            let value = vec![b'x'; 200 * 1024];
            prefixed(&mut block, 0x00, 7, value.len());
            block.put_slice(&value);
            let mut frame = BytesMut::new();
            frame.put_u8(0x01); // HEADERS
            varint4(&mut frame, block.len());
            frame.put_slice(&block);
            let _ = send.write_all(&frame).await;
            let _ = send.finish();
            tokio::time::sleep(Duration::from_secs(5)).await;
        });
    }
}

/// A session store that stores nothing: tickets go out, and no session comes back.
#[derive(Debug)]
struct Forgetful;

impl rustls::server::StoresServerSessions for Forgetful {
    fn put(&self, _key: Vec<u8>, _value: Vec<u8>) -> bool {
        true
    }
    fn get(&self, _key: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn take(&self, _key: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn can_cache(&self) -> bool {
        true
    }
}
