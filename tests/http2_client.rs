//! The HTTP/2 client connection (`headroom::client::http2`) against a real nginx
//! speaking h2c with prior knowledge (`listen … http2`): many streams on one
//! connection, nginx's `http2_max_concurrent_streams 4` honoured, and nginx's own
//! GOAWAY after `keepalive_requests`.

use std::net::SocketAddr;
use std::rc::Rc;

use crate::support::{Nginx, NginxH2};
use headroom::client::http2::{Connection, Settings};
use headroom::metrics::ErrorKind;

/// Size of `/files/big`.
const BIG: usize = 256 * 1024;

/// nginx serving h2c with a limit of 4 concurrent streams and `keepalive_requests`
/// requests per connection: `GET /` → "ok\n", `/files/big` → [`BIG`] bytes.
fn nginx_h2c(keepalive_requests: u32) -> Nginx {
    let nginx = Nginx::start_h2(
        None,
        NginxH2 {
            max_streams: 4,
            max_requests: Some(keepalive_requests),
            upstream: None,
        },
    );
    nginx.put_file("big", &vec![b'b'; BIG]);
    nginx
}

/// Runs `f` on a current-thread runtime inside a `LocalSet`, as the engine does.
fn local<F: std::future::Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, f)
}

async fn connect_with(addr: SocketAddr, settings: &Settings) -> Option<Connection> {
    let tcp = tokio::net::TcpStream::connect(addr).await.ok()?;
    tcp.set_nodelay(true).ok()?;
    Connection::handshake(tcp, settings).await.ok()
}

async fn connect(addr: SocketAddr) -> Option<Connection> {
    connect_with(addr, &Settings::default()).await
}

async fn get(
    conn: &Connection,
    addr: SocketAddr,
    path: &str,
    keep: bool,
) -> Result<headroom::client::http2::Response, headroom::client::http2::Failure> {
    let request = http::Request::get(format!("http://{addr}{path}"))
        .body(())
        .unwrap();
    conn.send(request, None, keep, false).await
}

/// Sends `n` GETs of `path` at once on `conn`.
async fn get_all(
    conn: &Rc<Connection>,
    addr: SocketAddr,
    path: &'static str,
    n: usize,
) -> Vec<Result<headroom::client::http2::Response, headroom::client::http2::Failure>> {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let conn = conn.clone();
            tokio::task::spawn_local(async move { get(&conn, addr, path, false).await })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

#[test]
fn nginx_h2c_serves_concurrent_streams_within_its_limit_of_4() {
    let nginx = nginx_h2c(1000);
    let addr = nginx.addr();
    // Small windows keep each 256 KiB stream open over several round trips, so the
    // streams queue behind nginx's limit of 4; nginx refuses a fifth with RST_STREAM.
    let settings = Settings {
        stream_window: 64 * 1024,
        ..Settings::default()
    };
    local(async {
        let conn = Rc::new(connect_with(addr, &settings).await.expect("h2c handshake"));
        // The first round goes out right after the handshake: only a client that
        // waited for nginx's SETTINGS knows the limit by then.
        for round in 0..3 {
            for r in get_all(&conn, addr, "/files/big", 10).await {
                let r = r.unwrap_or_else(|e| panic!("round {round}: {e}"));
                assert_eq!((r.status, r.body_len), (200, BIG as u64));
            }
        }
        let kept = get(&conn, addr, "/", true).await.unwrap();
        assert_eq!((kept.status, &kept.body[..]), (200, &b"ok\n"[..]));
        assert!(conn.is_open());
    });
}

#[test]
fn nginx_goaway_after_keepalive_requests_refuses_the_rest_and_closes() {
    let nginx = nginx_h2c(5);
    let addr = nginx.addr();
    local(async {
        let conn = Rc::new(connect(addr).await.expect("h2c handshake"));
        let results = get_all(&conn, addr, "/", 10).await;
        let ok = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(ok, 5, "nginx serves keepalive_requests: {results:?}");
        for e in results.iter().filter_map(|r| r.as_ref().err()) {
            assert!(e.refused, "not processed by nginx, safe to send again: {e}");
            assert!(
                matches!(e.kind, ErrorKind::Goaway | ErrorKind::StreamReset),
                "{e}"
            );
        }
        assert!(!conn.is_open(), "no new stream after nginx's GOAWAY");
        let fresh = connect(addr).await.expect("a new connection");
        assert_eq!(get(&fresh, addr, "/", false).await.unwrap().status, 200);
    });
}
