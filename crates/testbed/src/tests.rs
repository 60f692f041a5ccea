//! Socket tests: a real target on 127.0.0.1:0, driven over TCP by [`super::test_client`].

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::test_client::{get, send, send_on};
use super::*;

fn target(workers: usize, service_ms: u64, queue: usize) -> RunningTarget {
    spawn(TargetOptions {
        workers,
        service_time: Duration::from_millis(service_ms),
        queue,
        ..TargetOptions::loopback()
    })
    .expect("target starts")
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// Opens `n` connections, then sends `GET path` on all of them at once; returns the
/// statuses and the time from the first send to the last response. Connecting first
/// keeps the client's own start-up (hundreds of handshakes) out of the measurement.
fn burst(t: &RunningTarget, path: &str, n: usize) -> (Vec<u16>, Duration) {
    let addr = t.addr();
    let path = path.to_owned();
    block_on(async move {
        let mut streams = Vec::with_capacity(n);
        for _ in 0..n {
            streams.push(tokio::net::TcpStream::connect(addr).await.expect("connect"));
        }
        let start = Instant::now();
        let mut set = tokio::task::JoinSet::new();
        for stream in streams {
            let path = path.clone();
            set.spawn(async move {
                let exchange = send_on(stream, "GET", &path, &[], b"");
                match tokio::time::timeout(Duration::from_secs(10), exchange).await {
                    Ok(result) => result.map(|r| r.status),
                    Err(_) => Err(std::io::Error::other("request timed out")),
                }
            });
        }
        let statuses = set
            .join_all()
            .await
            .into_iter()
            .collect::<std::io::Result<Vec<u16>>>()
            .expect("every request gets a response");
        (statuses, start.elapsed())
    })
}

#[test]
fn work_is_served_at_the_configured_capacity() {
    let t = target(4, 5, 10_000);
    assert_eq!(t.capacity(), 800.0);
    assert!(t.url().starts_with("http://127.0.0.1:"));
    // 400 requests at 800/s: 100 rounds of 5 ms = 0.5 s.
    let (statuses, elapsed) = burst(&t, "/work", 400);
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    let rate = 400.0 / elapsed.as_secs_f64();
    assert!(elapsed >= Duration::from_millis(495), "{elapsed:?}");
    assert!(rate > 720.0, "served {rate:.0}/s of 800/s in {elapsed:?}");
}

#[test]
fn exponential_service_keeps_the_mean_capacity() {
    let t = spawn(TargetOptions {
        service_dist: ServiceDist::Exp,
        threads: 2,
        ..TargetOptions::loopback()
    })
    .unwrap();
    let (statuses, elapsed) = burst(&t, "/work", 400);
    assert!(statuses.iter().all(|s| *s == 200));
    // Sum of 400 Exp(5 ms) over 4 workers: 0.5 s, standard deviation ~25 ms.
    assert!(elapsed > Duration::from_millis(380), "{elapsed:?}");
    assert!(elapsed < Duration::from_millis(700), "{elapsed:?}");
}

#[test]
fn a_full_queue_answers_503_at_once() {
    // One worker busy for 300 ms, five may wait; the other 14 are turned away.
    let t = target(1, 300, 5);
    let addr = t.addr();
    let (ok, rejected, rejected_fast) = block_on(async move {
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..20 {
            set.spawn(async move {
                let start = Instant::now();
                let r = get(addr, "/work").await.unwrap();
                (r.status, start.elapsed())
            });
        }
        let results = set.join_all().await;
        let ok = results.iter().filter(|(s, _)| *s == 200).count();
        let rejected: Vec<_> = results.iter().filter(|(s, _)| *s == 503).collect();
        let fast = rejected
            .iter()
            .all(|(_, took)| *took < Duration::from_millis(250));
        (ok, rejected.len(), fast)
    });
    assert_eq!(ok + rejected, 20);
    assert_eq!(ok, 6, "1 in service + 5 queued");
    assert!(rejected_fast, "503s must not wait for a worker");
}

#[test]
fn ms_query_overrides_the_service_time() {
    let t = target(1, 1_000, 10);
    let start = Instant::now();
    let r = block_on(get(t.addr(), "/work?ms=20")).unwrap();
    let took = start.elapsed();
    assert_eq!(r.status, 200);
    assert!(
        took >= Duration::from_millis(20) && took < Duration::from_millis(500),
        "{took:?}"
    );
    let service = r.json()["service_ms"].as_f64().unwrap();
    assert!((20.0..25.0).contains(&service), "{service}");
    assert_eq!(block_on(get(t.addr(), "/work?ms=x")).unwrap().status, 400);
}

#[test]
fn tasks_round_trip() {
    let t = target(4, 5, 100);
    block_on(async {
        let addr = t.addr();
        let json = [("content-type", "application/json")];
        let mut ids = Vec::new();
        for name in ["a", "b", "c"] {
            let body = format!(r#"{{"name":"{name}","payload":[1,2]}}"#);
            let r = send(addr, "POST", "/tasks", &json, body.as_bytes())
                .await
                .unwrap();
            assert_eq!(r.status, 201);
            let task = r.json();
            assert_eq!(task["name"], name);
            assert_eq!(task["payload"], serde_json::json!([1, 2]));
            assert!(task["created_at"].is_string());
            ids.push(task["id"].as_u64().unwrap());
        }
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids increase: {ids:?}");

        let page = get(addr, "/tasks?limit=2&offset=1").await.unwrap().json();
        assert_eq!(page["total"], 3);
        let names: Vec<_> = page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].clone())
            .collect();
        assert_eq!(names, ["b", "c"]);

        let one = get(addr, &format!("/tasks/{}", ids[0])).await.unwrap();
        assert_eq!((one.status, one.json()["name"].as_str()), (200, Some("a")));
        let gone = send(addr, "DELETE", &format!("/tasks/{}", ids[0]), &[], b"")
            .await
            .unwrap();
        assert_eq!(gone.status, 204);
        let again = send(addr, "DELETE", &format!("/tasks/{}", ids[0]), &[], b"")
            .await
            .unwrap();
        assert_eq!(again.status, 404);
        assert_eq!(
            get(addr, &format!("/tasks/{}", ids[0]))
                .await
                .unwrap()
                .status,
            404
        );
        assert_eq!(get(addr, "/tasks").await.unwrap().json()["total"], 2);
        let bad = send(addr, "POST", "/tasks", &json, b"[1]").await.unwrap();
        assert_eq!(bad.status, 400);
        let bad = send(addr, "POST", "/tasks", &json, b"{").await.unwrap();
        assert_eq!(bad.status, 400);
    });
}

/// Parses an exposition into `series -> value`, failing on any malformed sample line.
pub(super) fn parse_exposition(text: &str) -> HashMap<String, f64> {
    let mut samples = HashMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("bad line {line:?}"));
        let value: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("bad value in {line:?}"));
        samples.insert(series.to_owned(), value);
    }
    samples
}

#[test]
fn metrics_count_requests_by_endpoint_and_status() {
    let t = target(2, 1, 100);
    let (statuses, _) = burst(&t, "/work", 5);
    assert!(statuses.iter().all(|s| *s == 200));
    block_on(async {
        assert_eq!(get(t.addr(), "/status/502").await.unwrap().status, 502);
        assert_eq!(get(t.addr(), "/nope").await.unwrap().status, 404);
        let r = get(t.addr(), "/metrics").await.unwrap();
        assert_eq!(r.status, 200);
        assert!(r
            .header("content-type")
            .unwrap()
            .contains("openmetrics-text"));
        let m = parse_exposition(&r.text());
        let count = |series: &str| {
            m.get(series)
                .copied()
                .unwrap_or_else(|| panic!("no {series}"))
        };
        assert_eq!(
            count(r#"headroom_target_requests_total{endpoint="work",status="200"}"#),
            5.0
        );
        assert_eq!(
            count(r#"headroom_target_requests_total{endpoint="status",status="502"}"#),
            1.0
        );
        assert_eq!(
            count(r#"headroom_target_requests_total{endpoint="not_found",status="404"}"#),
            1.0
        );
        assert_eq!(
            count(r#"headroom_target_request_duration_seconds_count{endpoint="work"}"#),
            5.0
        );
        assert_eq!(count("headroom_target_workers"), 2.0);
        assert_eq!(count("headroom_target_workers_busy"), 0.0);
        assert_eq!(count("headroom_target_queue_depth"), 0.0);
        // The /metrics request itself is in flight while it is encoded.
        assert_eq!(count("headroom_target_in_flight"), 1.0);
    });
}

#[test]
fn stall_delays_responses_but_not_health_or_admin() {
    let t = target(4, 5, 100);
    block_on(async {
        let addr = t.addr();
        let r = send(addr, "POST", "/admin/stall?ms=300", &[], b"")
            .await
            .unwrap();
        assert_eq!(r.status, 200);
        let start = Instant::now();
        assert_eq!(get(addr, "/health").await.unwrap().text(), "ok\n");
        assert!(
            start.elapsed() < Duration::from_millis(150),
            "health is exempt"
        );

        let (echo, work) = tokio::join!(get(addr, "/echo"), get(addr, "/work"));
        let stalled = start.elapsed();
        assert_eq!((echo.unwrap().status, work.unwrap().status), (200, 200));
        assert!(stalled >= Duration::from_millis(280), "{stalled:?}");
        assert!(stalled < Duration::from_millis(600), "{stalled:?}");

        let after = Instant::now();
        assert_eq!(get(addr, "/echo").await.unwrap().status, 200);
        assert!(
            after.elapsed() < Duration::from_millis(150),
            "the stall is over"
        );
        assert_eq!(
            send(addr, "POST", "/admin/stall", &[], b"")
                .await
                .unwrap()
                .status,
            400
        );
    });
}

#[test]
fn admin_service_changes_the_work_service_time_from_then_on() {
    let t = target(1, 5, 100);
    block_on(async {
        let addr = t.addr();
        let before = get(addr, "/work").await.unwrap().json();
        assert!(before["service_ms"].as_f64().unwrap() < 20.0, "{before}");
        let r = send(addr, "POST", "/admin/service?ms=60", &[], b"")
            .await
            .unwrap();
        assert_eq!(r.status, 200);
        let v = r.json();
        assert_eq!(
            (v["service_ms"].as_f64(), v["was_ms"].as_f64()),
            (Some(60.0), Some(5.0))
        );
        let start = Instant::now();
        let after = get(addr, "/work").await.unwrap().json();
        assert_eq!(after["service_ms"].as_f64(), Some(60.0), "{after}");
        assert!(start.elapsed() >= Duration::from_millis(55));
        // A request's own `ms` still wins; a missing or hostile value is refused.
        let own = get(addr, "/work?ms=1").await.unwrap().json();
        assert!(own["service_ms"].as_f64().unwrap() < 20.0, "{own}");
        for bad in [
            "/admin/service",
            "/admin/service?ms=-3",
            "/admin/service?ms=1e99",
            "/admin/service?ms=x",
        ] {
            assert_eq!(
                send(addr, "POST", bad, &[], b"").await.unwrap().status,
                400,
                "{bad}"
            );
        }
        assert_eq!(get(addr, "/admin/service?ms=1").await.unwrap().status, 404);
    });
}

#[test]
fn admin_contention_makes_work_reconcile_with_the_others_in_flight() {
    let t = target(4, 1, 100);
    block_on(async {
        let addr = t.addr();
        let before = get(addr, "/work").await.unwrap().json();
        assert_eq!(before["contended_ms"].as_f64(), Some(0.0), "{before}");
        let r = send(addr, "POST", "/admin/contention?ms=10", &[], b"")
            .await
            .unwrap();
        assert_eq!(r.status, 200);
        let v = r.json();
        assert_eq!(
            (v["contention_ms"].as_f64(), v["was_ms"].as_f64()),
            (Some(10.0), Some(0.0))
        );
        // Two at once: each reconciles with the other, 2 × 1 exchanges of 10 ms.
        let (a, b) = tokio::join!(get(addr, "/work"), get(addr, "/work"));
        for r in [a.unwrap().json(), b.unwrap().json()] {
            let took = r["contended_ms"].as_f64().unwrap();
            assert!((19.0..60.0).contains(&took), "{r}");
        }
        for bad in ["/admin/contention", "/admin/contention?ms=-1"] {
            assert_eq!(
                send(addr, "POST", bad, &[], b"").await.unwrap().status,
                400,
                "{bad}"
            );
        }
    });
}

#[test]
fn echo_returns_the_request() {
    let t = target(1, 5, 10);
    let r = block_on(send(
        t.addr(),
        "POST",
        "/echo?x=1&y=two",
        &[("x-trace", "abc"), ("content-type", "text/plain")],
        b"hello target",
    ))
    .unwrap();
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["method"], "POST");
    assert_eq!(v["path"], "/echo");
    assert_eq!(v["query"], "x=1&y=two");
    assert_eq!(v["headers"]["x-trace"], "abc");
    assert_eq!(v["headers"]["content-length"], "12");
    assert_eq!(v["body"], "hello target");
}

#[test]
fn slow_sleeps_without_holding_a_worker() {
    // The only worker is busy for 400 ms; /slow must not wait for it.
    let t = target(1, 400, 10);
    block_on(async {
        let addr = t.addr();
        let work = tokio::spawn(async move { get(addr, "/work").await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let start = Instant::now();
        assert_eq!(get(addr, "/slow?ms=50").await.unwrap().status, 200);
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(50) && took < Duration::from_millis(300),
            "{took:?}"
        );
        assert_eq!(work.await.unwrap().unwrap().status, 200);
    });
}

#[test]
fn status_and_unknown_routes() {
    let t = target(1, 5, 10);
    block_on(async {
        let addr = t.addr();
        assert_eq!(get(addr, "/status/418").await.unwrap().status, 418);
        assert_eq!(
            send(addr, "POST", "/status/201", &[], b"")
                .await
                .unwrap()
                .status,
            201
        );
        assert_eq!(get(addr, "/status/99").await.unwrap().status, 400);
        assert_eq!(get(addr, "/").await.unwrap().status, 404);
        assert_eq!(
            send(addr, "PUT", "/work", &[], b"").await.unwrap().status,
            405
        );
        assert_eq!(
            send(addr, "POST", "/health", &[], b"")
                .await
                .unwrap()
                .status,
            405
        );
        assert_eq!(get(addr, "/tasks/abc").await.unwrap().status, 404);
    });
}

#[test]
fn shutdown_closes_the_listener() {
    let t = target(1, 5, 10);
    let addr = t.addr();
    assert_eq!(block_on(get(addr, "/health")).unwrap().status, 200);
    t.shutdown();
    assert!(std::net::TcpStream::connect(addr).is_err());
    // Dropping also stops it.
    let dropped = target(1, 5, 10);
    let addr = dropped.addr();
    drop(dropped);
    assert!(std::net::TcpStream::connect(addr).is_err());
}

#[test]
fn a_taken_port_is_an_error() {
    let t = target(1, 5, 10);
    let err = spawn(TargetOptions {
        listen: t.addr(),
        ..TargetOptions::default()
    });
    assert!(err.is_err());
}
