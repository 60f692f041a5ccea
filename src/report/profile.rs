//! The "Resource profile" of the end-of-run text: what each watch saw, in the shape of
//! a sizing table (what | CPU avg | CPU max | cap | mem max | mem cap), then the
//! PostgreSQL figures with the run's top statements, the Prometheus series, gaps, and
//! every watch's warnings. [`render`] is pure and empty when nothing was watched.

use std::fmt::Write;

use crate::metrics::summary::Summary;
use crate::report::table::Table;
use crate::report::units::{per_second, percent};
use crate::watch::{Detail, PostgresSummary, PrometheusSummary, WatchSummary};

/// Widest a statement's text is shown, in characters.
const QUERY_WIDTH: usize = 60;
/// Widest a Prometheus series name (with its labels) is shown.
const SERIES_WIDTH: usize = 90;

/// The section's text, ending in a blank line; empty when the summary has no watches.
pub fn render(s: &Summary) -> String {
    let mut out = String::new();
    if s.watches.is_empty() {
        return out;
    }
    out.push_str("Resource profile\n");
    let mut t = Table::labelled(5);
    t.row(["what", "CPU avg", "CPU max", "cap", "mem max", "mem cap"]);
    for row in s.watches.iter().filter_map(WatchSummary::profile) {
        t.row([
            row.what,
            cores(row.cpu.avg),
            cores(row.cpu.max),
            row.cpu_cap.map_or("-".into(), cores),
            row.mem_max_mb.map_or("-".into(), mib),
            row.mem_cap_mb.map_or("-".into(), mib),
        ]);
    }
    out.push_str(&t.render(2));
    out.push_str("  (CPU in cores: 1.00 is one core busy)\n");
    for w in &s.watches {
        match &w.detail {
            Detail::Postgres(p) => postgres(&mut out, &w.spec, p),
            Detail::Prometheus(p) => prometheus(&mut out, &w.spec, p),
            _ => {}
        }
    }
    if s.watches
        .iter()
        .any(|w| !(w.gaps.is_empty() && w.notices.is_empty() && w.warnings.is_empty()))
    {
        out.push('\n');
    }
    for w in &s.watches {
        for g in &w.gaps {
            let _ = writeln!(
                out,
                "  gap in {}: {:.1}s to {:.1}s ({})",
                w.spec, g.from_t, g.to_t, g.reason
            );
        }
        for n in &w.notices {
            let _ = writeln!(out, "  note on {}: {n}", w.spec);
        }
    }
    for w in &s.watches {
        for warning in &w.warnings {
            let _ = writeln!(out, "  WARNING ({}): {warning}", w.spec);
        }
    }
    out.push('\n');
    out
}

/// Cores with two decimals (`1.45`).
pub(crate) fn cores(c: f64) -> String {
    format!("{c:.2}")
}

/// Memory in MiB, or GiB from 1 GiB on.
pub(crate) fn mib(m: f64) -> String {
    if m >= 1024.0 {
        format!("{:.2} GiB", m / 1024.0)
    } else {
        format!("{m:.0} MiB")
    }
}

fn postgres(out: &mut String, spec: &str, p: &PostgresSummary) {
    let hit = p
        .cache_hit_ratio
        .map_or("-".to_string(), |r| percent(r * 100.0));
    let _ = writeln!(
        out,
        "\n  {spec}\n  {} avg ({} max) transactions, connections max {} of {}, cache hit {hit}, \
         deadlocks {}, waiting locks max {}",
        per_second(p.tps.avg),
        per_second(p.tps.max),
        p.connections.max,
        p.connections.limit,
        p.deadlocks,
        p.waiting_locks.max
    );
    if !p.top_queries.is_empty() {
        let mut t = Table::labelled(3);
        t.row(["top queries during the run", "calls", "mean", "total"]);
        for q in &p.top_queries {
            t.row([
                one_line(&q.query, QUERY_WIDTH),
                q.calls.to_string(),
                crate::report::units::latency(q.mean_ms),
                crate::report::units::latency(q.total_ms),
            ]);
        }
        out.push_str(&t.render(2));
    }
    if !p.tables.is_empty() {
        let mut t = Table::labelled(2);
        t.row(["table", "live", "dead"]);
        for tb in &p.tables {
            t.row([tb.name.clone(), tb.live.to_string(), tb.dead.to_string()]);
        }
        out.push_str(&t.render(2));
    }
}

fn prometheus(out: &mut String, spec: &str, p: &PrometheusSummary) {
    let _ = writeln!(out, "\n  {spec}");
    let mut t = Table::labelled(4);
    t.row(["series", "first", "last", "max", "rate"]);
    for s in &p.series {
        t.row([
            one_line(&s.series, SERIES_WIDTH),
            format!("{}", s.first),
            format!("{}", s.last),
            format!("{}", s.max),
            s.rate_per_s.map_or("-".into(), per_second),
        ]);
    }
    out.push_str(&t.render(2));
}

/// `text` on one line, whitespace collapsed, cut to `width` characters.
pub(crate) fn one_line(text: &str, width: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= width {
        flat
    } else {
        let cut: String = flat.chars().take(width - 1).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::{
        AvgMax, CgroupSummary, Connections, Gap, GeneratorSummary, Max, ProcessSummary, TopQuery,
    };

    fn watch(spec: &str, detail: Detail) -> WatchSummary {
        WatchSummary {
            spec: spec.into(),
            detail,
            gaps: vec![],
            warnings: vec![],
            notices: vec![],
        }
    }

    #[test]
    fn profile_table_has_use_beside_cap_and_the_top_queries_on_one_line() {
        let mut gen = watch(
            "self",
            Detail::Generator(GeneratorSummary {
                cpu_cores: AvgMax {
                    avg: 0.5,
                    max: 0.98,
                },
                rss_mb: Max { max: 12.0 },
                ..Default::default()
            }),
        );
        gen.warnings
            .push("the generator, not the target, limited this run: busy".into());
        let mut db = watch(
            "cgroup:/db",
            Detail::Cgroup(CgroupSummary {
                cpu_cores: AvgMax {
                    avg: 1.45,
                    max: 2.17,
                },
                cpu_cap_cores: Some(2.0),
                memory_mb: Some(Max { max: 167.0 }),
                memory_cap_mb: Some(512.0),
                ..Default::default()
            }),
        );
        db.gaps.push(Gap {
            from_t: 3.0,
            to_t: 5.0,
            reason: "gone".into(),
        });
        let pg = watch(
            "postgres:postgresql://127.0.0.1/x",
            Detail::Postgres(PostgresSummary {
                connections: Connections {
                    max: 28,
                    limit: 100,
                    reserved: 3,
                },
                top_queries: vec![TopQuery {
                    query: "INSERT INTO tasks (name)\n   VALUES ($1) RETURNING id, name, created_at, payload, and_more_columns".into(),
                    calls: 2500,
                    mean_ms: 0.2,
                    total_ms: 500.0,
                }],
                ..Default::default()
            }),
        );
        let master = watch(
            "pid:123",
            Detail::Process(ProcessSummary {
                command: Some("nginx".into()),
                processes: 5,
                processes_seen: 7,
                ..Default::default()
            }),
        );
        let named = watch(
            "process:worker",
            Detail::Process(ProcessSummary {
                processes: 1,
                ..Default::default()
            }),
        );
        let mut s = Summary::empty("x", 1.0);
        s.watches = vec![gen, db, pg, master, named];
        let text = render(&s);
        let want_rows =
            "  what                             CPU avg  CPU max   cap  mem max  mem cap\n\
             \x20 generator (headroom)                0.50     0.98     -   12 MiB        -\n\
             \x20 cgroup:/db                          1.45     2.17  2.00  167 MiB  512 MiB\n\
             \x20 pid:123 (nginx + 4 descendants)     0.00     0.00     -    0 MiB        -\n\
             \x20 process:worker (1 process)          0.00     0.00     -    0 MiB        -\n";
        assert!(text.starts_with("Resource profile\n"), "{text}");
        assert!(text.contains(want_rows), "{text}");
        assert!(
            text.contains("INSERT INTO tasks (name) VALUES ($1) RETURNING id, name, cr…"),
            "{text}"
        );
        assert!(text.contains("connections max 28 of 100"), "{text}");
        assert!(
            text.contains("gap in cgroup:/db: 3.0s to 5.0s (gone)"),
            "{text}"
        );
        assert!(text.contains("WARNING (self): the generator"), "{text}");
        s.watches.clear();
        assert_eq!(render(&s), "");
    }
}
