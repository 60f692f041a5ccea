//! "What limited the ceiling": for the step that holds the ceiling and the lowest
//! step that failed above it, what each watch saw — CPU and memory against their caps,
//! and for PostgreSQL its busiest statements, connections against `max_connections`
//! and dead tuples — led by the bottleneck those watches name ([`bottleneck`], the
//! same attribution as the search's `bottleneck`). [`blocks`] builds the section from a [`SearchView`]; the terminal
//! (`headroom find`) and the reports render the same blocks.

use super::blocks::{Block, Grid};
use super::profile::{cores, mib, one_line};
use super::units::{latency, per_second, percent};
use super::view::{SearchView, StepView};
use crate::search::bottleneck::{self as neck, Bottleneck};
use crate::search::result::value;
use crate::search::{LimitedBy, Unit};
use crate::watch::{Detail, PostgresSummary, WatchSummary};

/// Widest a statement's text is shown, in characters.
const STATEMENT_WIDTH: usize = 70;
/// Most tables listed by dead tuples.
const TABLES: usize = 5;

/// The section: the search's limit in words, then each of the two steps with its
/// watches. Always has the heading and the limit; the steps only when there are any.
pub fn blocks(view: &SearchView<'_>) -> Vec<Block> {
    section(view, true)
}

/// The section, with or without its `Bottleneck:` line (the terminal printed it with
/// the answer just above).
fn section(view: &SearchView<'_>, with_bottleneck: bool) -> Vec<Block> {
    let mut out = vec![
        Block::Heading(3, "What limited the ceiling".into()),
        Block::Para(format!("Limited by {}.", view.limited_by())),
    ];
    let unit = Unit::from_label(view.unit);
    match (bottleneck(view), view.failing_step()) {
        _ if !with_bottleneck => {}
        (Some(b), _) => out.push(Block::Para(format!(
            "Bottleneck: {}.",
            neck::line(&b, unit)
        ))),
        (None, Some(f)) if view.label() == LimitedBy::Thresholds => out.push(Block::Para(format!(
            "Bottleneck: {}.",
            neck::hint(f.summary)
        ))),
        (None, _) => {}
    }
    let u = view.unit;
    if let Some(s) = view.ceiling_step() {
        let title = format!("Ceiling step {}: {} {u}, passed", s.number, value(s.value));
        step(&mut out, title, &s);
    }
    if let Some(s) = view.failing_step() {
        let title = format!(
            "First failing step {}: {} {u}, failed: {}",
            s.number,
            value(s.value),
            s.failure()
        );
        step(&mut out, title, &s);
    }
    out
}

/// The bottleneck of a search as its steps show it: between the ceiling step and the
/// first failing step above it, or the generator of a generator-bound search.
pub fn bottleneck(view: &SearchView<'_>) -> Option<Bottleneck> {
    match view.label() {
        LimitedBy::Thresholds => {
            let f = view.failing_step()?;
            let passing = view.ceiling_step().map(|s| (s.value, s.summary));
            neck::attribute(passing, (f.value, f.summary))
        }
        LimitedBy::Generator => view
            .bound_steps()
            .last()
            .map(|s| neck::generator((s.value, s.summary))),
        LimitedBy::Range | LimitedBy::Interrupted | LimitedBy::Error => None,
    }
}

/// What `headroom find` prints after its answer when something besides the generator
/// was watched: this section, then the sizing; `None` otherwise.
pub fn terminal(result: &crate::search::SearchResult) -> Option<String> {
    let view = SearchView::result(result);
    if !watched(&view) {
        return None;
    }
    // The answer above it already said the bottleneck.
    let mut out = super::blocks::text(&section(&view, false));
    if let Some(sizing) = super::sizing::Sizing::of(&view, &[]) {
        out.push('\n');
        out.push_str(&super::blocks::text(&sizing.blocks()));
    }
    Some(out)
}

/// Whether any step of the search watched more than the generator.
pub fn watched(view: &SearchView<'_>) -> bool {
    view.steps.iter().any(|s| {
        s.summary
            .watches
            .iter()
            .any(|w| !matches!(w.detail, Detail::Generator(_)))
    })
}

fn step(out: &mut Vec<Block>, title: String, s: &StepView<'_>) {
    out.push(Block::Heading(4, title));
    out.push(Block::Para(format!(
        "Achieved {}, p95 {}, p99 {}, errors {}.",
        per_second(s.summary.rate.achieved),
        latency(s.summary.latency_ms.p95),
        latency(s.summary.latency_ms.p99),
        percent(s.summary.errors.rate * 100.0)
    )));
    let watches = &s.summary.watches;
    if let Some(g) = profile(watches) {
        out.push(Block::Grid(g));
    }
    for w in watches {
        if let Detail::Postgres(p) = &w.detail {
            postgres(out, w, p);
        }
    }
}

/// Every watch's CPU and memory beside its cap, as `docker stats` shows them.
pub fn profile(watches: &[WatchSummary]) -> Option<Grid> {
    let mut g = Grid::new([
        "what", "CPU avg", "CPU max", "CPU cap", "mem max", "mem cap",
    ]);
    for row in watches.iter().filter_map(WatchSummary::profile) {
        let at_cap = |v: f64, cap: Option<f64>| cap.is_some_and(|c| c > 0.0 && v >= 0.95 * c);
        let cpu_max = if at_cap(row.cpu.max, row.cpu_cap) {
            format!("{} (at cap)", cores(row.cpu.max))
        } else {
            cores(row.cpu.max)
        };
        let mem = row.mem_max_mb.map_or("-".into(), |m| {
            if at_cap(m, row.mem_cap_mb) {
                format!("{} (at cap)", mib(m))
            } else {
                mib(m)
            }
        });
        g.row([
            row.what,
            cores(row.cpu.avg),
            cpu_max,
            row.cpu_cap.map_or("-".into(), cores),
            mem,
            row.mem_cap_mb.map_or("-".into(), mib),
        ]);
    }
    (!g.rows.is_empty()).then_some(g)
}

fn postgres(out: &mut Vec<Block>, w: &WatchSummary, p: &PostgresSummary) {
    let c = &p.connections;
    let share = if c.limit > 0 {
        format!(" ({})", percent(c.max as f64 / c.limit as f64 * 100.0))
    } else {
        String::new()
    };
    let dead: i64 = p.tables.iter().map(|t| t.dead).sum();
    out.push(Block::Para(format!(
        "{}: connections max {} of max_connections {}{share}; {} transactions avg ({} max); dead tuples {dead}; deadlocks {}; waiting locks max {}.",
        w.spec,
        c.max,
        c.limit,
        per_second(p.tps.avg),
        per_second(p.tps.max),
        p.deadlocks,
        p.waiting_locks.max,
    )));
    if !p.top_queries.is_empty() {
        let mut g = Grid::new(["top statements", "calls", "mean", "total"]);
        for q in &p.top_queries {
            g.row([
                one_line(&q.query, STATEMENT_WIDTH),
                q.calls.to_string(),
                latency(q.mean_ms),
                latency(q.total_ms),
            ]);
        }
        out.push(Block::Grid(g));
    }
    let mut tables: Vec<_> = p.tables.iter().filter(|t| t.dead > 0).collect();
    tables.sort_by_key(|t| std::cmp::Reverse(t.dead));
    if !tables.is_empty() {
        let mut g = Grid::new(["table", "live", "dead tuples"]);
        for t in tables.into_iter().take(TABLES) {
            g.row([t.name.clone(), t.live.to_string(), t.dead.to_string()]);
        }
        out.push(Block::Grid(g));
    }
    for n in &w.notices {
        out.push(Block::Para(format!("note on {}: {n}", w.spec)));
    }
}
