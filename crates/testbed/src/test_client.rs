//! A minimal HTTP/1.1 client for the target's socket tests: one request per
//! connection (`Connection: close`), the response read to EOF and parsed with httparse.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A parsed response.
#[derive(Debug)]
pub(super) struct Response {
    pub(super) status: u16,
    pub(super) headers: Vec<(String, String)>,
    pub(super) body: Vec<u8>,
}

impl Response {
    /// The first header of this name (case-insensitive).
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text.
    pub(super) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON; panics if it is not.
    pub(super) fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text()))
    }
}

/// Sends one request and reads the whole response, failing after 10 s.
pub(super) async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<Response> {
    let exchange = async {
        let stream = TcpStream::connect(addr).await?;
        send_on(stream, method, path, headers, body).await
    };
    tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .unwrap_or_else(|_| Err(std::io::Error::other("request timed out")))
}

/// Sends one request on an open connection and reads the whole response; the
/// connection is closed afterwards. No time limit of its own.
pub(super) async fn send_on(
    mut stream: TcpStream,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<Response> {
    let addr = stream.peer_addr()?;
    {
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-length: {}\r\n",
            body.len()
        );
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body).await?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await?;
        parse(&raw)
    }
}

/// `GET path`.
pub(super) async fn get(addr: SocketAddr, path: &str) -> std::io::Result<Response> {
    send(addr, "GET", path, &[], b"").await
}

fn parse(raw: &[u8]) -> std::io::Result<Response> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut res = httparse::Response::new(&mut headers);
    match res.parse(raw) {
        Ok(httparse::Status::Complete(len)) => Ok(Response {
            status: res.code.unwrap_or(0),
            headers: res
                .headers
                .iter()
                .map(|h| {
                    (
                        h.name.to_owned(),
                        String::from_utf8_lossy(h.value).into_owned(),
                    )
                })
                .collect(),
            body: raw[len..].to_vec(),
        }),
        _ => Err(std::io::Error::other(format!(
            "incomplete or malformed response: {:?}",
            String::from_utf8_lossy(raw)
        ))),
    }
}
