//! The scrape client against real servers on loopback: a plain answer, a refused
//! connection, no answer, and hostile answers cut at their limits.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::thread;

use super::*;

/// Serves one connection: reads the request head, then writes `answer` and, when
/// `flood` is given, that byte forever (until the client goes away).
fn serve_once(
    answer: &'static [u8],
    flood: Option<u8>,
) -> (SocketAddr, thread::JoinHandle<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut request = Vec::new();
        let mut buf = [0u8; 1024];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = conn.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            request.extend_from_slice(&buf[..n]);
        }
        let _ = conn.write_all(answer);
        if let Some(byte) = flood {
            let block = vec![byte; 64 * 1024];
            while conn.write_all(&block).is_ok() {}
        }
        request
    });
    (addr, server)
}

fn scraper(url: &str, timeout: Duration) -> Scraper {
    Scraper::new(url, None, timeout).unwrap()
}

#[test]
fn urls_split_into_host_port_and_scheme() {
    let e = Endpoint::parse("http://127.0.0.1:9100/metrics?x=1").unwrap();
    assert_eq!((e.host.as_str(), e.port, e.tls), ("127.0.0.1", 9100, false));
    let e = Endpoint::parse("http://[::1]/").unwrap();
    assert_eq!((e.host.as_str(), e.port, e.tls), ("::1", 80, false));
    let e = Endpoint::parse("https://example.com/metrics").unwrap();
    assert_eq!((e.host.as_str(), e.port, e.tls), ("example.com", 443, true));
    let err = Endpoint::parse("ftp://x/metrics").unwrap_err().to_string();
    assert_eq!(
        err,
        "expected an http:// or https:// URL, found \"ftp://x/metrics\""
    );
}

#[test]
fn get_reads_status_and_body_from_a_real_server() {
    // An HTTP/1.0 answer without a length: the body runs to the close.
    let (addr, server) = serve_once(
        b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nup 1\n",
        None,
    );
    let s = scraper(&format!("http://{addr}/m?x=1"), Duration::from_secs(5));
    let (status, body) = s.get().unwrap();
    let request = String::from_utf8(server.join().unwrap()).unwrap();
    assert!(request.starts_with("GET /m?x=1 HTTP/1.1\r\n"), "{request}");
    assert!(
        request
            .to_ascii_lowercase()
            .contains("accept: text/plain\r\n"),
        "{request}"
    );
    assert_eq!((status, body.as_slice()), (200, &b"up 1\n"[..]));
    // Nothing listens there any more: the hand-written client's words, byte for byte.
    let err = s.get().unwrap_err().to_string();
    assert_eq!(
        err,
        format!("connect {addr}: Connection refused (os error 111)")
    );
}

#[test]
fn an_endless_body_is_cut_at_the_limit() {
    let (addr, server) = serve_once(b"HTTP/1.1 200 OK\r\n\r\n", Some(b'b'));
    let s = scraper(&format!("http://{addr}/metrics"), Duration::from_secs(20));
    let err = s.get().unwrap_err();
    assert!(matches!(err, HttpError::BodyTooLarge), "{err}");
    assert_eq!(err.to_string(), "response body larger than 16 MiB");
    drop(s);
    server.join().unwrap();
}

#[test]
fn an_endless_header_is_cut_at_the_limit() {
    let (addr, server) = serve_once(b"HTTP/1.1 200 OK\r\nX-Endless: ", Some(b'h'));
    let s = scraper(&format!("http://{addr}/metrics"), Duration::from_secs(20));
    let err = s.get().unwrap_err();
    assert!(matches!(err, HttpError::HeadTooLarge), "{err}");
    drop(s);
    server.join().unwrap();
}

#[test]
fn a_server_that_never_answers_times_out() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let s = scraper(
        &format!("http://{addr}/metrics"),
        Duration::from_millis(300),
    );
    let err = s.get().unwrap_err().to_string();
    assert_eq!(err, "no answer within 300ms");
    drop(listener);
}

#[test]
fn garbage_is_a_malformed_response() {
    let (addr, server) = serve_once(b"SSH-2.0-OpenSSH_9.6\r\n\r\n", None);
    let s = scraper(&format!("http://{addr}/metrics"), Duration::from_secs(5));
    let err = s.get().unwrap_err().to_string();
    assert!(err.starts_with("malformed response: "), "{err}");
    server.join().unwrap();
}
