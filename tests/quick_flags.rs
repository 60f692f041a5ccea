//! Issue 12: quick mode's request flags from curl, hey and oha (`-X`, `-H`, `--body`,
//! `--json`, `--body-file`) on `run --url`: the requests arrive with them, at the
//! built-in target and at a loopback listener that keeps each request it reads.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use headroom::target::{self, TargetOptions};

use crate::support::{assert_exit, http_get, run_headroom, run_with_summary, stderr};

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn json_posts_create_tasks_and_a_method_flag_changes_the_method() {
    let target = target::spawn(TargetOptions::loopback()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/tasks", target.url());
    let (out, summary) = run_with_summary(
        dir.path(),
        &[
            "--url",
            &url,
            "--json",
            r#"{"from": "quick", "n": "{{ seq() }}"}"#,
            "--rate",
            "20",
            "--duration",
            "1s",
            "--threads",
            "1",
        ],
        LIMIT,
    );
    assert_exit(&out, 0);
    assert!(
        summary.requests > 0 && summary.errors.count == 0,
        "{summary:?}"
    );
    assert!(
        summary.by_name.contains_key("POST /tasks"),
        "{:?}",
        summary.by_name
    );
    let (status, body) = http_get(target.addr(), "/tasks?limit=1000");
    assert_eq!(status, 200);
    let listed: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(listed["total"].as_u64(), Some(summary.completed), "{body}");
    assert!(listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["from"] == "quick"));

    // DELETE /tasks (no id) is refused with 405: every request went as DELETE.
    let (out, summary) = run_with_summary(
        dir.path(),
        &[
            "--url",
            &url,
            "-X",
            "delete",
            "--rate",
            "20",
            "--duration",
            "1s",
            "--threads",
            "1",
        ],
        LIMIT,
    );
    assert_exit(&out, 0);
    assert!(summary.requests > 0);
    assert_eq!(
        summary.errors.by_kind.get("status_4xx").copied(),
        Some(summary.requests),
        "{:?}",
        summary.errors
    );
    assert!(summary.by_name.contains_key("DELETE /tasks"));
    target.shutdown();
}

/// A listener on 127.0.0.1 that answers `200` with keep-alive and keeps every
/// request it reads (head and body), at most 64 KiB each and 1 000 in all.
fn recorder() -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keep = seen.clone();
    thread::spawn(move || {
        for stream in listener.incoming().take(100) {
            let Ok(stream) = stream else { continue };
            let keep = keep.clone();
            thread::spawn(move || {
                let mut writer = stream.try_clone().unwrap();
                let mut reader = BufReader::new(stream);
                loop {
                    let mut head = String::new();
                    let mut length = 0usize;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 || head.len() > 65_536 {
                            return;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0).min(65_536);
                        }
                        let end = line == "\r\n";
                        head.push_str(&line);
                        if end {
                            break;
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    head.push_str(&String::from_utf8_lossy(&body));
                    {
                        let mut seen = keep.lock().unwrap();
                        if seen.len() < 1_000 {
                            seen.push(head);
                        }
                    }
                    if writer
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    (addr, seen)
}

#[test]
fn headers_method_and_body_file_arrive_as_given() {
    let (addr, seen) = recorder();
    let dir = tempfile::tempdir().unwrap();
    let body_file = dir.path().join("body.txt");
    std::fs::write(&body_file, "line one\n{{ not a template }}\n").unwrap();
    let (out, summary) = run_with_summary(
        dir.path(),
        &[
            "--url",
            &format!("http://{addr}/upload?x=1"),
            "-X",
            "PUT",
            "-H",
            "X-Round: 6",
            "--header",
            "Authorization: Bearer abc:def",
            "--body-file",
            &body_file.display().to_string(),
            "--rate",
            "10",
            "--duration",
            "1s",
            "--threads",
            "1",
        ],
        LIMIT,
    );
    assert_exit(&out, 0);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len() as u64, summary.requests, "{seen:?}");
    for request in seen.iter() {
        let lower = request.to_ascii_lowercase();
        assert!(
            request.starts_with("PUT /upload?x=1 HTTP/1.1\r\n"),
            "{request}"
        );
        assert!(lower.contains("\r\nx-round: 6\r\n"), "{request}");
        assert!(
            lower.contains("\r\nauthorization: bearer abc:def\r\n"),
            "{request}"
        );
        assert!(
            request.ends_with("\r\n\r\nline one\n{{ not a template }}\n"),
            "{request}"
        );
    }
}

#[test]
fn request_flags_with_a_scenario_file_or_bad_values_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("s.yaml");
    std::fs::write(
        &scenario,
        "target: http://127.0.0.1:9\nload: {rate: 1, duration: 1s}\nrequests: [{path: /}]\n",
    )
    .unwrap();
    let path = scenario.display().to_string();
    for (args, said) in [
        (vec!["run", &path, "--json", "{}"], "quick mode"),
        (
            vec![
                "run",
                "--url",
                "http://127.0.0.1:9/",
                "--rate",
                "1",
                "--json",
                "{nope",
            ],
            "--json: not JSON",
        ),
        (
            vec![
                "run",
                "--url",
                "http://127.0.0.1:9/",
                "--rate",
                "1",
                "-H",
                "no colon",
            ],
            "Name: value",
        ),
        (
            vec![
                "run",
                "--url",
                "http://127.0.0.1:9/",
                "--rate",
                "1",
                "--body",
                "a",
                "--json",
                "{}",
            ],
            "cannot be used with",
        ),
        (
            vec![
                "find",
                "--url",
                "http://127.0.0.1:9/",
                "--body-file",
                "/no/such/file",
            ],
            "--body-file /no/such/file",
        ),
    ] {
        let out = run_headroom(&args, LIMIT);
        assert_exit(&out, 2);
        assert!(stderr(&out).contains(said), "{args:?}: {}", stderr(&out));
    }
}
