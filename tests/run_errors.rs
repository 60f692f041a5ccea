//! Error kinds against misbehaving servers on loopback: timeouts, resets, malformed
//! responses, failed expectations, unexpected statuses (ARCHITECTURE.md rule 4).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use headroom::metrics::summary::Summary;
use headroom::target::{self, TargetOptions};

use crate::support::{run_with_summary, stderr, Nginx};

const LIMIT: Duration = Duration::from_secs(60);

/// Runs `headroom run` with `args` plus `--quiet --out`, returns the summary.
fn run_summary(args: &[&str], dir: &Path) -> Summary {
    let (out, summary) = run_with_summary(dir, args, LIMIT);
    assert!(
        matches!(out.status.code(), Some(0 | 99)),
        "exit {:?}: {}",
        out.status.code(),
        stderr(&out)
    );
    summary
}

/// A server that answers every connection with `reply` after reading the request,
/// then closes; serves until the test process ends (bounded by the run's length).
fn misbehaving_server(reply: &'static [u8]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(5_000) {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf);
                let _ = stream.write_all(reply);
            });
        }
    });
    format!("http://{addr}/")
}

fn kind(s: &Summary, k: &str) -> u64 {
    s.errors.by_kind.get(k).copied().unwrap_or(0)
}

#[test]
fn slow_responses_past_the_timeout_are_timeouts() {
    let target = target::spawn(TargetOptions::loopback()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/slow?ms=1000", target.url());
    let s = run_summary(
        &[
            "--url",
            &url,
            "--rate",
            "20",
            "--duration",
            "1s",
            "--timeout",
            "200ms",
        ],
        dir.path(),
    );
    assert_eq!(s.requests, 20);
    assert_eq!(kind(&s, "timeout"), 20, "{:?}", s.errors);
    assert!(
        s.latency_uncorrected_ms.max < 400.0,
        "timed out requests end at the timeout: {:?}",
        s.latency_uncorrected_ms
    );
}

#[test]
fn a_connection_closed_mid_response_is_a_reset() {
    let url = misbehaving_server(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort");
    let dir = tempfile::tempdir().unwrap();
    let s = run_summary(
        &["--url", &url, "--rate", "20", "--duration", "1s"],
        dir.path(),
    );
    assert_eq!(kind(&s, "reset"), s.requests, "{:?}", s.errors);
    assert_eq!(s.requests, 20);
}

#[test]
fn a_malformed_response_is_a_protocol_error() {
    let url = misbehaving_server(b"HTTP/1.1 OK-ish\r\n\r\n");
    let dir = tempfile::tempdir().unwrap();
    let s = run_summary(
        &["--url", &url, "--rate", "20", "--duration", "1s"],
        dir.path(),
    );
    assert_eq!(kind(&s, "protocol"), s.requests, "{:?}", s.errors);
}

#[test]
fn unexpected_statuses_and_failed_checks_are_counted_by_kind() {
    let nginx = Nginx::start();
    let target = target::spawn(TargetOptions::loopback()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("checks.yaml");
    std::fs::write(
        &scenario,
        format!(
            r#"name: checks
target: {}
load: {{model: arrival-rate, rate: 400, duration: 1s}}
requests:
  - {{name: wrong_status, path: /, expect: {{status: 201}}}}
  - {{name: wrong_body, path: /, expect: {{body_contains: "nope"}}}}
  - {{name: missing_json, path: /json, expect: {{json_path: "$.missing"}}}}
  - {{name: right_json, path: /json, expect: {{json: {{"$.id": 42}}}}}}
  - {{name: server_error, path: "/../status/503"}}
"#,
            nginx.url()
        ),
    )
    .unwrap();
    let s = run_summary(&[&scenario.display().to_string()], dir.path());
    let errors = |n: &str| s.by_name[n].errors.count;
    let requests = |n: &str| s.by_name[n].requests;
    assert!(requests("wrong_status") > 0 && errors("wrong_status") == requests("wrong_status"));
    assert!(requests("wrong_body") > 0 && errors("wrong_body") == requests("wrong_body"));
    assert!(requests("missing_json") > 0 && errors("missing_json") == requests("missing_json"));
    assert!(
        requests("right_json") > 0 && errors("right_json") == 0,
        "{:?}",
        s.by_name["right_json"]
    );
    assert_eq!(
        kind(&s, "check"),
        errors("wrong_status") + errors("wrong_body") + errors("missing_json")
    );
    // nginx answers a path escaping its root with 400: an unexpected 4xx.
    assert_eq!(
        kind(&s, "status_4xx"),
        requests("server_error"),
        "{:?}",
        s.errors
    );

    let url = format!("{}/status/503", target.url());
    let s = run_summary(
        &["--url", &url, "--rate", "50", "--duration", "1s"],
        dir.path(),
    );
    assert_eq!(kind(&s, "status_5xx"), 50, "{:?}", s.errors);
}

#[test]
fn a_request_with_its_own_timeout_times_out_alone() {
    // Both requests wait 400 ms for their answer; only the one allowed 150 ms fails.
    let target = target::spawn(TargetOptions::loopback()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("timeouts.yaml");
    std::fs::write(
        &scenario,
        format!(
            "target: {}\n\
             defaults: {{timeout: 2s}}\n\
             load: {{model: arrival-rate, rate: 20, duration: 1s}}\n\
             requests:\n  \
               - {{name: hasty, path: \"/slow?ms=400\", timeout: 150ms}}\n  \
               - {{name: patient, path: \"/slow?ms=400\"}}\n",
            target.url()
        ),
    )
    .unwrap();
    let s = run_summary(&[scenario.to_str().unwrap()], dir.path());
    let (hasty, patient) = (&s.by_name["hasty"], &s.by_name["patient"]);
    assert!(
        hasty.requests > 0 && patient.requests > 0,
        "{:?}",
        s.by_name
    );
    assert_eq!(hasty.errors.by_kind.get("timeout"), Some(&hasty.requests));
    assert_eq!(patient.errors.count, 0, "{:?}", patient.errors);
    assert!(
        hasty.latency_ms.max < 350.0,
        "a timed-out request ends at its own timeout: {:?}",
        hasty.latency_ms
    );
}
