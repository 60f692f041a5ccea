//! The dashboard's server over real loopback sockets: what it serves, what it refuses
//! (hostile and oversized requests), and that it stops with a page still connected.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::*;
use crate::scenario::{self, Overrides};

fn plan() -> Plan {
    let overrides = Overrides {
        url: Some("http://127.0.0.1:9/work".into()),
        rate: Some(10.0),
        duration: Some(Duration::from_secs(1)),
        ..Overrides::default()
    };
    scenario::load(None, &overrides).unwrap()
}

fn start(control: &Control) -> Dashboard {
    Dashboard::start("127.0.0.1:0".parse().unwrap(), "run", &plan(), control).unwrap()
}

/// Sends `request` as is and reads the reply until the server closes or 3 s pass.
fn raw(addr: SocketAddr, request: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    // The server may close before taking all of a hostile request.
    let _ = s.write_all(request);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn get(addr: SocketAddr, path: &str) -> String {
    raw(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
}

#[test]
fn serves_the_page_its_assets_state_and_metrics() {
    let control = Control::default();
    let d = start(&control);
    let addr = d.addr();
    assert_ne!(addr.port(), 0);
    let page = get(addr, "/");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("<script src=\"/assets/uPlot.iife.min.js\">"));
    let js = get(addr, "/assets/uPlot.iife.min.js");
    assert!(
        js.contains("text/javascript") && js.contains("uPlot"),
        "{}",
        &js[..200]
    );
    let state = get(addr, "/state");
    let body = state.split("\r\n\r\n").nth(1).unwrap();
    let json: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(json["meta"]["command"], "run");
    assert_eq!(json["meta"]["target"], "http://127.0.0.1:9");
    let metrics = get(addr, "/metrics");
    assert!(
        metrics.contains("application/openmetrics-text"),
        "{metrics}"
    );
    assert!(metrics.contains("headroom_seconds_total 0"), "{metrics}");
    assert!(get(addr, "/nope").starts_with("HTTP/1.1 404"));
    assert!(get(addr, "/assets/../Cargo.toml").starts_with("HTTP/1.1 404"));
    d.failed("test over", 1);
}

#[test]
fn refuses_hostile_requests_and_keeps_serving() {
    let control = Control::default();
    let d = start(&control);
    let addr = d.addr();
    // A request head over the limit: refused (431) or the connection closed, never 200.
    let huge = format!(
        "GET / HTTP/1.1\r\nHost: {addr}\r\nX-Big: {}\r\n\r\n",
        "a".repeat(MAX_HEAD * 4)
    );
    let reply = raw(addr, huge.as_bytes());
    assert!(
        !reply.contains(" 200 "),
        "{}",
        &reply[..reply.len().min(200)]
    );
    // Too many headers.
    let mut many = format!("GET / HTTP/1.1\r\nHost: {addr}\r\n");
    for i in 0..(MAX_HEADERS + 10) {
        many.push_str(&format!("X-{i}: 1\r\n"));
    }
    many.push_str("\r\n");
    assert!(!raw(addr, many.as_bytes()).contains(" 200 "));
    // Not HTTP at all.
    assert!(raw(addr, b"\x16\x03\x01hello\r\n\r\n").starts_with("HTTP/1.1 400"));
    // A body announced over the limit is refused unread.
    let big_body = format!(
        "POST /stop HTTP/1.1\r\nHost: {addr}\r\nx-headroom-stop: 1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        MAX_BODY * 1000
    );
    assert!(raw(addr, big_body.as_bytes()).starts_with("HTTP/1.1 413"));
    assert!(!control.is_stopped());
    // A page reached through another name (DNS rebinding) is refused.
    let rebound = "GET /state HTTP/1.1\r\nHost: evil.example:5665\r\nConnection: close\r\n\r\n";
    assert!(raw(addr, rebound.as_bytes()).starts_with("HTTP/1.1 403"));
    // More idle connections than it serves: the extra ones are closed, and once they
    // go it serves again.
    let idle: Vec<TcpStream> = (0..MAX_CONNECTIONS + 20)
        .map(|_| TcpStream::connect(addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    drop(idle);
    std::thread::sleep(Duration::from_millis(200));
    assert!(get(addr, "/state").starts_with("HTTP/1.1 200"));
    d.failed("test over", 1);
}

#[test]
fn stop_wants_its_header_then_stops_as_ctrl_c_does() {
    let control = Control::default();
    let d = start(&control);
    let addr = d.addr();
    let bare = format!(
        "POST /stop HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    assert!(raw(addr, bare.as_bytes()).starts_with("HTTP/1.1 403"));
    assert!(!control.is_stopped());
    let asked = format!(
        "POST /stop HTTP/1.1\r\nHost: localhost:{}\r\n{STOP_HEADER}: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        addr.port()
    );
    assert!(raw(addr, asked.as_bytes()).starts_with("HTTP/1.1 202"));
    assert!(control.is_stopped());
    assert!(get(addr, "/state").contains("\"stopping\":true"));
    d.failed("test over", 1);
}

#[test]
fn finishing_ends_an_open_event_stream_and_stops_the_server_promptly() {
    let control = Control::default();
    let d = start(&control);
    let addr = d.addr();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET /events HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut reader = BufReader::new(s);
    let mut first = String::new();
    while !first.starts_with("data: ") {
        first.clear();
        reader.read_line(&mut first).unwrap();
    }
    assert!(first.contains("\"reset\":true"), "{first}");
    let mut live = Live::default();
    live.last.t = 0;
    live.last_bucket.t = 0;
    d.second(&live);
    let started = Instant::now();
    // The connection stays open (keep-alive) while the dashboard finishes.
    d.failed("test over", 1);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let mut rest = String::new();
    let _ = reader.read_to_string(&mut rest);
    // The second and the end may come in one message (the stream sends what is new).
    let messages: Vec<&str> = rest.lines().filter(|l| l.starts_with("data: ")).collect();
    let last = messages
        .last()
        .unwrap_or_else(|| panic!("no message after the first: {rest}"));
    assert!(last.contains("\"outcome\":\"error: test over\""), "{rest}");
    let rows: usize = messages.iter().map(|m| m.matches("\"t\":0").count()).sum();
    assert_eq!(rows, 1, "the second came once: {rest}");
    assert!(TcpStream::connect(addr).is_err(), "the server is gone");
}

#[test]
fn a_port_in_use_is_bad_input_naming_the_flag() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let e = Dashboard::start(addr, "run", &plan(), &Control::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.starts_with(&format!("--dashboard {addr}: cannot listen there")),
        "{e}"
    );
    assert_eq!(parse_addr("8080").unwrap().to_string(), "127.0.0.1:8080");
    assert_eq!(parse_addr("[::1]:0").unwrap().to_string(), "[::1]:0");
    assert!(parse_addr("localhost:80")
        .unwrap_err()
        .to_string()
        .contains("\"localhost:80\""));
}
