//! The timing breakdown of a run, for the text output and the Markdown (and so HTML)
//! report: where requests' time went (connect, TLS, time to first byte, receive) and
//! what the run did with connections. Both renderings read only the summary.

use std::fmt::Write;

use super::escape::markdown as escape;
use crate::metrics::summary::{Phase, Summary};
use crate::report::table::Table;
use crate::report::units::{latency, per_second};

/// The phases shown, in the order a request goes through them. TLS is left out while
/// no handshake was timed (plain TCP), so a cleartext run's table stays short.
fn phases(s: &Summary) -> Vec<(&'static str, &Phase)> {
    let t = &s.timing_ms;
    if s.connections.protocol == "h3" {
        // QUIC has no TCP connect: its handshake (TLS 1.3 inside) is the `tls` phase.
        return vec![
            ("quic handshake", &t.tls),
            ("ttfb", &t.ttfb),
            ("receive", &t.receive),
        ];
    }
    let mut rows = vec![("connect", &t.connect)];
    if t.tls.count > 0 {
        rows.push(("tls", &t.tls));
    }
    rows.push(("ttfb", &t.ttfb));
    rows.push(("receive", &t.receive));
    rows
}

/// Whether anything was timed: not for a run that sent nothing, nor for one stored
/// before the breakdown existed.
fn timed(s: &Summary) -> bool {
    s.connections.opened > 0 || s.timing_ms.ttfb.count > 0
}

fn cell(p: &Phase, ms: f64) -> String {
    if p.count > 0 {
        latency(ms)
    } else {
        "-".to_string()
    }
}

/// Handshakes per second of measured time (0 for an empty run).
fn handshake_rate(s: &Summary) -> f64 {
    if s.duration_s > 0.0 {
        s.connections.handshakes as f64 / s.duration_s
    } else {
        0.0
    }
}

fn connections_line(s: &Summary) -> String {
    let c = &s.connections;
    let mut how = String::new();
    if !c.protocol.is_empty() {
        // As people write it; the JSON keeps ALPN's `http/1.1`.
        let protocol = match c.protocol.as_str() {
            "http/1.1" => "HTTP/1.1",
            other => other,
        };
        let _ = write!(how, "{protocol} {}", c.model);
        if let Some(n) = c.streams {
            let _ = write!(how, " × {n} streams");
        }
        how.push_str(": ");
    }
    // Streams' own connections are named, so the opened count reads whole.
    let b = &c.by_protocol;
    let streams = [("websocket", b.websocket), ("sse", b.sse), ("grpc", b.grpc)];
    let mut by = String::new();
    if streams.iter().any(|(_, n)| *n > 0) {
        let all = [("http/1.1", b.http1), ("http/2", b.http2), ("h3", b.h3)];
        let named: Vec<String> = all
            .iter()
            .chain(streams.iter())
            .filter(|(_, n)| *n > 0)
            .map(|(name, n)| format!("{n} {name}"))
            .collect();
        by = format!(" ({})", named.join(", "));
    }
    format!(
        "{how}{} opened{by}, {} reused, {} handshakes ({})",
        c.opened,
        c.reused,
        c.handshakes,
        per_second(handshake_rate(s))
    )
}

/// The text section: a `timing` table with a row per phase (p50, p95, p99) and a
/// `connections` line. Empty when nothing was timed.
pub fn text(s: &Summary) -> String {
    if !timed(s) {
        return String::new();
    }
    let mut t = Table::labelled(4);
    t.row(["timing", "count", "p50", "p95", "p99"]);
    for (label, p) in phases(s) {
        t.row([
            label.to_string(),
            p.count.to_string(),
            cell(p, p.ms.p50),
            cell(p, p.ms.p95),
            cell(p, p.ms.p99),
        ]);
    }
    let mut out = t.render(0);
    let _ = writeln!(out, "connections  {}", connections_line(s));
    if let Some(line) = first_request_line(s) {
        let _ = writeln!(out, "first request {line}");
    }
    if let Some(line) = quic_line(s) {
        let _ = writeln!(out, "quic         {line}");
    }
    out.push('\n');
    out
}

/// What the handshake cost the request that opened each connection, in one line:
/// `None` when no request paid for one.
fn first_request_line(s: &Summary) -> Option<String> {
    let f = &s.connections.first_request;
    if f.count == 0 {
        return None;
    }
    let handshake = if s.connections.protocol == "h3" {
        "the QUIC handshake"
    } else {
        "the TLS handshake"
    };
    Some(format!(
        "on a new connection: {} mean over {} requests, {} of it {handshake} ({:.0} %)",
        latency(f.mean_ms),
        f.count,
        latency(f.handshake_mean_ms),
        f.handshake_share_percent
    ))
}

/// What QUIC measured, in one line: `None` without HTTP/3.
fn quic_line(s: &Summary) -> Option<String> {
    let q = s.quic.as_ref()?;
    let mut line = format!(
        "rtt min {}, smoothed {} (max {}); {} packets sent, {} lost ({:.2} %), {} congestion events",
        latency(q.rtt.min_ms),
        latency(q.rtt.smoothed_ms),
        latency(q.rtt.smoothed_max_ms),
        q.packets.sent,
        q.lost.packets,
        q.lost.percent,
        q.congestion_events
    );
    if q.resumed > 0 {
        let _ = write!(
            line,
            "; {} of {} connections resumed",
            q.resumed, q.connections
        );
    }
    match q.gso_segments {
        0 => {}
        1 => line.push_str("; no GSO"),
        n => {
            let _ = write!(line, "; GSO up to {n} packets per send");
        }
    }
    let z = &q.zero_rtt;
    if z.sent > 0 {
        let _ = write!(
            line,
            "; 0-RTT: {} requests as early data, {} accepted, {} rejected",
            z.sent, z.accepted, z.rejected
        );
    }
    Some(line)
}

/// The Markdown section `### Timing`: the same phases with the name resolution, and
/// the connections. Empty when nothing was timed.
pub fn markdown(out: &mut String, s: &Summary) {
    if !timed(s) {
        return;
    }
    out.push_str(
        "### Timing\n\n| phase | count | p50 | p95 | p99 | max |\n|---|---:|---:|---:|---:|---:|\n",
    );
    let mut rows = vec![("dns", &s.timing_ms.dns)];
    rows.extend(phases(s));
    for (label, p) in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            escape(label),
            p.count,
            cell(p, p.ms.p50),
            cell(p, p.ms.p95),
            cell(p, p.ms.p99),
            cell(p, p.ms.max)
        );
    }
    let _ = writeln!(out, "\nConnections: {}.\n", connections_line(s));
    if let Some(line) = first_request_line(s) {
        let _ = writeln!(out, "First request {line}.\n");
    }
    if let Some(line) = quic_line(s) {
        let _ = writeln!(out, "QUIC: {}.\n", escape(&line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::summary::Latency;

    fn phase(count: u64, p50: f64) -> Phase {
        Phase {
            count,
            ms: Latency {
                p50,
                p95: p50 * 2.0,
                p99: p50 * 3.0,
                max: p50 * 4.0,
                ..Latency::default()
            },
        }
    }

    fn summary() -> Summary {
        let mut s = Summary::empty("t", 2.0);
        s.requests = 100;
        s.timing_ms.connect = phase(4, 0.1);
        s.timing_ms.ttfb = phase(100, 100.0);
        s.timing_ms.receive = phase(100, 50.0);
        s.connections.opened = 4;
        s.connections.reused = 96;
        s
    }

    #[test]
    fn text_shows_each_phase_and_the_connections_without_tls_over_tcp() {
        let out = text(&summary());
        assert!(out.contains("timing"), "{out}");
        let ttfb = out.lines().find(|l| l.starts_with("ttfb")).expect(&out);
        assert!(
            ttfb.contains("100") && ttfb.contains("200") && ttfb.contains("300"),
            "{ttfb}"
        );
        assert!(!out.contains("tls"), "no handshake, no tls row: {out}");
        assert!(
            out.contains("connections  4 opened, 96 reused, 0 handshakes (0.0/s)"),
            "{out}"
        );
    }

    #[test]
    fn streams_connections_are_named_beside_the_opened_count() {
        let mut s = summary();
        s.connections.opened = 14;
        s.connections.by_protocol.http1 = 4;
        s.connections.by_protocol.websocket = 10;
        let out = text(&s);
        assert!(
            out.contains("14 opened (4 http/1.1, 10 websocket), 96 reused"),
            "{out}"
        );
    }

    #[test]
    fn text_shows_tls_and_the_handshake_rate_when_handshakes_were_timed() {
        let mut s = summary();
        s.timing_ms.tls = phase(4, 2.0);
        s.connections.handshakes = 4;
        let out = text(&s);
        let tls = out.lines().find(|l| l.starts_with("tls")).expect(&out);
        assert!(tls.contains("2.00ms") && tls.contains("4.00ms"), "{tls}");
        assert!(out.contains("4 handshakes (2.0/s)"), "{out}");
        // What the connections spoke and how they were shared, when recorded.
        s.connections.protocol = "h2".into();
        s.connections.model = "shared:2".into();
        s.connections.streams = Some(10);
        let out = text(&s);
        assert!(
            out.contains("connections  h2 shared:2 × 10 streams: 4 opened, 96 reused"),
            "{out}"
        );
    }

    #[test]
    fn the_first_request_line_gives_the_handshakes_share_and_names_quic_over_h3() {
        let mut s = summary();
        assert!(!text(&s).contains("first request"), "no handshake, no line");
        s.connections.first_request = crate::metrics::first_request::FirstRequest {
            count: 4,
            mean_ms: 2.5,
            handshake_mean_ms: 1.0,
            handshake_share_percent: 40.0,
        };
        let out = text(&s);
        assert!(
            out.contains("first request on a new connection: 2.50ms mean over 4 requests, 1.00ms of it the TLS handshake (40 %)"),
            "{out}"
        );
        s.connections.protocol = "h3".into();
        let mut md = String::new();
        markdown(&mut md, &s);
        assert!(
            md.contains("1.00ms of it the QUIC handshake (40 %)."),
            "{md}"
        );
    }

    #[test]
    fn a_run_without_a_breakdown_has_no_timing_section() {
        // Nothing sent, or a summary stored before the breakdown existed.
        let mut s = Summary::empty("t", 1.0);
        s.requests = 10;
        assert_eq!(text(&s), "");
        let mut md = String::new();
        markdown(&mut md, &s);
        assert_eq!(md, "");
    }

    #[test]
    fn markdown_rows_add_dns_and_show_an_unmeasured_phase_as_a_dash() {
        let mut s = summary();
        s.timing_ms.dns = phase(1, 0.5);
        let mut md = String::new();
        markdown(&mut md, &s);
        assert!(md.contains("### Timing"), "{md}");
        assert!(md.contains("| dns | 1 |"), "{md}");
        assert!(md.contains("| connect | 4 |"), "{md}");
        assert!(!md.contains("| tls"), "{md}");
        assert!(md.contains("4 opened, 96 reused, 0 handshakes"), "{md}");
        s.timing_ms.receive = Phase::default();
        let mut md = String::new();
        markdown(&mut md, &s);
        assert!(md.contains("| receive | 0 | - | - | - | - |"), "{md}");
    }
}
