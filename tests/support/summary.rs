//! `headroom run` with `--out`, and the summary JSON it writes.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use headroom::metrics::summary::Summary;

use super::headroom::{run_headroom, stderr};

/// Runs `headroom run ARGS... --quiet --out DIR/s.json` with at most `limit` of wall
/// time, and returns its output and the summary it wrote. Whatever the exit code, a
/// missing or unreadable summary fails the test, showing what headroom printed.
pub(crate) fn run_with_summary(dir: &Path, args: &[&str], limit: Duration) -> (Output, Summary) {
    let out_file = dir.join("s.json");
    let mut all: Vec<String> = vec!["run".into()];
    all.extend(args.iter().map(|a| a.to_string()));
    all.extend([
        "--quiet".into(),
        "--out".into(),
        out_file.display().to_string(),
    ]);
    // An earlier run's summary in the same directory must not pass for this one's.
    let _ = std::fs::remove_file(&out_file);
    let out = run_headroom(&all, limit);
    assert!(out_file.is_file(), "no summary; stderr:\n{}", stderr(&out));
    let summary = read_summary(&out_file);
    (out, summary)
}

/// Reads the summary JSON at `path`; a missing or unreadable file, or a summary that
/// does not add up ([`assert_adds_up`]), fails the test.
pub(crate) fn read_summary(path: &Path) -> Summary {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no summary at {}: {e}", path.display()));
    let summary: Summary = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("summary is not v1 JSON: {e}\n{text}"));
    assert_adds_up(&summary);
    summary
}

/// Fails the test unless every scheduled request is accounted for (ARCHITECTURE.md rule 6):
/// `scheduled = completed + errors.count + dropped + abandoned`, the errors by kind
/// sum to `errors.count`, and `requests = completed + errors.count`.
#[track_caller]
pub(crate) fn assert_adds_up(s: &Summary) {
    assert_eq!(
        s.connections.opened,
        s.connections.by_protocol.total(),
        "connections opened = the sum by protocol: {:?}",
        s.connections
    );
    let by_kind: u64 = s.errors.by_kind.values().sum();
    assert_eq!(by_kind, s.errors.count, "errors by kind: {:?}", s.errors);
    assert_eq!(
        s.requests,
        s.completed + s.errors.count,
        "requests = completed + failed"
    );
    assert_eq!(
        s.scheduled,
        s.completed + s.errors.count + s.dropped + s.abandoned,
        "scheduled {} != completed {} + failed {} + dropped {} + abandoned {}",
        s.scheduled,
        s.completed,
        s.errors.count,
        s.dropped,
        s.abandoned
    );
}

/// Fails the test unless the run exited 0 with no errors and at least 20 requests:
/// enough traffic that a connection count or protocol read from it means something.
#[track_caller]
pub(crate) fn assert_clean(out: &Output, s: &Summary) {
    super::headroom::assert_exit(out, 0);
    assert_eq!(s.errors.count, 0, "{:?}\n{}", s.errors.by_kind, stderr(out));
    assert!(s.requests >= 20, "{} requests", s.requests);
}
