//! The SSE pump against the built-in target's ticker (real sockets on loopback, HTTP/1.1
//! and h2c) and against hostile servers written here (HTTP/1.1 and HTTP/2):
//! reconnection with `Last-Event-ID` loses and repeats nothing, 204 stops, bad answers
//! and oversized events fail the stream, and every connection opened is counted.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{start, Reopen, Via};
use crate::stream::inbox::End;
use crate::stream::Inbox;
use headroom_client::connect::{Connector, Opens};
use headroom_client::sse::{Limits, SseRequest};
use headroom_client::Protocol;
use headroom_metrics::ErrorKind;
use headroom_testbed::{spawn, TargetOptions};

fn reopen(addr: SocketAddr, path: &str) -> Reopen {
    reopen_in(Protocol::Http1, addr, path)
}

fn reopen_in(protocol: Protocol, addr: SocketAddr, path: &str) -> Reopen {
    let connector = Arc::new(Connector::tcp(addr));
    Reopen {
        via: match protocol {
            Protocol::Http1 => Via::Http1(connector),
            Protocol::Http2 => Via::Http2 {
                conn: None.into(),
                connector,
            },
            Protocol::Http3 => unreachable!("SSE streams go over HTTP/1.1 or HTTP/2"),
        },
        opens: Rc::new(Opens::default()),
        request: SseRequest {
            scheme: "http",
            authority: addr.to_string(),
            path: path.into(),
            headers: Vec::new(),
        },
        timeout: Duration::from_secs(2),
    }
}

/// Runs `f` on a current-thread runtime inside a `LocalSet`, as an engine thread does.
fn local<F: std::future::Future<Output = ()>>(f: F) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, f);
}

/// The `n` of the next `tick` event, within 2 s.
async fn next_tick(inbox: &Inbox) -> u64 {
    let mut n = None;
    tokio::time::timeout(
        Duration::from_secs(2),
        inbox.next(|m, _arrived| {
            assert_eq!(m.event.as_deref(), Some("tick"));
            let v: serde_json::Value = serde_json::from_str(&m.data).unwrap();
            n = v["n"].as_u64();
            true
        }),
    )
    .await
    .expect("a tick within 2 s")
    .unwrap();
    n.unwrap()
}

#[test]
fn a_dropped_stream_reconnects_with_last_event_id_and_loses_nothing() {
    reconnects_losing_nothing(Protocol::Http1);
}

#[test]
fn a_dropped_h2c_stream_reconnects_too() {
    reconnects_losing_nothing(Protocol::Http2);
}

fn reconnects_losing_nothing(protocol: Protocol) {
    let target = spawn(TargetOptions::loopback()).unwrap();
    local(async {
        let inbox = Rc::new(Inbox::new(None, 0, Instant::now()));
        // Cut after every 3 events; 10 in all, then 204 on the reconnect after id 10.
        let path = "/sse/ticker?every_ms=10&count=10&drop_after=3&retry_ms=20";
        let began = Instant::now();
        let reopen = reopen_in(protocol, target.addr(), path);
        let opens = reopen.opens.clone();
        let pump = start(reopen, Limits::default(), &inbox).await.unwrap();
        let mut ids = Vec::new();
        for _ in 0..10 {
            ids.push(next_tick(&inbox).await);
        }
        assert_eq!(ids, (1..=10).collect::<Vec<_>>(), "continuous, no repeats");
        // The 204 after the last id ends the stream (no reconnect loop).
        tokio::time::timeout(Duration::from_secs(2), inbox.ended())
            .await
            .unwrap();
        assert_eq!(inbox.end(), Some(End::Closed("204".into())));
        // 3 drops + 1 clean end, 20 ms each: far less than the 3 s default retry,
        // so the server's `retry:` was honoured.
        assert!(
            began.elapsed() < Duration::from_secs(2),
            "{:?}",
            began.elapsed()
        );
        assert!(tokio::time::timeout(Duration::from_secs(1), pump)
            .await
            .is_ok());
        // Every connection opened was counted as an SSE connection: over HTTP/1.1 one
        // per opening (the first, 3 after drops, 1 after the clean end that got the
        // 204); over HTTP/2 the openings are streams of connections counted once each.
        let (by_protocol, handshakes) = opens.take();
        assert_eq!(by_protocol.total(), by_protocol.sse, "{by_protocol:?}");
        assert_eq!(handshakes, 0);
        match protocol {
            Protocol::Http1 => assert_eq!(by_protocol.sse, 5),
            Protocol::Http2 => assert!((1..=5).contains(&by_protocol.sse), "{by_protocol:?}"),
            Protocol::Http3 => unreachable!("not a protocol of SSE streams"),
        }
    });
}

#[test]
fn ticks_arrive_at_the_tickers_period() {
    let target = spawn(TargetOptions::loopback()).unwrap();
    local(async {
        let inbox = Rc::new(Inbox::new(None, 0, Instant::now()));
        let path = "/sse/ticker?every_ms=50&count=8";
        let _pump = start(reopen(target.addr(), path), Limits::default(), &inbox)
            .await
            .unwrap();
        next_tick(&inbox).await;
        let mut gaps = Vec::new();
        let mut last = Instant::now();
        for _ in 0..7 {
            next_tick(&inbox).await;
            gaps.push(last.elapsed());
            last = Instant::now();
        }
        gaps.sort();
        let p50 = gaps[gaps.len() / 2];
        assert!(
            (Duration::from_millis(45)..=Duration::from_millis(60)).contains(&p50),
            "{gaps:?}"
        );
    });
}

/// A server that answers every connection with `answer` (then holds it open 2 s).
fn raw_server(answer: &'static [u8]) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming().take(4) {
            let Ok(mut conn) = conn else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = conn.read(&mut buf);
                let _ = conn.write_all(answer);
                std::thread::sleep(Duration::from_secs(2));
            });
        }
    });
    addr
}

#[test]
fn bad_answers_fail_the_stream_with_the_reason() {
    local(async {
        let cases: [(&[u8], ErrorKind, &str); 3] = [
            (
                b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n",
                ErrorKind::Stream,
                "SSE: the server answered 500 Internal Server Error, not 200",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 0\r\n\r\n",
                ErrorKind::Stream,
                "SSE: the content type is \"text/html\", not text/event-stream",
            ),
            (b"garbage\r\n\r\n", ErrorKind::Protocol, "SSE: no response"),
        ];
        for (answer, kind, reason) in cases {
            let inbox = Rc::new(Inbox::new(None, 0, Instant::now()));
            let err = start(reopen(raw_server(answer), "/"), Limits::default(), &inbox)
                .await
                .unwrap_err();
            assert_eq!(err.kind, kind, "{}", err.reason);
            assert!(err.reason.starts_with(reason), "{}", err.reason);
        }
    });
}

#[test]
fn a_server_that_never_answers_is_bounded_by_the_caller() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    local(async {
        let inbox = Rc::new(Inbox::new(None, 0, Instant::now()));
        let opening = start(reopen(addr, "/"), Limits::default(), &inbox);
        let waited = tokio::time::timeout(Duration::from_millis(200), opening).await;
        assert!(waited.is_err(), "still waiting for a head after 200 ms");
    });
    drop(listener);
}

#[test]
fn an_oversized_event_or_line_fails_the_stream_as_protocol() {
    const HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n";
    let endless_data: &'static [u8] = Box::leak(
        format!("{HEAD}{}", "data: 0123456789\n".repeat(100))
            .into_bytes()
            .into_boxed_slice(),
    );
    let huge_line: &'static [u8] = Box::leak(
        format!("{HEAD}data: {}", "x".repeat(2000))
            .into_bytes()
            .into_boxed_slice(),
    );
    let limits = Limits {
        max_line: 1024,
        max_event: 1024,
    };
    local(async move {
        for (answer, want) in [
            (endless_data, "larger than 1024 bytes"),
            (huge_line, "longer than 1024 bytes"),
        ] {
            let inbox = Rc::new(Inbox::new(None, 0, Instant::now()));
            let _pump = start(reopen(raw_server(answer), "/"), limits, &inbox)
                .await
                .unwrap();
            tokio::time::timeout(Duration::from_secs(2), inbox.ended())
                .await
                .unwrap();
            match inbox.end() {
                Some(End::Failed(f)) => {
                    assert_eq!(f.kind, ErrorKind::Protocol);
                    assert!(f.reason.contains(want), "{}", f.reason);
                }
                other => panic!("{other:?}"),
            }
            assert_eq!(inbox.buffered().0, 0, "no event was delivered");
        }
    });
}

#[test]
fn the_recorder_counts_events_by_type_gaps_reconnects_and_the_204() {
    use crate::thread::Seed;
    use crate::work::Workload;
    use std::sync::atomic::AtomicBool;

    let target = spawn(TargetOptions::loopback()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sse.yaml");
    let yaml = format!(
        "target: {}\nload: {{model: users, users: 1, duration: 1s}}\nflows:\n  - name: f\n    steps:\n      - sse: {{name: ticks, url: /sse/ticker}}\n",
        target.url()
    );
    std::fs::write(&file, yaml).unwrap();
    let plan = Arc::new(headroom_scenario::load(Some(&file), &Default::default()).unwrap());
    let seed = Seed {
        workload: Arc::new(Workload::new(&plan).unwrap()),
        plan,
        connector: Arc::new(Connector::tcp(target.addr())),
        stop: Arc::new(AtomicBool::new(false)),
        connect_failure: Default::default(),
        tls_failure: Default::default(),
        graphql_failure: Default::default(),
    };
    local(async move {
        let state = Rc::new(seed.grow(Instant::now(), None));
        let inbox = Rc::new(Inbox::new(Some(state.clone()), 0, Instant::now()));
        // 12 ticks 50 ms apart, cut after ids 4 and 8 (two reconnects), then the clean
        // end after id 12 and a 204 on the reconnect.
        let path = "/sse/ticker?every_ms=50&count=12&drop_after=4&retry_ms=20";
        let _pump = start(reopen(target.addr(), path), Limits::default(), &inbox)
            .await
            .unwrap();
        for want in 1..=12 {
            assert_eq!(next_tick(&inbox).await, want);
        }
        tokio::time::timeout(Duration::from_secs(2), inbox.ended())
            .await
            .unwrap();
        let mut recorder = state.recorder.borrow_mut();
        let t = recorder.streams.tally(0);
        assert_eq!(t.received, 12);
        assert_eq!(t.events.get("tick"), Some(&12), "{:?}", t.events);
        assert_eq!(t.reconnects, 2);
        assert_eq!(t.close_codes.get("204"), Some(&1), "{:?}", t.close_codes);
        assert_eq!(t.background_error_count(), 0);
        assert!(t.received_bytes > 12 * 40, "{} bytes", t.received_bytes);
        // 11 gaps: 9 of the ticker's 50 ms, 2 across a reconnect (20 ms retry, the
        // resumed ticker's first event at once): the median is the period.
        assert_eq!(t.gap.len(), 11);
        let p50 = Duration::from_micros(t.gap.value_at_quantile(0.5));
        assert!(
            (Duration::from_millis(45)..=Duration::from_millis(60)).contains(&p50),
            "gap p50 {p50:?}"
        );
    });
}

/// An h2c server answering every stream 200 `text/event-stream` and then `chunk` again
/// and again, as fast as flow control lets it, until the client resets the stream.
fn h2_endless_server(chunk: &'static [u8]) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::handshake(socket).await else {
                        return;
                    };
                    while let Some(Ok((_request, mut respond))) = conn.accept().await {
                        tokio::spawn(async move {
                            let head = http::Response::builder()
                                .status(200)
                                .header("content-type", "text/event-stream")
                                .body(())
                                .unwrap();
                            let Ok(mut body) = respond.send_response(head, false) else {
                                return;
                            };
                            loop {
                                body.reserve_capacity(chunk.len());
                                match std::future::poll_fn(|cx| body.poll_capacity(cx)).await {
                                    Some(Ok(n)) if n > 0 => {
                                        let n = n.min(chunk.len());
                                        let data = bytes::Bytes::from_static(&chunk[..n]);
                                        if body.send_data(data, false).is_err() {
                                            return;
                                        }
                                    }
                                    Some(Ok(_)) => {}
                                    _ => return,
                                }
                            }
                        });
                    }
                });
            }
        });
    });
    addr
}

#[test]
fn an_oversized_event_or_line_over_h2_fails_the_stream_without_buffering_it() {
    let endless_event: &'static [u8] =
        Box::leak("data: 0123456789\n".repeat(64).into_boxed_str()).as_bytes();
    let endless_line: &'static [u8] = Box::leak("x".repeat(1024).into_boxed_str()).as_bytes();
    let limits = Limits {
        max_line: 1024,
        max_event: 1024,
    };
    local(async move {
        for (chunk, want) in [
            (endless_event, "larger than 1024 bytes"),
            (endless_line, "longer than 1024 bytes"),
        ] {
            // The server never ends the event (or the line): only the parser's limit
            // can stop the stream, and it must, long before the flow-control windows
            // (8 MiB per stream) would let the server stop by itself.
            let addr = h2_endless_server(chunk);
            let inbox = Rc::new(Inbox::new(None, 0, Instant::now()));
            let reopen = reopen_in(Protocol::Http2, addr, "/events");
            let opens = reopen.opens.clone();
            let _pump = start(reopen, limits, &inbox).await.unwrap();
            tokio::time::timeout(Duration::from_secs(2), inbox.ended())
                .await
                .expect("the stream fails within 2 s");
            match inbox.end() {
                Some(End::Failed(f)) => {
                    assert_eq!(f.kind, ErrorKind::Protocol);
                    assert!(f.reason.contains(want), "{}", f.reason);
                }
                other => panic!("{other:?}"),
            }
            assert_eq!(inbox.buffered().0, 0, "no event was delivered");
            assert_eq!(opens.take().0.sse, 1, "one h2c connection, counted");
        }
    });
}
