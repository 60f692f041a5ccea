//! A small keep-alive HTTP/1.1 server for tests whose target must answer in a way
//! of their choosing: each request head (bodies are not expected) gets the reply a
//! closure gives, on the same connection, for as long as the client keeps it.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// Most connections one server accepts, so a runaway client cannot grow it forever.
const MAX_CONNECTIONS: usize = 500;
/// Longest request head read before the connection is dropped.
const MAX_HEAD: usize = 16 * 1024;

/// Serves on a free 127.0.0.1 port until the test process ends, answering each
/// request with the bytes `reply` gives for it (its argument counts requests from 0
/// over all connections). Returns the address and the count of connections accepted.
pub(crate) fn keep_alive_server(
    reply: impl Fn(u64) -> &'static [u8] + Send + Sync + 'static,
) -> (SocketAddr, Arc<AtomicU64>) {
    keep_alive_writer(move |n, stream| stream.write_all(reply(n)))
}

/// [`keep_alive_server`] for answers written over time: `answer` writes the response
/// to request `n` itself (it may pause between parts; the socket has `TCP_NODELAY`, so
/// each write leaves at once). An error closes the connection.
pub(crate) fn keep_alive_writer(
    answer: impl Fn(u64, &mut TcpStream) -> io::Result<()> + Send + Sync + 'static,
) -> (SocketAddr, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicU64::new(0));
    let requests = Arc::new(AtomicU64::new(0));
    let answer = Arc::new(answer);
    let count = accepted.clone();
    thread::spawn(move || {
        for stream in listener.incoming().take(MAX_CONNECTIONS) {
            let Ok(mut stream) = stream else { continue };
            count.fetch_add(1, Ordering::SeqCst);
            let (answer, requests) = (answer.clone(), requests.clone());
            thread::spawn(move || {
                let _ = stream.set_nodelay(true);
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
                        let n = requests.fetch_add(1, Ordering::SeqCst);
                        if answer(n, &mut stream).is_err() {
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
