//! HTTP/2 end to end against a real nginx on 127.0.0.1: h2c with prior knowledge, h2
//! chosen by ALPN over TLS, a server that will not speak it, the server's stream limit,
//! GOAWAY, and a handshake per request.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use headroom::metrics::summary::Summary;

use headroom::target::{self, TargetOptions};

use crate::support::certs::TestCa;
use crate::support::{
    assert_clean, assert_exit, run_with_summary, stderr, Nginx, NginxH2, NginxTls,
};

const LIMIT: Duration = Duration::from_secs(60);

fn run(dir: &Path, url: &str, extra: &[&str]) -> (Output, Summary) {
    let mut args = vec!["--url", url, "--timeout", "5s", "--http2"];
    args.extend_from_slice(extra);
    if !extra.contains(&"--duration") {
        args.extend_from_slice(&["--duration", "1s"]);
    }
    run_with_summary(dir, &args, LIMIT)
}

fn tls() -> NginxTls {
    let ca = TestCa::new("headroom test CA");
    let server = ca.server(&["127.0.0.1"]);
    NginxTls {
        cert_pem: server.cert_pem,
        key_pem: server.key_pem,
        client_ca_pem: None,
        protocols: "TLSv1.2 TLSv1.3",
    }
}

const H2: NginxH2 = NginxH2 {
    max_streams: 128,
    max_requests: None,
    upstream: None,
};

#[test]
fn h2c_with_prior_knowledge_and_h2_by_alpn_both_carry_the_load() {
    let dir = tempfile::tempdir().unwrap();
    // nginx's `listen … http2` without TLS speaks nothing but h2c.
    let nginx = Nginx::start_h2(None, H2);
    let (out, s) = run(dir.path(), &format!("{}/", nginx.url()), &["--rate", "100"]);
    assert_clean(&out, &s);
    assert_eq!(s.connections.protocol, "h2c");
    assert_eq!(s.connections.streams, Some(100));
    // The open model's shared pool: every request multiplexed on few connections.
    assert!(s.connections.opened <= 2, "{:?}", s.connections);
    assert_eq!(s.connections.reused, s.requests - s.connections.opened);
    assert_eq!(nginx.connections().0, s.connections.opened);

    let nginx = Nginx::start_h2(Some(&tls()), H2);
    let (out, s) = run(
        dir.path(),
        &format!("{}/json", nginx.url()),
        &["--users", "4", "--insecure"],
    );
    assert_clean(&out, &s);
    assert_eq!(s.connections.protocol, "h2");
    // Per-user by default in the users model: one connection and handshake each.
    assert_eq!((s.connections.opened, s.connections.handshakes), (4, 4));
    assert!(
        stderr(&out).is_empty() || !stderr(&out).contains("warning"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_server_that_does_not_agree_to_h2_is_a_clear_tls_error_not_a_fallback() {
    let dir = tempfile::tempdir().unwrap();
    // HTTP/1.1 only over TLS.
    let nginx = Nginx::start_tls(&tls());
    let (out, s) = run(
        dir.path(),
        &format!("{}/", nginx.url()),
        &["--rate", "20", "--insecure"],
    );
    assert_eq!(s.completed, 0);
    assert_eq!(
        s.errors.by_kind.get("tls"),
        Some(&s.requests),
        "{:?}",
        s.errors
    );
    let err = stderr(&out);
    assert!(err.contains("did not agree to HTTP/2 by ALPN"), "{err}");
}

#[test]
fn the_servers_stream_limit_makes_requests_wait_and_their_latency_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    // Responses that take 100 ms: nginx in front of the built-in target's `/slow`.
    let upstream = target::spawn(TargetOptions::loopback()).expect("start the built-in target");
    let nginx = Nginx::start_h2(
        None,
        NginxH2 {
            max_streams: 4,
            max_requests: None,
            upstream: Some(upstream.addr()),
        },
    );
    let url = format!("{}/up/slow?ms=100", nginx.url());
    let users = |n: &str| {
        let (out, s) = run(
            dir.path(),
            &url,
            &[
                "--users",
                n,
                "--connection",
                "shared:1",
                "--streams",
                "10",
                "--duration",
                "2s",
            ],
        );
        assert_exit(&out, 0);
        assert_eq!(
            s.errors.count,
            0,
            "{:?}\n{}",
            s.errors.by_kind,
            stderr(&out)
        );
        assert_eq!(s.connections.opened, 1);
        s
    };
    let four = users("4");
    // Ten users ask for ten streams on the one connection; nginx allows four at once.
    let ten = users("10");
    assert_eq!(nginx.connections().0, 2, "one connection per run");
    // The six beyond the limit wait for a stream, and that wait is in their latency:
    // about 10/4 of a response time, against one response time with four users.
    let (a, b) = (four.latency_ms.p50, ten.latency_ms.p50);
    assert!((100.0..150.0).contains(&a), "p50 with 4 users {a} ms");
    assert!(b > 2.0 * a, "p50 with 4 users {a} ms, with 10 users {b} ms");
    // Throughput is the server's four streams either way: about 40/s.
    for s in [&four, &ten] {
        assert!((25.0..42.0).contains(&s.rate.achieved), "{:?}", s.rate);
    }
}

#[test]
fn goaway_after_the_servers_request_limit_opens_a_new_connection_without_errors() {
    let dir = tempfile::tempdir().unwrap();
    let nginx = Nginx::start_h2(
        None,
        NginxH2 {
            max_streams: 128,
            max_requests: Some(25),
            upstream: None,
        },
    );
    let (out, s) = run(
        dir.path(),
        &format!("{}/", nginx.url()),
        &["--users", "2", "--connection", "shared:1"],
    );
    assert_clean(&out, &s);
    // Every 25 requests nginx said GOAWAY and closed: a new connection carried on.
    let opened = s.connections.opened;
    assert!(
        opened >= s.requests / 25,
        "{opened} connections for {} requests",
        s.requests
    );
    assert_eq!(nginx.connections().0, opened);
}

#[test]
fn per_request_h2_over_tls_handshakes_once_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let nginx = Nginx::start_h2(Some(&tls()), H2);
    let (out, s) = run(
        dir.path(),
        &format!("{}/", nginx.url()),
        &["--users", "2", "--connection", "per-request", "--insecure"],
    );
    assert_clean(&out, &s);
    let c = &s.connections;
    assert_eq!(
        (c.opened, c.handshakes, c.reused),
        (s.requests, s.requests, 0)
    );
    assert_eq!(nginx.connections().0, s.requests);
}

/// The value of the target's exposition line starting with `series ` (0 when absent).
fn sample(text: &str, series: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map_or(0, |v| v.trim().parse::<f64>().unwrap() as u64)
}

/// The built-in target's `/metrics`, over HTTP/1.1 on its own port.
fn metrics(addr: std::net::SocketAddr) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text
}

#[test]
fn seed_002s_experiment_against_the_built_in_targets_h2c() {
    let dir = tempfile::tempdir().unwrap();
    let target = target::spawn(TargetOptions::loopback()).expect("start the built-in target");
    let url = format!("http://{}/work?ms=1", target.addr());
    let accepted = || {
        sample(
            &metrics(target.addr()),
            "headroom_target_connections_accepted_total",
        )
    };
    let h2_requests = || {
        sample(
            &metrics(target.addr()),
            "headroom_target_protocol_requests_total{protocol=\"h2\"}",
        )
    };
    // Eight players sharing one connection: the target accepts one connection...
    let before = accepted();
    let (out, s) = run(
        dir.path(),
        &url,
        &["--users", "8", "--connection", "shared:1"],
    );
    assert_clean(&out, &s);
    // (each metrics reading is a connection of its own, the one just made included)
    assert_eq!(accepted() - before - 1, 1);
    // ... and every request came over HTTP/2, none over HTTP/1.1.
    assert_eq!(h2_requests(), s.requests);

    // Each player its own connection: eight. One line apart.
    let before = accepted();
    let (out, s) = run(
        dir.path(),
        &url,
        &["--users", "8", "--connection", "per-user"],
    );
    assert_clean(&out, &s);
    assert_eq!(accepted() - before - 1, 8);
    assert_eq!(s.connections.opened, 8);
}

#[test]
fn h2_by_alpn_against_the_built_in_targets_tls() {
    let dir = tempfile::tempdir().unwrap();
    let target = target::spawn(TargetOptions {
        tls: true,
        ..TargetOptions::loopback()
    })
    .expect("start the built-in target with TLS");
    let url = format!("https://127.0.0.1:{}/work?ms=1", target.addr().port());
    let (out, s) = run(dir.path(), &url, &["--rate", "50", "--insecure"]);
    assert_clean(&out, &s);
    assert_eq!(s.connections.protocol, "h2");
    assert_eq!(s.connections.handshakes, s.connections.opened);
}
