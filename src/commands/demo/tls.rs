//! `headroom demo --tls`: after the cleartext search, the same target (same workers and
//! service time) is started again serving HTTPS with a self-signed certificate, and
//! searched the same way through it, trusting that certificate with `--cacert` (so the
//! client verifies, as a real one does). The two are then compared: ceilings, latency
//! at the highest rate both passed, the TLS handshake, and the CPU each request cost
//! the target and the generator.
//!
//! The demo target's ceiling is set by its workers, not its CPU, so TLS shows up first
//! in CPU and latency; the ceiling moves only where that CPU runs out. On a kept-alive
//! connection TLS adds a microsecond or two to the target's CPU per request, less than
//! one search's CPU per request differs from the next one's on a shared machine; a new
//! connection's handshake costs it several times a plain accept. So the target's CPU per
//! new connection is measured apart, both targets in turn ([`per_connection`]).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::{cpu_us_per, demo_target, search, DemoError, Searched};
use crate::client::ConnectionModel;
use crate::commands::error::Chain;
use crate::engine::{self, Control, Live};
use crate::metrics::summary::Summary;
use crate::report::units::latency;
use crate::scenario::{self, ClientFlags, Overrides};
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

/// Runs the HTTPS search and the new-connection measurement against it and
/// `plain_target` (the cleartext search's target, still running), prints them and the
/// comparison with `plain`, and returns the Markdown section for the report.
pub(super) fn compare(
    out_dir: &Path,
    plain: &Searched,
    plain_target: &target::RunningTarget,
    control: &Control,
    store: Option<&Store>,
) -> Result<String, DemoError> {
    let (target, cert) = https_target(&out_dir.join(CERT_FILE))?;
    println!(
        "\nheadroom demo --tls: the same target over HTTPS at {} (self-signed certificate, trusted with --cacert {})",
        target.url(),
        cert.display()
    );
    let client = ClientFlags {
        cacert: Some(cert),
        ..ClientFlags::default()
    };
    let https = search(&target, client.clone(), control, store, None)?;
    println!("{}", text::render(&https.result));
    let connection = if control.is_stopped() {
        None
    } else {
        per_connection(plain_target, &target, &client, control)?
    };
    target.shutdown();
    let rows = rows(plain, &https, connection);
    println!("{}", terminal(&rows));
    Ok(markdown(&rows))
}

/// The demo's target (same workers and service time) serving HTTPS under a certificate
/// made at start and written to `cert` for the client's `--cacert`.
pub(super) fn https_target(cert: &Path) -> Result<(target::RunningTarget, PathBuf), DemoError> {
    if let Some(dir) = cert.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let options = TargetOptions {
        tls: true,
        tls_cert_out: Some(cert.to_path_buf()),
        ..demo_target()
    };
    let target = target::spawn(options).map_err(|e| DemoError::Target(Chain::new(e)))?;
    Ok((target, cert.to_path_buf()))
}

/// `+12%` from `a` to `b`, or empty when `a` is 0.
pub(super) fn change(a: f64, b: f64) -> String {
    if a > 0.0 {
        format!("{:+.0}%", (b - a) / a * 100.0)
    } else {
        String::new()
    }
}

/// The highest rate both searches passed, and each one's summary there.
pub(super) fn common_pass<'a>(
    a: &'a Searched,
    b: &'a Searched,
) -> Option<(f64, &'a Summary, &'a Summary)> {
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
pub(super) fn generator_cpu_us(s: &Summary) -> f64 {
    let completed_per_s = s.rate.achieved;
    if completed_per_s > 0.0 {
        s.generator.cpu_percent / 100.0 / completed_per_s * 1e6
    } else {
        0.0
    }
}

/// Rounds of the new-connection measurement; each round measures the cleartext target,
/// then the HTTPS one.
const CONNECTION_ROUNDS: usize = 3;
/// New connections a second in each measurement: few enough that neither target nor the
/// generator is near a limit, and that the closed sockets left in TIME_WAIT stay few.
const CONNECTION_RATE: f64 = 200.0;
/// Each measurement's length.
const CONNECTION_WINDOW: Duration = Duration::from_millis(500);

/// The CPU the target's server thread spent per connection it accepted while a request
/// per connection was sent to `/health`, for the cleartext target and the HTTPS one, in
/// µs; `None` when a target cannot tell its CPU time or accepted nothing.
///
/// Why alternate: a shared machine's CPU per unit of work drifts by tens of percent from
/// one half minute to the next (frequency, neighbours, which core the thread lands on).
/// Short windows taken in turn see the same drift on both sides, so the drift cancels
/// out of the comparison instead of landing on one side of it.
fn per_connection(
    plain: &target::RunningTarget,
    https: &target::RunningTarget,
    client: &ClientFlags,
    control: &Control,
) -> Result<Option<(f64, f64)>, DemoError> {
    println!(
        "\nNew connections: {} a second to /health, one request each, {CONNECTION_ROUNDS} × {} ms against each target in turn",
        value(CONNECTION_RATE),
        CONNECTION_WINDOW.as_millis()
    );
    let mut spent = [(Duration::ZERO, 0u64); 2];
    for _ in 0..CONNECTION_ROUNDS {
        for (side, (target, client)) in [(plain, ClientFlags::default()), (https, client.clone())]
            .into_iter()
            .enumerate()
        {
            if control.is_stopped() {
                return Ok(None);
            }
            let overrides = Overrides {
                url: Some(format!("{}/health", target.url())),
                rate: Some(CONNECTION_RATE),
                duration: Some(CONNECTION_WINDOW),
                client: ClientFlags {
                    connection: Some(ConnectionModel::PerRequest),
                    ..client
                },
                ..Overrides::default()
            };
            let plan = Arc::new(scenario::load(None, &overrides)?);
            let (cpu, accepted) = (target.cpu_time(), target.connections_accepted());
            let mut quiet = |_: &Live| {};
            engine::run(plan, control, &mut quiet)?;
            let (Some(before), Some(after)) = (cpu, target.cpu_time()) else {
                return Ok(None);
            };
            spent[side].0 += after.saturating_sub(before);
            spent[side].1 += target.connections_accepted() - accepted;
        }
    }
    let [(plain_cpu, plain_n), (https_cpu, https_n)] = spent;
    Ok(cpu_us_per(plain_cpu, plain_n).zip(cpu_us_per(https_cpu, https_n)))
}

/// The comparison rows of a cleartext and an HTTPS search, and of the target's CPU per
/// new connection (cleartext, HTTPS) when it was measured.
pub fn rows(plain: &Searched, https: &Searched, connection: Option<(f64, f64)>) -> Vec<Row> {
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
    if let Some((x, y)) = connection {
        rows.push(Row {
            what: "Target CPU per new connection".into(),
            plain: us(x),
            https: us(y),
            change: change(x, y),
        });
    }
    rows
}

/// The rows as an aligned terminal table under a `TLS cost:` title.
pub fn terminal(rows: &[Row]) -> String {
    titled("TLS cost:", ["cleartext", "HTTPS"], rows)
}

/// The rows as an aligned terminal table under `title`, the two sides named `sides`.
pub(super) fn titled(title: &str, sides: [&str; 2], rows: &[Row]) -> String {
    let width = |f: fn(&Row) -> &str, title: &str| {
        rows.iter()
            .map(|r| f(r).chars().count())
            .fold(title.len(), usize::max)
    };
    let (w0, w1, w2) = (
        width(|r| &r.what, ""),
        width(|r| &r.plain, sides[0]),
        width(|r| &r.https, sides[1]),
    );
    let mut out = format!(
        "{title}\n  {:w0$}  {:>w1$}  {:>w2$}  change",
        "", sides[0], sides[1]
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

/// The rows as a Markdown table, the two sides named `sides`.
pub(super) fn markdown_table(sides: [&str; 2], rows: &[Row]) -> String {
    let mut md = format!(
        "| | {} | {} | Change |\n|---|---:|---:|---:|\n",
        sides[0], sides[1]
    );
    for r in rows {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            r.what, r.plain, r.https, r.change
        );
    }
    md
}

/// The report's `## TLS` section.
pub fn markdown(rows: &[Row]) -> String {
    let mut md = String::from("\n## TLS\n\n");
    md.push_str(
        "The same target served over HTTPS (self-signed certificate made at start, verified \
         by the client with `--cacert`; HTTP/1.1 by ALPN, keep-alive connections) and searched \
         the same way. Its ceiling is set by its workers, so TLS shows first in latency and \
         CPU; the ceiling moves where that CPU runs out. On kept-alive connections TLS adds \
         little to the target's CPU per request (less than one search differs from the next \
         on a shared machine); a new connection's handshake is where it costs, measured \
         apart with one request per connection to `/health`, both targets in turn.\n\n",
    );
    md.push_str(&markdown_table(["Cleartext", "HTTPS"], rows));
    md
}
