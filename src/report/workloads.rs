//! The per-workload figures of a run with several workloads (`by_workload`): a table in
//! the end-of-run text and a section of the Markdown report, each absent for a run of
//! one load. A workload's own rules are listed with the run's, prefixed by its name.

use std::fmt::Write;

use crate::metrics::summary::Summary;
use crate::metrics::workloads::WorkloadSummary;
use crate::report::escape::markdown as escape;
use crate::report::table::Table;
use crate::report::units::{latency, per_second, percent, seconds, share};

/// The rule of a threshold verdict as `Threshold::parse` reads it: a workload's rule
/// listed among the run's loses its `NAME: ` prefix.
pub(crate) fn own_rule<'a>(s: &Summary, expr: &'a str) -> &'a str {
    s.by_workload
        .keys()
        .find_map(|name| expr.strip_prefix(&WorkloadSummary::rule_prefix(name)))
        .unwrap_or(expr)
}

/// A workload's rules: how many held, of how many (`-` without rules).
fn verdicts(w: &WorkloadSummary) -> String {
    match w.thresholds.len() {
        0 => "-".into(),
        n => match w.thresholds.iter().filter(|t| !t.ok).count() {
            0 => format!("{n} passed"),
            failed => format!("{failed} of {n} FAILED"),
        },
    }
}

/// The end-of-run table: one row per workload.
pub(crate) fn text(s: &Summary) -> String {
    if s.by_workload.is_empty() {
        return String::new();
    }
    let mut t = Table::labelled(8);
    t.row([
        "workload", "model", "start", "requests", "rate", "p50", "p95", "errors", "rules",
    ]);
    for (name, w) in &s.by_workload {
        let cell = |ms: f64| match w.requests {
            0 => "-".to_string(),
            _ => latency(ms),
        };
        t.row([
            name.clone(),
            w.model.clone(),
            seconds(w.start_s),
            w.requests.to_string(),
            per_second(w.rate.achieved),
            cell(w.latency_ms.p50),
            cell(w.latency_ms.p95),
            percent(share(w.errors.count, w.requests)),
            verdicts(w),
        ]);
    }
    format!("{}\n", t.render(0))
}

/// The Markdown report's section: one row per workload.
pub(crate) fn markdown(out: &mut String, s: &Summary) {
    if s.by_workload.is_empty() {
        return;
    }
    out.push_str(
        "### Per workload\n\n| workload | model | start | requests | offered | achieved | p50 | p95 | p99 | errors | rules |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for (name, w) in &s.by_workload {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            escape(name),
            escape(&w.model),
            seconds(w.start_s),
            w.requests,
            per_second(w.rate.offered),
            per_second(w.rate.achieved),
            latency(w.latency_ms.p50),
            latency(w.latency_ms.p95),
            latency(w.latency_ms.p99),
            w.errors.count,
            verdicts(w),
        );
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::summary::ThresholdResult;

    fn summary() -> Summary {
        let mut s = Summary::empty("two", 3.0);
        let rule = |expr: &str, ok| ThresholdResult {
            expr: expr.into(),
            ok,
            value: 6.2,
            window: None,
        };
        let w = WorkloadSummary {
            model: "arrival-rate".into(),
            start_s: 1.0,
            requests: 100,
            completed: 100,
            thresholds: vec![rule("p95 < 1us", false)],
            ..WorkloadSummary::default()
        };
        s.by_workload.insert("hammer".into(), w);
        s.thresholds.push(rule("hammer: p95 < 1us", false));
        s
    }

    #[test]
    fn each_workload_has_a_row_and_its_rules_read_as_written() {
        let s = summary();
        let text = text(&s);
        assert!(text.starts_with("workload"), "{text}");
        assert!(
            text.contains("hammer") && text.contains("1 of 1 FAILED"),
            "{text}"
        );
        let mut md = String::new();
        markdown(&mut md, &s);
        assert!(
            md.contains("### Per workload") && md.contains("| hammer |"),
            "{md}"
        );
        assert_eq!(own_rule(&s, "hammer: p95 < 1us"), "p95 < 1us");
        assert_eq!(own_rule(&s, "p95 < 1us"), "p95 < 1us");
        let one = Summary::empty("one", 1.0);
        assert!(super::text(&one).is_empty());
        let mut none = String::new();
        markdown(&mut none, &one);
        assert!(none.is_empty());
    }
}
