//! The Markdown report of one stored run, pasteable into a pull request, leading with
//! the answer ([`Sections`]): for a search its ceiling, what limited it, the knee, the
//! model fitted to its steps, the generator's verdict, what each watch saw at the ceiling and the failing step
//! ([`super::limits`]) and the [`super::sizing`] table, then the step table and the
//! ceiling step's figures; for a run its verdict and thresholds, then load, latency,
//! per-name table and errors by kind. [`render`] is pure; [`escape`] keeps target- or
//! user-supplied text from breaking the tables or injecting HTML.

pub use super::escape::markdown as escape;
use std::fmt::Write;

use crate::metrics::summary::{Latency, Summary};
use crate::report::units::{latency, per_second, percent, seconds, share};
use crate::search::result::value;
use crate::store::StoredRun as Run;

/// The run's report in Markdown, ending in a newline. A run without a summary (killed
/// or failed) gets its header and what its recorded seconds show.
pub fn render(run: &Run) -> String {
    render_sized(run, &[])
}

/// [`render`], sizing a search for `size_for` (the ceiling and twice it when empty).
pub fn render_sized(run: &Run, size_for: &[f64]) -> String {
    let s = sections(run, size_for);
    [s.lead, s.steps, s.detail].concat()
}

/// The report in the order it is read: the answer first, then the steps, then the
/// figures behind them. The HTML report puts its charts between these.
#[derive(Debug, Clone, Default)]
pub struct Sections {
    /// Title (the answer), then for a search what limited it and the sizing; for a
    /// run its verdict, thresholds and the generator's verdict.
    pub lead: String,
    /// A search's step table (empty for a run).
    pub steps: String,
    /// Everything else: load, latency, timing, names, errors.
    pub detail: String,
}

/// The report's [`Sections`], sizing a search for `size_for`.
pub fn sections(run: &Run, size_for: &[f64]) -> Sections {
    let mut lead = String::new();
    let mut detail = String::new();
    let view = super::view::SearchView::stored(run);
    let _ = writeln!(lead, "## {}\n", escape(&title(run)));
    header(&mut lead, run);
    match (&view, &run.row.summary) {
        (Some(view), summary) => {
            answer(&mut lead, run, view);
            lead.push_str(&super::blocks::markdown(&super::limits::blocks(view)));
            if let Some(sizing) = super::sizing::Sizing::of(view, size_for) {
                lead.push_str(&super::blocks::markdown(&sizing.blocks()));
            }
            match summary {
                Some(s) if s.partial.is_some() => {
                    let _ = writeln!(
                        detail,
                        "### The interrupted step
"
                    );
                    partial_note(&mut detail, s, view.unit);
                    figures(&mut detail, s);
                }
                Some(s) => {
                    detail.push_str(
                        "### The ceiling step in detail\n\nThe figures below are the best passing step's.\n\n",
                    );
                    verdict(&mut detail, s);
                    figures(&mut detail, s);
                }
                None => partial(&mut detail, run),
            }
        }
        (None, Some(s)) => {
            partial_note(&mut lead, s, "");
            verdict(&mut lead, s);
            figures(&mut detail, s);
        }
        (None, None) => partial(&mut lead, run),
    }
    let steps = super::capacity::Capacity::of(run).map_or_else(String::new, |c| c.markdown());
    Sections {
        lead,
        steps,
        detail,
    }
}

/// The report's title, which is its answer: `Ceiling: 800 req/s — quick` for a
/// search (`Ceiling: 800 req/s, held for 10m — quick` with `--hold`, or what broke),
/// `PASS — quick` for a run.
pub fn title(run: &Run) -> String {
    let name = &run.row.scenario_name;
    if let Some(view) = super::view::SearchView::stored(run) {
        let u = view.unit;
        // With `--hold`, the verdict on the answer is part of the answer.
        let held =
            super::view::stored_hold(run).map_or(String::new(), |h| format!(", {}", h.headline()));
        return match (view.ceiling(), view.lower_bound()) {
            (Some(c), false) => format!("Ceiling: {} {u}{held} — {name}", value(c)),
            (Some(c), true) => format!("Ceiling: at least {} {u}{held} — {name}", value(c)),
            (None, _) => format!("Ceiling: none found — {name}"),
        };
    }
    let verdict = match &run.row.summary {
        Some(s) if s.partial.is_some() => "PARTIAL",
        Some(s) if s.generator.bound => "GENERATOR-BOUND",
        Some(s) if s.thresholds.iter().all(|t| t.ok) => "PASS",
        Some(_) => "FAIL",
        None => "NO SUMMARY",
    };
    format!("{verdict} — {name}")
}

/// The answer of a search in five lines: ceiling, what limited it, knee, the fitted
/// USL model, generator;
/// with `--hold`, the hold's verdict and figures after the ceiling.
fn answer(out: &mut String, run: &Run, view: &super::view::SearchView<'_>) {
    let u = view.unit;
    let ceiling = match (view.ceiling(), view.lower_bound()) {
        (Some(c), false) => {
            let trials = view.trials().map_or(String::new(), |t| format!(" ({t})"));
            format!("**{} {u}**{trials}", value(c))
        }
        (Some(c), true) => format!("**at least {} {u}** (a lower bound)", value(c)),
        (None, _) => "**none found**: no step passed".into(),
    };
    let capacity = super::capacity::Capacity::of(run);
    let knee = capacity.as_ref().and_then(|c| c.knee).map_or(
        "none that matters (p95 never outgrew the load)".into(),
        |k| {
            format!(
                "{} {u} (p95 grows faster than the load beyond it)",
                value(k)
            )
        },
    );
    let hold = super::view::stored_hold(run).map_or(String::new(), |h| {
        format!(
            "- Hold: {} at {} {u} ({})\n",
            escape(&h.headline()),
            value(h.value),
            escape(&h.figures())
        )
    });
    let noisy = view.noisy().map_or(String::new(), |n| {
        format!("- Noise: {}\n", escape(&n.sentence(u)))
    });
    let model = crate::search::model::line(
        capacity.and_then(|c| c.model).as_ref(),
        crate::search::step::Unit::from_label(u),
    );
    let model = format!("- Model (USL): {}\n", escape(&model));
    let _ = writeln!(
        out,
        "- Ceiling: {ceiling}\n{hold}{noisy}- Limited by: {}\n- Knee: {knee}\n{model}- Generator: {}\n",
        escape(&view.limited_by()),
        escape(&view.generator())
    );
}

fn header(out: &mut String, run: &Run) {
    let row = &run.row;
    let mut facts = vec![
        format!("headroom run {}", row.id),
        format!("**{}**", row.status.as_str()),
        format!("started {}", escape(&row.started_at)),
    ];
    if let Some(s) = &row.summary {
        facts.push(format!(
            "{} model, {}",
            escape(&s.model),
            seconds(s.duration_s)
        ));
    }
    if !row.labels.is_empty() {
        let labels: Vec<String> = row
            .labels
            .iter()
            .map(|(k, v)| format!("{}={}", escape(k), escape(v)))
            .collect();
        facts.push(format!("labels: {}", labels.join(", ")));
    }
    if let Some(commit) = &row.git_commit {
        facts.push(format!(
            "commit {}",
            escape(commit.get(..12).unwrap_or(commit))
        ));
    }
    let _ = writeln!(out, "{}\n", facts.join(" · "));
}

/// A run's verdict: thresholds, then the generator's verdict.
fn verdict(out: &mut String, s: &Summary) {
    if !s.thresholds.is_empty() {
        out.push_str("### Thresholds\n\n| rule | measured | verdict |\n|---|---:|---|\n");
        for t in &s.thresholds {
            let verdict = if t.ok { "pass" } else { "**FAIL**" };
            let _ = writeln!(out, "| {} | {:.2} | {verdict} |", escape(&t.expr), t.value);
        }
        out.push('\n');
    }
    let g = &s.generator;
    out.push_str("### Generator\n\n");
    // A partial summary does not know its threads (a coordinator's counts shards).
    let threads = match g.threads {
        0 => String::new(),
        n => format!("{n} thread(s), "),
    };
    let _ = writeln!(
        out,
        "{threads}{:.0}% CPU, schedule lag p99 {} / max {}.",
        g.cpu_percent,
        latency(g.p99_lag_ms),
        latency(g.max_lag_ms)
    );
    if g.bound {
        let _ = writeln!(
            out,
            "\n**The generator, not the target, limited this result**: {}. Do not read these figures as the target's capacity.",
            escape(&g.reason)
        );
    } else {
        out.push_str("\nThe generator kept up: these figures are the target's.\n");
    }
    out.push('\n');
}

/// The figures: delivery, load, latency, timing, names, streams, errors.
fn figures(out: &mut String, s: &Summary) {
    if let Some(d) = &s.delivery {
        out.push_str("### Delivery\n\nRequest sent → delivery received, through the sink.\n\n");
        out.push_str(&d.table());
        out.push('\n');
    }
    // The columns add up: scheduled = requests (ok + errors) + dropped + abandoned.
    out.push_str(
        "### Load\n\n| offered | achieved | scheduled | requests | dropped | abandoned | errors |\n\
         |---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let _ = writeln!(
        out,
        "| {} | {} | {} | {} | {} | {} | {} ({}) |\n",
        per_second(s.rate.offered),
        per_second(s.rate.achieved),
        s.scheduled,
        s.requests,
        s.dropped,
        s.abandoned,
        s.errors.count,
        percent(share(s.errors.count, s.requests)),
    );
    if s.abandoned > 0 {
        let _ = writeln!(
            out,
            "{} requests were still in flight when the run ended (abandoned).\n",
            s.abandoned
        );
    }
    out.push_str("### Latency\n\n| | min | p50 | p90 | p95 | p99 | p99.9 | max |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
    latency_row(out, "corrected (from schedule)", &s.latency_ms);
    if s.errors.count > 0 && s.completed > 0 {
        latency_row(out, "successful only", &s.latency_success_ms);
    }
    latency_row(out, "uncorrected (from send)", &s.latency_uncorrected_ms);
    out.push('\n');
    crate::report::timing::markdown(out, s);
    if !s.by_name.is_empty() {
        out.push_str("### Per name\n\n| name | requests | p50 | p95 | p99 | errors |\n|---|---:|---:|---:|---:|---:|\n");
        for (name, n) in &s.by_name {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                escape(name),
                n.requests,
                latency(n.latency_ms.p50),
                latency(n.latency_ms.p95),
                latency(n.latency_ms.p99),
                n.errors.count
            );
        }
        out.push('\n');
    }
    crate::report::workloads::markdown(out, s);
    crate::report::streams::markdown(out, s);
    let kinds: Vec<_> = s.errors.by_kind.iter().filter(|(_, &n)| n > 0).collect();
    if !kinds.is_empty() {
        out.push_str("### Errors by kind\n\n| kind | count | first message |\n|---|---:|---|\n");
        for (kind, n) in kinds {
            // The message comes from the target: escaped like every such text.
            let first = s.errors.first_message.get(kind).map_or("", String::as_str);
            let _ = writeln!(out, "| {} | {n} | {} |", escape(kind), escape(first));
        }
        out.push('\n');
    }
}

/// Verdict then figures, as a run's report shows them.
#[cfg(test)]
fn body(out: &mut String, s: &Summary) {
    verdict(out, s);
    figures(out, s);
}

fn latency_row(out: &mut String, label: &str, l: &Latency) {
    let _ = writeln!(
        out,
        "| {label} | {} | {} | {} | {} | {} | {} | {} |",
        latency(l.min),
        latency(l.p50),
        latency(l.p90),
        latency(l.p95),
        latency(l.p99),
        latency(l.p999),
        latency(l.max)
    );
}

/// Says what a partial summary covers (nothing for a whole one); `unit` names a
/// search's load.
fn partial_note(out: &mut String, s: &Summary, unit: &str) {
    if let Some(words) = super::text::partial_words(s, unit) {
        let _ = writeln!(
            out,
            "**Partial.** {}
",
            escape(&words)
        );
    }
}

fn partial(out: &mut String, run: &Run) {
    let requests: u64 = run.timeline.iter().map(|s| s.requests).sum();
    let errors: u64 = run.timeline.iter().map(|s| s.errors).sum();
    let _ = writeln!(
        out,
        "No summary: the run ended before it could write one. Its {} recorded second(s) hold {requests} requests and {errors} errors.",
        run.timeline.len()
    );
    if let Some(message) = &run.row.message {
        let _ = writeln!(out, "\nIt failed: {}", escape(message));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_table_breakers_are_escaped() {
        assert_eq!(
            escape("<script>a|b</script>\n"),
            "&lt;script&gt;a\\|b&lt;/script&gt; "
        );
    }

    #[test]
    fn the_load_table_adds_up_and_names_what_was_abandoned() {
        use crate::metrics::summary::Errors;
        let mut s = Summary::empty("t", 3.0);
        s.scheduled = 60;
        s.requests = 50;
        s.completed = 40;
        s.errors = Errors {
            count: 10,
            rate: 0.2,
            by_kind: [("status_5xx".to_string(), 10)].into(),
            first_message: Default::default(),
        };
        s.dropped = 4;
        s.abandoned = 6;
        s.latency_success_ms.p95 = 42.0;
        let mut out = String::new();
        body(&mut out, &s);
        assert!(
            out.contains("| scheduled | requests | dropped | abandoned | errors |"),
            "{out}"
        );
        assert!(out.contains("| 60 | 50 | 4 | 6 | 10 (20.00%) |"), "{out}");
        assert!(out.contains("6 requests were still in flight"), "{out}");
        assert!(out.contains("| successful only |"), "{out}");
        assert!(out.contains("| status_5xx | 10 |  |"), "{out}");
    }

    #[test]
    fn the_first_graphql_message_is_shown_escaped() {
        let mut s = Summary::empty("t", 3.0);
        s.requests = 5;
        s.errors.count = 5;
        s.errors.by_kind.insert("graphql".into(), 5);
        s.errors
            .first_message
            .insert("graphql".into(), "no <b>task</b> | id\n7".into());
        let mut out = String::new();
        body(&mut out, &s);
        assert!(
            out.contains("| graphql | 5 | no &lt;b&gt;task&lt;/b&gt; \\| id 7 |"),
            "{out}"
        );
    }
}
