//! The test helpers themselves: nginx comes up, answers as configured, and goes away.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::support::{self, Nginx};

/// Sends `GET path` over a fresh connection and returns the whole response.
fn get(nginx: &Nginx, path: &str) -> String {
    let mut stream = TcpStream::connect(nginx.addr()).expect("connect to nginx");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("set read timeout");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read response");
    response
}

#[test]
fn nginx_serves_ok_and_json_then_stops_on_drop() {
    let nginx = Nginx::start();
    assert!(
        nginx.url().starts_with("http://127.0.0.1:"),
        "{}",
        nginx.url()
    );

    let root = get(&nginx, "/");
    assert!(root.starts_with("HTTP/1.1 200 OK\r\n"), "{root}");
    assert!(root.ends_with("\r\n\r\nok\n"), "{root}");

    let json = get(&nginx, "/json");
    assert!(json.starts_with("HTTP/1.1 200 OK\r\n"), "{json}");
    assert!(
        json.contains("Content-Type: application/json\r\n"),
        "{json}"
    );
    assert!(json.ends_with(support::JSON_BODY), "{json}");

    let workers = nginx.worker_pids();
    assert_eq!(workers.len(), 1, "one worker process, got {workers:?}");

    let addr = nginx.addr();
    let master = nginx.pid();
    drop(nginx);
    assert!(
        TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err(),
        "nginx still accepts connections on {addr} after drop"
    );
    for pid in [master].iter().chain(&workers) {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z ")),
            "nginx process {pid} still running after drop"
        );
    }
}

#[test]
fn two_nginx_instances_get_different_ports() {
    let a = Nginx::start();
    let b = Nginx::start();
    assert_ne!(a.addr(), b.addr());
    assert!(get(&b, "/").ends_with("ok\n"));
}

#[test]
fn free_port_is_bindable_on_loopback() {
    let port = support::free_port();
    assert_ne!(port, 0);
    std::net::TcpListener::bind(("127.0.0.1", port)).expect("bind the port just returned");
}

#[test]
fn free_port_never_hands_out_a_port_twice() {
    let ports: Vec<u16> = (0..500).map(|_| support::free_port()).collect();
    let distinct: std::collections::HashSet<_> = ports.iter().collect();
    assert_eq!(distinct.len(), ports.len(), "a port came back twice");
}

#[test]
fn run_headroom_captures_exit_status_and_output() {
    let out = support::run_headroom(["--help"], Duration::from_secs(30));
    assert!(support::headroom_bin().is_file());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}
