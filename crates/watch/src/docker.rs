//! `docker:NAME`: a container's cgroup, found through the Docker Engine API on its unix
//! socket (`GET /containers/NAME/json` → `State.Pid` → `/proc/PID/cgroup`), then
//! watched as a cgroup. Without a reachable engine the watch cannot start.
//!
//! The GET is hyper's HTTP/1.1 client connection over a tokio `UnixStream`, on a
//! current-thread runtime made for it: at most [`TIMEOUT`] in all, the body at most
//! [`MAX_BODY`].

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::rt::TokioIo;

use super::cgroup::cgroup_of;
use super::error::{Chain, HttpError, ProbeError, MAX_BODY};
use super::scrape::known_cause;

/// Where the engine listens unless `DOCKER_HOST` names another `unix://` socket.
const DEFAULT_SOCKET: &str = "/var/run/docker.sock";
/// Longest the engine is given to answer, connection included.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The engine's socket path: `DOCKER_HOST=unix:///path` or the default.
fn socket_path() -> String {
    std::env::var("DOCKER_HOST")
        .ok()
        .and_then(|h| h.strip_prefix("unix://").map(String::from))
        .unwrap_or_else(|| DEFAULT_SOCKET.to_string())
}

/// The cgroup v2 path of container `name`, or why it cannot be found.
pub(crate) fn container_cgroup(name: &str) -> Result<String, ProbeError> {
    container_cgroup_at(&socket_path(), name)
}

/// [`container_cgroup`], asking the engine on `socket`.
fn container_cgroup_at(socket: &str, name: &str) -> Result<String, ProbeError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(ProbeError::Runtime)?;
    let asked =
        runtime.block_on(async { tokio::time::timeout(TIMEOUT, inspect(socket, name)).await });
    let (status, body) = asked.map_err(|_| HttpError::TimedOut { within: TIMEOUT })??;
    match status {
        200 => {}
        404 => {
            return Err(ProbeError::NoContainer {
                name: name.to_string(),
            })
        }
        other => {
            return Err(ProbeError::DockerStatus {
                status: other,
                name: name.to_string(),
            })
        }
    }
    let info: serde_json::Value = serde_json::from_slice(&body).map_err(ProbeError::DockerReply)?;
    let pid = info["State"]["Pid"]
        .as_u64()
        .filter(|&p| p > 0)
        .ok_or_else(|| ProbeError::NotRunning {
            name: name.to_string(),
        })?;
    cgroup_of(pid as u32).ok_or_else(|| ProbeError::NoContainerCgroup {
        name: name.to_string(),
        pid,
    })
}

/// `GET /containers/NAME/json` from the engine on `socket`: the status and the body.
async fn inspect(socket: &str, name: &str) -> Result<(u16, Bytes), ProbeError> {
    let stream = tokio::net::UnixStream::connect(socket)
        .await
        .map_err(|source| ProbeError::NoDocker {
            socket: socket.to_owned(),
            source,
        })?;
    let failed = |e: &(dyn std::error::Error + 'static)| {
        known_cause(e, socket).unwrap_or_else(|| HttpError::Client(Chain::of(e)))
    };
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| failed(&e))?;
    // Drives the connection while the request is answered; ends with the runtime.
    tokio::spawn(connection);
    // A name that cannot be in a path cannot be a container's.
    let request = http::Request::get(format!("/containers/{name}/json"))
        .header(http::header::HOST, "docker")
        .body(Empty::<Bytes>::new())
        .map_err(|_| ProbeError::NoContainer {
            name: name.to_string(),
        })?;
    let response = sender.send_request(request).await.map_err(|e| failed(&e))?;
    let status = response.status().as_u16();
    let body = Limited::new(response.into_body(), MAX_BODY as usize)
        .collect()
        .await
        .map_err(|e| failed(&*e))?
        .to_bytes();
    Ok((status, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_an_engine_the_error_says_so() {
        // A socket path nothing listens on, whether or not this machine runs Docker.
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("docker.sock");
        let socket = socket.to_str().unwrap();
        let err = container_cgroup_at(socket, "db").unwrap_err().to_string();
        assert!(
            err.contains(&format!("no Docker engine is reachable at {socket}")),
            "{err}"
        );
    }

    /// A fake engine on a unix socket in `dir`: answers one request with `answer`, then
    /// `flood` bytes while the client reads; returns the socket and the request read.
    fn fake_engine(
        dir: &std::path::Path,
        answer: impl Into<Vec<u8>>,
        flood: bool,
    ) -> (String, std::thread::JoinHandle<String>) {
        use std::io::{Read, Write};
        let socket = dir.join("docker.sock");
        let answer = answer.into();
        let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut buf).unwrap() {
                    0 => break,
                    n => request.extend_from_slice(&buf[..n]),
                }
            }
            let _ = conn.write_all(&answer);
            let block = vec![b'x'; 64 * 1024];
            while flood && conn.write_all(&block).is_ok() {}
            String::from_utf8(request).unwrap()
        });
        (socket.to_str().unwrap().to_string(), server)
    }

    #[test]
    fn the_engine_is_asked_over_http_1_1_and_its_answers_read() {
        let dir = tempfile::tempdir().unwrap();
        let (socket, server) = fake_engine(
            dir.path(),
            &b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}"[..],
            false,
        );
        let err = container_cgroup_at(&socket, "db").unwrap_err().to_string();
        assert_eq!(err, "the Docker engine knows no container \"db\"");
        let request = server.join().unwrap().to_ascii_lowercase();
        assert!(
            request.starts_with("get /containers/db/json http/1.1\r\n")
                && request.contains("host: docker\r\n"),
            "{request}"
        );
        let dir = tempfile::tempdir().unwrap();
        let body = br#"{"State":{"Pid":0}}"#;
        let answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{}",
            body.len(),
            String::from_utf8_lossy(body)
        );
        let (socket, server) = fake_engine(dir.path(), answer, false);
        let err = container_cgroup_at(&socket, "db").unwrap_err().to_string();
        assert_eq!(err, "container \"db\" is not running");
        server.join().unwrap();
    }

    #[test]
    fn an_endless_reply_is_cut_at_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let (socket, server) = fake_engine(dir.path(), &b"HTTP/1.1 200 OK\r\n\r\n"[..], true);
        let err = container_cgroup_at(&socket, "db").unwrap_err().to_string();
        assert_eq!(err, "response body larger than 16 MiB");
        server.join().unwrap();
    }
}
