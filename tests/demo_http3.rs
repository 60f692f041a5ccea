//! `headroom demo --http3` end to end: the cleartext search, then the same target over
//! HTTPS searched over HTTP/2 and over HTTP/3, and their comparison in the terminal and
//! the report. About two minutes on a quiet machine (three searches).

use std::time::Duration;

use crate::support::run_headroom;

#[test]
fn demo_http3_compares_the_h2_and_h3_searches_of_one_target() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_headroom(
        [
            "demo",
            "--http3",
            "--out-dir",
            &dir.path().display().to_string(),
        ],
        Duration::from_secs(300),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("searched over HTTP/2, then HTTP/3"),
        "{stdout}"
    );
    assert!(!stdout.contains("errors 100.00%"), "{stdout}");
    let table = stdout
        .split("HTTP/2 against HTTP/3:")
        .nth(1)
        .unwrap_or_else(|| panic!("no comparison: {stdout}"));
    let figures = |what: &str| -> Vec<f64> {
        let line = table
            .lines()
            .find(|l| l.trim_start().starts_with(what))
            .unwrap_or_else(|| panic!("no {what:?} in {table}"));
        line.split_whitespace()
            .filter_map(|w| w.trim_end_matches("ms").parse().ok())
            .collect()
    };
    // Both searches found a ceiling: the target's workers set it, whatever the protocol.
    let ceilings = figures("Ceiling");
    assert!(
        ceilings.len() >= 2 && ceilings.iter().all(|&c| c > 0.0),
        "{table}"
    );
    // Both handshakes were timed at the highest rate both passed.
    assert!(table.contains("handshake p50 at"), "{table}");
    let report = std::fs::read_to_string(dir.path().join(headroom::commands::demo::REPORT_FILE))
        .expect("the demo's report");
    assert!(report.contains("## HTTP/3"), "{report}");
    assert!(
        report.contains("| | HTTP/2 | HTTP/3 | Change |"),
        "{report}"
    );
}
