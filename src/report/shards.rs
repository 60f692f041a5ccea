//! The shards of a sharded run, as text: one row per shard (where it ran, what it
//! sent, its own latency and generator verdict), a lost shard named with why.

use std::fmt::Write as _;

use crate::metrics::summary::Summary;
use crate::report::table::{Align, Table};
use crate::report::units::latency;

/// The shards section of a summary (empty for a single process).
pub fn text(s: &Summary) -> String {
    if s.shards.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let heard = s
        .shards
        .iter()
        .filter(|x| x.status != "lost")
        .map(|x| x.heard_start_ahead_ms);
    let (low, high) = heard.fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(v), h.max(v)));
    let _ = write!(out, "\n{} shards, started at one instant", s.shards.len());
    if low <= high {
        let _ = write!(
            out,
            " (each heard it {} to {} ahead)",
            latency(low),
            latency(high)
        );
    }
    out.push_str(":\n");
    if let Some(c) = &s.coordinator {
        let _ = writeln!(
            out,
            "  coordinator at {}: CPU {:.2} s ({:.2}% of one core per shard)",
            c.address, c.cpu_s, c.cpu_percent_per_shard
        );
    }
    let mut t = Table::new(&[
        Align::Left,
        Align::Left,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Left,
    ]);
    t.row([
        "shard",
        "where",
        "scheduled",
        "requests",
        "errors",
        "p50",
        "p99",
        "generator",
    ]);
    for x in &s.shards {
        let place = match x.host.is_empty() {
            true => format!("{} from {}", x.placed, x.address),
            false => format!("{} on {} from {}", x.placed, x.host, x.address),
        };
        if x.status == "lost" {
            t.row([
                x.index.to_string(),
                place,
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "LOST".into(),
            ]);
            continue;
        }
        let generator = match (x.generator.bound, x.status.as_str()) {
            (true, _) => format!("BOUND: {}", x.generator.reason),
            (false, "interrupted") => "ok (stopped early)".into(),
            (false, _) => "ok".into(),
        };
        t.row([
            x.index.to_string(),
            place,
            x.scheduled.to_string(),
            x.requests.to_string(),
            x.errors.to_string(),
            latency(x.p50_ms),
            latency(x.p99_ms),
            generator,
        ]);
    }
    out.push_str(&t.render(2));
    for x in s.shards.iter().filter(|x| x.status == "lost") {
        let why = x.error.as_deref().unwrap_or("no reason recorded");
        let _ = writeln!(
            out,
            "  shard {} LOST: {why}; nothing of its share is in these figures",
            x.index
        );
    }
    out
}
