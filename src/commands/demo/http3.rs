//! `headroom demo --http3`: after the cleartext search, the same target (same workers
//! and service time) is started serving HTTPS, and searched twice through it, trusting
//! its certificate with `--cacert`: over HTTP/2 (h2 by ALPN) and over HTTP/3 (QUIC, the
//! same port number over UDP). The two ceilings are then compared, with the latency at
//! the highest rate both passed, each one's handshake, and the CPU each request cost the
//! target and the generator.
//!
//! The demo target's ceiling is set by its workers, not by its CPU or its protocol, so
//! the two ceilings should agree within the search's precision; what QUIC changes
//! shows first in the handshake and in CPU per request (QUIC runs in user space, on
//! both sides, where TCP's work is the kernel's).

use std::fmt::Write as _;
use std::path::Path;

use super::tls::{
    change, common_pass, generator_cpu_us, https_target, markdown_table, titled, Row,
};
use super::{search, DemoError, Searched};
use crate::engine::Control;
use crate::report::units::latency;
use crate::scenario::ClientFlags;
use crate::search::result::value;
use crate::search::text;
use crate::store::Store;

/// The certificate the HTTPS target writes, relative to `--out-dir` (beside the store).
pub const CERT_FILE: &str = ".headroom/demo-h3-target-cert.pem";

/// Runs the HTTP/2 and HTTP/3 searches of the HTTPS target, prints their comparison,
/// and returns the Markdown section for the report.
pub(super) fn compare(
    out_dir: &Path,
    control: &Control,
    store: Option<&Store>,
) -> Result<String, DemoError> {
    let (target, cert) = https_target(&out_dir.join(CERT_FILE))?;
    println!(
        "\nheadroom demo --http3: the same target over HTTPS at {}, searched over HTTP/2, then HTTP/3 (QUIC on UDP port {})",
        target.url(),
        target.addr().port()
    );
    let trusted = ClientFlags {
        cacert: Some(cert),
        ..ClientFlags::default()
    };
    let mut searched = Vec::new();
    for (name, client) in [
        (
            "HTTP/2",
            ClientFlags {
                http2: true,
                ..trusted.clone()
            },
        ),
        (
            "HTTP/3",
            ClientFlags {
                http3: true,
                ..trusted.clone()
            },
        ),
    ] {
        if control.is_stopped() {
            break;
        }
        println!("\n{name}:");
        let s = search(&target, client, control, store, None)?;
        println!("{}", text::answer(&s.result));
        searched.push(s);
    }
    target.shutdown();
    let [h2, h3] = searched.as_slice() else {
        return Ok(String::new());
    };
    let rows = rows(h2, h3);
    println!(
        "\n{}",
        titled("HTTP/2 against HTTP/3:", ["h2", "h3"], &rows)
    );
    let mut md = String::from("\n## HTTP/3\n\n");
    let _ = write!(
        md,
        "The same target served over HTTPS and searched twice, over HTTP/2 (h2 by ALPN) and \
         over HTTP/3 (QUIC on the same port number over UDP), both verifying its \
         certificate with `--cacert`. Its ceiling is set by its workers, so the ceilings \
         agree within the search's precision; QUIC shows in the handshake and in CPU per \
         request.\n\n{}",
        markdown_table(["HTTP/2", "HTTP/3"], &rows)
    );
    Ok(md)
}

/// The comparison rows of an HTTP/2 and an HTTP/3 search of the same target.
pub fn rows(h2: &Searched, h3: &Searched) -> Vec<Row> {
    let ceiling = |s: &Searched| {
        s.result
            .ceiling
            .map_or("none".into(), |c| format!("{} req/s", value(c)))
    };
    let mut rows = vec![Row {
        what: "Ceiling".into(),
        plain: ceiling(h2),
        https: ceiling(h3),
        change: match (h2.result.ceiling, h3.result.ceiling) {
            (Some(a), Some(b)) => change(a, b),
            _ => String::new(),
        },
    }];
    let us = |v: f64| format!("{v:.0} µs");
    if let Some((rate, a, b)) = common_pass(h2, h3) {
        let at = format!("at {} req/s", value(rate));
        for (name, x, y) in [
            ("p50", a.latency_ms.p50, b.latency_ms.p50),
            ("p95", a.latency_ms.p95, b.latency_ms.p95),
            // h2: TLS over TCP; h3: the QUIC handshake (its `tls` phase).
            (
                "handshake p50",
                a.timing_ms.tls.ms.p50,
                b.timing_ms.tls.ms.p50,
            ),
        ] {
            rows.push(Row {
                what: format!("{name} {at}"),
                plain: latency(x),
                https: latency(y),
                change: change(x, y),
            });
        }
        let (x, y) = (generator_cpu_us(a), generator_cpu_us(b));
        rows.push(Row {
            what: format!("Generator CPU per request {at}"),
            plain: us(x),
            https: us(y),
            change: change(x, y),
        });
    }
    if let (Some(x), Some(y)) = (h2.target_cpu_us, h3.target_cpu_us) {
        rows.push(Row {
            what: "Target CPU per request (whole search)".into(),
            plain: us(x),
            https: us(y),
            change: change(x, y),
        });
    }
    rows
}
