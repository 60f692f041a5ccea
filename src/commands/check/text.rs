//! `headroom check`'s text output: an [`Outline`] as aligned lines for a terminal, the
//! settings first, then the requests and flows with their weights and shares (each
//! flow's steps under it), then the thresholds.

use crate::report::table::{Align, Table};

use super::outline::{
    human, ItemOutline, IterationsOutline, LoadModel, LoadOutline, Outline, StepOutline,
    ThinkOutline,
};

/// Renders `outline`; every line ends in a newline.
pub fn render(outline: &Outline) -> String {
    let mut settings = Table::new(&[Align::Left, Align::Left]);
    settings.row([
        "scenario".to_string(),
        format!("{} ({})", outline.name, outline.file),
    ]);
    settings.row(["target", outline.target.as_str()]);
    if let Some(load) = &outline.load {
        for (i, line) in load_lines(load).into_iter().enumerate() {
            settings.row([if i == 0 { "load" } else { "" }.to_string(), line]);
        }
    }
    for (i, line) in data_lines(outline).into_iter().enumerate() {
        settings.row([if i == 0 { "data" } else { "" }.to_string(), line]);
    }
    settings.row(["timeout".to_string(), human(outline.timeout_s)]);
    settings.row(["threads".to_string(), outline.threads.to_string()]);
    let also = extras(outline);
    if !also.is_empty() {
        settings.row(["also".to_string(), also.join(", ")]);
    }
    let mut out = settings.render(0);
    if !outline.items.is_empty() {
        out.push('\n');
        out.push_str(&items(&outline.items).render(0));
    }
    for w in &outline.workloads {
        out.push_str(&format!(
            "\nworkload {} (starts at {})\n",
            w.name,
            human(w.start_s)
        ));
        let mut load = Table::new(&[Align::Left, Align::Left]);
        for (i, line) in load_lines(&w.load).into_iter().enumerate() {
            load.row([if i == 0 { "load" } else { "" }.to_string(), line]);
        }
        out.push_str(&load.render(2));
        out.push_str(&items(&w.items).render(2));
        if !w.thresholds.is_empty() {
            out.push_str(&format!("  thresholds: {}\n", w.thresholds.join(", ")));
        }
    }
    out.push_str("\nthresholds");
    if outline.thresholds.is_empty() {
        out.push_str(": none\n");
    } else {
        out.push('\n');
        for t in &outline.thresholds {
            out.push_str(&format!("  {t}\n"));
        }
    }
    out.push_str("\nvalid: the scenario compiles into this plan; nothing was sent\n");
    out
}

/// The requests and flows (a flow's steps in the rows below it), with weights and shares.
fn items(items: &[ItemOutline]) -> Table {
    let mut table = Table::new(&[
        Align::Left,
        Align::Left,
        Align::Left,
        Align::Right,
        Align::Right,
        Align::Left,
    ]);
    table.row(["request", "method", "path", "weight", "share"]);
    for item in items {
        let (method, path) = match &item.request {
            Some(r) => (r.method.as_str(), r.path.as_str()),
            None => ("flow", ""),
        };
        table.row([
            item.name.clone(),
            method.to_string(),
            path.to_string(),
            item.weight.to_string(),
            format!("{:.1}%", item.share_pct),
        ]);
        if !item.once.is_empty() {
            table.row(["  once per user".to_string(), String::new(), String::new()]);
            rows(&mut table, &item.once, "    ");
            table.row(["  each iteration".to_string(), String::new(), String::new()]);
            rows(&mut table, &item.steps, "    ");
        } else {
            rows(&mut table, &item.steps, "  ");
        }
    }
    table
}

/// The load's lines: the model and the schedule's shape, then the model's own setting.
fn load_lines(load: &LoadOutline) -> Vec<String> {
    let rate = load.model == LoadModel::ArrivalRate;
    let value = |v: f64| {
        if rate {
            format!("{v}/s")
        } else {
            format!("{v} users")
        }
    };
    let model = if rate { "arrival rate" } else { "users" };
    let mut lines = Vec::new();
    match load.stages.as_slice() {
        [only] if only.target == load.start => lines.push(format!(
            "{model}: {} for {}",
            value(only.target),
            human(only.duration_s)
        )),
        stages => {
            lines.push(format!(
                "{model}: from {} in {} stages, {} in all (peak {})",
                value(load.start),
                stages.len(),
                human(load.duration_s),
                value(load.peak)
            ));
            let mut from = load.start;
            for s in stages {
                lines.push(if s.target == from {
                    format!("  hold {} for {}", value(s.target), human(s.duration_s))
                } else {
                    format!("  ramp to {} over {}", value(s.target), human(s.duration_s))
                });
                from = s.target;
            }
        }
    }
    if let Some(n) = load.max_in_flight {
        lines.push(format!("at most {n} in flight"));
    }
    if let Some(t) = &load.think {
        lines.push(format!("think {} after each iteration", pause(t)));
    }
    match load.iterations {
        Some(IterationsOutline::PerUser(k)) => lines.push(format!(
            "each user stops after {k} iterations (the duration is an upper bound)"
        )),
        Some(IterationsOutline::Shared(k)) => lines.push(format!(
            "the users stop after {k} iterations in all (the duration is an upper bound)"
        )),
        None => {}
    }
    lines
}

/// `captures a, b`, or nothing for no capture.
fn captured(vars: &[String]) -> String {
    if vars.is_empty() {
        String::new()
    } else {
        format!("captures {}", vars.join(", "))
    }
}

/// A pause: `1s`, or `1s..2s` for a range.
fn pause(t: &ThinkOutline) -> String {
    if t.min_s == t.max_s {
        human(t.min_s)
    } else {
        format!("{}..{}", human(t.min_s), human(t.max_s))
    }
}

/// What else the run starts besides the load, when the scenario asks for it.
fn extras(outline: &Outline) -> Vec<String> {
    let mut also = Vec::new();
    match outline.watches {
        0 => {}
        1 => also.push("1 watch".to_string()),
        n => also.push(format!("{n} watches")),
    }
    if outline.hooks {
        also.push("hooks around each search step".into());
    }
    if outline.sink {
        also.push("a delivery sink".into());
    }
    if let Some(n) = outline.shards {
        also.push(format!("{n} shards"));
    }
    if !outline.setup.is_empty() {
        let n = outline.setup.len();
        let steps = if n == 1 { "step" } else { "steps" };
        also.push(format!("setup: {n} {steps} once before the load"));
    }
    if !outline.teardown.is_empty() {
        let n = outline.teardown.len();
        let steps = if n == 1 { "step" } else { "steps" };
        also.push(format!("teardown: {n} {steps} once after it"));
    }
    also
}

/// The data files' lines: name, file, rows, columns, pick.
pub(super) fn data_lines(outline: &Outline) -> Vec<String> {
    outline
        .data
        .iter()
        .map(|d| {
            format!(
                "{}: {} rows of {} ({}), {}",
                d.name,
                d.rows,
                d.file,
                d.columns.join(", "),
                d.pick
            )
        })
        .collect()
}

/// The rows of `steps`, numbered, under `indent` (a block's steps one level deeper).
fn rows(table: &mut Table, steps: &[StepOutline], indent: &str) {
    let empty = String::new;
    for (i, step) in steps.iter().enumerate() {
        let n = i + 1;
        let (name, method, path, notes) = match step {
            StepOutline::Request {
                name,
                request,
                captures,
            } => (
                name.clone(),
                request.method.clone(),
                request.path.clone(),
                captured(captures),
            ),
            StepOutline::Think(t) => ("think".into(), String::new(), pause(t), String::new()),
            StepOutline::Stream {
                protocol,
                name,
                stream,
                opens,
                does,
                captures,
            } => {
                let mut notes = format!("stream {stream}");
                if !does.is_empty() {
                    notes = format!("{notes}: {}", does.join(", "));
                }
                if !captures.is_empty() {
                    notes = format!("{notes}; {}", captured(captures));
                }
                let opens = opens.clone().unwrap_or_default();
                (name.clone(), protocol.to_string(), opens, notes)
            }
            StepOutline::Block { rule, steps } => {
                table.row([
                    format!("{indent}{n}. {rule}"),
                    empty(),
                    empty(),
                    empty(),
                    empty(),
                    empty(),
                ]);
                rows(table, steps, &format!("{indent}   "));
                continue;
            }
            StepOutline::Parallel { requests } => {
                table.row([
                    format!("{indent}{n}. at once"),
                    empty(),
                    empty(),
                    empty(),
                    empty(),
                    empty(),
                ]);
                for (name, r) in requests {
                    table.row([
                        format!("{indent}   - {name}"),
                        r.method.clone(),
                        r.path.clone(),
                        empty(),
                        empty(),
                        empty(),
                    ]);
                }
                continue;
            }
        };
        table.row([
            format!("{indent}{n}. {name}"),
            method,
            path,
            empty(),
            empty(),
            notes,
        ]);
    }
}
