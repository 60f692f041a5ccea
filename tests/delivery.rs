//! End-to-end delivery timing: `headroom run` with a `sink:` posts tasks to the built-in
//! target's scheduler, which delivers them to the sink; the summary's `delivery` object
//! and the delivery thresholds, through the real binary.

use std::path::Path;
use std::time::Duration;

use headroom::target::{self, RunningTarget, TargetOptions};

use crate::support::{assert_exit, run_with_summary, stdout};

const LIMIT: Duration = Duration::from_secs(30);

fn target() -> RunningTarget {
    target::spawn(TargetOptions::loopback()).unwrap()
}

/// A scenario posting 20 tasks in one second, each due `delay_ms` later, whose sink
/// has `sink_extra` (YAML lines indented by 2) and the task `task_extra` (JSON fields).
fn scenario(dir: &Path, url: &str, delay_ms: u64, sink_extra: &str, task_extra: &str) -> String {
    let yaml = format!(
        r#"target: {url}
load: {{model: arrival-rate, rate: 20, duration: 1s}}
sink:
  id: {{json_path: "$.event_id"}}
  grace: 3s
{sink_extra}
requests:
  - name: schedule
    method: POST
    path: /tasks
    correlate: "{{{{ uuid() }}}}"
    json: {{event_id: "{{{{ correlation_id }}}}", url: "{{{{ sink_url }}}}/hook", deliver_in_ms: {delay_ms}{task_extra}}}
    expect: {{status: 201}}
thresholds:
  - "delivery.p95 < 2s"
  - "delivery.lost < 0.1%"
  - "delivery.duplicated < 1%"
"#
    );
    let path = dir.join("delivery.yaml");
    std::fs::write(&path, yaml).unwrap();
    path.display().to_string()
}

#[test]
fn delivery_latency_reads_the_scheduled_delay() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), &t.url(), 200, "", "");
    let (out, s) = run_with_summary(dir.path(), &[&file], LIMIT);
    assert_exit(&out, 0);
    let d = s.delivery.expect("a `delivery` object");
    assert_eq!(s.completed, 20, "every task accepted");
    assert_eq!(
        (d.registered, d.delivered, d.lost, d.duplicated),
        (20, 20, 0, 0)
    );
    assert_eq!((d.unknown, d.no_id, d.bad_body), (0, 0, 0));
    let p50 = d.latency_ms.p50;
    // The delay is the floor (checked on the minimum below); above it, the
    // scheduler's timer and two hops on loopback, which a busy machine stretches.
    assert!(
        (200.0..250.0).contains(&p50),
        "p50 {p50} ms for a 200 ms delay"
    );
    assert!(d.latency_ms.min >= 200.0, "{:?}", d.latency_ms);
    assert_eq!(d.per_second.iter().sum::<u64>(), 20);
    assert!(s.thresholds.iter().all(|t| t.ok), "{:?}", s.thresholds);
}

#[test]
fn lost_deliveries_are_counted_exactly_and_fail_the_threshold() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    // A quarter of the ids refused on every attempt; two attempts each, no backoff:
    // exactly 5 of 20 lost, each refused twice.
    let fail = "  fail: {share: 0.25, status: 503, every_attempt: true}";
    let file = scenario(
        dir.path(),
        &t.url(),
        0,
        fail,
        ", max_attempts: 2, backoff_ms: 0",
    );
    let (out, s) = run_with_summary(dir.path(), &[&file], LIMIT);
    assert_exit(&out, 99);
    let d = s.delivery.expect("a `delivery` object");
    assert_eq!(
        (d.registered, d.delivered, d.lost, d.refused),
        (20, 15, 5, 10)
    );
    assert!((d.lost_rate - 0.25).abs() < 1e-9);
    let lost = s
        .thresholds
        .iter()
        .find(|t| t.expr.contains("lost"))
        .unwrap();
    assert!(!lost.ok && (lost.value - 25.0).abs() < 1e-9, "{lost:?}");
    assert!(
        stdout(&out).contains("delivery through the sink"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn sender_timeouts_make_exact_duplicates() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    // The sink records on receipt and answers after 300 ms; the target gives each
    // attempt 100 ms and tries twice: every id arrives exactly twice.
    let file = scenario(
        dir.path(),
        &t.url(),
        0,
        "  latency: 300ms",
        ", max_attempts: 2, timeout_ms: 100, backoff_ms: 0",
    );
    let (out, s) = run_with_summary(dir.path(), &[&file], LIMIT);
    assert_exit(&out, 99);
    let d = s.delivery.expect("a `delivery` object");
    // The grace period lasts until the sink has been quiet for `settle` (500 ms), well
    // after each second copy (100 ms behind its first).
    assert_eq!((d.delivered, d.lost, d.duplicated), (20, 0, 20));
    assert!((d.duplicated_rate - 1.0).abs() < 1e-9);
    let dup = s
        .thresholds
        .iter()
        .find(|t| t.expr.contains("duplicated"))
        .unwrap();
    assert!(!dup.ok && (dup.value - 100.0).abs() < 1e-9, "{dup:?}");
}

#[test]
fn a_sink_scenario_with_bad_fields_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(
        dir.path(),
        "http://127.0.0.1:9",
        0,
        "  listen: 10.0.0.1:0",
        "",
    );
    let out = crate::support::run_headroom(["run", &file], LIMIT);
    assert_exit(&out, 2);
    let err = crate::support::stderr(&out);
    assert!(err.contains("loopback"), "{err}");
}

/// Posts `body` to `addr` with `Connection: close`; the status code (0 if none).
fn post(addr: std::net::SocketAddr, body: &str) -> u16 {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let req = format!(
        "POST /hook HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

#[test]
fn headroom_sink_alone_answers_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let port = crate::support::free_port();
    let out_file = dir.path().join("sink.json");
    let child = std::process::Command::new(crate::support::headroom_bin())
        .args([
            "sink",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--duration",
            "2s",
        ])
        .args(["--fail-share", "0.5", "--max-body", "100", "--out"])
        .arg(&out_file)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let ready = std::time::Instant::now() + Duration::from_secs(5);
    while std::net::TcpStream::connect(addr).is_err() {
        assert!(std::time::Instant::now() < ready, "sink never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Ids 1 and 2: with share 0.5 the 2nd distinct id is refused once, then accepted.
    let codes = [
        post(addr, r#"{"id": 1}"#),
        post(addr, r#"{"id": 2}"#),
        post(addr, r#"{"id": 2}"#),
        post(addr, r#"{"id": 1}"#),
        post(addr, "not json"),
        post(addr, "{}"),
        post(addr, &"x".repeat(1000)),
    ];
    assert_eq!(codes, [200, 503, 200, 200, 400, 400, 413]);
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("listening on http://127.0.0.1:{port}")),
        "{text}"
    );
    assert!(text.contains("1s  delivered"), "a line a second: {text}");
    let d: headroom::sink::DeliverySummary =
        serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    assert_eq!((d.delivered, d.duplicated, d.refused), (2, 1, 1));
    assert_eq!((d.bad_body, d.no_id, d.too_large, d.unknown), (1, 1, 1, 0));
}

#[test]
fn sink_variables_without_a_sink_are_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    for (request, expect) in [
        (
            r#"{path: /tasks, correlate: "{{ uuid() }}"}"#,
            "needs a `sink:`",
        ),
        (r#"{path: "/tasks?to={{ sink_url }}"}"#, "sink_url"),
    ] {
        let file = dir.path().join("nosink.yaml");
        let yaml = format!("target: http://127.0.0.1:9\nrequests:\n  - {request}\n");
        std::fs::write(&file, yaml).unwrap();
        let out = crate::support::run_headroom(["run", &file.display().to_string()], LIMIT);
        assert_exit(&out, 2);
        let err = crate::support::stderr(&out);
        assert!(err.contains(expect), "{err}");
    }
}
