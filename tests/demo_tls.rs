//! `headroom demo --tls` end to end: the cleartext search, then the same target over
//! HTTPS with its self-signed certificate verified, and the comparison in the terminal
//! and the report. About a minute and a half on a quiet machine (two searches).

use std::time::Duration;

use crate::support::run_headroom;

#[test]
fn demo_tls_compares_the_cleartext_and_https_searches() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_headroom(
        [
            "demo",
            "--tls",
            "--out-dir",
            &dir.path().display().to_string(),
        ],
        Duration::from_secs(240),
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
        .unwrap_or_else(|| panic!("no comparison: {stdout}"));
    assert!(table.contains("Ceiling"), "{table}");
    // Crypto is work: the target spent more CPU per request serving HTTPS (CPU time,
    // not wall time, so a busy host does not turn it around).
    let cpu = table
        .lines()
        .find(|l| l.trim_start().starts_with("Target CPU per request"))
        .unwrap_or_else(|| panic!("{table}"));
    let figures: Vec<f64> = cpu
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert!(figures.len() >= 2 && figures[1] > figures[0], "{cpu}");
    let md = std::fs::read_to_string(dir.path().join("headroom-demo-report.md")).unwrap();
    assert!(md.contains("## TLS"), "{md}");
    assert!(md.contains("| Ceiling |"), "{md}");
    assert!(md.contains("Target CPU per request"), "{md}");
}
