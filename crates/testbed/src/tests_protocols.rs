//! Protocol tests: h2c beside HTTP/1.1 on one port, and `--tls` with ALPN, driven by
//! hyper's own HTTP/1.1 and HTTP/2 client connections over real loopback sockets.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::{Request, Version};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use super::test_client::get;
use super::tests::parse_exposition;
use super::*;

/// What a test reads of one response.
#[derive(Debug)]
struct Answer {
    version: Version,
    status: u16,
    body: String,
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async { tokio::time::timeout(Duration::from_secs(20), f).await })
        .expect("the test's exchanges finish within 20 s")
}

fn request(path: &str) -> Request<Empty<Bytes>> {
    Request::get(path)
        .header("host", "localhost")
        .body(Empty::new())
        .unwrap()
}

async fn answer(res: hyper::Response<hyper::body::Incoming>) -> Answer {
    let (version, status) = (res.version(), res.status().as_u16());
    let body = res.into_body().collect().await.expect("body").to_bytes();
    Answer {
        version,
        status,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

/// HTTP/2 on `io`: the first path alone, then the others at once, as concurrent streams
/// of one connection; the answers in the order of `paths`. The first goes alone so the
/// server's SETTINGS (its stream limit) have arrived before streams go out side by side:
/// streams opened past the limit before that are refused (REFUSED_STREAM), as RFC 9113
/// allows.
async fn h2_get<I>(io: I, paths: &[&str]) -> hyper::Result<Vec<Answer>>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(io)).await?;
    tokio::spawn(conn);
    let Some((first, rest)) = paths.split_first() else {
        return Ok(Vec::new());
    };
    let mut sender_first = sender.clone();
    let mut answers = vec![(
        0,
        answer(sender_first.send_request(request(first)).await?).await,
    )];
    let mut set = tokio::task::JoinSet::new();
    for (i, path) in rest.iter().enumerate() {
        let i = i + 1;
        let (mut sender, req) = (sender.clone(), request(path));
        set.spawn(async move {
            let res = sender.send_request(req).await?;
            Ok::<_, hyper::Error>((i, answer(res).await))
        });
    }
    for joined in set.join_all().await {
        answers.push(joined?);
    }
    answers.sort_by_key(|(i, _)| *i);
    Ok(answers.into_iter().map(|(_, a)| a).collect())
}

/// One HTTP/1.1 request on `io`.
async fn h1_get<I>(io: I, path: &str) -> hyper::Result<Answer>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
    tokio::spawn(conn);
    Ok(answer(sender.send_request(request(path)).await?).await)
}

/// A client configuration trusting `pem` (or Mozilla's roots when `None`), offering `alpn`.
fn client(pem: Option<&str>, alpn: &[&[u8]]) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    match pem {
        Some(pem) => {
            for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                roots.add(cert.expect("a PEM certificate")).unwrap();
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

async fn tls_connect(
    addr: SocketAddr,
    config: &Arc<ClientConfig>,
    name: &str,
) -> std::io::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from(name.to_owned()).unwrap();
    TlsConnector::from(Arc::clone(config))
        .connect(name, tcp)
        .await
}

fn metrics(addr: SocketAddr) -> HashMap<String, f64> {
    let res = block_on(get(addr, "/metrics")).expect("GET /metrics");
    assert_eq!(res.status, 200);
    parse_exposition(&res.text())
}

#[track_caller]
fn assert_series(m: &HashMap<String, f64>, series: &str, want: f64) {
    assert_eq!(m.get(series).copied(), Some(want), "{series} in {m:#?}");
}

fn tls_target(dir: &std::path::Path) -> (RunningTarget, std::path::PathBuf) {
    let cert = dir.join("target.pem");
    let t = spawn(TargetOptions {
        tls: true,
        tls_cert_out: Some(cert.clone()),
        ..TargetOptions::loopback()
    })
    .expect("TLS target starts");
    (t, cert)
}

#[test]
fn h2c_and_http1_are_served_on_one_port() {
    let t = spawn(TargetOptions::loopback()).unwrap();
    let addr = t.addr();
    assert!(t.url().starts_with("http://") && t.cert_pem().is_none());
    let h2 = block_on(async move {
        let tcp = TcpStream::connect(addr).await.unwrap();
        h2_get(tcp, &["/health", "/echo", "/status/418"]).await
    })
    .expect("an h2c prior-knowledge exchange");
    assert_eq!(
        h2.iter().map(|a| a.version).collect::<Vec<_>>(),
        [Version::HTTP_2; 3]
    );
    assert_eq!((h2[0].status, h2[0].body.as_str()), (200, "ok\n"));
    assert_eq!(h2[2].status, 418);
    let h1 =
        block_on(async move { h1_get(TcpStream::connect(addr).await.unwrap(), "/health").await })
            .expect("an HTTP/1.1 exchange");
    assert_eq!((h1.version, h1.status), (Version::HTTP_11, 200));

    // Counted server-side: the /metrics request itself is the second HTTP/1.1 one.
    let m = metrics(addr);
    assert_series(&m, "headroom_target_connections_accepted_total", 3.0);
    assert_series(
        &m,
        "headroom_target_protocol_requests_total{protocol=\"h2\"}",
        3.0,
    );
    assert_series(
        &m,
        "headroom_target_protocol_requests_total{protocol=\"http1\"}",
        2.0,
    );
    assert_series(
        &m,
        "headroom_target_protocol_connections_total{protocol=\"h2\"}",
        1.0,
    );
    assert_series(
        &m,
        "headroom_target_protocol_connections_total{protocol=\"http1\"}",
        2.0,
    );
    assert_series(
        &m,
        "headroom_target_tls_handshakes_total{kind=\"full\"}",
        0.0,
    );
    // The closed connections are no longer open; the /metrics one is.
    assert_series(&m, "headroom_target_connections_open", 1.0);
    // The same counts from the running target, and the server thread's CPU time.
    assert_eq!(t.requests_answered(), 5);
    assert!(t.cpu_time().is_some_and(|c| c > Duration::ZERO));
}

/// Four `/work?ms=100` on one HTTP/2 connection (after one `/health`) against four
/// workers: side by side they take one service time; with one stream allowed they
/// queue behind each other.
fn four_on_one_connection(max_streams: u32) -> Duration {
    let t = spawn(TargetOptions {
        workers: 4,
        h2_max_streams: max_streams,
        ..TargetOptions::loopback()
    })
    .unwrap();
    let addr = t.addr();
    block_on(async move {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let start = Instant::now();
        let paths = [
            "/health",
            "/work?ms=100",
            "/work?ms=100",
            "/work?ms=100",
            "/work?ms=100",
        ];
        let answers = h2_get(tcp, &paths).await.unwrap();
        assert!(answers.iter().all(|a| a.status == 200), "{answers:?}");
        start.elapsed()
    })
}

#[test]
fn h2_max_streams_limits_concurrent_streams_per_connection() {
    let one = four_on_one_connection(1);
    assert!(
        one >= Duration::from_millis(390),
        "one stream at a time: {one:?}"
    );
    let many = four_on_one_connection(DEFAULT_H2_MAX_STREAMS);
    assert!(many < Duration::from_millis(300), "side by side: {many:?}");
}

#[test]
fn tls_serves_h2_and_http1_by_alpn_with_a_certificate_that_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let (t, cert) = tls_target(dir.path());
    let addr = t.addr();
    assert!(t.url().starts_with("https://127.0.0.1:"), "{}", t.url());
    let pem = std::fs::read_to_string(&cert).unwrap();
    assert_eq!(Some(pem.as_str()), t.cert_pem());

    let h2_config = client(Some(&pem), &[b"h2", b"http/1.1"]);
    let h2 = block_on(async move {
        let tls = tls_connect(addr, &h2_config, "127.0.0.1").await.unwrap();
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        h2_get(tls, &["/health", "/work?ms=1"]).await
    })
    .expect("h2 over TLS");
    assert!(
        h2.iter()
            .all(|a| a.version == Version::HTTP_2 && a.status == 200),
        "{h2:?}"
    );

    // Only HTTP/1.1 offered, and the name `localhost` (also in the certificate).
    let h1_config = client(Some(&pem), &[b"http/1.1"]);
    let h1 = block_on(async move {
        let tls = tls_connect(addr, &h1_config, "localhost").await.unwrap();
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
        h1_get(tls, "/health").await
    })
    .expect("HTTP/1.1 over TLS");
    assert_eq!((h1.version, h1.status), (Version::HTTP_11, 200));

    // No ALPN at all: the server detects the protocol as in cleartext.
    let bare = client(Some(&pem), &[]);
    let plain =
        block_on(
            async move { h1_get(tls_connect(addr, &bare, "::1").await.unwrap(), "/health").await },
        )
        .expect("HTTP/1.1 over TLS without ALPN");
    assert_eq!(plain.status, 200);

    // Without the PEM the certificate is rejected: it is self-signed, no root knows it.
    let untrusting = client(None, &[b"h2"]);
    let err = block_on(async move { tls_connect(addr, &untrusting, "localhost").await })
        .expect_err("a self-signed certificate is not trusted by default");
    assert!(err.to_string().contains("UnknownIssuer"), "{err}");
    // ... and a name outside the certificate is rejected even with it.
    let other = client(Some(&pem), &[b"h2"]);
    let err = block_on(async move { tls_connect(addr, &other, "example.com").await })
        .expect_err("a name the certificate does not hold");
    assert!(err.to_string().contains("not valid for name"), "{err}");

    let m = metrics_over_tls(addr, &pem);
    // Three handshakes succeeded before, the fourth carries /metrics itself.
    assert_series(&m, "headroom_target_connections_accepted_total", 6.0);
    assert_series(&m, "headroom_target_tls_handshake_errors_total", 2.0);
    let full = m["headroom_target_tls_handshakes_total{kind=\"full\"}"];
    let resumed = m["headroom_target_tls_handshakes_total{kind=\"resumed\"}"];
    assert_eq!(full + resumed, 4.0, "{m:#?}");
    assert_series(
        &m,
        "headroom_target_protocol_requests_total{protocol=\"h2\"}",
        2.0,
    );
    assert_series(
        &m,
        "headroom_target_protocol_requests_total{protocol=\"http1\"}",
        3.0,
    );
}

/// `/metrics` over HTTPS (a cleartext request to a TLS port is a failed handshake).
fn metrics_over_tls(addr: SocketAddr, pem: &str) -> HashMap<String, f64> {
    let config = client(Some(pem), &[b"http/1.1"]);
    let res = block_on(async move {
        h1_get(
            tls_connect(addr, &config, "localhost").await.unwrap(),
            "/metrics",
        )
        .await
    })
    .expect("GET /metrics over TLS");
    assert_eq!(res.status, 200);
    parse_exposition(&res.body)
}

#[test]
fn a_client_resumes_its_tls_session() {
    let dir = tempfile::tempdir().unwrap();
    let (t, cert) = tls_target(dir.path());
    let pem = std::fs::read_to_string(cert).unwrap();
    let addr = t.addr();
    // One configuration, so one session cache: the second connection resumes.
    let config = client(Some(&pem), &[b"http/1.1"]);
    for _ in 0..2 {
        let config = Arc::clone(&config);
        let a = block_on(async move {
            h1_get(
                tls_connect(addr, &config, "localhost").await.unwrap(),
                "/health",
            )
            .await
        })
        .unwrap();
        assert_eq!(a.status, 200);
    }
    // A fresh configuration (an empty cache) does a full handshake for /metrics.
    let m = metrics_over_tls(addr, &pem);
    assert_series(
        &m,
        "headroom_target_tls_handshakes_total{kind=\"full\"}",
        2.0,
    );
    assert_series(
        &m,
        "headroom_target_tls_handshakes_total{kind=\"resumed\"}",
        1.0,
    );
}

#[test]
fn hostile_bytes_end_their_connection_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let (tls, _) = tls_target(dir.path());
    let plain = spawn(TargetOptions::loopback()).unwrap();
    let (tls_addr, plain_addr) = (tls.addr(), plain.addr());
    block_on(async move {
        // Not a ClientHello: the TLS port closes the connection.
        let mut s = TcpStream::connect(tls_addr).await.unwrap();
        s.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest).await;
        // The HTTP/2 preface, then a frame header announcing 16 MiB of garbage: the
        // server refuses the frame size (its limit is 16 KiB) and closes the connection.
        let mut s = TcpStream::connect(plain_addr).await.unwrap();
        s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            .await
            .unwrap();
        s.write_all(&[0x00, 0x00, 0x00, 0x04, 0x00, 0, 0, 0, 0])
            .await
            .unwrap(); // an empty SETTINGS frame
        s.write_all(&[0xff, 0xff, 0xff, 0x00, 0x00, 0, 0, 0, 1])
            .await
            .unwrap();
        s.write_all(&[0xAB; 4096]).await.unwrap();
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest)).await;
        assert!(closed.is_ok(), "the server closes the connection");
        // Its last word is a GOAWAY with FRAME_SIZE_ERROR (6).
        assert_eq!(goaway_code(&rest), Some(6), "{rest:x?}");
    });
    let m = metrics_over_tls(tls_addr, tls.cert_pem().unwrap());
    assert_series(&m, "headroom_target_tls_handshake_errors_total", 1.0);
    // Both servers still answer.
    let after = block_on(get(plain_addr, "/health")).unwrap();
    assert_eq!(after.status, 200);
}

/// The error code of the first GOAWAY frame (type 7) in a server's HTTP/2 bytes.
fn goaway_code(mut bytes: &[u8]) -> Option<u32> {
    while bytes.len() >= 9 {
        let len = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]) as usize;
        let payload = bytes.get(9..9 + len)?;
        if bytes[3] == 7 {
            return Some(u32::from_be_bytes(payload.get(4..8)?.try_into().ok()?));
        }
        bytes = &bytes[9 + len..];
    }
    None
}
