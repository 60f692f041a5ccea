//! The HTML report of one stored run: one self-contained file (inline CSS and SVG, no
//! script, no fetch of any kind) with the figures of the Markdown report, leading with
//! its answer, and charts drawn by [`super::charts`]: for a search the
//! [`super::capacity_chart`] of its steps and each step's own small chart
//! ([`super::step_charts`]); then offered vs achieved rate over time, p50/p95/p99
//! over time, the latency percentile distribution from the stored histogram, and CPU
//! and memory over time for each watch the summary carries, beside its cap. Light and
//! dark schemes follow the reader's system; print gets its own rules.
//!
//! Every text that came from the target or the user goes through [`escape`].

pub use super::escape::html as escape;
use std::fmt::Write;

use serde_json::Value;

use super::capacity::Capacity;
use super::charts::{percentile_points, LineChart, Series, XAxis};
use super::markdown;
use super::step_charts;
use super::view::{whole_seconds, SearchView};
use crate::store::StoredRun;

/// The reports' stylesheet (the rounds page shares it). Light by default, dark when the reader's system prefers it, black on white in
/// print. Chart colours are classes, so both schemes style the same SVG.
pub(super) const STYLE: &str = ":root{--fg:#1d1d1f;--muted:#555;--bg:#fff;--line:#ccc;--grid:#e8e8e8;--p95:#1f77b4;--p99:#c62828;--ach:#2e7d32;--ideal:#888;--ceil:#2e7d32;--knee:#e65100;--bound:#888;--usl:#6a1b9a}\
@media (prefers-color-scheme:dark){:root{--fg:#e8e8e8;--muted:#aaa;--bg:#15171a;--line:#444;--grid:#2c2f33;--p95:#64b5f6;--p99:#ef5350;--ach:#81c784;--ideal:#999;--ceil:#81c784;--knee:#ffb74d;--bound:#aaa;--usl:#ce93d8}}\
body{font:14px/1.45 system-ui,sans-serif;max-width:980px;margin:2em auto;padding:0 1em;color:var(--fg);background:var(--bg)}\
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid var(--line);padding:.25em .6em;text-align:right}\
td:first-child,th:first-child{text-align:left}ul.answer{font-size:15px;padding-left:1.2em}\
.chart{width:100%;height:auto;margin:.5em 0 1.5em}.steps{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:.5em}.steps .chart{margin:0}\
.grid{stroke:var(--grid)}.axis{stroke:var(--muted)}.tick,.legend,.label{fill:var(--muted);font-size:11px}.label{font-size:12px}.title{font-size:14px;font-weight:600;fill:var(--fg)}\
.line{fill:none;stroke-width:1.8}.s-p95{stroke:var(--p95)}.s-p99{stroke:var(--p99)}.s-achieved{stroke:var(--ach)}.ideal{stroke:var(--ideal);stroke-dasharray:4 4;fill:none}\
.dot{stroke-width:1.5}.dot.s-p95{fill:var(--p95)}.dot.s-p99{fill:var(--p99)}.dot.s-achieved{fill:var(--ach)}.dot.failed{fill:var(--bg)}.bound{fill:var(--bound)}\
.mark{stroke-dasharray:5 4;stroke-width:1.5}.mark.ceiling{stroke:var(--ceil)}.mark.knee{stroke:var(--knee)}.mark-label.ceiling{fill:var(--ceil)}.mark-label.knee{fill:var(--knee)}\
.s-usl{stroke:var(--usl);stroke-dasharray:6 3}.usl-peak{stroke:var(--usl);stroke-dasharray:2 3;stroke-width:1.2}.usl-label{fill:var(--usl)}\
.t-p95{fill:var(--p95)}.t-achieved{fill:var(--ach)}\
@media print{:root{--fg:#000;--muted:#333;--bg:#fff;--line:#999;--grid:#ddd}body{max-width:none;margin:0}.chart,table,.steps{break-inside:avoid}h2,h3,h4{break-after:avoid}}";

/// The whole report as one HTML document.
pub fn render(run: &StoredRun) -> String {
    render_sized(run, &[])
}

/// [`render`], sizing a search for `size_for` (the ceiling and twice it when empty).
/// The answer comes first (from the Markdown report's lead), then for a search the
/// capacity chart, each step as its own small chart and the step table, then the
/// figures and the charts over time.
pub fn render_sized(run: &StoredRun, size_for: &[f64]) -> String {
    let sections = markdown::sections(run, size_for);
    let mut out = String::new();
    let title = format!("{} (headroom run {})", markdown::title(run), run.row.id);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"color-scheme\" content=\"light dark\"><title>{}</title><style>{STYLE}</style></head><body>\n",
        escape(&title)
    );
    out.push_str(&tables(&sections.lead));
    if let Some(capacity) = Capacity::of(run) {
        out.push_str(&capacity.to_svg());
        out.push('\n');
    }
    if let Some(view) = SearchView::stored(run) {
        out.push_str("<h3>Each step</h3>\n<div class=\"steps\">");
        for step in &view.steps {
            out.push_str(&step_charts::svg(step, view.unit));
        }
        out.push_str("</div>\n");
    }
    out.push_str(&tables(&sections.steps));
    out.push_str(&tables(&sections.detail));
    out.push_str("<h3>Over time</h3>\n");
    for chart in charts(run) {
        out.push_str(&chart.to_svg());
        out.push('\n');
    }
    out.push_str("</body></html>\n");
    out
}

/// Markdown from [`markdown`] (whose text is already escaped) as HTML: tables,
/// headings, list items and paragraphs, so both reports say the same.
fn tables(md: &str) -> String {
    let mut out = String::new();
    let mut in_table = false;
    let mut in_list = false;
    for line in md.lines() {
        if let Some(item) = line.strip_prefix("- ") {
            if !in_list {
                out.push_str("<ul class=\"answer\">");
                in_list = true;
            }
            let _ = writeln!(out, "<li>{}</li>", inline(item));
            continue;
        }
        if in_list {
            out.push_str("</ul>\n");
            in_list = false;
        }
        if let Some(cells) = line.strip_prefix('|') {
            let cells: Vec<&str> = split_cells(cells);
            if cells
                .iter()
                .all(|c| c.trim().chars().all(|ch| "-:".contains(ch)))
            {
                continue;
            }
            let tag = if in_table { "td" } else { "th" };
            if !in_table {
                out.push_str("<table>");
                in_table = true;
            }
            out.push_str("<tr>");
            for cell in cells {
                let _ = write!(out, "<{tag}>{}</{tag}>", inline(cell.trim()));
            }
            out.push_str("</tr>\n");
            continue;
        }
        if in_table {
            out.push_str("</table>\n");
            in_table = false;
        }
        if let Some(h) = line.strip_prefix("#### ") {
            let _ = writeln!(out, "<h4>{}</h4>", inline(h));
        } else if let Some(h) = line.strip_prefix("### ") {
            let _ = writeln!(out, "<h3>{}</h3>", inline(h));
        } else if let Some(h) = line.strip_prefix("## ") {
            let _ = writeln!(out, "<h2>{}</h2>", inline(h));
        } else if !line.is_empty() {
            let _ = writeln!(out, "<p>{}</p>", inline(line));
        }
    }
    if in_table {
        out.push_str("</table>\n");
    }
    if in_list {
        out.push_str("</ul>\n");
    }
    out
}

/// Splits a Markdown table row (without its leading `|`) on unescaped `|`.
fn split_cells(row: &str) -> Vec<&str> {
    let mut cells = Vec::new();
    let mut start = 0;
    let bytes = row.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'|' && (i == 0 || bytes[i - 1] != b'\\') {
            cells.push(&row[start..i]);
            start = i + 1;
        }
    }
    cells
}

/// Markdown-escaped text to HTML: entities stay, a backslash-escaped character
/// (`\|`, `` \` ``, `\*`, `\\`) is written as itself, an unescaped `**bold**`
/// becomes `<strong>`.
fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut strong = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            }
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
                out.push_str(if strong { "</strong>" } else { "<strong>" });
                strong = !strong;
            }
            c => out.push(c),
        }
    }
    if strong {
        out.push_str("</strong>");
    }
    out
}

fn series(name: &str, points: Vec<(f64, f64)>) -> Series {
    Series {
        name: name.to_string(),
        points,
    }
}

fn charts(run: &StoredRun) -> Vec<LineChart> {
    // Only the seconds the measured window covers whole: see `whole_seconds`.
    let duration = run.row.summary.as_ref().map(|s| s.duration_s);
    let t = whole_seconds(&run.timeline, duration);
    let at = |f: fn(&crate::metrics::summary::Second) -> f64| -> Vec<(f64, f64)> {
        t.iter().map(|s| (s.t as f64, f(s))).collect()
    };
    let closed = run.row.summary.as_ref().is_some_and(|s| s.model == "users");
    let offered = if closed { "users" } else { "offered /s" };
    let mut charts = vec![
        LineChart {
            title: "Offered vs achieved rate".into(),
            x_label: "seconds".into(),
            y_label: "requests per second".into(),
            x_axis: XAxis::Linear,
            series: vec![
                series(offered, at(|s| s.offered)),
                series("achieved /s", at(|s| s.requests as f64)),
            ],
        },
        LineChart {
            title: "Latency over time".into(),
            x_label: "seconds".into(),
            y_label: "latency (ms)".into(),
            x_axis: XAxis::Linear,
            series: vec![
                series("p50", at(|s| s.p50_ms)),
                series("p95", at(|s| s.p95_ms)),
                series("p99", at(|s| s.p99_ms)),
            ],
        },
    ];
    if let Some(h) = &run.histograms.overall {
        let mut lines = vec![series("corrected", percentile_points(h))];
        if let Some(u) = &run.histograms.overall_uncorrected {
            lines.push(series("uncorrected", percentile_points(u)));
        }
        charts.push(LineChart {
            title: "Latency by percentile".into(),
            x_label: "percentile (log scale)".into(),
            y_label: "latency (ms)".into(),
            x_axis: XAxis::Percentile,
            series: lines,
        });
    }
    if let Some(watches) = run.summary_json.as_ref().and_then(|s| s.get("watches")) {
        charts.extend(watch_charts(watches));
    }
    charts
}

/// CPU and memory charts over the run's watches (`summary.watches`: a list of
/// `{spec, kind, samples: [{t, cpu_cores, rss_mb | memory_mb, ...}]}`, see
/// `crate::watch`), one line per watch.
fn watch_charts(watches: &Value) -> Vec<LineChart> {
    let entries: Vec<(String, &Value)> = watches
        .as_array()
        .map(|list| {
            list.iter()
                .enumerate()
                .map(|(i, w)| {
                    let name = w.get("spec").and_then(Value::as_str);
                    (name.map_or_else(|| format!("watch {i}"), str::to_string), w)
                })
                .collect()
        })
        .unwrap_or_default();
    let mut cpu = Vec::new();
    let mut memory = Vec::new();
    for (name, watch) in entries {
        let Some(samples) = watch.get("samples").and_then(Value::as_array) else {
            continue;
        };
        let field = |keys: &[&str], scale: f64| -> Vec<(f64, f64)> {
            samples
                .iter()
                .filter_map(|s| {
                    let t = s.get("t").and_then(Value::as_f64)?;
                    let v = keys
                        .iter()
                        .find_map(|k| s.get(*k).and_then(Value::as_f64))?;
                    Some((t, v * scale))
                })
                .collect()
        };
        // A cap is drawn as a flat line over the samples' span, beside the use.
        let cap = |key: &str, points: &[(f64, f64)]| {
            let cap = watch.get(key).and_then(Value::as_f64)?;
            let (first, last) = (points.first()?.0, points.last()?.0);
            Some(series(
                &format!("{name} cap"),
                vec![(first, cap), (last, cap)],
            ))
        };
        let c = field(&["cpu_cores"], 1.0);
        if !c.is_empty() {
            let capped = cap("cpu_cap_cores", &c);
            cpu.push(series(&name, c));
            cpu.extend(capped);
        }
        let m = field(&["rss_mb", "memory_mb"], 1.0);
        if !m.is_empty() {
            let capped = cap("memory_cap_mb", &m);
            memory.push(series(&name, m));
            memory.extend(capped);
        }
    }
    let mut charts = Vec::new();
    for (title, y_label, lines) in [
        ("CPU by watch", "CPU (cores)", cpu),
        ("Memory by watch", "memory (MiB)", memory),
    ] {
        if !lines.is_empty() {
            charts.push(LineChart {
                title: title.into(),
                x_label: "seconds".into(),
                y_label: y_label.into(),
                x_axis: XAxis::Linear,
                series: lines,
            });
        }
    }
    charts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_markup_quotes_and_forbidden_controls() {
        assert_eq!(
            escape("<a href=\"x\">'&'</a>\u{1}"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn watch_samples_give_cpu_and_memory_charts() {
        let list = serde_json::json!([
            {"spec": "pid:7", "kind": "process", "samples": [
                {"t": 1.0, "cpu_cores": 0.5, "rss_mb": 10.0},
                {"t": 2.0, "cpu_cores": 1.5, "rss_mb": 12.0}]},
            {"spec": "postgres:x", "kind": "postgres", "samples": [{"t": 1.0, "tps": 3.0}]}]);
        let charts = watch_charts(&list);
        assert_eq!(charts.len(), 2);
        let capped = serde_json::json!([{"spec": "cgroup:/db", "kind": "cgroup", "cpu_cap_cores": 2.0,
            "samples": [{"t": 1.0, "cpu_cores": 0.5}, {"t": 3.0, "cpu_cores": 1.9}]}]);
        let cpu = &watch_charts(&capped)[0];
        assert_eq!(cpu.series[1].name, "cgroup:/db cap");
        assert_eq!(cpu.series[1].points, vec![(1.0, 2.0), (3.0, 2.0)]);
        assert_eq!(charts[0].series[0].name, "pid:7");
        assert_eq!(charts[0].series[0].points, vec![(1.0, 0.5), (2.0, 1.5)]);
        assert_eq!(charts[1].series[0].points, vec![(1.0, 10.0), (2.0, 12.0)]);
        assert!(watch_charts(&serde_json::json!({"not": "a list"})).is_empty());
    }

    #[test]
    fn markdown_rows_become_table_cells() {
        assert_eq!(
            split_cells(" a | b\\|c | d |"),
            vec![" a ", " b\\|c ", " d "]
        );
        assert_eq!(inline("**FAIL** a\\|b"), "<strong>FAIL</strong> a|b");
    }

    #[test]
    fn escaped_stars_stay_stars_and_unescaped_pairs_are_bold() {
        assert_eq!(
            super::inline(r"refused \*\*\* **now** a\|b \\ \`x\`"),
            "refused *** <strong>now</strong> a|b \\ `x`"
        );
        let md = crate::report::escape::markdown("token *** and **not bold**");
        assert_eq!(super::inline(&md), "token *** and **not bold**");
    }
}
