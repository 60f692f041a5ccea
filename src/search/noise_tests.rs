use super::*;
use crate::metrics::summary::Summary;

/// A run at `rate` judged by `rule`, which measured `measured`.
fn run(rate: f64, rule: &str, measured: f64) -> StepRecord {
    let parsed = Threshold::parse(rule).unwrap();
    let ok = parsed.op.holds(measured, parsed.limit);
    let mut summary = Summary::empty("s", 1.0);
    summary.latency_ms.p95 = measured;
    summary.thresholds = vec![ThresholdResult {
        expr: rule.to_string(),
        ok,
        value: measured,
        window: None,
    }];
    StepRecord::measured(rate, ok, summary)
}

#[test]
fn a_spread_far_from_the_limit_is_not_noise() {
    // The issue's case: 18.1, 9.8 and 14.8 ms under 100 ms. They moved 8.3 ms with
    // 81.9 ms to spare.
    let p = "p95 < 100ms";
    let quiet = [run(800.0, p, 18.1), run(800.0, p, 9.8), run(800.0, p, 14.8)];
    assert_eq!(Noisy::of(&quiet), None);
    // The demo's: 12.3 and 21.0 ms under 50 ms (71 % apart, 29 ms to spare).
    let demo = [
        run(800.0, "p95 < 50ms", 12.3),
        run(800.0, "p95 < 50ms", 21.0),
    ];
    assert_eq!(Noisy::of(&demo), None);
    // Runs that all failed far over the limit agree too.
    let over = [run(1600.0, p, 900.0), run(1600.0, p, 1200.0)];
    assert_eq!(Noisy::of(&over), None);
}

#[test]
fn a_spread_that_reaches_the_margin_is_noise() {
    // 40 and 48 ms under 50 ms: they moved 8 ms with 2 ms to spare.
    let p = "p95 < 50ms";
    let n = Noisy::of(&[run(800.0, p, 40.0), run(800.0, p, 48.0)]).expect("noisy");
    assert_eq!((n.value, n.trials, n.passed), (800.0, 2, 2));
    let rule = n.rule.as_ref().unwrap();
    assert_eq!((rule.min, rule.max, rule.limit), (40.0, 48.0, 50.0));
    assert!((rule.margin - 2.0).abs() < 1e-9);
    let s = n.sentence("req/s");
    assert!(
        s.starts_with("The target is noisy: at 800 req/s 2 of 2 trials passed, but `p95 < 50ms` measured 40.0ms to 48.0ms: they moved 8.00ms apart with 2.00ms left to the limit"),
        "{s}"
    );
    // Exactly at the margin counts (one more run as far could cross), just under does not.
    assert!(Noisy::of(&[run(800.0, p, 40.0), run(800.0, p, 45.0)]).is_some());
    assert!(Noisy::of(&[run(800.0, p, 40.0), run(800.0, p, 44.9)]).is_none());
    // Errors against their limit: 0 % and 0.6 % under 1 % moved 0.6 with 0.4 left.
    let e = "errors < 1%";
    let n = Noisy::of(&[run(500.0, e, 0.0), run(500.0, e, 0.6)]).expect("noisy");
    assert!(n.sentence("req/s").contains("`errors < 1%` measured"));
    // ... and 0 % and 0.02 % did not move against it.
    assert!(Noisy::of(&[run(500.0, e, 0.0), run(500.0, e, 0.02)]).is_none());
    // A floor (`rate > 990/s`) is judged the same way from below.
    let r = "rate > 990/s";
    assert!(Noisy::of(&[run(1000.0, r, 999.0), run(1000.0, r, 992.0)]).is_some());
    assert!(Noisy::of(&[run(1000.0, r, 1000.0), run(1000.0, r, 999.0)]).is_none());
}

#[test]
fn verdicts_that_differ_are_noise_and_outrank_a_spread() {
    let p = "p95 < 50ms";
    let mixed = [
        run(600.0, p, 10.0),
        run(600.0, p, 40.0),
        run(800.0, p, 20.0),
        run(800.0, p, 63.0),
    ];
    let n = Noisy::of(&mixed).unwrap();
    assert_eq!((n.value, n.passed, n.trials), (800.0, 1, 2));
    assert!(n.disagree());
    let s = n.sentence("req/s");
    assert!(
        s.contains("at 800 req/s 1 of 2 trials passed (`p95 < 50ms` measured 20.0ms to 63.0ms)"),
        "{s}"
    );
    assert!(s.contains("Isolate runs"), "{s}");
    // Runs that differ on keeping up alone (the rule held in both) are noise too, and
    // name no rule.
    let mut behind = run(800.0, p, 20.0);
    behind.passed = false;
    let n = Noisy::of(&[run(800.0, p, 21.0), behind]).unwrap();
    assert_eq!(n.rule, None);
    assert!(n.sentence("req/s").contains("p95 20.0ms to 21.0ms"));
}

#[test]
fn runs_that_say_nothing_of_the_target_are_left_out() {
    let p = "p95 < 50ms";
    let mut bound = run(800.0, p, 63.0);
    bound.summary.generator.bound = true;
    assert_eq!(Noisy::of(&[run(800.0, p, 20.0), bound]), None);
    let mut cut = run(800.0, p, 63.0);
    cut.summary.interrupted = true;
    assert_eq!(Noisy::of(&[run(800.0, p, 20.0), cut]), None);
    // A single run of a load is nothing to compare.
    assert_eq!(Noisy::of(&[run(800.0, p, 49.9)]), None);
}

#[test]
fn a_search_stored_before_rules_were_judged_still_reads() {
    let old =
        r#"{"value":800.0,"trials":2,"passed":1,"p95_min_ms":4.1,"p95_max_ms":63.0,"spread":14.4}"#;
    let n: Noisy = serde_json::from_str(old).unwrap();
    assert_eq!(n.rule, None);
    assert!(n
        .sentence("req/s")
        .contains("at 800 req/s 1 of 2 trials passed, p95 4.10ms to 63.0ms"));
}
