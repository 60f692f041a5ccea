//! The streams table of the text and Markdown (hence HTML) reports: per stream name,
//! sessions, messages each way, per-message round trip, time to first message, the
//! gap between messages received and their lateness against a stated cadence (p95),
//! errors and close codes.

use std::fmt::Write as _;

use super::escape::markdown as escape;
use crate::metrics::streams::StreamSummary;
use crate::metrics::summary::Summary;
use crate::report::table::Table;
use crate::report::units::{latency, percent};

const HEAD: [&str; 13] = [
    "stream",
    "proto",
    "sessions",
    "sent",
    "received",
    "msg p50",
    "msg p95",
    "msg p99",
    "first msg p95",
    "gap p95",
    "late p95",
    "errors",
    "close codes",
];

fn cells(name: &str, s: &StreamSummary) -> [String; 13] {
    let ms = |measured: bool, v: f64| {
        if measured {
            latency(v)
        } else {
            "-".to_string()
        }
    };
    let rt = s.round_trips > 0;
    let codes = s
        .close_codes
        .iter()
        .map(|(c, n)| format!("{c}×{n}"))
        .collect::<Vec<_>>()
        .join(" ");
    [
        name.to_string(),
        s.protocol.clone(),
        s.sessions.to_string(),
        s.messages.sent.to_string(),
        s.messages.received.to_string(),
        ms(rt, s.message_latency_ms.p50),
        ms(rt, s.message_latency_ms.p95),
        ms(rt, s.message_latency_ms.p99),
        ms(s.messages.received > 0, s.first_message_ms.p95),
        ms(s.gaps > 0, s.gap_ms.p95),
        ms(s.cadence_messages > 0, s.lateness_ms.p95),
        format!("{} ({})", s.errors.count, percent(s.errors.rate * 100.0)),
        if codes.is_empty() { "-".into() } else { codes },
    ]
}

/// The streams table as text (empty without streams).
pub fn text(s: &Summary) -> String {
    if s.streams.is_empty() {
        return String::new();
    }
    use crate::report::table::Align::{Left, Right};
    let mut t = Table::new(&[
        Left, Left, Right, Right, Right, Right, Right, Right, Right, Right, Right, Right, Left,
    ]);
    t.row(HEAD);
    for (name, st) in &s.streams {
        t.row(cells(name, st));
    }
    let mut out = t.render(0);
    out.push('\n');
    out
}

/// Appends the streams section to a Markdown report (nothing without streams).
pub fn markdown(out: &mut String, s: &Summary) {
    if s.streams.is_empty() {
        return;
    }
    out.push_str("### Streams\n\n| ");
    out.push_str(&HEAD.join(" | "));
    out.push_str(" |\n|---|---|");
    out.push_str(&"---:|".repeat(HEAD.len() - 3));
    out.push_str("---|\n");
    for (name, st) in &s.streams {
        let row = cells(&escape(name), st);
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::summary::Latency;

    fn summary() -> Summary {
        let mut s = Summary::empty("t", 2.0);
        let mut echo = StreamSummary {
            protocol: "ws".into(),
            sessions: 2,
            round_trips: 10,
            message_latency_ms: Latency {
                p50: 20.1,
                p95: 21.0,
                p99: 22.0,
                ..Latency::default()
            },
            ..StreamSummary::default()
        };
        echo.messages.sent = 10;
        echo.messages.received = 10;
        echo.close_codes.insert("1000".into(), 2);
        echo.gaps = 8;
        echo.gap_ms.p95 = 120.0;
        s.streams.insert("echo|1".into(), echo);
        s
    }

    #[test]
    fn text_and_markdown_show_one_row_per_stream() {
        let s = summary();
        let rendered = text(&s);
        let row = rendered
            .lines()
            .find(|l| l.starts_with("echo|1"))
            .expect(&rendered);
        for part in ["ws", "1000×2", "20.1ms", "22.0ms", "120ms", "0 (0.00%)"] {
            assert!(row.contains(part), "{part:?} in {row:?}");
        }
        let mut md = String::new();
        markdown(&mut md, &s);
        assert!(md.starts_with("### Streams\n\n| stream | proto |"), "{md}");
        assert!(md.contains("| echo\\|1 | ws | 2 | 10 | 10 |"), "{md}");
        assert!(text(&Summary::empty("t", 1.0)).is_empty());
    }
}
