//! The floor of the closed loop: N keep-alive HTTP/1.1 connections, each sending its
//! next GET as soon as the last response is whole, on tokio's current-thread runtime
//! and a `LocalSet` as headroom's engine threads are, with the response head parsed by
//! httparse as headroom's client does. It reads the clock once per response (to know
//! when to stop), as wrk does; it keeps no latency, no histogram, no timeout, no
//! idle check and no error accounting. What it spends per request is what any tokio
//! client pays on this machine; what headroom spends above it is its measuring.
//!
//!     headroom-bench-floor URL CONNECTIONS SECONDS
//!
//! Prints the number of responses completed. Exits non-zero, naming why, on a bad
//! argument, a failed connection or a response it cannot read.

use std::cell::Cell;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// What stops the floor, named.
#[derive(Debug, thiserror::Error)]
enum FloorError {
    #[error("usage: headroom-bench-floor URL CONNECTIONS SECONDS")]
    Usage,
    #[error("{0}: only http:// URLs")]
    Url(String),
    #[error("{0}: expected a connection count above 0")]
    Connections(String),
    #[error("{0}: expected seconds above 0")]
    Seconds(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("a user task: {0}")]
    Task(#[from] tokio::task::JoinError),
    #[error("a response over {MAX_RESPONSE} bytes")]
    TooLarge,
    #[error("the server closed the connection")]
    Closed,
    #[error("response head: {0}")]
    Head(#[from] httparse::Error),
    #[error("a response without a valid Content-Length")]
    Length,
}

/// `what` failed with `source`.
fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> FloorError {
    move |source| FloorError::Io {
        what: what.into(),
        source,
    }
}

/// The most a response may take before the floor gives up on it: the benchmark's
/// nginx answers "ok\n" with a head of a few hundred bytes.
const MAX_RESPONSE: usize = 64 * 1024;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match args.as_slice() {
        [url, connections, seconds] => parse(url, connections, seconds),
        _ => Err(FloorError::Usage),
    };
    let (authority, path, connections, seconds) = match parsed {
        Ok(p) => p,
        Err(e) => {
            eprintln!("headroom-bench-floor: {e}");
            return ExitCode::from(2);
        }
    };
    match run(
        &authority,
        &path,
        connections,
        Duration::from_secs_f64(seconds),
    ) {
        Ok(count) => {
            println!("{count}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("headroom-bench-floor: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `http://HOST:PORT/PATH`, a connection count and seconds.
fn parse(
    url: &str,
    connections: &str,
    seconds: &str,
) -> Result<(String, String, usize, f64), FloorError> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| FloorError::Url(url.into()))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let connections: usize = connections
        .parse()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| FloorError::Connections(connections.into()))?;
    let seconds: f64 = seconds
        .parse()
        .ok()
        .filter(|&s: &f64| s > 0.0 && s.is_finite())
        .ok_or_else(|| FloorError::Seconds(seconds.into()))?;
    Ok((
        authority.to_string(),
        path.to_string(),
        connections,
        seconds,
    ))
}

/// Runs the loop for `length` and returns the responses completed.
fn run(
    authority: &str,
    path: &str,
    connections: usize,
    length: Duration,
) -> Result<u64, FloorError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(io("runtime"))?;
    let local = tokio::task::LocalSet::new();
    let request: Rc<[u8]> = format!(
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: headroom-bench-floor\r\n\r\n"
    )
    .into_bytes()
    .into();
    let count = Rc::new(Cell::new(0u64));
    let end = Instant::now() + length;
    local.block_on(&runtime, async {
        let mut users = Vec::with_capacity(connections);
        for _ in 0..connections {
            let stream = TcpStream::connect(authority)
                .await
                .map_err(io(format!("connect {authority}")))?;
            stream.set_nodelay(true).map_err(io("TCP_NODELAY"))?;
            let (request, count) = (request.clone(), count.clone());
            users.push(tokio::task::spawn_local(user(stream, request, count, end)));
        }
        for u in users {
            u.await??;
        }
        Ok::<(), FloorError>(())
    })?;
    Ok(count.get())
}

/// One connection's loop until `end`.
async fn user(
    mut stream: TcpStream,
    request: Rc<[u8]>,
    count: Rc<Cell<u64>>,
    end: Instant,
) -> Result<(), FloorError> {
    let mut buf = vec![0u8; 4096];
    while Instant::now() < end {
        stream.write_all(&request).await.map_err(io("write"))?;
        let mut filled = 0;
        loop {
            if filled == buf.len() {
                if buf.len() >= MAX_RESPONSE {
                    return Err(FloorError::TooLarge);
                }
                buf.resize(buf.len() * 2, 0);
            }
            let n = stream.read(&mut buf[filled..]).await.map_err(io("read"))?;
            if n == 0 {
                return Err(FloorError::Closed);
            }
            filled += n;
            if whole(&buf[..filled])? {
                break;
            }
        }
        count.set(count.get() + 1);
    }
    Ok(())
}

/// Whether `bytes` hold a whole response: its head and a Content-Length body.
fn whole(bytes: &[u8]) -> Result<bool, FloorError> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut response = httparse::Response::new(&mut headers);
    let head = match response.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    let length = response
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("content-length"))
        .ok_or(FloorError::Length)?;
    let length: usize = std::str::from_utf8(length.value)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .ok_or(FloorError::Length)?;
    Ok(bytes.len() >= head + length)
}
