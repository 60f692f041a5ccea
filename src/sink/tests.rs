//! The sink against raw sockets (hostile input) and the tracker's exact counts.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::*;

/// Sends raw bytes, reads to EOF (bounded by 5 s), returns the status code (0 if none).
pub(super) async fn raw(addr: SocketAddr, request: &[u8]) -> u16 {
    let mut s = TcpStream::connect(addr).await.unwrap();
    // A peer that closes early makes the tail of a big write fail: that is the point.
    let _ = s.write_all(request).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
    let text = String::from_utf8_lossy(&out);
    text.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// A `POST path` with a JSON body and `Connection: close`.
pub(super) fn post(path: &str, extra_headers: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nconnection: close\r\n{extra_headers}content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

pub(super) fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

pub(super) fn sink(opts: SinkOptions, standalone: bool) -> RunningSink {
    let tracker = Arc::new(Tracker::new(
        Instant::now(),
        opts.max_ids,
        opts.fail,
        standalone,
    ));
    spawn(opts, tracker).unwrap()
}

#[test]
fn hostile_deliveries_are_counted_not_fatal() {
    let s = sink(
        SinkOptions {
            correlate: Correlate::json_path("$.event_id").unwrap(),
            max_body: 1024,
            ..SinkOptions::default()
        },
        false,
    );
    s.tracker().register("known", Instant::now());
    let addr = s.addr();
    rt().block_on(async {
        let huge = "x".repeat(1 << 20);
        assert_eq!(raw(addr, &post("/", "", &huge)).await, 413);
        // A chunked body that never ends within the limit is cut off too.
        let chunked = format!(
            "POST / HTTP/1.1\r\nhost: x\r\nconnection: close\r\ntransfer-encoding: chunked\r\n\r\n{}",
            "400\r\n".to_string() + &"y".repeat(0x400) + "\r\n400\r\n" + &"y".repeat(0x400) + "\r\n0\r\n\r\n"
        );
        assert_eq!(raw(addr, chunked.as_bytes()).await, 413);
        assert_eq!(raw(addr, &post("/", "", "{not json")).await, 400);
        assert_eq!(raw(addr, &post("/", "", "\u{0}\u{1}garbage")).await, 400);
        assert_eq!(raw(addr, &post("/", "", r#"{"other": 1}"#)).await, 400);
        assert_eq!(raw(addr, &post("/", "", r#"{"event_id": {"nested": 1}}"#)).await, 400);
        assert_eq!(raw(addr, &post("/", "", r#"{"event_id": "stranger"}"#)).await, 200);
        assert_eq!(raw(addr, b"GARBAGE\r\n\r\n").await, 400, "hyper answers a bad request line");
        assert_eq!(raw(addr, &post("/", "", r#"{"event_id": "known"}"#)).await, 200);
    });
    let d = s.tracker().summary(Duration::ZERO);
    assert_eq!((d.too_large, d.bad_body, d.no_id, d.unknown), (2, 2, 2, 1));
    assert_eq!((d.registered, d.delivered, d.lost), (1, 1, 0));
}

#[test]
fn header_ids_duplicates_and_refusals_are_exact() {
    let s = sink(
        SinkOptions {
            correlate: Correlate::Header("x-event-id".into()),
            fail: Some(Fail {
                share: 0.25,
                status: 503,
                every_attempt: false,
            }),
            ..SinkOptions::default()
        },
        false,
    );
    let sent = Instant::now();
    for i in 0..8 {
        assert_eq!(
            s.tracker().register(&format!("e{i}"), sent),
            Registered::Tracked
        );
    }
    assert_eq!(s.tracker().register("e0", sent), Registered::Again);
    let addr = s.addr();
    let statuses: Vec<u16> = rt().block_on(async {
        let mut statuses = Vec::new();
        for i in 0..8 {
            let header = format!("x-event-id: e{i}\r\n");
            statuses.push(raw(addr, &post("/", &header, "{}")).await);
        }
        // Each once more: the refused ones now get through, the others are duplicates.
        for i in 0..8 {
            let header = format!("x-event-id: e{i}\r\n");
            statuses.push(raw(addr, &post("/", &header, "{}")).await);
        }
        assert_eq!(
            raw(addr, &post("/", "", "{}")).await,
            400,
            "no header, no id"
        );
        statuses
    });
    // ⌊(n+1)/4⌋ > ⌊n/4⌋ at n = 3 and 7: the 4th and 8th ids are refused once.
    let refused: Vec<usize> = (0..8).filter(|&i| statuses[i] == 503).collect();
    assert_eq!(refused, vec![3, 7], "{statuses:?}");
    assert!(statuses[8..].iter().all(|&c| c == 200), "{statuses:?}");
    let d = s.tracker().summary(Duration::from_secs(1));
    assert_eq!(
        (d.delivered, d.refused, d.duplicated, d.lost, d.no_id),
        (8, 2, 6, 0, 1)
    );
    assert_eq!(d.latency_ms.count, 8);
    assert_eq!(d.per_second.iter().sum::<u64>(), 8);
}

#[test]
fn registry_is_bounded_and_overflow_counted() {
    let t = Tracker::new(Instant::now(), 3, None, false);
    let now = Instant::now();
    let got: Vec<Registered> = (0..5).map(|i| t.register(&i.to_string(), now)).collect();
    assert_eq!(got[..3], [Registered::Tracked; 3]);
    assert_eq!(got[3..], [Registered::Overflow; 2]);
    assert_eq!(t.deliver("4", now), Verdict::Accept);
    let d = t.summary(Duration::ZERO);
    assert_eq!(
        (d.registered, d.registry_overflow, d.unknown, d.lost),
        (3, 2, 1, 3)
    );
    assert!((d.lost_rate - 1.0).abs() < 1e-9);
}

#[test]
fn standalone_tracks_first_seen_ids_within_the_cap() {
    let t = Tracker::new(Instant::now(), 2, None, true);
    let now = Instant::now();
    for id in ["a", "a", "b", "c"] {
        assert_eq!(t.deliver(id, now), Verdict::Accept);
    }
    let d = t.summary(Duration::ZERO);
    // "c" came when the registry was full: it cannot be tracked, so it is unknown.
    assert_eq!((d.delivered, d.duplicated, d.unknown, d.lost), (2, 1, 1, 0));
}

#[test]
fn options_are_validated() {
    let bad = SinkOptions {
        listen: "10.1.2.3:0".parse().unwrap(),
        ..SinkOptions::default()
    };
    assert!(matches!(
        bad.validate(),
        Err(SinkOptionsError::NotLoopback(_))
    ));
    let bad = SinkOptions {
        fail: Some(Fail {
            share: 1.5,
            status: 503,
            every_attempt: false,
        }),
        ..SinkOptions::default()
    };
    assert_eq!(bad.validate(), Err(SinkOptionsError::Share(1.5)));
    assert!(Correlate::json_path("$[").is_err());
    assert!(SinkOptions::default().validate().is_ok());
}

#[test]
fn delivery_thresholds_parse_and_judge_the_delivery_object() {
    use crate::metrics::summary::Summary;
    use crate::metrics::threshold::{LatencyStat, Metric, Threshold};
    let p95 = Threshold::parse("delivery.p95 < 2s").unwrap();
    assert_eq!(
        (p95.scope.clone(), p95.metric, p95.limit),
        (None, Metric::DeliveryLatency(LatencyStat::P95), 2000.0)
    );
    let lost = Threshold::parse("delivery.lost < 0.1%").unwrap();
    assert_eq!((lost.metric, lost.limit), (Metric::DeliveryLost, 0.1));
    assert!(Threshold::parse("lost < 1%")
        .unwrap_err()
        .to_string()
        .contains("delivery.lost"));
    assert!(Threshold::parse("delivery.avg < 1s").is_err());
    assert!(Threshold::parse("delivery.rate > 1/s").is_err());
    assert!(Threshold::parse("delivery.lost < 1ms").is_err());

    let mut s = Summary::empty("d", 1.0);
    assert!(
        !lost.evaluate(&s).ok,
        "a delivery rule without a sink fails"
    );
    let t = Tracker::new(Instant::now(), 10, None, false);
    let sent = Instant::now();
    for id in ["a", "b", "c", "d"] {
        t.register(id, sent);
    }
    let at = sent + Duration::from_millis(150);
    for id in ["a", "b", "c", "c"] {
        t.deliver(id, at);
    }
    s.delivery = Some(t.summary(Duration::ZERO));
    let r = lost.evaluate(&s);
    assert!(!r.ok && (r.value - 25.0).abs() < 1e-9, "{r:?}");
    let r = p95.evaluate(&s);
    assert!(r.ok && (r.value - 150.0).abs() < 0.2, "{r:?}");
    let r = Threshold::parse("delivery.duplicated <= 25%")
        .unwrap()
        .evaluate(&s);
    assert!(r.ok && (r.value - 25.0).abs() < 1e-9, "{r:?}");
}
