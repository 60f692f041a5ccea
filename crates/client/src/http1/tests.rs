//! Table tests of [`Conn`] against scripted servers: an in-memory duplex stream for the
//! framing cases, real loopback TCP where the kernel's behaviour matters (resets).

use std::time::Duration;

use tokio::io::{duplex, AsyncReadExt, AsyncWriteExt, DuplexStream};

use super::*;
use headroom_metrics::ErrorKind;

pub(super) const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: test\r\n\r\n";
/// Bounds every exchange: a hang fails the test instead of stalling the suite.
const LIMIT: Duration = Duration::from_secs(5);

/// What a scripted server does after reading one request.
#[derive(Clone)]
pub(super) enum Act {
    /// Writes these bytes and waits for the next request.
    Reply(Vec<u8>),
    /// Writes these bytes and closes.
    ReplyClose(Vec<u8>),
    /// Writes these bytes, then waits, then writes more (unasked).
    ReplyThenLater(Vec<u8>, Duration, Vec<u8>),
    /// Writes the prefix, then `filler` up to `total` bytes in all (or until the
    /// client goes away): a flood.
    Flood {
        prefix: Vec<u8>,
        filler: u8,
        total: usize,
    },
}

/// Reads one request head; false at end of stream.
pub(super) async fn read_request(stream: &mut (impl AsyncRead + Unpin)) -> bool {
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !seen.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte).await {
            Ok(1) => seen.push(byte[0]),
            _ => return false,
        }
    }
    true
}

/// Plays `script` on `stream`, one act per request, then holds the connection
/// open until the client goes away. Returns how many requests it read.
pub(super) async fn play(
    mut stream: impl AsyncRead + AsyncWrite + Unpin,
    script: Vec<Act>,
) -> usize {
    let mut requests = 0;
    for act in script {
        if !read_request(&mut stream).await {
            return requests;
        }
        requests += 1;
        match act {
            Act::Reply(bytes) => {
                let _ = stream.write_all(&bytes).await;
            }
            Act::ReplyClose(bytes) => {
                let _ = stream.write_all(&bytes).await;
                return requests;
            }
            Act::ReplyThenLater(bytes, pause, later) => {
                let _ = stream.write_all(&bytes).await;
                tokio::time::sleep(pause).await;
                let _ = stream.write_all(&later).await;
            }
            Act::Flood {
                prefix,
                filler,
                total,
            } => {
                let _ = stream.write_all(&prefix).await;
                let block = vec![filler; 16 * 1024];
                let mut sent = prefix.len();
                while sent < total {
                    let n = block.len().min(total - sent);
                    if stream.write_all(&block[..n]).await.is_err() {
                        return requests;
                    }
                    sent += n;
                }
            }
        }
    }
    // Hold the connection until the client closes it.
    let mut sink = [0u8; 1024];
    while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
    requests
}

/// A connection with `limits` to a task playing `script`.
pub(super) fn scripted(
    script: Vec<Act>,
    limits: Limits,
) -> (Conn<DuplexStream>, tokio::task::JoinHandle<usize>) {
    let (client, server) = duplex(64 * 1024);
    let task = tokio::spawn(play(server, script));
    (
        Conn::new(client, limits, BodyBudget::new(DEFAULT_BODY_BUDGET)),
        task,
    )
}

/// One round trip, bounded by [`LIMIT`].
pub(super) async fn exchange<S: AsyncRead + AsyncWrite + super::TryIo + Unpin>(
    conn: &mut Conn<S>,
    keep: bool,
    head: bool,
) -> Result<Response, RoundTripError> {
    tokio::time::timeout(LIMIT, conn.round_trip(REQUEST, keep, head))
        .await
        .expect("round trip hung")
}

/// What a case expects.
#[derive(Debug)]
enum Want {
    /// Status, body (kept), and whether the connection may carry another request.
    Ok(u16, &'static [u8], bool),
    /// The kind, and text the detail must contain.
    Err(ErrorKind, &'static str),
}

#[tokio::test]
async fn responses_are_framed_as_http_1_1_says() {
    use Want::*;
    let cl = |s: &str| s.as_bytes().to_vec();
    // (name, reply, close after it, HEAD request, expected)
    let cases: Vec<(&str, Vec<u8>, bool, bool, Want)> = vec![
        ("content-length", cl("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"), false, false, Ok(200, b"hello", true)),
        ("empty body", cl("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), false, false, Ok(200, b"", true)),
        ("chunked", cl("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"), false, false, Ok(200, b"hello world", true)),
        ("chunk sizes in hex, any case", cl("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nA\r\n0123456789\r\na\r\n0123456789\r\n0\r\n\r\n"), false, false, Ok(200, b"01234567890123456789", true)),
        ("chunk extensions", cl("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;name=value;x\r\nhello\r\n0;last=\"yes\"\r\n\r\n"), false, false, Ok(200, b"hello", true)),
        ("trailers", cl("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Checksum: abc\r\nX-Other: 1\r\n\r\n"), false, false, Ok(200, b"ok", true)),
        ("gzip, chunked", cl("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nzzz\r\n0\r\n\r\n"), false, false, Ok(200, b"zzz", true)),
        ("no length: until close", cl("HTTP/1.1 200 OK\r\n\r\nuntil close"), true, false, Ok(200, b"until close", false)),
        ("HTTP/1.0 without length", cl("HTTP/1.0 200 OK\r\n\r\nold"), true, false, Ok(200, b"old", false)),
        ("HTTP/1.0 keep-alive", cl("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok"), false, false, Ok(200, b"ok", true)),
        ("Connection: close", cl("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"), false, false, Ok(200, b"ok", false)),
        ("Connection: close, Upgrade", cl("HTTP/1.1 200 OK\r\nConnection: close, Upgrade\r\nContent-Length: 2\r\n\r\nok"), false, false, Ok(200, b"ok", false)),
        ("1xx before the final response", cl("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"), false, false, Ok(201, b"ok", true)),
        ("HEAD: a length but no body", cl("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"), false, true, Ok(200, b"", true)),
        ("204 without body", cl("HTTP/1.1 204 No Content\r\n\r\n"), false, false, Ok(204, b"", true)),
        ("304 without body", cl("HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n"), false, false, Ok(304, b"", true)),
        ("an extra response is not reused", cl("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n"), false, false, Ok(200, b"ok", false)),
        ("garbage", cl("\x00\x01garbage\r\n\r\n"), false, false, Err(ErrorKind::Protocol, "bad response head")),
        ("status without digits", cl("HTTP/1.1 OK\r\n\r\n"), false, false, Err(ErrorKind::Protocol, "bad response head")),
        ("101 never asked for", cl("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n"), false, false, Err(ErrorKind::Protocol, "101")),
        ("conflicting lengths", cl("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok"), false, false, Err(ErrorKind::Protocol, "conflicting content-length")),
        ("bad chunk size", cl("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"), false, false, Err(ErrorKind::Protocol, "bad chunk size")),
        ("empty chunk size", cl("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n"), false, false, Err(ErrorKind::Protocol, "bad chunk size")),
        ("chunk without CRLF", cl("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX0\r\n\r\n"), false, false, Err(ErrorKind::Protocol, "CRLF")),
        ("length longer than sent, then close", cl("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"), true, false, Err(ErrorKind::Reset, "closed before the response was complete")),
        ("closed mid-chunk", cl("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc"), true, false, Err(ErrorKind::Reset, "closed")),
        ("closed mid-head", cl("HTTP/1.1 200 OK\r\nContent-Le"), true, false, Err(ErrorKind::Reset, "closed")),
        ("closed before any byte", Vec::new(), true, false, Err(ErrorKind::Reset, "closed")),
    ];
    for (name, reply, close, head, want) in cases {
        let act = if close {
            Act::ReplyClose(reply)
        } else {
            Act::Reply(reply)
        };
        for keep in [true, false] {
            let (mut conn, _server) = scripted(vec![act.clone()], Limits::default());
            let got = exchange(&mut conn, keep, head).await;
            match (&want, got) {
                (Ok(status, body, reusable), Result::Ok(r)) => {
                    assert_eq!(r.status, *status, "{name}");
                    assert_eq!(r.body_len, body.len() as u64, "{name}");
                    let kept: &[u8] = if keep { body } else { b"" };
                    assert_eq!(conn.body(), kept, "{name} (keep {keep})");
                    assert_eq!(conn.reusable(), *reusable, "{name}");
                    assert_eq!(conn.served(), 1, "{name}");
                }
                (Err(kind, detail), Result::Err(e)) => {
                    assert_eq!(e.kind, *kind, "{name}: {e}");
                    assert!(e.detail.contains(detail), "{name}: {e}");
                    assert!(e.sent && !e.stale, "{name}: {e:?}");
                    assert!(!conn.reusable(), "{name}");
                }
                (want, got) => panic!("{name} (keep {keep}): want {want:?}, got {got:?}"),
            }
        }
    }
}

#[tokio::test]
async fn a_keep_alive_connection_carries_many_requests() {
    let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec();
    let chunked =
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n".to_vec();
    let script = vec![Act::Reply(ok.clone()), Act::Reply(chunked), Act::Reply(ok)];
    let (mut conn, server) = scripted(script, Limits::default());
    for _ in 0..3 {
        let r = exchange(&mut conn, true, false).await.unwrap();
        assert_eq!((r.status, conn.body()), (200, &b"ok"[..]));
        assert!(conn.reusable());
    }
    assert_eq!(conn.served(), 3);
    drop(conn);
    assert_eq!(server.await.unwrap(), 3);
}

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

#[tokio::test]
async fn a_connection_the_peer_closed_while_idle_is_stale_and_nothing_is_sent() {
    let (mut conn, server) = scripted(vec![Act::ReplyClose(OK.to_vec())], Limits::default());
    exchange(&mut conn, false, false).await.unwrap();
    assert!(conn.reusable(), "the close is not known yet");
    // Let the close arrive, as it does while a keep-alive connection sits in a pool.
    assert_eq!(server.await.unwrap(), 1);
    let e = exchange(&mut conn, false, false).await.unwrap_err();
    assert!(e.stale && !e.sent, "{e:?}");
    assert_eq!(e.kind, ErrorKind::Reset);
    assert!(!conn.reusable());
}

#[tokio::test]
async fn a_connection_closed_after_the_request_arrived_is_stale_but_sent() {
    // The server reads the second request, then closes without a byte of answer:
    // the request may have had an effect, which `sent` tells the retry policy.
    let script = vec![Act::Reply(OK.to_vec()), Act::ReplyClose(Vec::new())];
    let (mut conn, server) = scripted(script, Limits::default());
    exchange(&mut conn, false, false).await.unwrap();
    let e = exchange(&mut conn, false, false).await.unwrap_err();
    assert!(e.stale && e.sent, "{e:?}");
    assert_eq!(server.await.unwrap(), 2);
}

#[tokio::test]
async fn a_connection_closed_mid_response_is_not_stale() {
    let script = vec![
        Act::Reply(OK.to_vec()),
        Act::ReplyClose(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\npart".to_vec()),
    ];
    let (mut conn, _server) = scripted(script, Limits::default());
    exchange(&mut conn, false, false).await.unwrap();
    let e = exchange(&mut conn, false, false).await.unwrap_err();
    assert!(!e.stale && e.sent, "{e:?}");
    assert_eq!(e.kind, ErrorKind::Reset);
}

/// A server that answers the first request, then 20 ms later sends a response nobody
/// asked for, and would answer a second request if it came.
fn unsolicited_script() -> Vec<Act> {
    let extra = b"HTTP/1.1 500 Unasked\r\nContent-Length: 0\r\n\r\n".to_vec();
    vec![
        Act::ReplyThenLater(OK.to_vec(), Duration::from_millis(20), extra),
        Act::Reply(OK.to_vec()),
    ]
}

#[tokio::test]
async fn an_unsolicited_response_arriving_while_idle_is_never_taken_as_an_answer() {
    let script = unsolicited_script();
    let (mut conn, server) = scripted(script, Limits::default());
    exchange(&mut conn, false, false).await.unwrap();
    assert!(conn.reusable());
    tokio::time::sleep(Duration::from_millis(100)).await;
    let e = exchange(&mut conn, false, false).await.unwrap_err();
    assert!(e.stale && !e.sent, "{e:?}");
    assert!(!conn.reusable());
    drop(conn);
    assert_eq!(
        server.await.unwrap(),
        1,
        "the second request was never written"
    );
}

/// A loopback listener whose first connection plays `script`; `reset` closes it with
/// SO_LINGER 0 (an RST) once the script is done.
async fn tcp_server(script: Vec<Act>, reset: bool) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        for act in script {
            if !read_request(&mut stream).await {
                return;
            }
            if let Act::Reply(bytes) = act {
                let _ = stream.write_all(&bytes).await;
            }
        }
        if reset {
            socket2::SockRef::from(&stream)
                .set_linger(Some(Duration::ZERO))
                .unwrap();
        }
        drop(stream);
    });
    addr
}

#[tokio::test]
async fn tcp_keep_alive_then_reset_while_idle_is_stale() {
    let addr = tcp_server(vec![Act::Reply(OK.to_vec())], true).await;
    let mut conn = Conn::connect(addr).await.unwrap();
    exchange(&mut conn, false, false).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let e = exchange(&mut conn, false, false).await.unwrap_err();
    assert!(e.stale && !e.sent, "{e:?}");
    assert_eq!(e.kind, ErrorKind::Reset);
}

#[tokio::test]
async fn tcp_reset_mid_response_on_a_fresh_connection_is_a_reset_not_stale() {
    let partial = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nabc".to_vec();
    let addr = tcp_server(vec![Act::Reply(partial)], true).await;
    let mut conn = Conn::connect(addr).await.unwrap();
    let e = exchange(&mut conn, false, false).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Reset, "{e:?}");
    assert!(!e.stale && e.sent, "{e:?}");
}

/// A loopback listener whose first connection is played `script` by [`play`]; the
/// handle tells how many requests it read. Over TCP the idle check and the write take
/// the socket's direct path (`try_io`), which the scripted duplex streams lack.
async fn tcp_played(script: Vec<Act>) -> (SocketAddr, tokio::task::JoinHandle<usize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        play(stream, script).await
    });
    (addr, server)
}

#[tokio::test]
async fn tcp_keep_alive_then_closed_while_idle_is_stale_and_nothing_is_sent() {
    let (addr, server) = tcp_played(vec![Act::ReplyClose(OK.to_vec())]).await;
    let mut conn = Conn::connect(addr).await.unwrap();
    exchange(&mut conn, false, false).await.unwrap();
    assert_eq!(server.await.unwrap(), 1);
    // Let the FIN arrive and the runtime see it, as in a pool between requests.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let e = exchange(&mut conn, false, false).await.unwrap_err();
    assert!(e.stale && !e.sent, "{e:?}");
    assert!(!conn.reusable());
}

#[tokio::test]
async fn tcp_unsolicited_bytes_while_idle_are_never_taken_as_an_answer() {
    let script = unsolicited_script();
    let (addr, server) = tcp_played(script).await;
    let mut conn = Conn::connect(addr).await.unwrap();
    exchange(&mut conn, false, false).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let e = exchange(&mut conn, false, false).await.unwrap_err();
    assert!(e.stale && !e.sent, "{e:?}");
    drop(conn);
    assert_eq!(
        server.await.unwrap(),
        1,
        "the second request was never written"
    );
}

#[tokio::test]
async fn tcp_requests_written_directly_get_their_answers_in_order() {
    // Many exchanges on one socket: every request is written whole by the direct
    // path, and each answer is read as its own.
    let script: Vec<Act> = (0..200)
        .map(|i| {
            let body = format!("{i}");
            Act::Reply(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                )
                .into_bytes(),
            )
        })
        .collect();
    let (addr, server) = tcp_played(script).await;
    let mut conn = Conn::connect(addr).await.unwrap();
    for i in 0..200u64 {
        let response = tokio::time::timeout(LIMIT, conn.round_trip(REQUEST, true, false))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(conn.body(), i.to_string().as_bytes());
        assert_eq!(response.body_len, i.to_string().len() as u64);
    }
    assert_eq!(conn.served(), 200);
    drop(conn);
    assert_eq!(server.await.unwrap(), 200);
}
