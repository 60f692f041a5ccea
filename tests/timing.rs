//! The timing breakdown (`timing_ms`) and the connection counts (`connections`) of a
//! run, against real servers on loopback: one that delays its first byte and drips its
//! body, nginx keeping one user's connection alive, and a server that closes after
//! every response.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::Duration;

use headroom::metrics::summary::Summary;

use crate::support::{
    assert_exit, keep_alive_server, keep_alive_writer, run_headroom, run_with_summary, stdout,
    Nginx,
};

const LIMIT: Duration = Duration::from_secs(60);
/// How long the slow server waits before the first byte of its response.
const FIRST_BYTE_DELAY: Duration = Duration::from_millis(100);
/// Body pieces the slow server sends after its head, and the pause before each.
const DRIPS: usize = 5;
const DRIP_PAUSE: Duration = Duration::from_millis(10);

/// A keep-alive server that answers each request head after [`FIRST_BYTE_DELAY`] with
/// its head, then sends its body in [`DRIPS`] pieces [`DRIP_PAUSE`] apart: time to
/// first byte ≈ 100 ms, receive ≈ 50 ms.
fn slow_server() -> SocketAddr {
    let (addr, _) = keep_alive_writer(|_, stream| {
        thread::sleep(FIRST_BYTE_DELAY);
        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {DRIPS}\r\n\r\n");
        stream.write_all(head.as_bytes())?;
        for _ in 0..DRIPS {
            thread::sleep(DRIP_PAUSE);
            stream.write_all(b"x")?;
        }
        Ok(())
    });
    addr
}

/// A closed-model scenario of one user thinking `think` between requests named
/// `name`, for `duration`, written in `dir`.
fn one_user(dir: &Path, url: &str, name: &str, think: &str, duration: &str) -> PathBuf {
    let path = dir.join("one_user.yaml");
    let yaml = format!(
        "name: timing\ntarget: {url}\n\
         load: {{model: users, users: 1, think: {think}, duration: {duration}}}\n\
         requests:\n  - {{name: {name}, path: /}}\n"
    );
    std::fs::write(&path, yaml).unwrap();
    path
}

/// Runs `scenario` on one thread, kept in the store `dir/history.db`.
fn run(dir: &Path, scenario: &Path) -> (std::process::Output, Summary) {
    let scenario = scenario.to_str().unwrap();
    let store = dir.join("history.db");
    let store = store.to_str().unwrap();
    let args = [scenario, "--threads", "1", "--store", store];
    let (out, s) = run_with_summary(dir, &args, LIMIT);
    assert_exit(&out, 0);
    assert_eq!(s.errors.count, 0, "{:?}", s.errors);
    (out, s)
}

#[test]
fn ttfb_and_receive_split_a_slow_response_where_the_server_paused() {
    let addr = slow_server();
    let dir = tempfile::tempdir().unwrap();
    let scenario = one_user(dir.path(), &format!("http://{addr}"), "slow", "0s", "2s");
    let (out, s) = run(dir.path(), &scenario);
    // ~150 ms per request over 2 s.
    assert!((8..=16).contains(&s.requests), "{} requests", s.requests);
    let t = &s.timing_ms;
    assert_eq!(t.ttfb.count, s.requests);
    assert_eq!(t.receive.count, s.requests);
    assert!(
        (95.0..=150.0).contains(&t.ttfb.ms.p50),
        "ttfb p50 {} ms",
        t.ttfb.ms.p50
    );
    assert!(
        (45.0..=100.0).contains(&t.receive.ms.p50),
        "receive p50 {} ms",
        t.receive.ms.p50
    );
    // The pause before the first byte is the server's, not the connect's.
    assert_eq!(t.connect.count, 1);
    assert!(t.connect.ms.max < 20.0, "connect {} ms", t.connect.ms.max);
    assert_eq!((t.tls.count, s.connections.handshakes), (0, 0));
    assert_eq!(t.dns.count, 1, "the run resolves its target once");
    assert!(t.ttfb.ms.p50 + t.receive.ms.p50 <= s.latency_ms.p50 + 2.0);
    let named = &s.by_name["slow"].timing_ms;
    assert_eq!(named.ttfb.count, s.requests);
    assert_eq!(named.ttfb.ms.p50, t.ttfb.ms.p50);
    assert_eq!(
        named.dns.count, 0,
        "a resolution belongs to the run, not a name"
    );
    let text = stdout(&out);
    let ttfb = text.lines().find(|l| l.starts_with("ttfb")).expect(&text);
    assert!(ttfb.contains("ms"), "{ttfb}");
    assert!(
        text.contains("connections  HTTP/1.1 per-user: 1 opened"),
        "no connections line:\n{text}"
    );
}

#[test]
fn one_user_keeps_one_connection_alive_for_all_its_requests() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let scenario = one_user(dir.path(), &nginx.url(), "root", "50ms", "1s");
    let (_, s) = run(dir.path(), &scenario);
    assert!(s.requests >= 10, "{} requests", s.requests);
    assert_eq!(s.connections.opened, 1, "{:?}", s.connections);
    assert_eq!(s.connections.reused, s.requests - 1, "{:?}", s.connections);
    assert_eq!(s.connections.handshakes, 0);
    assert_eq!(s.timing_ms.connect.count, 1);
    assert_eq!(s.timing_ms.ttfb.count, s.requests);
    // The stored run's Markdown report (which the HTML one embeds) shows the same.
    let store = dir.path().join("history.db");
    let store = store.to_str().unwrap();
    let out = run_headroom(
        ["report", "latest", "--format", "md", "--store", store],
        LIMIT,
    );
    assert_exit(&out, 0);
    let md = stdout(&out);
    assert!(md.contains("### Timing"), "{md}");
    assert!(md.contains("| connect | 1 |"), "{md}");
    let reused = format!("1 opened, {} reused, 0 handshakes", s.requests - 1);
    assert!(md.contains(&reused), "{md}");
}

#[test]
fn a_server_that_closes_after_each_response_costs_a_connection_per_request() {
    let (addr, accepted) = keep_alive_server(|_| {
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
    });
    let dir = tempfile::tempdir().unwrap();
    let scenario = one_user(dir.path(), &format!("http://{addr}"), "root", "50ms", "1s");
    let (_, s) = run(dir.path(), &scenario);
    assert!(s.requests >= 10, "{} requests", s.requests);
    assert_eq!(s.connections.opened, s.requests, "{:?}", s.connections);
    assert_eq!(s.connections.reused, 0, "{:?}", s.connections);
    assert_eq!(s.timing_ms.connect.count, s.requests);
    // Counted on the server's side too.
    let accepted = accepted.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(accepted, s.connections.opened);
}
