//! Judging rules against a summary.

use super::*;
use crate::summary::{Errors, NameSummary, Rates};

fn latency(p95: f64) -> Latency {
    Latency {
        min: 0.1,
        avg: 0.5,
        p50: 0.4,
        p90: 0.7,
        p95,
        p99: 1.5,
        p999: 4.0,
        max: 9.1,
    }
}

fn summary() -> Summary {
    let name = |requests, p95, errors| NameSummary {
        requests,
        latency_ms: latency(p95),
        latency_success_ms: latency(p95),
        errors: Errors {
            count: errors,
            ..Errors::default()
        },
        timing_ms: Default::default(),
    };
    Summary {
        name: "t".into(),
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
        latency_ms: latency(0.8),
        latency_uncorrected_ms: latency(0.6),
        latency_success_ms: latency(0.7),
        errors: Errors {
            count: 50,
            rate: 0.005,
            by_kind: Default::default(),
            first_message: Default::default(),
        },
        timing_ms: Default::default(),
        connections: Default::default(),
        by_name: [
            ("create_task".to_string(), name(7000, 0.9, 0)),
            ("api.v2.get".to_string(), name(3000, 12.0, 50)),
            ("idle".to_string(), name(0, 0.0, 0)),
        ]
        .into(),
        generator: Default::default(),
        // The rest as a new run has them.
        ..Summary::empty("t", 1.0)
    }
}

#[test]
fn evaluates_against_overall_and_named_figures() {
    let s = summary();
    let cases: &[(&str, bool, f64)] = &[
        ("p95 < 500ms", true, 0.8),
        ("p95 < 800us", false, 0.8),
        ("p95 <= 800us", true, 0.8),
        ("p99.9 < 4ms", false, 4.0),
        ("max > 9ms", true, 9.1),
        ("min >= 0.1ms", true, 0.1),
        ("avg == 0.5ms", true, 0.5),
        ("errors < 1%", true, 0.5),
        ("errors < 0.5%", false, 0.5),
        ("rate > 1999/s", true, 1999.6),
        ("rate >= 2000/s", false, 1999.6),
        ("dropped == 0", false, 3.0),
        ("dropped < 10", true, 3.0),
        ("create_task.p95 < 1ms", true, 0.9),
        ("api.v2.get.p95 < 10ms", false, 12.0),
        ("api.v2.get.errors < 2%", true, 50.0 / 3000.0 * 100.0),
        ("api.v2.get.rate > 500/s", true, 600.0),
        ("create_task.errors == 0%", true, 0.0),
        // A name that completed nothing has no latency to judge, but no errors either.
        ("idle.p95 < 1s", false, 0.0),
        ("idle.errors < 1%", true, 0.0),
        // A name the run never saw fails, with a value that serializes.
        ("missing.p95 < 1s", false, 0.0),
        ("missing.errors < 1%", false, 0.0),
    ];
    for &(expr, ok, value) in cases {
        let r = Threshold::parse(expr).unwrap().evaluate(&s);
        assert_eq!(r.expr, expr);
        assert_eq!(r.ok, ok, "{expr}: {r:?}");
        assert!(
            (r.value - value).abs() < 1e-9,
            "{expr}: {r:?}, wanted {value}"
        );
    }
}

#[test]
fn non_finite_measurements_fail_and_serialize() {
    let mut s = summary();
    s.latency_ms.p95 = f64::NAN;
    let r = Threshold::parse("p95 > 1ms").unwrap().evaluate(&s);
    assert!(!r.ok);
    assert_eq!(r.value, 0.0);
    let json = serde_json::to_string(&r).unwrap();
    assert_eq!(json, r#"{"expr":"p95 > 1ms","ok":false,"value":0.0}"#);
}

#[test]
fn zero_requests_fail_latency_rules_but_not_error_rules() {
    let mut s = summary();
    s.requests = 0;
    s.errors.count = 0;
    s.latency_ms = Latency::default();
    let rules: Vec<Threshold> = ["p95 < 1s", "errors < 1%"]
        .iter()
        .map(|e| Threshold::parse(e).unwrap())
        .collect();
    let results = evaluate_all(&rules, &s);
    assert_eq!(
        results.iter().map(|r| r.ok).collect::<Vec<_>>(),
        [false, true]
    );
}

#[test]
fn evaluate_all_keeps_order() {
    let rules: Vec<Threshold> = ["rate > 1/s", "p95 < 1us", "dropped == 3"]
        .iter()
        .map(|e| Threshold::parse(e).unwrap())
        .collect();
    let results = evaluate_all(&rules, &summary());
    let seen: Vec<(&str, bool)> = results.iter().map(|r| (r.expr.as_str(), r.ok)).collect();
    assert_eq!(
        seen,
        [
            ("rate > 1/s", true),
            ("p95 < 1us", false),
            ("dropped == 3", true)
        ]
    );
}

#[test]
fn success_latency_and_abandoned_rules_read_their_own_figures() {
    let mut s = summary();
    // Half the requests were fast rejections: overall p95 looks good, the
    // successful requests' p95 does not.
    s.latency_ms = latency(2.0);
    s.latency_success_ms = latency(150.0);
    s.abandoned = 2;
    let judge = |e: &str, s: &Summary| Threshold::parse(e).unwrap().evaluate(s);
    assert!(judge("p95 < 100ms", &s).ok);
    let success = judge("success_p95 < 100ms", &s);
    assert!(!success.ok);
    assert_eq!(success.value, 150.0);
    assert!(judge("create_task.success_p99 < 10ms", &s).ok);
    assert_eq!(
        Threshold::parse("Success_P99.9 < 1s").unwrap().metric,
        Metric::SuccessLatency(LatencyStat::P999)
    );
    assert!(!judge("abandoned == 0", &s).ok);
    assert!(judge("abandoned <= 2", &s).ok);
    // Nothing succeeded: a success latency rule has nothing to judge and fails.
    s.completed = 0;
    assert!(!judge("success_p95 < 1s", &s).ok);
    for (bad, says) in [
        ("create_task.abandoned == 0", "whole run"),
        ("abandoned < 1%", "whole count"),
        ("success_p95 < 100", "needs a unit"),
    ] {
        let e = Threshold::parse(bad).unwrap_err().to_string();
        assert!(e.contains(says), "{bad}: {e}");
    }
}
