//! Tests of the end-of-run text summary.

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
            first_message: Default::default(),
        },
        timing_ms: Default::default(),
        connections: Default::default(),
        by_name: [
            ("create_task".to_string(), named(7000, 1.0, 0)),
            ("get_task".to_string(), named(3000, 10.0, 50)),
        ]
        .into(),
        generator: Generator {
            cpu_percent: 97.4,
            threads: 2,
            max_lag_ms: 35.0,
            p99_lag_ms: 12.0,
            bound: true,
            reason: "CPU at 97% of the engine threads' capacity".into(),
            ..Generator::default()
        },
        // The rest as a new run has them.
        ..Summary::empty("t", 1.0)
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

#[test]
fn checks_rules_show_their_percentage_or_why_nothing_was_judged() {
    use crate::metrics::summary::{CheckCounts, ChecksSummary};
    let rules: Vec<Threshold> = [
        "checks > 99%",
        "checks{a} > 99%",
        "checks{b} > 1%",
        "checks{z} > 1%",
    ]
    .iter()
    .map(|e| Threshold::parse(e).unwrap())
    .collect();
    let row = |text: &str, expr: &str, measured: &str, verdict: &str| {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{expr} ")))
            .unwrap_or_else(|| panic!("no {expr:?} in\n{text}"));
        let tail = line[expr.len()..].trim();
        assert!(
            tail.starts_with(measured) && tail.ends_with(verdict),
            "{line:?}: want {measured:?} {verdict:?}"
        );
    };
    let mut s = open_run();
    s.thresholds = evaluate_all(&rules, &s);
    let text = render(&s);
    row(&text, "checks > 99%", "no check ran", "FAIL");
    row(&text, "checks{a} > 99%", "no check ran", "FAIL");
    let names: Vec<String> = ["a", "b"].map(String::from).into();
    let counts = [CheckCounts {
        passed: 999,
        failed: 1,
    }];
    s.checks = ChecksSummary::of(&names, &counts);
    s.thresholds = evaluate_all(&rules, &s);
    let text = render(&s);
    row(&text, "checks > 99%", "99.90%", "PASS");
    row(&text, "checks{a} > 99%", "99.90%", "PASS");
    row(&text, "checks{b} > 1%", "never ran", "FAIL");
    row(&text, "checks{z} > 1%", "no such check", "FAIL");
}
