//! A one-shot HTTP/1.1 GET (or empty POST) over a plain TCP connection, for tests that
//! read back what a target holds (`/tasks`) after a run, or poke its `/admin/*`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// `GET path` on `addr` with `connection: close`; returns the status code and body.
pub(crate) fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    request(addr, "GET", path)
}

/// `POST path` with an empty body on `addr` (`connection: close`), as a target's
/// `/admin/*` takes it; returns the status code and body.
pub(crate) fn http_post(addr: SocketAddr, path: &str) -> (u16, String) {
    request(addr, "POST", path)
}

fn request(addr: SocketAddr, method: &str, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = Vec::new();
    // At most 16 MiB: a test target's answer is far smaller.
    stream.take(16 << 20).read_to_end(&mut response).unwrap();
    let text = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    (status, body)
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
    out
}
