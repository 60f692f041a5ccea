//! The end-of-run text summary: what a k6 or wrk user expects to read after a run,
//! compact and aligned. [`render`] is pure: it reads a [`Summary`] and returns the text;
//! the caller prints it on stdout.
//!
//! Sections, each present only when it has something to say: header, volume (requests,
//! rate, dropped, errors, and the flows' checks, redirects and cookies), latency
//! (corrected and, for the open model, uncorrected), the timing breakdown and
//! connections, per-name table, per-group table, thresholds, the resource profile of
//! the watches, generator, and a warning when the generator was the bound.

use std::fmt::Write;

use crate::metrics::summary::{Latency, Summary, ThresholdResult};
use crate::metrics::threshold::{Metric, StreamMetric, Threshold};
use crate::report::table::Table;
use crate::report::units::{latency, per_second, percent, seconds, share};

mod flows;

const OPEN_MODEL: &str = "arrival-rate";

/// Renders the end-of-run summary as plain text, one section after another, ending in a
/// newline. Latencies are in human units; a figure that could not be measured shows `-`.
pub fn render(summary: &Summary) -> String {
    let mut out = String::new();
    header(&mut out, summary);
    volume(&mut out, summary);
    latencies(&mut out, summary);
    out.push_str(&crate::report::timing::text(summary));
    if let Some(d) = &summary.delivery {
        out.push_str("\ndelivery through the sink (request sent → delivery received):\n");
        out.push_str(&d.table());
        let requests: Vec<u64> = summary.timeline.iter().map(|s| s.requests).collect();
        out.push_str(&d.rates(&requests));
    }
    if summary.by_name.len() > 1 {
        names(&mut out, summary);
    }
    out.push_str(&crate::report::workloads::text(summary));
    flows::groups(&mut out, summary);
    out.push_str(&crate::report::streams::text(summary));
    if !summary.thresholds.is_empty() {
        thresholds(&mut out, summary);
    }
    out.push_str(&crate::report::profile::render(summary));
    generator(&mut out, summary);
    out.push_str(&crate::report::shards::text(summary));
    out
}

/// What a partial summary covers, in a sentence (`None` for a whole one); `unit`
/// names a search's load (req/s, users).
pub fn partial_words(s: &Summary, unit: &str) -> Option<String> {
    let p = s.partial?;
    let step = p.step.map_or(String::new(), |step| {
        let at = match unit {
            "" => crate::search::result::value(step.value),
            unit => format!("{} {unit}", crate::search::result::value(step.value)),
        };
        format!(
            " of step {} (at {at}), the steps before it stored whole",
            step.index + 1
        )
    });
    Some(format!(
        "The run stopped without writing its summary (killed, or still running): these \
         figures cover the first {} of its measured window{step}, through second {}. \
         Requests still in flight then count as abandoned.",
        seconds(p.seconds as f64),
        p.last_second
    ))
}

fn header(out: &mut String, s: &Summary) {
    let _ = write!(out, "{} ({}, {})", s.name, s.model, seconds(s.duration_s));
    if let Some(p) = s.partial {
        let _ = write!(
            out,
            "  PARTIAL: the run stopped without its summary; these figures cover seconds 0 to {}",
            p.last_second
        );
    } else if s.aborted.is_some() {
        out.push_str("  ABORTED on a failed threshold: the figures cover only what ran");
    } else if s.interrupted {
        out.push_str("  INTERRUPTED: the figures cover only what ran");
    }
    out.push_str("\n\n");
}

fn volume(out: &mut String, s: &Summary) {
    let mut t = Table::new(&[]);
    // The accounting identity (ARCHITECTURE.md rule 6), spelled out; a closed model
    // never drops, so its term is left out there.
    let dropped = if s.model == OPEN_MODEL || s.dropped > 0 {
        format!(" + {} dropped", s.dropped)
    } else {
        String::new()
    };
    t.row([
        "scheduled".to_string(),
        format!(
            "{} = {} ok + {} failed{dropped} + {} abandoned",
            s.scheduled, s.completed, s.errors.count, s.abandoned
        ),
    ]);
    t.row(["requests".to_string(), s.requests.to_string()]);
    let rate = if s.model == OPEN_MODEL {
        format!(
            "{} achieved of {} offered ({})",
            per_second(s.rate.achieved),
            per_second(s.rate.offered),
            percent(achieved_share(s))
        )
    } else {
        format!("{} achieved", per_second(s.rate.achieved))
    };
    t.row(["rate".to_string(), rate]);
    if s.model == OPEN_MODEL || s.dropped > 0 {
        let note = if s.dropped > 0 {
            " (could not start: in-flight limit reached)"
        } else {
            ""
        };
        t.row(["dropped".to_string(), format!("{}{note}", s.dropped)]);
    }
    let mut errors = format!(
        "{} ({})",
        s.errors.count,
        percent(share(s.errors.count, s.requests))
    );
    let mut kinds: Vec<(&String, &u64)> = s.errors.by_kind.iter().filter(|(_, &n)| n > 0).collect();
    kinds.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    if !kinds.is_empty() {
        let list: Vec<String> = kinds
            .iter()
            .map(|(kind, n)| format!("{kind} {n}"))
            .collect();
        let _ = write!(errors, ": {}", list.join(", "));
    }
    t.row(["errors".to_string(), errors]);
    for (kind, message) in &s.errors.first_message {
        // From the target: control characters (terminal escapes) shown as spaces.
        let shown: String = message
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        t.row([format!("first {kind}"), shown]);
    }
    if s.abandoned > 0 {
        t.row([
            "abandoned".to_string(),
            format!("{} (still in flight when the run ended)", s.abandoned),
        ]);
    }
    if s.retries > 0 {
        t.row([
            "retries".to_string(),
            format!("{} (resent after a stale keep-alive connection)", s.retries),
        ]);
    }
    flows::rows(&mut t, s);
    out.push_str(&t.render(0));
    out.push('\n');
}

/// Achieved rate as a percentage of offered (0 when nothing was offered).
fn achieved_share(s: &Summary) -> f64 {
    if s.rate.offered > 0.0 {
        s.rate.achieved * 100.0 / s.rate.offered
    } else {
        0.0
    }
}

fn latency_cells(label: &str, l: &Latency, measured: bool) -> Vec<String> {
    let figures = [l.min, l.avg, l.p50, l.p90, l.p95, l.p99, l.p999, l.max];
    let cell = |ms: f64| {
        if measured {
            latency(ms)
        } else {
            "-".to_string()
        }
    };
    std::iter::once(label.to_string())
        .chain(figures.into_iter().map(cell))
        .collect()
}

fn latencies(out: &mut String, s: &Summary) {
    let measured = s.requests > 0;
    let mut t = Table::labelled(8);
    t.row(["", "min", "avg", "p50", "p90", "p95", "p99", "p99.9", "max"]);
    t.row(latency_cells("latency", &s.latency_ms, measured));
    if s.errors.count > 0 {
        // Fast failures (a limiter's 503s) pull the overall figures down; this row
        // is what the requests that worked took.
        t.row(latency_cells(
            "successful",
            &s.latency_success_ms,
            s.completed > 0,
        ));
    }
    let open = s.model == OPEN_MODEL;
    if open {
        t.row(latency_cells(
            "uncorrected",
            &s.latency_uncorrected_ms,
            measured,
        ));
    }
    out.push_str(&t.render(0));
    if open {
        out.push_str(
            "(latency is timed from each request's scheduled start; uncorrected, from the\n\
             \x20actual send: it hides queueing and is shown for comparison only)\n",
        );
    }
    out.push('\n');
}

fn names(out: &mut String, s: &Summary) {
    let mut t = Table::labelled(6);
    t.row(["name", "requests", "share", "p50", "p95", "p99", "errors"]);
    for (name, n) in &s.by_name {
        let measured = n.requests > 0;
        let cell = |ms: f64| {
            if measured {
                latency(ms)
            } else {
                "-".to_string()
            }
        };
        t.row([
            name.clone(),
            n.requests.to_string(),
            percent(share(n.requests, s.requests)),
            cell(n.latency_ms.p50),
            cell(n.latency_ms.p95),
            cell(n.latency_ms.p99),
            percent(share(n.errors.count, n.requests)),
        ]);
    }
    out.push_str(&t.render(0));
    out.push('\n');
}

/// The measured value of a threshold in its rule's unit, or why there is none.
fn threshold_value(s: &Summary, r: &ThresholdResult) -> String {
    let Ok(rule) = Threshold::parse(crate::report::workloads::own_rule(s, &r.expr)) else {
        return format!("{}", r.value);
    };
    match rule.metric {
        Metric::Stream(StreamMetric::Errors) => return percent(r.value),
        Metric::Stream(_) => return latency(r.value),
        Metric::Checks => return flows::checks_value(s, rule.scope.as_deref(), r.value),
        _ => {}
    }
    let (requests, succeeded) = match &rule.scope {
        None => (s.requests, s.completed),
        Some(name) => match s.by_name.get(name) {
            Some(n) => (n.requests, n.requests - n.errors.count),
            None => return "no such name".to_string(),
        },
    };
    match rule.metric {
        Metric::Latency(_) if requests == 0 => "no requests".to_string(),
        Metric::SuccessLatency(_) if succeeded == 0 => "no successes".to_string(),
        Metric::Latency(_) | Metric::SuccessLatency(_) => latency(r.value),
        Metric::ErrorPercent => percent(r.value),
        Metric::Rate => per_second(r.value),
        Metric::Dropped | Metric::Abandoned => format!("{}", r.value),
        Metric::DeliveryLatency(_) if s.delivery.is_none() => "no sink".to_string(),
        Metric::DeliveryLatency(_) => latency(r.value),
        Metric::DeliveryLost | Metric::DeliveryDuplicated => percent(r.value),
        Metric::Stream(_) | Metric::Checks => unreachable!("rendered above"),
    }
}

fn thresholds(out: &mut String, s: &Summary) {
    let mut t = Table::labelled(2);
    t.row(["threshold", "measured", "result"]);
    for r in &s.thresholds {
        let verdict = if r.ok { "PASS" } else { "FAIL" };
        t.row([r.expr.clone(), threshold_value(s, r), verdict.to_string()]);
    }
    out.push_str(&t.render(0));
    windows(out, s);
    let failed = s.thresholds.iter().filter(|r| !r.ok).count();
    let _ = match failed {
        0 => writeln!(out, "all {} thresholds passed", s.thresholds.len()),
        n => writeln!(out, "{n} of {} thresholds FAILED", s.thresholds.len()),
    };
    out.push('\n');
}

/// Where each rule with `over D` failed or held, e.g. `p95 < 500ms over 10s: failed
/// in 40s–50s (p95 812 ms)`; then why an aborted run stopped.
fn windows(out: &mut String, s: &Summary) {
    for r in &s.thresholds {
        let Ok(rule) = Threshold::parse(&r.expr) else {
            continue;
        };
        let name = r.expr.split(['<', '>', '=']).next().unwrap_or("").trim();
        let figure = format!("{name} {}", threshold_value(s, r));
        if let Some(said) = crate::metrics::threshold::window::describe(r, &figure) {
            let _ = writeln!(out, "{}: {said}", rule.expr);
        }
    }
    if let Some(a) = &s.aborted {
        let _ = writeln!(
            out,
            "ABORTED at {}s (--abort-on-fail): {}",
            a.at_s, a.reason
        );
    }
}

fn generator(out: &mut String, s: &Summary) {
    let g = &s.generator;
    let _ = writeln!(
        out,
        "generator  CPU {:.0}% of one core on {} threads, send lag max {} (p99 {})",
        g.cpu_percent,
        g.threads,
        latency(g.max_lag_ms),
        latency(g.p99_lag_ms)
    );
    if g.bound {
        let reason = if g.reason.is_empty() {
            "no reason recorded"
        } else {
            g.reason.as_str()
        };
        let advice = if g.starved {
            format!(
                "The host's CPU was saturated ({:.0}% busy) by other processes: run the\n\
                 \x20 generator on another machine than the target's; more --threads will not help.\n",
                g.host_cpu_percent
            )
        } else {
            format!(
                "Give the generator more room and run again: more --threads\n\
                 \x20 (it has {}), another machine than the target's, or the load split across shards.\n",
                g.threads
            )
        };
        let _ = write!(
            out,
            "\nWARNING: the load generator, not the target, limited this run.\n\
             \x20 reason: {reason}\n\
             \x20 These figures describe the generator's limit, not the target's: do not read\n\
             \x20 them as a ceiling. {advice}"
        );
    }
}

#[cfg(test)]
mod tests;
