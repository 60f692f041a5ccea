//! The HTTP/2 connection's life: closed when dropped, what an idle one costs, interim
//! responses, a cancelled request.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Response as HttpResponse;

use super::tests_server::{connect, get, h2_server, local, serve, Raw};
use super::*;
use crate::test_alloc::peak_during;
use headroom_metrics::ErrorKind;
use tokio::io::AsyncWriteExt;

/// Answers every request with 200 and "ok" after `delay`.
fn ok_after(delay: Duration) -> (std::net::SocketAddr, Arc<super::tests_server::Seen>) {
    h2_server(
        h2::server::Builder::new(),
        move |_req, mut respond| async move {
            tokio::time::sleep(delay).await;
            // A request the client cancelled meanwhile cannot be answered.
            if let Ok(mut out) = respond.send_response(HttpResponse::new(()), false) {
                let _ = out.send_data(Bytes::from_static(b"ok"), true);
            }
        },
    )
}

/// Waits up to 5 s for `done`.
fn eventually(done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

#[test]
fn dropping_the_connection_closes_it_on_the_server() {
    let (addr, seen) = ok_after(Duration::ZERO);
    local(async {
        let conn = connect(addr, &Settings::default()).await;
        assert_eq!(
            conn.send(get(addr, "/"), None, false, false)
                .await
                .unwrap()
                .status,
            200
        );
        drop(conn);
        // The driver task sends GOAWAY and closes once no handle or stream is left.
        tokio::time::sleep(Duration::from_millis(50)).await;
    });
    assert!(
        eventually(|| seen.closed.load(Ordering::SeqCst) == 1),
        "the server still holds the connection"
    );
}

#[test]
fn a_cancelled_request_frees_its_slot_and_the_connection_goes_on() {
    let (addr, seen) = ok_after(Duration::from_millis(300));
    let settings = Settings {
        streams: 1,
        ..Settings::default()
    };
    local(async {
        let conn = connect(addr, &settings).await;
        // The engine's timeout drops the future: the stream is reset, the slot freed.
        let slow = tokio::time::timeout(
            Duration::from_millis(30),
            conn.send(get(addr, "/"), None, false, false),
        );
        assert!(slow.await.is_err());
        assert_eq!(conn.in_flight(), 0);
        let r = conn.send(get(addr, "/"), None, true, false).await.unwrap();
        assert_eq!(&r.body[..], b"ok");
        assert!(conn.is_open());
    });
    assert_eq!(seen.requests.load(Ordering::SeqCst), 2);
}

#[test]
fn an_interim_1xx_head_is_skipped_for_the_final_response() {
    let addr = serve(|tcp| async move {
        let mut raw = Raw::accept(tcp).await;
        raw.requests(1).await;
        // `:status: 103` (literal, indexed name 8), then `:status: 200` (index 8).
        let early = [0x08, 3, b'1', b'0', b'3'];
        raw.write(&super::tests_server::frame(
            super::tests_server::HEADERS,
            super::tests_server::END_HEADERS,
            1,
            &early,
        ))
        .await;
        raw.ok(1, true).await;
        while raw.read().await.is_some() {}
    });
    local(async {
        let conn = connect(addr, &Settings::default()).await;
        let r = conn.send(get(addr, "/"), None, false, false).await.unwrap();
        assert_eq!(r.status, 200);
    });
}

#[test]
fn an_idle_connection_costs_little_memory() {
    // What the client's thread holds for each more idle connection (after one request
    // each): the engine may hold a thousand. The difference between 30 and 10
    // connections leaves out the runtime's own allocations.
    let (addr, _) = ok_after(Duration::ZERO);
    let peak = |n: usize| {
        peak_during(|| {
            local(async {
                let mut conns = Vec::new();
                for _ in 0..n {
                    let conn = connect(addr, &Settings::default()).await;
                    conn.send(get(addr, "/"), None, false, false).await.unwrap();
                    conns.push(conn);
                }
            })
        })
        .1
    };
    let per_connection = (peak(30) - peak(10)) / 20;
    eprintln!("HTTP/2 connection: {per_connection} bytes each, idle after a request");
    assert!(
        per_connection < 64 * 1024,
        "{per_connection} bytes per idle connection"
    );
}

#[test]
fn a_request_on_a_connection_already_closed_is_refused() {
    let addr = serve(|tcp| async move {
        let mut raw = Raw::accept(tcp).await;
        // Once the client acknowledged our SETTINGS (its handshake is done): FIN.
        while let Some((kind, flags, _, _)) = raw.read().await {
            if kind == super::tests_server::SETTINGS && flags & 1 == 1 {
                break;
            }
        }
        raw.tcp.shutdown().await.unwrap();
        while raw.read().await.is_some() {}
    });
    local(async {
        let conn = connect(addr, &Settings::default()).await;
        for _ in 0..200 {
            if !conn.is_open() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(!conn.is_open());
        let e = conn
            .send(get(addr, "/"), None, false, false)
            .await
            .unwrap_err();
        assert_eq!(
            (e.kind, e.refused),
            (ErrorKind::Reset, true),
            "never sent: {e}"
        );
    });
}
