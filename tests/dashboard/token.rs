//! A dashboard with a token (`--dashboard-token`, issue 31): without it nothing is
//! served, not the figures (`/state`, `/metrics`, `/events`) and not Stop; with it, as
//! a bearer header, the cookie its URL sets, or in that URL, all of it is.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use headroom::target::{self, TargetOptions};

use super::{serial, Running};

const TOKEN: &str = "s3cret-0123456789abcdef";

/// One request with `extra` header lines; the status and the whole reply.
fn exchange(addr: SocketAddr, method: &str, path: &str, extra: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = Vec::new();
    // An event stream does not end: what came within the timeout is enough.
    let _ = s.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply).into_owned();
    let status = reply
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, reply)
}

#[test]
fn without_its_token_the_dashboard_serves_nothing_and_cannot_stop_the_run() {
    let _one = serial();
    let target = target::spawn(TargetOptions::loopback()).expect("built-in target");
    let url = format!("{}/status/200", target.url());
    let run = Running::start(&[
        "run",
        "--url",
        &url,
        "--rate",
        "50",
        "--duration",
        "4s",
        "--dashboard-token",
        TOKEN,
    ]);
    let addr = run.addr;
    // Refused, with how to authenticate; the token itself was not printed.
    for (method, path, extra) in [
        ("GET", "/state", ""),
        ("GET", "/metrics", ""),
        ("GET", "/events", ""),
        ("GET", "/", ""),
        (
            "GET",
            "/state",
            "Authorization: Bearer s3cret-0123456789abcdeX\r\n",
        ),
        ("GET", "/state", "Cookie: headroom_token=wrong\r\n"),
        ("POST", "/stop", "x-headroom-stop: 1\r\n"),
    ] {
        let (status, reply) = exchange(addr, method, path, extra);
        assert_eq!(status, 401, "{method} {path} {extra}: {reply}");
        assert!(
            reply.contains("WWW-Authenticate: Bearer")
                || reply.contains("www-authenticate: Bearer"),
            "{reply}"
        );
        assert!(!reply.contains("\"rows\""), "{reply}");
    }
    // With it: a bearer header (a Prometheus scrape), the URL, then its cookie.
    let bearer = format!("Authorization: Bearer {TOKEN}\r\n");
    let (status, reply) = exchange(addr, "GET", "/metrics", &bearer);
    assert_eq!(status, 200, "{reply}");
    let (status, reply) = exchange(addr, "GET", &format!("/?token={TOKEN}"), "");
    assert_eq!(status, 200, "{reply}");
    let cookie = reply
        .lines()
        .find_map(|l| {
            l.strip_prefix("set-cookie: ")
                .or_else(|| l.strip_prefix("Set-Cookie: "))
        })
        .unwrap_or_else(|| panic!("no cookie set: {reply}"));
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap();
    let (status, reply) = exchange(addr, "GET", "/state", &format!("Cookie: {pair}\r\n"));
    assert_eq!(status, 200, "{reply}");
    assert!(reply.contains("\"meta\""), "{reply}");
    let (code, took, stderr) = run.wait(Duration::from_secs(30));
    // Nobody without the token stopped it: it ran its whole 4 s and passed.
    assert_eq!(code, 0, "{stderr}");
    assert!(took >= Duration::from_secs(4), "{took:?}");
    assert!(
        !stderr.contains(TOKEN),
        "the user's token was echoed: {stderr}"
    );
    assert!(!stderr.contains("stop asked from the page"), "{stderr}");
}
