//! Text output of a search: the live line printed as each step ends ([`step_line`]),
//! the step table in the shape of a hand-kept load-test log ([`table`]: `Rate |
//! Achieved | Success | p50 | p95 | p99 | Dropped | Wait | Verdict`, where Wait is the
//! isolation wait before the step beyond its cooldown), the line for a long isolation
//! wait ([`isolation_line`]), and the closing lines with ceiling, knee,
//! `limited_by` and the fitted model ([`render`]), led by the hold's verdict with
//! `--hold`.

use super::hold::span;
use super::isolation::IsolationReport;
use super::result::SearchResult;
use super::step::{StepRecord, Unit};
pub use super::words::failed_rules;
use super::words::value;
use headroom_format::table::{Align, Table};
use headroom_format::units::{latency, per_second, percent, seconds};

/// One line for a finished step: value, achieved rate, p50/p95/p99, errors, dropped,
/// verdict.
pub fn step_line(index: usize, step: &StepRecord, unit: Unit) -> String {
    let s = &step.summary;
    format!(
        "step {index:>2}  {:>9}  achieved {:>10}  p50 {:>7}  p95 {:>7}  p99 {:>7}  errors {:>6}  dropped {:>5}  {}",
        match unit {
            Unit::Rate => format!("{}/s", value(step.rate)),
            Unit::Users => format!("{} users", value(step.rate)),
        },
        per_second(s.rate.achieved),
        latency(s.latency_ms.p50),
        latency(s.latency_ms.p95),
        latency(s.latency_ms.p99),
        percent(s.errors.rate * 100.0),
        s.dropped,
        verdict(step)
    )
}

/// Why a generator-bound step does not count (the engine's self-check, in its words),
/// under the step's line: `the generator, not the target, limited this step: …`. The
/// search runs such a step again, and ends if it is bound twice.
pub fn bound_line(step: &StepRecord) -> String {
    format!(
        "the generator, not the target, limited this step: {}",
        step.summary.generator.reason
    )
}

/// The step table, one row per step in the order run.
pub fn table(result: &SearchResult) -> String {
    let mut t = Table::new(&[
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Left,
    ]);
    let first = match result.unit {
        Unit::Rate => "Rate",
        Unit::Users => "Users",
    };
    t.row([
        first, "Achieved", "Success", "p50", "p95", "p99", "Dropped", "Wait", "Verdict",
    ]);
    for step in &result.steps {
        t.row(row(step, result.unit));
    }
    t.render(2)
}

/// The cells of one step's row (shared with Markdown renderers).
pub fn row(step: &StepRecord, unit: Unit) -> Vec<String> {
    let s = &step.summary;
    let v = match unit {
        Unit::Rate => format!("{}/s", value(step.rate)),
        Unit::Users => value(step.rate),
    };
    vec![
        v,
        per_second(s.rate.achieved),
        percent(100.0 - s.errors.rate * 100.0),
        latency(s.latency_ms.p50),
        latency(s.latency_ms.p95),
        latency(s.latency_ms.p99),
        s.dropped.to_string(),
        step.isolation
            .map_or("-".into(), |r| seconds(r.drain_wait_s)),
        verdict(step),
    ]
}

/// What a long isolation wait waited for: `waited 4.2s for free local ports toward the
/// target (1200 → 5000 free, 3000 needed); TIME_WAIT sockets toward port 8080: 2061 →
/// 2056, gave up: the count stopped moving`.
pub fn isolation_line(r: &IsolationReport, port: u16) -> String {
    let mut line = format!("waited {}", seconds(r.drain_wait_s));
    if let (Some(needed), Some(before), Some(after)) =
        (r.ports_needed, r.ports_free_before, r.ports_free_after)
    {
        line.push_str(&format!(
            " for free local ports toward the target ({before} → {after} free, {needed} needed)"
        ));
    }
    line.push_str(&format!(
        "; TIME_WAIT sockets toward port {port}: {} → {}",
        r.time_wait_before.unwrap_or(0),
        r.time_wait_after.unwrap_or(0)
    ));
    if r.stalled {
        line.push_str(", gave up: the count stopped moving");
    } else if !r.drained {
        line.push_str(", gave up at the drain timeout");
    }
    line
}

/// `pass`, `fail: p95 < 50ms (61.2ms)`, `fail: did not keep up (achieved 1201.6/s of
/// 1240.0/s)`, `generator-bound`, with `(again)` on a confirmation run.
pub fn verdict(step: &StepRecord) -> String {
    let s = &step.summary;
    let mut v = if s.generator.bound {
        "generator-bound".to_string()
    } else if s.interrupted {
        "interrupted".to_string()
    } else if step.passed {
        "pass".to_string()
    } else if s.requests == 0 {
        "fail: no request completed".to_string()
    } else {
        format!("fail: {}", failures(step))
    };
    if step.confirmation {
        v.push_str(" (again)");
    }
    v
}

/// Why a step failed: its failed thresholds, then how the target fell behind.
pub fn failures(step: &StepRecord) -> String {
    let rules = failed_rules(&step.summary);
    let behind = step.keep_up.describe().unwrap_or_default();
    match (rules.is_empty(), behind.is_empty()) {
        (false, false) => format!("{rules}, {behind}"),
        (true, _) => behind,
        (false, true) => rules,
    }
}

/// The table, then `Ceiling:`, `Knee:`, `Limited by:` and the conclusion; with a
/// hold, its verdict first ([`Hold::first_line`](super::hold::Hold::first_line)).
pub fn render(result: &SearchResult) -> String {
    let mut out = result.hold.as_ref().map_or(String::new(), |h| {
        format!("{}\n\n", h.first_line(result.unit))
    });
    out.push_str(&table(result));
    out.push('\n');
    out.push_str(&answer(result));
    out
}

/// `Ceiling:`, `Knee:`, `Limited by:`, `Model (USL):`, `Steps:` and the conclusion, without the step
/// table (for output that already showed each step as it ended).
pub fn answer(result: &SearchResult) -> String {
    let unit = result.unit.as_str();
    let mut out = String::new();
    let ceiling = match (result.ceiling, result.ceiling_is_lower_bound) {
        (Some(c), false) => format!("{} {unit}", value(c)),
        (Some(c), true) => format!("at least {} {unit} (a lower bound)", value(c)),
        (None, _) => "not found".into(),
    };
    let held = result
        .hold
        .as_ref()
        .map_or(String::new(), |h| match (h.held, h.interrupted) {
            (true, _) => format!(", held for {}", span(h.duration())),
            (false, false) => format!(", did not hold for {}", span(h.duration())),
            (false, true) => ", hold interrupted".into(),
        });
    out.push_str(&format!("Ceiling:    {ceiling}{held}\n"));
    if let Some(i) = &result.ceiling_interval {
        let span = i.high.map_or(format!("{} {unit}", value(i.low)), |h| {
            format!("{} to {} {unit}", value(i.low), value(h))
        });
        out.push_str(&format!(
            "Interval:   {span} ({})\n",
            i.describe(result.unit)
        ));
    }
    if let Some(h) = &result.hold {
        out.push_str(&format!(
            "Hold:       {}\n            {}\n",
            h.headline(),
            h.figures()
        ));
    }
    let knee = result.knee.map_or(
        "none that matters (p95 never outgrew the load to twice its baseline and a fifth of the latency threshold)".into(),
        |k| {
            format!(
                "{} {unit} (p95 grows faster than the load beyond it)",
                value(k)
            )
        },
    );
    out.push_str(&format!("Knee:       {knee}\n"));
    out.push_str(&format!("Limited by: {}\n", result.limited_by.as_str()));
    if let Some(b) = &result.bottleneck {
        out.push_str(&format!(
            "Bottleneck: {}\n",
            super::bottleneck::line(b, result.unit)
        ));
    }
    let model = super::model::line(result.model.as_ref(), result.unit);
    out.push_str(&format!("Model (USL): {model}\n"));
    let waited: f64 = result
        .steps
        .iter()
        .filter_map(|s| s.isolation.map(|r| r.drain_wait_s))
        .sum();
    let waits = if waited >= 0.5 {
        format!(
            " (of which {} waiting beyond the cooldowns)",
            seconds(waited)
        )
    } else {
        String::new()
    };
    out.push_str(&format!(
        "Steps:      {} in {}{waits}\n",
        result.steps.len(),
        seconds(result.duration_s)
    ));
    out.push('\n');
    out.push_str(&result.conclusion);
    out
}
