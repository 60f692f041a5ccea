//! The HTTP/2 connection against real servers on loopback: exchanges, stream limits,
//! RST_STREAM and GOAWAY, a closed connection.

use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::Reason;
use http::Response as HttpResponse;

use tokio::io::AsyncWriteExt;

use super::tests_server::{connect, get, goaway, h2_server, local, serve, Raw};
use super::*;
use headroom_metrics::ErrorKind;

/// Answers every request with 200 and `body` after `delay`.
fn ok_server(
    builder: h2::server::Builder,
    body: &'static str,
    delay: Duration,
) -> (std::net::SocketAddr, Arc<super::tests_server::Seen>) {
    h2_server(builder, move |_req, mut respond| async move {
        tokio::time::sleep(delay).await;
        let mut out = respond
            .send_response(HttpResponse::new(()), body.is_empty())
            .unwrap();
        if !body.is_empty() {
            out.send_data(Bytes::from_static(body.as_bytes()), true)
                .unwrap();
        }
    })
}

/// Sends `n` GETs at once on `conn`; their results in order.
async fn send_all(
    conn: &Rc<Connection>,
    addr: std::net::SocketAddr,
    n: usize,
) -> Vec<Result<Response, Failure>> {
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let conn = conn.clone();
            tokio::task::spawn_local(async move {
                conn.send(get(addr, &format!("/{i}")), None, false, false)
                    .await
            })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

#[test]
fn a_request_and_its_response_kept_or_not() {
    let seen_req = Arc::new(Mutex::new(Vec::new()));
    let log = seen_req.clone();
    let (addr, _) = h2_server(h2::server::Builder::new(), move |req, mut respond| {
        let log = log.clone();
        async move {
            let (parts, mut body) = req.into_parts();
            let mut got = Vec::new();
            while let Some(chunk) = body.data().await {
                let chunk = chunk.unwrap();
                let _ = body.flow_control().release_capacity(chunk.len());
                got.extend_from_slice(&chunk);
            }
            log.lock()
                .unwrap()
                .push((parts.method.to_string(), parts.uri.to_string(), got));
            let mut out = respond
                .send_response(HttpResponse::builder().status(201).body(()).unwrap(), false)
                .unwrap();
            out.send_data(Bytes::from_static(b"hello"), false).unwrap();
            out.send_data(Bytes::from_static(b" world"), true).unwrap();
        }
    });
    let budget = BodyBudget::new(1024);
    let settings = Settings {
        budget: budget.clone(),
        ..Settings::default()
    };
    local(async {
        let conn = connect(addr, &settings).await;
        let before = Instant::now();
        let kept = conn
            .send(get(addr, "/a?b=1"), None, true, false)
            .await
            .unwrap();
        assert_eq!(kept.status, 201);
        assert_eq!(&kept.body[..], b"hello world");
        assert_eq!(kept.body_len, 11);
        assert!(kept.first_byte >= before);
        assert_eq!(
            budget.held(),
            11,
            "a kept body holds its bytes of the budget"
        );
        drop(kept);
        assert_eq!(budget.held(), 0, "and gives them back when dropped");

        let post = http::Request::post(format!("http://{addr}/p"))
            .body(())
            .unwrap();
        let dropped = conn
            .send(post, Some(Bytes::from_static(b"payload")), false, false)
            .await
            .unwrap();
        assert_eq!(
            (dropped.status, dropped.body_len, dropped.body.len()),
            (201, 11, 0)
        );
        assert_eq!(budget.held(), 0);
        assert!(conn.is_open());
        assert_eq!(conn.in_flight(), 0);
    });
    let log = seen_req.lock().unwrap();
    assert_eq!(
        log[0],
        ("GET".into(), format!("http://{addr}/a?b=1"), vec![])
    );
    assert_eq!(
        log[1],
        (
            "POST".into(),
            format!("http://{addr}/p"),
            b"payload".to_vec()
        )
    );
}

#[test]
fn many_concurrent_streams_share_one_connection() {
    let (addr, seen) = ok_server(h2::server::Builder::new(), "x", Duration::from_millis(100));
    local(async {
        let conn = Rc::new(connect(addr, &Settings::default()).await);
        let results = send_all(&conn, addr, 50).await;
        assert!(results
            .iter()
            .all(|r| r.as_ref().is_ok_and(|r| r.status == 200)));
    });
    assert_eq!(seen.connections.load(Ordering::SeqCst), 1);
    assert_eq!(seen.requests.load(Ordering::SeqCst), 50);
    assert_eq!(
        seen.max_open.load(Ordering::SeqCst),
        50,
        "all 50 streams were open at once"
    );
}

#[test]
fn the_servers_max_concurrent_streams_is_honoured_and_the_rest_wait() {
    let mut builder = h2::server::Builder::new();
    builder.max_concurrent_streams(4);
    let delay = Duration::from_millis(60);
    let (addr, seen) = ok_server(builder, "", delay);
    local(async {
        let conn = Rc::new(connect(addr, &Settings::default()).await);
        let start = Instant::now();
        let results = send_all(&conn, addr, 10).await;
        for r in &results {
            assert_eq!(r.as_ref().map(|r| r.status).unwrap(), 200, "none fails");
        }
        // 10 requests, 4 at a time, 60 ms each: three rounds.
        assert!(start.elapsed() >= delay * 3, "{:?}", start.elapsed());
    });
    assert_eq!(seen.requests.load(Ordering::SeqCst), 10);
    assert_eq!(
        seen.max_open.load(Ordering::SeqCst),
        4,
        "never more than the server allows"
    );
}

#[test]
fn our_streams_cap_below_the_servers_is_honoured() {
    let (addr, seen) = ok_server(h2::server::Builder::new(), "", Duration::from_millis(60));
    let settings = Settings {
        streams: 3,
        ..Settings::default()
    };
    local(async {
        let conn = Rc::new(connect(addr, &settings).await);
        assert_eq!(conn.streams(), 3);
        let watcher = {
            let conn = conn.clone();
            tokio::task::spawn_local(async move {
                let mut most = 0;
                for _ in 0..40 {
                    most = most.max(conn.in_flight());
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                most
            })
        };
        let results = send_all(&conn, addr, 9).await;
        assert!(results.iter().all(Result::is_ok));
        // Requests waiting for a slot are not in flight yet.
        assert_eq!(watcher.await.unwrap(), 3);
    });
    assert_eq!(seen.max_open.load(Ordering::SeqCst), 3);
}

/// A server resetting every stream with `reason`.
fn resetting(reason: Reason) -> std::net::SocketAddr {
    h2_server(
        h2::server::Builder::new(),
        move |_req, mut respond| async move {
            respond.send_reset(reason);
        },
    )
    .0
}

#[test]
fn rst_stream_refused_is_a_refused_stream_reset() {
    let addr = resetting(Reason::REFUSED_STREAM);
    local(async {
        let conn = connect(addr, &Settings::default()).await;
        let e = conn
            .send(get(addr, "/"), None, false, false)
            .await
            .unwrap_err();
        assert_eq!((e.kind, e.refused), (ErrorKind::StreamReset, true), "{e}");
        assert!(
            conn.is_open(),
            "a reset stream leaves the connection usable"
        );
    });
}

#[test]
fn rst_stream_internal_error_is_a_stream_reset_not_refused() {
    let addr = resetting(Reason::INTERNAL_ERROR);
    local(async {
        let conn = connect(addr, &Settings::default()).await;
        let e = conn
            .send(get(addr, "/"), None, true, false)
            .await
            .unwrap_err();
        assert_eq!((e.kind, e.refused), (ErrorKind::StreamReset, false), "{e}");
        assert!(e.reason.contains("INTERNAL_ERROR"), "{e}");
    });
}

#[test]
fn goaway_refuses_the_streams_above_its_last_id_and_closes_the_connection() {
    let addr = serve(|tcp| async move {
        let mut raw = Raw::accept(tcp).await;
        let ids = raw.requests(3).await;
        assert_eq!(ids, [1, 3, 5]);
        raw.write(&goaway(1, 0)).await;
        raw.ok(1, true).await;
        // Read until the client closes, so stream 1's response is not cut off.
        while raw.read().await.is_some() {}
    });
    local(async {
        let conn = Rc::new(connect(addr, &Settings::default()).await);
        let results = send_all(&conn, addr, 3).await;
        assert_eq!(
            results[0].as_ref().unwrap().status,
            200,
            "stream 1 was below the last id"
        );
        for r in &results[1..] {
            let e = r.as_ref().unwrap_err();
            assert_eq!((e.kind, e.refused), (ErrorKind::Goaway, true), "{e}");
        }
        assert!(!conn.is_open());
        let e = conn
            .send(get(addr, "/late"), None, false, false)
            .await
            .unwrap_err();
        assert_eq!(
            (e.kind, e.refused),
            (ErrorKind::Goaway, true),
            "a new stream is never sent: {e}"
        );
    });
}

#[test]
fn goaway_then_close_fails_streams_below_the_last_id_as_goaway_not_refused() {
    let addr = serve(|tcp| async move {
        let mut raw = Raw::accept(tcp).await;
        raw.requests(2).await;
        raw.write(&goaway(3, 0)).await;
        // Closed with both streams unanswered (the server may have acted on them): a
        // FIN, then reading until the client closes, so no unread byte turns it into RST.
        raw.tcp.shutdown().await.unwrap();
        while raw.read().await.is_some() {}
    });
    local(async {
        let conn = Rc::new(connect(addr, &Settings::default()).await);
        for r in send_all(&conn, addr, 2).await {
            let e = r.unwrap_err();
            assert_eq!((e.kind, e.refused), (ErrorKind::Goaway, false), "{e}");
        }
        assert!(!conn.is_open());
    });
}

#[test]
fn a_connection_closed_mid_stream_is_a_reset() {
    let addr = serve(|tcp| async move {
        let mut raw = Raw::accept(tcp).await;
        raw.requests(1).await;
        raw.ok(1, false).await; // the head, then the connection ends mid-body
        raw.tcp.shutdown().await.unwrap();
        while raw.read().await.is_some() {}
    });
    local(async {
        let conn = connect(addr, &Settings::default()).await;
        let e = conn
            .send(get(addr, "/"), None, false, false)
            .await
            .unwrap_err();
        assert_eq!((e.kind, e.refused), (ErrorKind::Reset, false), "{e}");
        // The driver task notices the end; give it its turn.
        tokio::task::yield_now().await;
        assert!(!conn.is_open());
    });
}

#[test]
fn a_server_that_does_not_speak_http2_fails_the_handshake() {
    let addr = serve(|mut tcp| async move {
        use tokio::io::AsyncReadExt;
        // As an HTTP/1.1 server does: read the "request" (the preface), answer, close.
        let mut preface = [0u8; 24];
        tcp.read_exact(&mut preface).await.unwrap();
        let _ = tcp
            .write_all(
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )
            .await;
        let _ = tcp.shutdown().await;
        let mut rest = Vec::new();
        let _ = tcp.read_to_end(&mut rest).await;
    });
    local(async {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let e = Connection::handshake(tcp, &Settings::default())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    });
}

#[test]
fn head_reads_no_body() {
    let (addr, _) = ok_server(h2::server::Builder::new(), "", Duration::ZERO);
    local(async {
        let conn = connect(addr, &Settings::default()).await;
        let head = http::Request::head(format!("http://{addr}/"))
            .body(())
            .unwrap();
        let r = conn.send(head, None, true, true).await.unwrap();
        assert_eq!((r.status, r.body_len), (200, 0));
    });
}

#[test]
fn a_rendered_request_reaches_a_real_server_as_rendered() {
    use crate::request::h2_static;
    use headroom_plan::{Expect, RequestTemplate, Target};
    use headroom_template::{Escape, Template};

    let log = Arc::new(Mutex::new(None));
    let seen = log.clone();
    let (addr, _) = h2_server(h2::server::Builder::new(), move |req, mut respond| {
        let seen = seen.clone();
        async move {
            let (parts, mut body) = req.into_parts();
            let mut got = Vec::new();
            while let Some(Ok(chunk)) = body.data().await {
                let _ = body.flow_control().release_capacity(chunk.len());
                got.extend_from_slice(&chunk);
            }
            *seen.lock().unwrap() = Some((parts, got));
            respond.send_response(HttpResponse::new(()), true).unwrap();
        }
    });
    let compile = |s: &str| Template::compile(s, Escape::None).unwrap();
    let template = RequestTemplate {
        name_id: 0,
        method: "PATCH".into(),
        path: compile("/things/1?full=yes"),
        headers: vec![
            ("Connection".into(), compile("keep-alive")),
            ("Upgrade".into(), compile("h2c")),
            ("X-Run".into(), compile("42")),
        ],
        body: Some(compile("{}")),
        expect: Expect::default(),
        timeout: None,
        correlate: None,
        multipart: None,
        checks: Vec::new(),
        redirects: None,
    };
    let target = Target {
        scheme: "http".into(),
        host: addr.ip().to_string(),
        port: addr.port(),
        authority: addr.to_string(),
        base_path: "/base".into(),
    };
    let prebuilt = h2_static(&template, &target).unwrap().unwrap();
    local(async {
        let conn = connect(addr, &Settings::default()).await;
        let (request, body) = prebuilt.request();
        let r = conn.send(request, body, false, false).await.unwrap();
        assert_eq!(r.status, 200);
    });
    let (parts, body) = log.lock().unwrap().take().unwrap();
    assert_eq!(parts.method, http::Method::PATCH);
    assert_eq!(
        parts.uri.to_string(),
        format!("http://{addr}/base/things/1?full=yes")
    );
    assert_eq!(parts.headers["x-run"], "42");
    assert_eq!(parts.headers["content-length"], "2");
    assert!(parts.headers.get("connection").is_none() && parts.headers.get("upgrade").is_none());
    assert_eq!(body, b"{}");
}
