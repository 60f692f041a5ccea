//! `headroom demo --tls --http3` end to end: the cleartext search; the same target over
//! HTTPS with its self-signed certificate verified, and the comparison in the terminal
//! and the report (`--tls`); then that HTTPS target searched over HTTP/2 and over
//! HTTP/3, compared (`--http3`). One demo for both flags: each repeats the cleartext
//! search, which would cost a minute of the suite twice. About three minutes on a quiet
//! machine (four searches).

use std::time::Duration;

use crate::support::run_headroom;

#[test]
fn demo_tls_and_http3_compare_cleartext_https_h2_and_h3_searches() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_headroom(
        [
            "demo",
            "--tls",
            "--http3",
            "--out-dir",
            &dir.path().display().to_string(),
        ],
        Duration::from_secs(480),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // The second search went through HTTPS, verifying the certificate the target wrote.
    let cert = dir.path().join(".headroom/demo-target-cert.pem");
    let pem = std::fs::read_to_string(&cert).unwrap();
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
    assert!(
        stdout.contains("over HTTPS at https://127.0.0.1:"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("--cacert {}", cert.display())),
        "{stdout}"
    );
    assert!(!stdout.contains("errors 100.00%"), "{stdout}");
    let table = stdout
        .split("TLS cost:")
        .nth(1)
        .and_then(|t| t.split("HTTP/2 against HTTP/3:").next())
        .unwrap_or_else(|| panic!("no comparison: {stdout}"));
    assert!(table.contains("Ceiling"), "{table}");
    // Crypto is work, and a handshake is most of it: the target spent more CPU per new
    // connection serving HTTPS (CPU time, not wall time, so a busy host does not turn it
    // around; alternated rounds, so the machine's drift lands on both sides). A
    // keep-alive request's share is smaller than the noise between two searches: its row
    // is only read, not compared.
    let figures = |what: &str| figures(table, what);
    let per_request = figures("Target CPU per request");
    assert!(
        per_request.len() >= 2 && per_request.iter().all(|&f| f > 0.0),
        "{table}"
    );
    let per_connection = figures("Target CPU per new connection");
    assert!(
        per_connection.len() >= 2 && per_connection[0] > 0.0,
        "{table}"
    );
    // About 3× here (a TLS 1.3 handshake's key exchange and signature against a plain
    // accept); 1.5× leaves room for a noisy host without letting equal figures pass.
    assert!(
        per_connection[1] > 1.5 * per_connection[0],
        "a handshake should cost the target well above a plain accept:\n{table}"
    );
    let md = std::fs::read_to_string(dir.path().join("headroom-demo-report.md")).unwrap();
    assert!(md.contains("## TLS"), "{md}");
    assert!(md.contains("| Ceiling |"), "{md}");
    assert!(md.contains("Target CPU per request"), "{md}");
    assert!(md.contains("| Target CPU per new connection |"), "{md}");
    http3_compared(&stdout, &md);
}

/// `--http3`: the HTTPS target searched over HTTP/2, then HTTP/3, both found a ceiling
/// and timed their handshakes, in the terminal and the report.
fn http3_compared(stdout: &str, report: &str) {
    assert!(
        stdout.contains("searched over HTTP/2, then HTTP/3"),
        "{stdout}"
    );
    let table = stdout
        .split("HTTP/2 against HTTP/3:")
        .nth(1)
        .unwrap_or_else(|| panic!("no comparison: {stdout}"));
    let figures = |what: &str| figures(table, what);
    // Both searches found a ceiling: the target's workers set it, whatever the protocol.
    let ceilings = figures("Ceiling");
    assert!(
        ceilings.len() >= 2 && ceilings.iter().all(|&c| c > 0.0),
        "{table}"
    );
    // Both handshakes were timed at the highest rate both passed.
    assert!(table.contains("handshake p50 at"), "{table}");
    assert!(report.contains("## HTTP/3"), "{report}");
    assert!(
        report.contains("| | HTTP/2 | HTTP/3 | Change |"),
        "{report}"
    );
}

/// The numbers on the first row of `table` that starts with `what` (`12.3ms` read as
/// 12.3).
fn figures(table: &str, what: &str) -> Vec<f64> {
    let line = table
        .lines()
        .find(|l| l.trim_start().starts_with(what))
        .unwrap_or_else(|| panic!("no {what:?} in {table}"));
    line.split_whitespace()
        .filter_map(|w| w.trim_end_matches("ms").parse().ok())
        .collect()
}
