//! A minimal HTTP/1.0 GET over any byte stream (TCP for Prometheus endpoints, a unix
//! socket for the Docker Engine API). HTTP/1.0 makes the server send a plain body and
//! close the connection, so the whole exchange is write, read to end, parse the head
//! with `httparse` — no client stack for a request a second.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::error::HttpError;

/// Largest response read (a big exposition is a few MiB).
const MAX_BODY: u64 = 16 * 1024 * 1024;

/// Sends `GET path` with `Host: host` on `stream` and returns the status and body.
pub(crate) fn get(
    mut stream: impl Read + Write,
    host: &str,
    path: &str,
) -> Result<(u16, Vec<u8>), HttpError> {
    let request = format!("GET {path} HTTP/1.0\r\nHost: {host}\r\nAccept: text/plain\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .map_err(HttpError::Send)?;
    let mut raw = Vec::new();
    stream
        .take(MAX_BODY)
        .read_to_end(&mut raw)
        .map_err(HttpError::Read)?;
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    match response.parse(&raw) {
        Ok(httparse::Status::Complete(head)) => {
            let status = response.code.unwrap_or(0);
            Ok((status, raw[head..].to_vec()))
        }
        Ok(httparse::Status::Partial) => Err(HttpError::Incomplete),
        Err(e) => Err(HttpError::Malformed(e)),
    }
}

/// Splits an `http://host:port/path` URL into (host, port, path-and-query).
pub(crate) fn split_url(url: &str) -> Result<(String, u16, String), HttpError> {
    let uri: http::Uri = url.parse().map_err(|source| HttpError::BadUrl {
        url: url.to_string(),
        source,
    })?;
    if uri.scheme_str() != Some("http") {
        return Err(HttpError::NotHttp {
            url: url.to_string(),
        });
    }
    let host = uri.host().ok_or_else(|| HttpError::NoHost {
        url: url.to_string(),
    })?;
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    Ok((host, uri.port_u16().unwrap_or(80), path))
}

/// GETs an `http://` URL over TCP with `timeout` for connect, send and receive.
pub(crate) fn get_url(url: &str, timeout: Duration) -> Result<(u16, Vec<u8>), HttpError> {
    let (host, port, path) = split_url(url)?;
    let addr = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|source| HttpError::Resolve {
            host: host.clone(),
            source,
        })?
        .next()
        .ok_or_else(|| HttpError::NoAddress { host: host.clone() })?;
    let stream = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|source| HttpError::Connect { addr, source })?;
    stream
        .set_read_timeout(Some(timeout))
        .map_err(HttpError::Timeout)?;
    stream
        .set_write_timeout(Some(timeout))
        .map_err(HttpError::Timeout)?;
    get(stream, &format!("{host}:{port}"), &path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_host_port_and_path() {
        assert_eq!(
            split_url("http://127.0.0.1:9100/metrics?x=1").unwrap(),
            ("127.0.0.1".into(), 9100, "/metrics?x=1".into())
        );
        assert_eq!(
            split_url("http://[::1]/").unwrap(),
            ("::1".into(), 80, "/".into())
        );
        assert!(split_url("https://x/metrics").is_err());
    }

    #[test]
    fn get_reads_status_and_body_from_a_real_server() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut buf = [0u8; 1024];
            let n = conn.read(&mut buf).unwrap();
            assert!(buf[..n].starts_with(b"GET /m HTTP/1.0\r\n"));
            conn.write_all(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nup 1\n")
                .unwrap();
        });
        let (status, body) = get_url(&format!("http://{addr}/m"), Duration::from_secs(5)).unwrap();
        server.join().unwrap();
        assert_eq!((status, body.as_slice()), (200, &b"up 1\n"[..]));
        let refused = get_url(&format!("http://{addr}/m"), Duration::from_secs(1));
        assert!(refused.unwrap_err().to_string().contains("connect"));
    }
}
