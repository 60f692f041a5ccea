//! `headroom run --compare-protocols h2,h3`: the same load over each protocol in turn,
//! cold then warm, and one table.
//!
//! Cold is a new connection, with its handshakes, for every request (`--connection
//! per-request`): what a user arriving for the first time pays, and where QUIC's
//! one-round-trip handshake shows against TCP's connect and TLS. Warm is the run's
//! own connection model (kept connections): what a returning user pays, where the
//! handshake is gone and only the protocol's framing and transport remain. A warm pool
//! alone would hide the handshake, a cold run alone the steady state.
//!
//! Each run is an ordinary stored run, labelled `protocol=` and `mode=`, so `compare`
//! and `report` read them as any other; the runs go one after another, never at once,
//! so they do not share the generator's CPU or the target.

use crate::client::ConnectionModel;
use crate::metrics::summary::Summary;
use crate::report::table::Table;
use crate::report::units::latency;

use crate::engine::Control;

use super::args::{ComparedProtocol, RunArgs};
use super::error::CommandError;
use super::exit::ExitCode;

/// One protocol in one mode, measured.
struct Measured {
    protocol: ComparedProtocol,
    mode: &'static str,
    code: ExitCode,
    summary: Summary,
}

/// Runs each protocol of `args.compare_protocols`, cold then warm, and prints the
/// table. The exit code is the worst of the runs' (0 when every run passed).
pub fn run(args: &RunArgs) -> Result<ExitCode, CommandError> {
    // Wired to Ctrl-C by the first run, and shared by the next ones.
    let control = Control::default();
    let mut measured = Vec::new();
    let plan: Vec<_> = args
        .compare_protocols
        .iter()
        .flat_map(|&p| {
            [("cold", Some(ConnectionModel::PerRequest)), ("warm", None)]
                .map(|(mode, connection)| (p, mode, connection))
        })
        .collect();
    for (protocol, mode, connection) in plan {
        {
            // Ctrl-C ends the run it interrupts (its summary marked) and the comparison
            // with it: the table shows what was measured.
            if control.is_stopped() {
                break;
            }
            let mut one = args.clone();
            one.compare_protocols.clear();
            one.common.http2 = protocol == ComparedProtocol::H2;
            one.common.http3 = protocol == ComparedProtocol::H3;
            one.common.connection = connection;
            one.common.quiet = true;
            one.common.labels.extend([
                ("protocol".to_string(), protocol.name().to_string()),
                ("mode".to_string(), mode.to_string()),
            ]);
            if !args.common.quiet {
                eprintln!("compare-protocols: {} {mode}", protocol.name());
            }
            let (code, summary) = super::run::measure(&one, false, &control)?;
            measured.push(Measured {
                protocol,
                mode,
                code,
                summary,
            });
        }
    }
    println!("{}", table(&measured));
    let worst = measured
        .iter()
        .map(|m| m.code)
        .max_by_key(|c| i32::from(*c));
    Ok(worst.unwrap_or(ExitCode::OK))
}

/// CPU the generator spent per request, µs: its process CPU over the run's measured
/// time, divided by the requests (0 for a run that sent none).
fn cpu_per_request_us(s: &Summary) -> f64 {
    if s.requests == 0 {
        return 0.0;
    }
    s.generator.cpu_percent / 100.0 * s.duration_s * 1e6 / s.requests as f64
}

/// The handshake a new connection paid, median, ms: TCP's connect plus TLS's, or
/// QUIC's one (its `tls` phase). `None` when no connection was opened in the run's
/// measured time.
fn handshake_ms(s: &Summary) -> Option<f64> {
    let t = &s.timing_ms;
    let quic = s.connections.protocol == "h3";
    match (t.connect.count, t.tls.count) {
        (0, 0) => None,
        _ if quic => Some(t.tls.ms.p50),
        (_, 0) => Some(t.connect.ms.p50),
        _ => Some(t.connect.ms.p50 + t.tls.ms.p50),
    }
}

fn table(measured: &[Measured]) -> String {
    let mut t = Table::labelled(9);
    t.row([
        "protocol",
        "mode",
        "requests",
        "p50",
        "p95",
        "p99",
        "handshake p50",
        "opened",
        "CPU/request",
        "errors",
    ]);
    for m in measured {
        let s = &m.summary;
        t.row([
            m.protocol.name().to_string(),
            m.mode.to_string(),
            s.requests.to_string(),
            latency(s.latency_ms.p50),
            latency(s.latency_ms.p95),
            latency(s.latency_ms.p99),
            handshake_ms(s).map_or_else(|| "-".to_string(), latency),
            s.connections.opened.to_string(),
            format!("{:.1}µs", cpu_per_request_us(s)),
            format!("{} ({:.2}%)", s.errors.count, s.errors.rate * 100.0),
        ]);
    }
    let mut out = String::from(
        "Protocols compared, cold (a new connection per request) and warm (kept connections):\n\n",
    );
    out.push_str(&t.render(0));
    out.push_str(
        "\nhandshake: TCP connect + TLS over TCP, the QUIC handshake over h3; CPU/request: \
         the generator's process CPU over the run, per request.\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::summary::Phase;

    fn phase(count: u64, p50: f64) -> Phase {
        let mut p = Phase {
            count,
            ..Phase::default()
        };
        p.ms.p50 = p50;
        p
    }

    #[test]
    fn the_handshake_is_tcp_plus_tls_or_quics_alone() {
        let mut s = Summary::empty("t", 2.0);
        assert_eq!(handshake_ms(&s), None);
        s.timing_ms.connect = phase(10, 0.2);
        assert_eq!(handshake_ms(&s), Some(0.2));
        s.timing_ms.tls = phase(10, 1.0);
        assert_eq!(handshake_ms(&s), Some(1.2));
        s.connections.protocol = "h3".into();
        s.timing_ms.connect = phase(0, 0.0);
        s.timing_ms.tls = phase(10, 0.9);
        assert_eq!(handshake_ms(&s), Some(0.9));
    }

    #[test]
    fn cpu_per_request_is_process_cpu_over_requests() {
        let mut s = Summary::empty("t", 2.0);
        assert_eq!(cpu_per_request_us(&s), 0.0);
        // Half a core for 2 s over 10,000 requests: 100 µs each.
        s.requests = 10_000;
        s.generator.cpu_percent = 50.0;
        assert!((cpu_per_request_us(&s) - 100.0).abs() < 1e-9);
    }
}
