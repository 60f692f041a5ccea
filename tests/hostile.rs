//! The hostile-target suite: `headroom run` against each misbehaviour of
//! [`Hostile`] (floods, endless parts, slow and silent servers, resets, garbage,
//! unasked responses, a full accept queue). For every mode: each request gets the
//! right error kind (or succeeds), the summary adds up, the run ends within
//! duration + timeout + 2 s, and the peak RSS of headroom stays under 64 MiB above
//! an idle run's.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use headroom::metrics::summary::Summary;

use crate::support::hostile::{Hostile, Mode};
use crate::support::{headroom_bin, read_summary, run_command, stderr};

/// Every run: 20 requests a second for 2 s, each with a 1 s timeout.
const RATE: u64 = 20;
const DURATION: Duration = Duration::from_secs(2);
const TIMEOUT: Duration = Duration::from_secs(1);
/// A run must end within duration + timeout + this.
const SLACK: Duration = Duration::from_secs(2);
/// Most the peak RSS may exceed an idle run's.
const RSS_BUDGET_KIB: u64 = 64 * 1024;
const TIME: &str = "/usr/bin/time";

/// What one measured run produced.
struct Measured {
    out: Output,
    summary: Summary,
    elapsed: Duration,
    peak_rss_kib: u64,
}

/// Runs `headroom run [SCENARIO] --url URL` at the suite's rate, duration and
/// timeout under `/usr/bin/time`, and returns what it did.
fn run_measured(url: &str, scenario: Option<&Path>) -> Measured {
    assert!(
        Path::new(TIME).is_file(),
        "{TIME} is missing (scripts/test.sh installs it)"
    );
    let dir = tempfile::tempdir().unwrap();
    let (out_file, rss_file) = (dir.path().join("s.json"), dir.path().join("rss"));
    let mut command = Command::new(TIME);
    command
        .args(["-f", "%M", "-o"])
        .arg(&rss_file)
        .arg(headroom_bin())
        .arg("run");
    if let Some(path) = scenario {
        command.arg(path);
    }
    command
        .args(["--url", url, "--rate", &RATE.to_string()])
        .args(["--duration", &format!("{}s", DURATION.as_secs())])
        .args(["--timeout", &format!("{}s", TIMEOUT.as_secs())])
        .args(["--quiet", "--out"])
        .arg(&out_file);
    let started = Instant::now();
    let out = run_command(command, Duration::from_secs(30));
    let elapsed = started.elapsed();
    assert!(out_file.is_file(), "no summary; stderr:\n{}", stderr(&out));
    let summary = read_summary(&out_file);
    let rss = std::fs::read_to_string(&rss_file).unwrap();
    let peak_rss_kib = rss
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .next_back()
        .unwrap_or_else(|| panic!("no peak RSS from {TIME}: {rss:?}"));
    Measured {
        out,
        summary,
        elapsed,
        peak_rss_kib,
    }
}

/// Peak RSS of a run against a server that behaves, measured once.
fn idle_peak_rss_kib() -> u64 {
    static IDLE: OnceLock<u64> = OnceLock::new();
    *IDLE.get_or_init(|| {
        let server = Hostile::start(Mode::Ok);
        let m = run_measured(&server.url(), None);
        assert_eq!(m.summary.errors.count, 0, "{:?}", m.summary.errors);
        m.peak_rss_kib
    })
}

/// A scenario file with `requests` (YAML flow items) in a fresh directory.
fn scenario(requests: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile.yaml");
    let mut text = format!(
        "name: hostile\ntarget: http://127.0.0.1:9/\n\
         load: {{model: arrival-rate, rate: {RATE}, duration: {}s}}\nrequests:\n",
        DURATION.as_secs()
    );
    for r in requests {
        text.push_str(&format!("  - {r}\n"));
    }
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

/// How every request of a run must end.
#[derive(Debug, Clone, Copy)]
enum Want {
    /// Succeeds.
    Success,
    /// Fails with this error kind.
    Kind(&'static str),
}

/// Runs against a server in `mode` and checks the run as the suite requires: how
/// every request ended, the accounting, the run's length and its memory.
fn hostile_run(mode: Mode, scenario: Option<&Path>, want: Want) -> (Hostile, Summary) {
    let server = Hostile::start(mode);
    let s = check_run(&server, scenario, want, &format!("{mode:?}"));
    (server, s)
}

fn check_run(server: &Hostile, scenario: Option<&Path>, want: Want, what: &str) -> Summary {
    let idle = idle_peak_rss_kib();
    let m = run_measured(&server.url(), scenario);
    let s = &m.summary;
    eprintln!(
        "{what}: ran {:?}, peak RSS {} KiB (idle {idle} KiB), errors {:?}",
        m.elapsed, m.peak_rss_kib, s.errors.by_kind
    );
    // Exit 1 says nothing got through because no connection could be opened.
    let exit = if matches!(want, Want::Kind("connect")) {
        1
    } else {
        0
    };
    assert_eq!(
        m.out.status.code(),
        Some(exit),
        "{what}: {}",
        stderr(&m.out)
    );
    let limit = DURATION + TIMEOUT + SLACK;
    assert!(
        m.elapsed <= limit,
        "{what}: ran {:?} > {limit:?}",
        m.elapsed
    );
    assert!(
        m.peak_rss_kib <= idle + RSS_BUDGET_KIB,
        "{what}: peak RSS {} KiB, idle {idle} KiB",
        m.peak_rss_kib
    );
    // Every scheduled request was sent and ended (none dropped, none abandoned).
    let expected = RATE * DURATION.as_secs();
    assert!(
        s.requests + 2 >= expected && s.dropped == 0 && s.abandoned == 0,
        "{what}: requests {} dropped {} abandoned {} of {}",
        s.requests,
        s.dropped,
        s.abandoned,
        s.scheduled
    );
    match want {
        Want::Success => assert_eq!(
            (s.completed, s.errors.count),
            (s.requests, 0),
            "{what}: {:?}",
            s.errors
        ),
        Want::Kind(kind) => {
            assert_eq!(s.completed, 0, "{what}: some succeeded");
            assert_eq!(
                s.errors.by_kind.get(kind).copied(),
                Some(s.requests),
                "{what}: want every request to be `{kind}`: {:?}",
                s.errors
            );
        }
    }
    m.summary
}

#[test]
fn a_chunk_extension_flood_is_a_protocol_error() {
    hostile_run(Mode::ChunkExtensionFlood, None, Want::Kind("protocol"));
}

#[test]
fn an_endless_header_is_a_protocol_error() {
    hostile_run(Mode::EndlessHeader, None, Want::Kind("protocol"));
}

#[test]
fn an_endless_body_that_is_kept_is_a_protocol_error() {
    let (_dir, kept) = scenario(&[r#"{name: kept, path: /, expect: {body_contains: "never"}}"#]);
    let mode = Mode::EndlessBody { paced: false };
    hostile_run(mode, Some(&kept), Want::Kind("protocol"));
}

#[test]
fn an_endless_body_that_is_discarded_times_out_in_bounded_memory() {
    let mode = Mode::EndlessBody { paced: true };
    hostile_run(mode, None, Want::Kind("timeout"));
}

#[test]
fn a_huge_body_is_streamed_when_discarded_and_refused_when_kept() {
    let (_dir, both) = scenario(&[
        r#"{name: kept, path: /, expect: {body_contains: "b"}}"#,
        "{name: discarded, path: /}",
    ]);
    let server = Hostile::start(Mode::HugeBody(24 << 20));
    let idle = idle_peak_rss_kib();
    let m = run_measured(&server.url(), Some(&both));
    let s = &m.summary;
    assert_eq!(m.out.status.code(), Some(0), "{}", stderr(&m.out));
    assert!(
        m.elapsed <= DURATION + TIMEOUT + SLACK,
        "ran {:?}",
        m.elapsed
    );
    assert!(
        m.peak_rss_kib <= idle + RSS_BUDGET_KIB,
        "peak {} KiB, idle {idle} KiB",
        m.peak_rss_kib
    );
    let (kept, discarded) = (&s.by_name["kept"], &s.by_name["discarded"]);
    assert!(
        kept.requests > 0 && discarded.requests > 0,
        "{:?}",
        s.by_name
    );
    assert_eq!(kept.errors.count, kept.requests, "kept: {kept:?}");
    assert_eq!(discarded.errors.count, 0, "discarded: {discarded:?}");
    assert_eq!(
        s.errors.by_kind.get("protocol"),
        Some(&kept.requests),
        "{:?}",
        s.errors
    );
    assert_eq!(s.requests + s.dropped + s.abandoned, s.scheduled);
}

#[test]
fn a_body_shorter_than_its_length_is_a_reset() {
    hostile_run(Mode::ShortBody, None, Want::Kind("reset"));
}

#[test]
fn a_response_dripping_one_byte_a_second_times_out() {
    hostile_run(Mode::Drip, None, Want::Kind("timeout"));
}

#[test]
fn a_server_that_never_answers_times_out() {
    hostile_run(Mode::NeverAnswer, None, Want::Kind("timeout"));
}

#[test]
fn a_reset_right_after_accept_is_a_reset() {
    hostile_run(Mode::ResetOnAccept, None, Want::Kind("reset"));
}

#[test]
fn a_reset_mid_body_is_a_reset() {
    hostile_run(Mode::ResetMidBody, None, Want::Kind("reset"));
}

#[test]
fn garbage_is_a_protocol_error() {
    hostile_run(Mode::Garbage, None, Want::Kind("protocol"));
}

#[test]
fn http_1_0_without_a_length_succeeds_until_the_close() {
    hostile_run(Mode::Http10UntilClose, None, Want::Success);
}

#[test]
fn interim_responses_before_the_final_one_succeed() {
    let (server, s) = hostile_run(Mode::Interim, None, Want::Success);
    let per_conn = server.requests_per_connection();
    assert!(
        per_conn.iter().sum::<u64>() == s.requests && per_conn.len() < s.requests as usize,
        "keep-alive connections were reused: {per_conn:?}"
    );
}

#[test]
fn no_content_and_not_modified_without_a_body_succeed() {
    hostile_run(Mode::NoBody, None, Want::Success);
}

#[test]
fn a_head_response_without_its_body_succeeds() {
    let (_dir, head) = scenario(&["{name: head, method: HEAD, path: /}"]);
    hostile_run(Mode::HeadOnly, Some(&head), Want::Success);
}

#[test]
fn an_unsolicited_extra_response_is_never_taken_as_an_answer() {
    let (server, s) = hostile_run(Mode::ExtraResponse, None, Want::Success);
    // The 500 that followed each answer would have answered the next request on the
    // same connection; instead every connection carried one request.
    let per_conn = server.requests_per_connection();
    assert!(per_conn.iter().all(|&n| n == 1), "{per_conn:?}");
    assert_eq!(per_conn.iter().sum::<u64>(), s.requests);
}

#[test]
fn a_half_closed_connection_is_not_reused() {
    let (server, s) = hostile_run(Mode::HalfClose, None, Want::Success);
    let per_conn = server.requests_per_connection();
    assert!(per_conn.iter().all(|&n| n == 1), "{per_conn:?}");
    assert_eq!(per_conn.iter().sum::<u64>(), s.requests);
}

#[test]
fn a_full_accept_queue_is_a_connect_error() {
    let server = Hostile::full_backlog();
    check_run(&server, None, Want::Kind("connect"), "full backlog");
}
