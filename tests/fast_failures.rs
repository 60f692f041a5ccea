//! Fast failures must not make latency look good (issue 9, item 5): a rate limiter
//! that turns most requests away at once, while the few it lets through are slow.

use std::net::SocketAddr;
use std::thread;
use std::time::Duration;

use headroom::search::SearchResult;

use crate::support::{assert_adds_up, keep_alive_server, run_headroom, run_with_summary, stderr};

const LIMIT: Duration = Duration::from_secs(60);

/// Answers one request in 40 with `200` after 150 ms and the rest with an immediate
/// `503`, on keep-alive connections. One in 40 (2.5 %) keeps the slow answers well
/// inside the fastest 95 %: at one in 20 the p95 sat on the boundary, and any other
/// request a busy machine delayed past 100 ms flipped it.
fn limiter() -> SocketAddr {
    let (addr, _) = keep_alive_server(|n| {
        if n % 40 == 0 {
            thread::sleep(Duration::from_millis(150));
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        } else {
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"
        }
    });
    addr
}

#[test]
fn successful_latency_is_kept_apart_from_fast_rejections() {
    let url = format!("http://{}/", limiter());
    let dir = tempfile::tempdir().unwrap();
    let (out, s) = run_with_summary(
        dir.path(),
        &[
            "--url",
            &url,
            "--rate",
            "40",
            "--duration",
            "2s",
            "--threshold",
            "p95 < 100ms",
            "--threshold",
            "success_p95 < 100ms",
        ],
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(99), "{}", stderr(&out));
    assert!(s.errors.by_kind["status_5xx"] >= 70, "{:?}", s.errors);
    // Overall, the rejections make p95 look fast; the successes alone took 150 ms.
    assert!(s.latency_ms.p95 < 100.0, "{:?}", s.latency_ms);
    assert!(
        s.latency_success_ms.p50 >= 150.0,
        "{:?}",
        s.latency_success_ms
    );
    let verdicts: Vec<(&str, bool)> = s
        .thresholds
        .iter()
        .map(|t| (t.expr.as_str(), t.ok))
        .collect();
    assert_eq!(
        verdicts,
        [("p95 < 100ms", true), ("success_p95 < 100ms", false)]
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\nsuccessful "), "{text}");
}

#[test]
fn find_never_passes_a_step_where_most_requests_were_turned_away() {
    let url = format!("http://{}/", limiter());
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("r.json");
    // Only a latency rule is given: the search adds the error rule itself.
    let out = run_headroom(
        [
            "find",
            "--url",
            &url,
            "--from",
            "20",
            "--to",
            "40",
            "--step-duration",
            "1s",
            "--threshold",
            "p95 < 100ms",
            "--quiet",
            "--out",
            out_file.to_str().unwrap(),
        ],
        LIMIT,
    );
    let text = std::fs::read_to_string(&out_file).unwrap();
    let result: SearchResult = serde_json::from_str(&text).unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(result.ceiling, None, "{text}");
    let first = &result.steps[0];
    assert_adds_up(&first.summary);
    assert!(!first.passed);
    let rules: Vec<(&str, bool)> = first
        .summary
        .thresholds
        .iter()
        .map(|t| (t.expr.as_str(), t.ok))
        .collect();
    assert_eq!(rules, [("p95 < 100ms", true), ("errors < 1%", false)]);
}
