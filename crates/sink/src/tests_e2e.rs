//! End to end on loopback: tasks posted to the built-in target's scheduler, delivered
//! to a real sink, timed and counted.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::tests::{post, raw, rt, sink};
use super::*;
use headroom_testbed::{self as target, RunningTarget, TargetOptions};

fn target() -> RunningTarget {
    target::spawn(TargetOptions::loopback()).unwrap()
}

/// Posts `n` tasks `e0..` to the target, each registered in `tracker` just before it
/// is sent, with `fields` added; returns the statuses.
async fn post_tasks(
    t: &RunningTarget,
    tracker: &Arc<Tracker>,
    sink_url: &str,
    n: usize,
    fields: serde_json::Value,
) -> Vec<u16> {
    let mut statuses = Vec::new();
    for i in 0..n {
        let mut task = json!({"event_id": format!("e{i}"), "url": format!("{sink_url}/hook")});
        for (k, v) in fields.as_object().unwrap() {
            task[k] = v.clone();
        }
        tracker.register(&format!("e{i}"), Instant::now());
        statuses.push(raw(t.addr(), &post("/tasks", "", &task.to_string())).await);
    }
    statuses
}

/// Waits (at most `limit`) until `done` holds for the tracker's summary.
async fn settle(tracker: &Tracker, limit: Duration, done: impl Fn(&DeliverySummary) -> bool) {
    let end = Instant::now() + limit;
    while Instant::now() < end && !done(&tracker.summary(Duration::ZERO)) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn json_sink(latency: Duration, fail: Option<Fail>) -> RunningSink {
    sink(
        SinkOptions {
            correlate: Correlate::json_path("$.event_id").unwrap(),
            latency: SinkLatency::Fixed(latency),
            fail,
            ..SinkOptions::default()
        },
        false,
    )
}

#[test]
fn delivery_latency_through_the_scheduler_reads_the_delay() {
    let (t, s) = (target(), json_sink(Duration::ZERO, None));
    let tracker = s.tracker().clone();
    rt().block_on(async {
        let statuses = post_tasks(&t, &tracker, &s.url(), 20, json!({"deliver_in_ms": 200})).await;
        assert!(statuses.iter().all(|&c| c == 201), "{statuses:?}");
        settle(&tracker, Duration::from_secs(3), |d| d.delivered == 20).await;
    });
    let d = tracker.summary(Duration::ZERO);
    assert_eq!(
        (d.registered, d.delivered, d.lost, d.duplicated),
        (20, 20, 0, 0)
    );
    let p50 = d.latency_ms.p50;
    assert!(
        (200.0..206.0).contains(&p50),
        "p50 {p50} ms for a 200 ms delay"
    );
    assert!(
        d.latency_ms.min >= 200.0,
        "never before it is due: {:?}",
        d.latency_ms
    );
}

#[test]
fn ids_refused_on_every_attempt_are_lost_exactly() {
    let fail = Fail {
        share: 0.25,
        status: 503,
        every_attempt: true,
    };
    let (t, s) = (target(), json_sink(Duration::ZERO, Some(fail)));
    let tracker = s.tracker().clone();
    rt().block_on(async {
        let fields = json!({"max_attempts": 2, "backoff_ms": 0});
        post_tasks(&t, &tracker, &s.url(), 20, fields).await;
        // 15 accepted and 5 refused twice: every attempt has been made.
        settle(&tracker, Duration::from_secs(3), |d| {
            d.delivered == 15 && d.refused == 10
        })
        .await;
    });
    let d = tracker.summary(Duration::ZERO);
    assert_eq!(
        (d.delivered, d.lost, d.refused, d.duplicated),
        (15, 5, 10, 0)
    );
    assert!((d.lost_rate - 0.25).abs() < 1e-9);
    let metrics = rt().block_on(async {
        let get = b"GET /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
        let mut s = tokio::net::TcpStream::connect(t.addr()).await.unwrap();
        tokio::io::AsyncWriteExt::write_all(&mut s, get)
            .await
            .unwrap();
        let mut out = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut s, &mut out)
            .await
            .unwrap();
        out
    });
    for line in [
        "headroom_target_scheduler_delivered_total 15",
        "headroom_target_scheduler_retried_total 5",
        "headroom_target_scheduler_failed_total 5",
        "headroom_target_scheduler_pending 0",
    ] {
        assert!(metrics.contains(line), "{line} not in\n{metrics}");
    }
}

#[test]
fn refused_first_attempts_are_retried_and_delivered() {
    let fail = Fail {
        share: 0.5,
        status: 503,
        every_attempt: false,
    };
    let (t, s) = (target(), json_sink(Duration::ZERO, Some(fail)));
    let tracker = s.tracker().clone();
    rt().block_on(async {
        post_tasks(&t, &tracker, &s.url(), 10, json!({"backoff_ms": 10})).await;
        settle(&tracker, Duration::from_secs(3), |d| d.delivered == 10).await;
    });
    let d = tracker.summary(Duration::ZERO);
    assert_eq!(
        (d.delivered, d.lost, d.refused, d.duplicated),
        (10, 0, 5, 0)
    );
}

#[test]
fn a_sender_timeout_shorter_than_the_sink_makes_exact_duplicates() {
    // The sink records on receipt and answers after 300 ms; the target gives up on an
    // attempt after 100 ms and tries once more: every id arrives exactly twice.
    let (t, s) = (target(), json_sink(Duration::from_millis(300), None));
    let tracker = s.tracker().clone();
    rt().block_on(async {
        let fields = json!({"max_attempts": 2, "timeout_ms": 100, "backoff_ms": 0});
        post_tasks(&t, &tracker, &s.url(), 10, fields).await;
        settle(&tracker, Duration::from_secs(3), |d| d.duplicated == 10).await;
        // Time for a stray third attempt to show, if there were one.
        tokio::time::sleep(Duration::from_millis(300)).await;
    });
    let d = tracker.summary(Duration::ZERO);
    assert_eq!((d.delivered, d.duplicated, d.lost), (10, 10, 0));
    assert!((d.duplicated_rate - 1.0).abs() < 1e-9);
}

#[test]
fn the_scheduler_refuses_urls_off_the_machine_and_stores_nothing() {
    let t = target();
    rt().block_on(async {
        for url in [
            "http://192.0.2.1/hook",
            "http://example.com/",
            "ftp://127.0.0.1/",
        ] {
            let body = json!({"url": url}).to_string();
            assert_eq!(
                raw(t.addr(), &post("/tasks", "", &body)).await,
                400,
                "{url}"
            );
        }
        let body = json!({"url": "http://127.0.0.1:9/", "max_attempts": 99}).to_string();
        assert_eq!(raw(t.addr(), &post("/tasks", "", &body)).await, 400);
        let list = b"GET /tasks HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
        let mut s = tokio::net::TcpStream::connect(t.addr()).await.unwrap();
        tokio::io::AsyncWriteExt::write_all(&mut s, list)
            .await
            .unwrap();
        let mut out = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut s, &mut out)
            .await
            .unwrap();
        assert!(out.contains(r#""total":0"#), "{out}");
    });
}
