//! The end-of-run text summary: what a k6 or wrk user expects to read after a run,
//! compact and aligned. [`render`] is pure: it reads a [`Summary`] and returns the text;
//! the caller prints it on stdout.
//!
//! Sections, each present only when it has something to say: header, volume (requests,
//! rate, dropped), latency (corrected and, for the open model, uncorrected), errors,
//! the timing breakdown and connections,
//! per-name table, thresholds, the resource profile of the watches, generator, and a warning when the generator was the bound.

use std::fmt::Write;

use crate::metrics::summary::{Latency, Summary, ThresholdResult};
use crate::metrics::threshold::{Metric, Threshold};
use crate::report::table::Table;
use crate::report::units::{latency, per_second, percent, seconds, share};

const OPEN_MODEL: &str = "arrival-rate";

/// Renders the end-of-run summary as plain text, one section after another, ending in a
/// newline. Latencies are in human units; a figure that could not be measured shows `-`.
pub fn render(summary: &Summary) -> String {
    let mut out = String::new();
    header(&mut out, summary);
    volume(&mut out, summary);
    latencies(&mut out, summary);
    out.push_str(&crate::report::timing::text(summary));
    if summary.by_name.len() > 1 {
        names(&mut out, summary);
    }
    if !summary.thresholds.is_empty() {
        thresholds(&mut out, summary);
    }
    out.push_str(&crate::report::profile::render(summary));
    generator(&mut out, summary);
    out
}

fn header(out: &mut String, s: &Summary) {
    let _ = write!(out, "{} ({}, {})", s.name, s.model, seconds(s.duration_s));
    if s.interrupted {
        out.push_str("  INTERRUPTED: the figures cover only what ran");
    }
    out.push_str("\n\n");
}

fn volume(out: &mut String, s: &Summary) {
    let mut t = Table::new(&[]);
    // The accounting identity (DESIGN.md rule 6), spelled out; a closed model
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
    let Ok(rule) = Threshold::parse(&r.expr) else {
        return format!("{}", r.value);
    };
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
    let failed = s.thresholds.iter().filter(|r| !r.ok).count();
    let _ = match failed {
        0 => writeln!(out, "all {} thresholds passed", s.thresholds.len()),
        n => writeln!(out, "{n} of {} thresholds FAILED", s.thresholds.len()),
    };
    out.push('\n');
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
mod tests {
    use super::*;
    use crate::metrics::summary::{Errors, Generator, NameSummary, Rates};
    use crate::metrics::threshold::evaluate_all;

    fn latency_ms(scale: f64) -> Latency {
        Latency {
            min: 0.1 * scale,
            avg: 0.5 * scale,
            p50: 0.4 * scale,
            p90: 0.7 * scale,
            p95: 0.8 * scale,
            p99: 1.5 * scale,
            p999: 4.0 * scale,
            max: 1200.0 * scale,
        }
    }

    fn named(requests: u64, scale: f64, errors: u64) -> NameSummary {
        NameSummary {
            requests,
            latency_ms: latency_ms(scale),
            latency_success_ms: latency_ms(scale),
            errors: Errors {
                count: errors,
                ..Errors::default()
            },
            timing_ms: Default::default(),
        }
    }

    /// An open-model run with two names, errors of two kinds, three thresholds and a
    /// generator that was the bound.
    fn open_run() -> Summary {
        let mut s = Summary {
            version: 1,
            name: "checkout".into(),
            model: "arrival-rate".into(),
            requests: 10_000,
            duration_s: 5.0,
            rate: Rates {
                offered: 2000.0,
                achieved: 1999.6,
            },
            dropped: 3,
            scheduled: 10_003,
            completed: 9_950,
            abandoned: 0,
            retries: 0,
            latency_ms: latency_ms(1.0),
            latency_uncorrected_ms: latency_ms(0.5),
            latency_success_ms: latency_ms(0.9),
            errors: Errors {
                count: 50,
                rate: 0.005,
                by_kind: [("status_5xx".to_string(), 10), ("timeout".to_string(), 40)].into(),
            },
            timing_ms: Default::default(),
            connections: Default::default(),
            by_name: [
                ("create_task".to_string(), named(7000, 1.0, 0)),
                ("get_task".to_string(), named(3000, 10.0, 50)),
            ]
            .into(),
            thresholds: vec![],
            generator: Generator {
                cpu_percent: 97.4,
                threads: 2,
                max_lag_ms: 35.0,
                p99_lag_ms: 12.0,
                bound: true,
                reason: "CPU at 97% of the engine threads' capacity".into(),
                ..Generator::default()
            },
            timeline: vec![],
            interrupted: false,
            watches: vec![],
        };
        let rules: Vec<Threshold> = ["p95 < 500ms", "get_task.p99 < 10ms", "nope.p95 < 1s"]
            .iter()
            .map(|e| Threshold::parse(e).unwrap())
            .collect();
        s.thresholds = evaluate_all(&rules, &s);
        s
    }

    #[test]
    fn open_model_run_reads_as_a_whole() {
        let want = "\
checkout (arrival-rate, 5.0s)

scheduled  10003 = 9950 ok + 50 failed + 3 dropped + 0 abandoned
requests   10000
rate       1999.6/s achieved of 2000.0/s offered (99.98%)
dropped    3 (could not start: in-flight limit reached)
errors     50 (0.50%): timeout 40, status_5xx 10

                min    avg    p50    p90    p95     p99   p99.9    max
latency       100µs  500µs  400µs  700µs  800µs  1.50ms  4.00ms  1.20s
successful   90.0µs  450µs  360µs  630µs  720µs  1.35ms  3.60ms  1.08s
uncorrected  50.0µs  250µs  200µs  350µs  400µs   750µs  2.00ms  600ms
(latency is timed from each request's scheduled start; uncorrected, from the
 actual send: it hides queueing and is shown for comparison only)

name         requests   share     p50     p95     p99  errors
create_task      7000  70.00%   400µs   800µs  1.50ms   0.00%
get_task         3000  30.00%  4.00ms  8.00ms  15.0ms   1.67%

threshold                measured  result
p95 < 500ms                 800µs    PASS
get_task.p99 < 10ms        15.0ms    FAIL
nope.p95 < 1s        no such name    FAIL
2 of 3 thresholds FAILED

generator  CPU 97% of one core on 2 threads, send lag max 35.0ms (p99 12.0ms)

WARNING: the load generator, not the target, limited this run.
  reason: CPU at 97% of the engine threads' capacity
  These figures describe the generator's limit, not the target's: do not read
  them as a ceiling. Give the generator more room and run again: more --threads
  (it has 2), another machine than the target's, or the load split across shards.
";
        let text = render(&open_run());
        assert_eq!(text, want, "\n{text}");
    }

    #[test]
    fn a_starved_generator_is_told_to_move_not_to_add_threads() {
        let mut s = open_run();
        s.generator.starved = true;
        s.generator.host_cpu_percent = 98.4;
        let text = render(&s);
        assert!(
            text.contains("The host's CPU was saturated (98% busy) by other processes: run the\n  generator on another machine than the target's; more --threads will not help."),
            "{text}"
        );
        assert!(!text.contains("(it has 2)"), "{text}");
    }

    #[test]
    fn closed_model_run_leaves_out_what_does_not_apply() {
        let mut s = open_run();
        s.model = "users".into();
        s.name = "graphql".into();
        s.interrupted = true;
        s.dropped = 0;
        s.rate.offered = s.rate.achieved;
        s.errors = Errors::default();
        s.by_name.remove("get_task");
        s.thresholds.clear();
        s.generator.bound = false;
        s.generator.reason.clear();
        let text = render(&s);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "graphql (users, 5.0s)  INTERRUPTED: the figures cover only what ran"
        );
        assert!(lines.contains(&"rate       1999.6/s achieved"), "{text}");
        assert!(lines.contains(&"errors     0 (0.00%)"), "{text}");
        assert!(
            lines.contains(&"scheduled  10003 = 9950 ok + 0 failed + 0 abandoned"),
            "{text}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("latency ") && l.ends_with("1.20s")),
            "{text}"
        );
        for absent in [
            "dropped",
            "uncorrected",
            "successful",
            "name ",
            "threshold",
            "WARNING",
        ] {
            assert!(!text.contains(absent), "{absent:?} in\n{text}");
        }
        assert_eq!(
            lines.last(),
            Some(&"generator  CPU 97% of one core on 2 threads, send lag max 35.0ms (p99 12.0ms)")
        );
    }

    #[test]
    fn a_run_with_no_requests_shows_no_latency_figures() {
        let mut s = open_run();
        s.requests = 0;
        s.rate.achieved = 0.0;
        s.errors = Errors::default();
        s.latency_ms = Latency::default();
        s.by_name.clear();
        s.thresholds = evaluate_all(&[Threshold::parse("p95 < 1s").unwrap()], &s);
        let text = render(&s);
        assert!(
            text.contains("\nlatency        -    -    -    -    -    -      -    -\n"),
            "{text}"
        );
        assert!(
            text.contains("0.0/s achieved of 2000.0/s offered (0.00%)"),
            "{text}"
        );
        assert!(
            text.contains("\np95 < 1s   no requests    FAIL\n"),
            "{text}"
        );
        assert!(text.contains("1 of 1 thresholds FAILED"), "{text}");
    }

    #[test]
    fn all_passing_thresholds_are_summed_up_and_rate_and_error_rules_use_their_units() {
        let mut s = open_run();
        let rules: Vec<Threshold> = ["rate > 1000/s", "errors < 1%", "dropped < 10"]
            .iter()
            .map(|e| Threshold::parse(e).unwrap())
            .collect();
        s.thresholds = evaluate_all(&rules, &s);
        let text = render(&s);
        assert!(
            text.contains("\nrate > 1000/s  1999.6/s    PASS\n"),
            "{text}"
        );
        assert!(
            text.contains("\nerrors < 1%       0.50%    PASS\n"),
            "{text}"
        );
        assert!(
            text.contains("\ndropped < 10          3    PASS\n"),
            "{text}"
        );
        assert!(text.contains("\nall 3 thresholds passed\n"), "{text}");
    }
}
