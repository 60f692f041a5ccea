//! Thresholds over sliding windows (`p95 < 200ms over 3s`) and `run --abort-on-fail`
//! (issue 23, item 5), against the built-in target frozen for short spells through its
//! `POST /admin/stall?ms=N`.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use headroom::target::{self, TargetOptions};

use crate::support::{assert_exit, run_headroom, run_with_summary, stderr, stdout};

const LIMIT: Duration = Duration::from_secs(60);

/// A minimal HTTP/1.1 POST with no body, for the target's admin endpoints.
fn post(url: &str) {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap());
    let mut s = std::net::TcpStream::connect(authority).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    assert!(reply.starts_with("HTTP/1.1 2"), "{url}: {reply}");
}

/// Freezes the target for `ms` at each of `at` (from now), on a thread of its own;
/// returns when the last freeze ended, once joined.
fn stalls(base: &str, at: &[u64], ms: u64) -> std::thread::JoinHandle<Instant> {
    let url = format!("{base}/admin/stall?ms={ms}");
    let at = at.to_vec();
    std::thread::spawn(move || {
        let start = Instant::now();
        let mut ended = start;
        for t in at {
            std::thread::sleep(Duration::from_millis(t).saturating_sub(start.elapsed()));
            post(&url);
            ended = Instant::now() + Duration::from_millis(ms);
        }
        ended
    })
}

/// A slow spell of three seconds (a 350 ms freeze at the start of each) in a 12 s run
/// at 100/s: about 45 of 1200 requests take over 200 ms, under 5% of the run but 15%
/// of the three seconds that hold them. The whole-run p95 dilutes the spell and passes;
/// the same rule over 3 s windows fails, naming the window.
#[test]
fn a_slow_spell_fails_its_window_while_the_whole_run_passes() {
    let target = target::spawn(TargetOptions::loopback()).expect("built-in target");
    let base = target.url();
    let staller = stalls(&base, &[4_000, 5_000, 6_000], 350);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{base}/status/200");
    let (out, s) = run_with_summary(
        dir.path(),
        &[
            "--url",
            &url,
            "--rate",
            "100",
            "--duration",
            "12s",
            "--threshold",
            "p95 < 200ms over 3s",
            "--threshold",
            "p95 < 200ms",
            "--threshold",
            "p95 < 200ms over 1m",
        ],
        LIMIT,
    );
    staller.join().unwrap();
    assert_exit(&out, 99);
    let [windowed, whole, long] = &s.thresholds[..] else {
        panic!("three verdicts: {:?}", s.thresholds);
    };
    assert!(whole.ok, "the whole run's p95 dilutes the spell: {whole:?}");
    assert_eq!(whole.window, None);
    assert!(s.latency_ms.p95 < 200.0, "{:?}", s.latency_ms);
    assert!(!windowed.ok, "{windowed:?}");
    let w = windowed.window.expect("the failing window");
    assert_eq!(w.end_s - w.start_s, 3, "{w:?}");
    assert!(
        (1..=9).contains(&w.start_s),
        "the spell began ~4 s in: {w:?}"
    );
    assert!(w.value >= 200.0 && !w.whole_run, "{w:?}");
    assert_eq!(windowed.value, w.value);
    // The window holds some of the spell's slow seconds, as the timeline shows them.
    let slow: Vec<u64> = s
        .timeline
        .iter()
        .filter(|t| t.p99_ms >= 200.0)
        .map(|t| t.t)
        .collect();
    assert!(
        slow.iter().any(|t| (w.start_s..w.end_s).contains(t)),
        "slow seconds {slow:?}, window {w:?}"
    );
    // A window longer than the run judges the whole run, and says so.
    let lw = long.window.expect("the whole run as one window");
    assert!(long.ok && lw.whole_run && lw.start_s == 0, "{long:?}");
    let text = stdout(&out);
    let said = format!(
        "p95 < 200ms over 3s: failed in {}s–{}s (p95 ",
        w.start_s, w.end_s
    );
    assert!(text.contains(&said), "{said:?} not in:\n{text}");
    assert!(
        text.contains("p95 < 200ms over 1m: window longer than the run: judged the whole run"),
        "{text}"
    );
}

/// `--abort-on-fail`: a one-second freeze 7 s into a 30 s run fails the 2 s window that
/// holds it; the run stops within about two seconds, exits 99, and its summary so far
/// is marked aborted and adds up.
#[test]
fn abort_on_fail_stops_the_run_soon_after_a_window_fails() {
    let target = target::spawn(TargetOptions::loopback()).expect("built-in target");
    let base = target.url();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{base}/status/200");
    let staller = stalls(&base, &[7_000], 1_000);
    let (out, s) = run_with_summary(
        dir.path(),
        &[
            "--url",
            &url,
            "--rate",
            "100",
            "--duration",
            "30s",
            "--threshold",
            "p95 < 200ms over 2s",
            "--abort-on-fail",
        ],
        LIMIT,
    );
    let exited = Instant::now();
    let stall_ended = staller.join().unwrap();
    assert_exit(&out, 99);
    let since = exited.saturating_duration_since(stall_ended);
    // Judged at the end of the second the freeze ended in (≤ 1 s), then stopped with
    // the in-flight grace and the summary written.
    assert!(
        since < Duration::from_secs(3),
        "exited {since:?} after the freeze"
    );
    let aborted = s.aborted.as_ref().expect("the summary is marked aborted");
    assert!((5..=12).contains(&aborted.at_s), "{aborted:?}");
    assert!(
        aborted
            .reason
            .starts_with("p95 < 200ms over 2s: failed in "),
        "{aborted:?}"
    );
    assert!(s.interrupted, "an aborted run is cut short");
    assert!(s.duration_s < aborted.at_s as f64 + 2.5, "{}", s.duration_s);
    assert!(!s.thresholds[0].ok, "{:?}", s.thresholds);
    assert!(
        s.requests < 2_000,
        "stopped well before 30 s: {}",
        s.requests
    );
    assert!(stdout(&out).contains("ABORTED"), "{}", stdout(&out));
}

/// A bad window is bad input, refused before any load is sent.
#[test]
fn a_bad_window_is_refused_at_load_time() {
    for (rule, says) in [
        ("p95 < 1s over 0s", "at least 1s"),
        ("p95 < 1s over 250ms", "whole number of seconds"),
        ("p95 < 1s over soon", "expected a window length"),
        ("rate > 5/s over 10s", "not to rate"),
    ] {
        let out = run_headroom(
            [
                "run",
                "--url",
                "http://127.0.0.1:9/",
                "--rate",
                "1",
                "--duration",
                "1s",
                "--threshold",
                rule,
            ],
            LIMIT,
        );
        assert_exit(&out, 2);
        assert!(stderr(&out).contains(says), "{rule}: {}", stderr(&out));
    }
}
