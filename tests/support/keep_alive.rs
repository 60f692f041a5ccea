//! A small keep-alive HTTP/1.1 server for tests whose target must answer in a way
//! of their choosing: each request head (bodies are not expected) gets the reply a
//! closure gives, on the same connection, for as long as the client keeps it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// Most connections one server accepts, so a runaway client cannot grow it forever.
const MAX_CONNECTIONS: usize = 500;
/// Longest request head read before the connection is dropped.
const MAX_HEAD: usize = 16 * 1024;

/// Serves on a free 127.0.0.1 port until the test process ends; `reply` is called
/// once per request, in order over all connections (its argument counts from 0).
/// Returns the address and the count of connections accepted so far.
pub(crate) fn keep_alive_server(
    reply: impl Fn(u64) -> &'static [u8] + Send + Sync + 'static,
) -> (SocketAddr, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicU64::new(0));
    let requests = Arc::new(AtomicU64::new(0));
    let reply = Arc::new(reply);
    let count = accepted.clone();
    thread::spawn(move || {
        for stream in listener.incoming().take(MAX_CONNECTIONS) {
            let Ok(mut stream) = stream else { continue };
            count.fetch_add(1, Ordering::SeqCst);
            let (reply, requests) = (reply.clone(), requests.clone());
            thread::spawn(move || {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                let mut buf = [0u8; 4096];
                let mut pending = Vec::new();
                loop {
                    let n = match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    pending.extend_from_slice(&buf[..n]);
                    while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                        pending.drain(..end + 4);
                        let answer = reply(requests.fetch_add(1, Ordering::SeqCst));
                        if stream.write_all(answer).is_err() {
                            return;
                        }
                    }
                    if pending.len() > MAX_HEAD {
                        return;
                    }
                }
            });
        }
    });
    (addr, accepted)
}
