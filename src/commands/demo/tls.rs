//! `headroom demo --tls`: after the cleartext search, the same target (same workers and
//! service time) is started again serving HTTPS with a self-signed certificate, and
//! searched the same way through it, trusting that certificate with `--cacert` (so the
//! client verifies, as a real one does). The two are then compared: ceilings, latency
//! at the highest rate both passed, the TLS handshake, and the CPU each request cost
//! the target and the generator.
//!
//! The demo target's ceiling is set by its workers, not its CPU, so TLS shows up first
//! in CPU per request and latency; the ceiling moves only where that CPU runs out.

use std::fmt::Write as _;
use std::path::Path;

use super::{demo_target, search, DemoError, Searched};
use crate::commands::error::Chain;
use crate::engine::Control;
use crate::metrics::summary::Summary;
use crate::report::units::latency;
use crate::scenario::ClientFlags;
use crate::search::result::value;
use crate::search::text;
use crate::store::Store;
use crate::target::{self, TargetOptions};

/// The certificate the HTTPS target writes, relative to `--out-dir` (beside the store).
pub const CERT_FILE: &str = ".headroom/demo-target-cert.pem";

/// One line of the comparison: what, in cleartext, over HTTPS, and the change.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// What is compared.
    pub what: String,
    /// The cleartext figure.
    pub plain: String,
    /// The HTTPS figure.
    pub https: String,
    /// HTTPS relative to cleartext, e.g. `+12%` (empty when not comparable).
    pub change: String,
}

/// Runs the HTTPS search, prints it and the comparison with `plain`, and returns the
/// Markdown section for the report.
pub(super) fn compare(
    out_dir: &Path,
    plain: &Searched,
    control: &Control,
    store: Option<&Store>,
) -> Result<String, DemoError> {
    let cert = out_dir.join(CERT_FILE);
    if let Some(dir) = cert.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let options = TargetOptions {
        tls: true,
        tls_cert_out: Some(cert.clone()),
        ..demo_target()
    };
    let target = target::spawn(options).map_err(|e| DemoError::Target(Chain::new(e)))?;
    println!(
        "\nheadroom demo --tls: the same target over HTTPS at {} (self-signed certificate, trusted with --cacert {})",
        target.url(),
        cert.display()
    );
    let client = ClientFlags {
        cacert: Some(cert),
        ..ClientFlags::default()
    };
    let https = search(&target, client, control, store, None)?;
    target.shutdown();
    println!("{}", text::render(&https.result));
    let rows = rows(plain, &https);
    println!("{}", terminal(&rows));
    Ok(markdown(&rows))
}

/// `+12%` from `a` to `b`, or empty when `a` is 0.
fn change(a: f64, b: f64) -> String {
    if a > 0.0 {
        format!("{:+.0}%", (b - a) / a * 100.0)
    } else {
        String::new()
    }
}

/// The highest rate both searches passed, and each one's summary there.
fn common_pass<'a>(a: &'a Searched, b: &'a Searched) -> Option<(f64, &'a Summary, &'a Summary)> {
    let passed = |s: &'a Searched, rate: f64| {
        s.result
            .steps
            .iter()
            .filter(|st| st.passed && st.rate == rate)
            .map(|st| &st.summary)
            .next_back()
    };
    let mut rates: Vec<f64> = a
        .result
        .steps
        .iter()
        .filter(|s| s.passed)
        .map(|s| s.rate)
        .collect();
    rates.sort_by(|x, y| y.total_cmp(x));
    rates
        .into_iter()
        .find_map(|r| Some((r, passed(a, r)?, passed(b, r)?)))
}

/// The generator's CPU per completed request in a step, in µs.
fn generator_cpu_us(s: &Summary) -> f64 {
    let completed_per_s = s.rate.achieved;
    if completed_per_s > 0.0 {
        s.generator.cpu_percent / 100.0 / completed_per_s * 1e6
    } else {
        0.0
    }
}

/// The comparison rows of a cleartext and an HTTPS search.
pub fn rows(plain: &Searched, https: &Searched) -> Vec<Row> {
    let mut rows = Vec::new();
    let ceiling = |s: &Searched| {
        s.result
            .ceiling
            .map_or("none".into(), |c| format!("{} req/s", value(c)))
    };
    rows.push(Row {
        what: "Ceiling".into(),
        plain: ceiling(plain),
        https: ceiling(https),
        change: match (plain.result.ceiling, https.result.ceiling) {
            (Some(a), Some(b)) => change(a, b),
            _ => String::new(),
        },
    });
    let us = |v: f64| format!("{v:.0} µs");
    if let Some((rate, a, b)) = common_pass(plain, https) {
        let at = format!("at {} req/s", value(rate));
        for (name, x, y) in [
            ("p50", a.latency_ms.p50, b.latency_ms.p50),
            ("p95", a.latency_ms.p95, b.latency_ms.p95),
        ] {
            rows.push(Row {
                what: format!("{name} {at}"),
                plain: latency(x),
                https: latency(y),
                change: change(x, y),
            });
        }
        rows.push(Row {
            what: format!("TLS handshake p50 {at}"),
            plain: "-".into(),
            https: format!(
                "{} (of {})",
                latency(b.timing_ms.tls.ms.p50),
                b.timing_ms.tls.count
            ),
            change: String::new(),
        });
        let (x, y) = (generator_cpu_us(a), generator_cpu_us(b));
        rows.push(Row {
            what: format!("Generator CPU per request {at}"),
            plain: us(x),
            https: us(y),
            change: change(x, y),
        });
    }
    if let (Some(x), Some(y)) = (plain.target_cpu_us, https.target_cpu_us) {
        rows.push(Row {
            what: "Target CPU per request (whole search)".into(),
            plain: us(x),
            https: us(y),
            change: change(x, y),
        });
    }
    rows
}

/// The rows as an aligned terminal table under a `TLS cost:` title.
pub fn terminal(rows: &[Row]) -> String {
    let width = |f: fn(&Row) -> &str, title: &str| {
        rows.iter()
            .map(|r| f(r).chars().count())
            .fold(title.len(), usize::max)
    };
    let (w0, w1, w2) = (
        width(|r| &r.what, ""),
        width(|r| &r.plain, "cleartext"),
        width(|r| &r.https, "HTTPS"),
    );
    let mut out = format!(
        "TLS cost:\n  {:w0$}  {:>w1$}  {:>w2$}  change",
        "", "cleartext", "HTTPS"
    );
    for r in rows {
        let _ = write!(
            out,
            "\n  {:w0$}  {:>w1$}  {:>w2$}  {}",
            r.what, r.plain, r.https, r.change
        );
    }
    out
}

/// The report's `## TLS` section.
pub fn markdown(rows: &[Row]) -> String {
    let mut md = String::from("\n## TLS\n\n");
    md.push_str(
        "The same target served over HTTPS (self-signed certificate made at start, verified \
         by the client with `--cacert`; HTTP/1.1 by ALPN, keep-alive connections) and searched \
         the same way. Its ceiling is set by its workers, so TLS shows first in latency and \
         CPU per request; the ceiling moves where that CPU runs out.\n\n",
    );
    md.push_str("| | Cleartext | HTTPS | Change |\n|---|---:|---:|---:|\n");
    for r in rows {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            r.what, r.plain, r.https, r.change
        );
    }
    md
}
