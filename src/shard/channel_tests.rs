//! The encrypted channel against real sockets on loopback: frames both ways at once,
//! and every way a peer or a man in the middle can be wrong.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::*;
use crate::shard::wire::{self, FromShard, ToShard, MAX_FRAME};

fn secret() -> String {
    auth::new_secret()
}

/// A listener on loopback and its address.
fn listener() -> (TcpListener, String) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    (l, addr)
}

/// The coordinator's end, accepted on a thread.
fn serve(l: TcpListener, keys: ServerKeys) -> JoinHandle<Result<Channel, ChannelError>> {
    std::thread::spawn(move || {
        let (sock, _) = l.accept().unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        accept(sock, &keys)
    })
}

fn dial(addr: &str, keys: &ClientKeys) -> Result<Channel, ChannelError> {
    let sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    connect(sock, keys)
}

/// A connected pair keyed from one secret: (coordinator, shard).
fn pair() -> (Channel, Channel) {
    let s = secret();
    let (l, addr) = listener();
    let server = serve(l, ServerKeys::from_secret(&s).unwrap());
    let client = dial(&addr, &ClientKeys::from_secret(&s).unwrap()).unwrap();
    (server.join().unwrap().unwrap(), client)
}

fn big_setup(len: usize) -> ToShard {
    ToShard::Refused {
        reason: "x".repeat(len),
    }
}

#[test]
fn frames_cross_both_ways_at_once_even_when_both_sides_send_megabytes() {
    let (server, client) = pair();
    server.set_read_timeout(None).unwrap();
    client.set_read_timeout(None).unwrap();
    // Both ends write 8 MiB at the same time, far over the sockets' buffers, while a
    // reader on another handle of each drains the other's: no side may wait on a
    // reader that waits on it.
    let big = 8 << 20;
    let mut server_reader = server.try_clone().unwrap();
    let mut client_reader = client.try_clone().unwrap();
    let reads_server = std::thread::spawn(move || {
        wire::recv::<FromShard>(&mut server_reader, MAX_FRAME).map(|m| match m {
            FromShard::Failed { error } => error.len(),
            other => panic!("{other:?}"),
        })
    });
    let reads_client = std::thread::spawn(move || {
        wire::recv::<ToShard>(&mut client_reader, MAX_FRAME).map(|m| match m {
            ToShard::Refused { reason } => reason.len(),
            other => panic!("{other:?}"),
        })
    });
    let (mut server_w, mut client_w) = (server, client);
    let writes_server =
        std::thread::spawn(move || wire::send(&mut server_w, &big_setup(big)).map(|()| server_w));
    let failed = FromShard::Failed {
        error: "y".repeat(big),
    };
    wire::send(&mut client_w, &failed).unwrap();
    let mut server_w = writes_server.join().unwrap().unwrap();
    assert_eq!(reads_server.join().unwrap().unwrap(), big);
    assert_eq!(reads_client.join().unwrap().unwrap(), big);
    // Small messages keep going after the large ones, in order.
    for at in 0..50u64 {
        wire::send(&mut server_w, &ToShard::Start { at_unix_ns: at }).unwrap();
    }
    for at in 0..50u64 {
        match wire::recv::<ToShard>(&mut client_w, MAX_FRAME).unwrap() {
            ToShard::Start { at_unix_ns } => assert_eq!(at_unix_ns, at),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_shard_with_another_secret_refuses_the_coordinator_and_sends_nothing() {
    let (l, addr) = listener();
    let server = serve(l, ServerKeys::from_secret(&secret()).unwrap());
    let e = dial(&addr, &ClientKeys::from_secret(&secret()).unwrap()).unwrap_err();
    assert!(e.is_tls(), "{e}");
    assert!(e.to_string().contains("BadSignature"), "{e}");
    // The coordinator hears the shard's alert: its side fails too.
    let served = server.join().unwrap();
    assert!(
        served.is_err(),
        "the coordinator kept a channel nobody could use"
    );
}

#[test]
fn a_man_in_the_middle_with_a_certificate_of_its_own_is_refused() {
    // A TLS 1.3 server with an ordinary self-signed certificate for the same name, as a
    // proxy that terminates TLS would show: the shard checks the key, not the name.
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
    let cert = rcgen::CertificateParams::new(vec![NAME.to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let config = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .unwrap();
    let (l, addr) = listener();
    let server = serve(l, ServerKeys(Arc::new(config)));
    let e = dial(&addr, &ClientKeys::from_secret(&secret()).unwrap()).unwrap_err();
    assert!(e.is_tls(), "{e}");
    assert!(server.join().unwrap().is_err());
}

#[test]
fn a_peer_that_offers_only_tls_1_2_is_refused() {
    let (l, addr) = listener();
    let server = serve(l, ServerKeys::from_secret(&secret()).unwrap());
    // A shard's own verifier, offering TLS 1.2 only: refused at the hello.
    let (pair, _) = key_pair(&secret()).unwrap();
    let verifier = PinnedKey {
        public_key: pair.public_key_raw().to_vec(),
        algorithms: provider().signature_verification_algorithms,
    };
    let config = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS12])
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    let e = dial(&addr, &ClientKeys(Arc::new(config))).unwrap_err();
    assert!(e.is_tls(), "{e}");
    let refused = server.join().unwrap().unwrap_err();
    assert!(refused.is_tls(), "{refused}");
}

#[test]
fn bytes_that_are_not_tls_and_silence_are_refused_in_bounded_time() {
    for hostile in [
        &u32::MAX.to_be_bytes()[..],
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        &[0x16, 0x03, 0x01, 0xff, 0xff][..],
        &[],
    ] {
        let (l, addr) = listener();
        let keys = ServerKeys::from_secret(&secret()).unwrap();
        let server = std::thread::spawn(move || {
            let (sock, _) = l.accept().unwrap();
            sock.set_read_timeout(Some(Duration::from_millis(300)))
                .unwrap();
            accept(sock, &keys)
        });
        let mut peer = TcpStream::connect(&addr).unwrap();
        peer.write_all(hostile).unwrap();
        let began = Instant::now();
        let e = server.join().unwrap().unwrap_err();
        assert!(began.elapsed() < Duration::from_secs(5), "{hostile:?}");
        assert!(matches!(e, ChannelError::Handshake(_)), "{hostile:?}: {e}");
    }
}

/// What the proxy does to the next chunk from the shard, once told.
const PASS: u8 = 0;
const FLIP: u8 = 1;
const REPLAY: u8 = 2;

/// A TCP proxy on loopback between a shard and its coordinator that passes every
/// byte, and does to the shard's next chunk what `mode` says when it is set.
fn proxy(to: String, mode: Arc<AtomicU8>) -> String {
    let (l, addr) = listener();
    std::thread::spawn(move || {
        let (mut shard, _) = l.accept().unwrap();
        let mut coordinator = TcpStream::connect(&to).unwrap();
        let (mut back_from, mut back_to) =
            (coordinator.try_clone().unwrap(), shard.try_clone().unwrap());
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut back_from, &mut back_to);
        });
        let mut buf = [0u8; 64 << 10];
        loop {
            let n = match shard.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let chunk = &mut buf[..n];
            match mode.swap(PASS, Ordering::SeqCst) {
                FLIP => chunk[n / 2] ^= 0x01,
                REPLAY => {
                    let _ = coordinator.write_all(chunk);
                }
                _ => {}
            }
            if coordinator.write_all(chunk).is_err() {
                return;
            }
        }
    });
    addr
}

/// A pair whose shard→coordinator bytes go through [`proxy`].
fn proxied_pair(mode: Arc<AtomicU8>) -> (Channel, Channel) {
    let s = secret();
    let (l, addr) = listener();
    let server = serve(l, ServerKeys::from_secret(&s).unwrap());
    let via = proxy(addr, mode);
    let client = dial(&via, &ClientKeys::from_secret(&s).unwrap()).unwrap();
    // Both ends finished their handshake: what crosses next is application data.
    (server.join().unwrap().unwrap(), client)
}

/// Whether a frame could not be read because a record did not decrypt (an altered
/// byte, a replayed or reordered record: its authentication tag does not hold).
fn is_decrypt_error(e: &wire::WireError) -> bool {
    match e {
        wire::WireError::Io(io) => matches!(tls_error(io), Some(rustls::Error::DecryptError)),
        _ => false,
    }
}

#[test]
fn an_altered_record_ends_the_channel_and_yields_no_message() {
    let mode = Arc::new(AtomicU8::new(PASS));
    let (mut server, mut client) = proxied_pair(mode.clone());
    wire::send(&mut client, &FromShard::Alive).unwrap();
    assert!(matches!(
        wire::recv::<FromShard>(&mut server, MAX_FRAME).unwrap(),
        FromShard::Alive
    ));
    mode.store(FLIP, Ordering::SeqCst);
    wire::send(&mut client, &FromShard::Measuring).unwrap();
    let e = wire::recv::<FromShard>(&mut server, MAX_FRAME).unwrap_err();
    assert!(is_decrypt_error(&e), "{e}");
}

#[test]
fn a_replayed_record_is_never_taken_twice_and_ends_the_channel() {
    let mode = Arc::new(AtomicU8::new(PASS));
    let (mut server, mut client) = proxied_pair(mode.clone());
    mode.store(REPLAY, Ordering::SeqCst);
    wire::send(&mut client, &FromShard::Alive).unwrap();
    // The same record twice: its sequence number is spent after the first, so the
    // second ends the channel (the first may be lost with it when both arrive in one
    // read: a channel with a bad record in it is not read further).
    let mut taken = 0;
    let e = loop {
        match wire::recv::<FromShard>(&mut server, MAX_FRAME) {
            Ok(FromShard::Alive) => taken += 1,
            Ok(other) => panic!("{other:?}"),
            Err(e) => break e,
        }
    };
    assert!(taken <= 1, "a replayed message was taken {taken} times");
    assert!(is_decrypt_error(&e), "{e}");
}

#[test]
fn a_peer_that_hangs_up_is_an_end_not_a_hang() {
    let (mut server, client) = pair();
    drop(client);
    let e = wire::recv::<FromShard>(&mut server, MAX_FRAME).unwrap_err();
    assert!(e.is_closed(), "{e}");
}

#[test]
fn the_key_is_the_secrets_and_only_its() {
    let s = secret();
    let (a, _) = key_pair(&s).unwrap();
    let (b, _) = key_pair(&s).unwrap();
    let (c, _) = key_pair(&secret()).unwrap();
    assert_eq!(a.public_key_raw(), b.public_key_raw());
    assert_ne!(a.public_key_raw(), c.public_key_raw());
    assert_eq!(a.public_key_raw().len(), 32);
}
