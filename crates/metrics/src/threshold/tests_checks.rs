//! Rules on non-fatal checks: `checks OP N%` and `checks{NAME} OP N%`, parsed, judged
//! against a summary, and refused with a message that says what is wrong.

use super::*;
use crate::recorder::CheckCounts;
use crate::summary::ChecksSummary;

/// A run whose checks `status ok` passed 990 of 1000 times and `has id` 10 of 10, and
/// whose `never` did not run.
fn summary() -> Summary {
    let mut s = Summary::empty("t", 1.0);
    let names: Vec<String> = ["status ok", "has id", "never"].map(String::from).into();
    let counts = [
        CheckCounts {
            passed: 990,
            failed: 10,
        },
        CheckCounts {
            passed: 10,
            failed: 0,
        },
    ];
    s.checks = ChecksSummary::of(&names, &counts);
    s
}

#[test]
fn parses_rules_on_all_checks_and_on_one() {
    let cases: &[(&str, Option<&str>, Op, f64)] = &[
        ("checks > 99%", None, Op::Gt, 99.0),
        ("  checks>=99.5 % ", None, Op::Ge, 99.5),
        ("CHECKS < 1%", None, Op::Lt, 1.0),
        ("checks <= 100%", None, Op::Le, 100.0),
        ("checks == 100%", None, Op::Eq, 100.0),
        ("checks{status ok} > 99%", Some("status ok"), Op::Gt, 99.0),
        (
            "checks {  status ok } >= 0%",
            Some("status ok"),
            Op::Ge,
            0.0,
        ),
        // The name holds what the general grammar splits on.
        (
            "checks{a<b>=c.p95 over 10s} < 5%",
            Some("a<b>=c.p95 over 10s"),
            Op::Lt,
            5.0,
        ),
        ("checks{{nested{} > 1%", Some("{nested{"), Op::Gt, 1.0),
        ("checks{état ✓} > 1%", Some("état ✓"), Op::Gt, 1.0),
    ];
    for &(expr, scope, op, limit) in cases {
        let t = Threshold::parse(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
        assert_eq!(t.expr, expr.trim(), "{expr}");
        assert_eq!(t.metric, Metric::Checks, "{expr}");
        assert_eq!(
            (t.scope.as_deref(), t.op, t.limit),
            (scope, op, limit),
            "{expr}"
        );
        assert_eq!(t.window_s, None, "{expr}");
    }
}

#[test]
fn a_request_named_like_checks_is_still_a_request() {
    let t = Threshold::parse("checks.p95 < 5ms").unwrap();
    assert_eq!(
        (t.scope.as_deref(), t.metric),
        (Some("checks"), Metric::Latency(LatencyStat::P95))
    );
    let t = Threshold::parse("checksum.errors < 1%").unwrap();
    assert_eq!(
        (t.scope.as_deref(), t.metric),
        (Some("checksum"), Metric::ErrorPercent)
    );
}

#[test]
fn refuses_bad_checks_rules_saying_what_is_wrong() {
    let cases: &[(&str, &str)] = &[
        ("checks{status ok > 99%", "checks{ has no closing }"),
        ("checks{", "checks{ has no closing }"),
        ("checks{} > 99%", "empty check name"),
        ("checks{  } > 99%", "empty check name"),
        ("checks > 99", r#"ending in %, e.g. "checks > 99%""#),
        ("checks{login} > 0.99", r#"e.g. "checks{login} > 99%""#),
        ("checks > 99/s", "ending in %"),
        ("checks > %", "expected a non-negative number after >"),
        ("checks > -1%", "expected a non-negative number"),
        ("checks > 150%", "at most 100%"),
        ("checks{a} = 99%", "unknown operator"),
        ("checks != 99%", "unknown operator"),
        ("checks{a}", "expected METRIC OP VALUE"),
        (
            "checks{a}.p95 < 5ms",
            r#"unexpected ".p95" after checks{NAME}"#,
        ),
        ("checks{a} rate > 99%", r#"unexpected "rate""#),
        ("checks > 99% over 10s", r#""over" applies to latency"#),
        ("checks{a} > 99% over 10s", "not to checks"),
        ("checks", "expected METRIC OP VALUE"),
        ("checks foo > 1%", "unknown metric"),
    ];
    for &(expr, wanted) in cases {
        let err = Threshold::parse(expr).expect_err(expr).to_string();
        assert!(
            err.starts_with(&format!("threshold \"{}\": ", expr.trim())),
            "{err}"
        );
        assert!(err.contains(wanted), "{expr}: {err:?} lacks {wanted:?}");
    }
    // The list of metrics names checks.
    let err = Threshold::parse("nope < 1%").unwrap_err().to_string();
    assert!(err.contains("checks{NAME}"), "{err}");
}

#[test]
fn judges_the_share_of_checks_passed() {
    let s = summary();
    let cases: &[(&str, bool, f64)] = &[
        ("checks > 99%", true, 1000.0 * 100.0 / 1010.0),
        ("checks >= 99.5%", false, 1000.0 * 100.0 / 1010.0),
        ("checks{status ok} >= 99%", true, 99.0),
        ("checks{status ok} > 99%", false, 99.0),
        ("checks{has id} == 100%", true, 100.0),
        ("checks{has id} < 100%", false, 100.0),
        ("checks <= 100%", true, 1000.0 * 100.0 / 1010.0),
    ];
    for &(expr, ok, value) in cases {
        let r = Threshold::parse(expr).unwrap().evaluate(&s);
        assert_eq!(r.ok, ok, "{expr}: {r:?}");
        assert!((r.value - value).abs() < 1e-9, "{expr}: {r:?}");
        assert_eq!(r.window, None);
    }
}

/// Nothing to judge is a failure, whatever the rule: no check ran at all, the named
/// one never ran, or no check has that name.
#[test]
fn a_rule_on_checks_that_did_not_run_fails() {
    let ran = summary();
    let none = Summary::empty("t", 1.0);
    for (s, expr) in [
        (&none, "checks > 99%"),
        (&none, "checks < 100%"),
        (&none, "checks{status ok} >= 0%"),
        (&ran, "checks{never} >= 0%"),
        (&ran, "checks{nope} <= 100%"),
    ] {
        let rule = Threshold::parse(expr).unwrap();
        assert_eq!(rule.measure(s), None, "{expr}");
        let r = rule.evaluate(s);
        assert!(!r.ok && r.value == 0.0, "{expr}: {r:?}");
    }
}

/// A 10 KiB name parses (in linear time) and is judged by name; hostile braces,
/// operators and an unterminated name are refused without quoting 10 KiB twice.
#[test]
fn hostile_names_parse_or_fail_cleanly() {
    let long = "x".repeat(10 * 1024);
    let t = Threshold::parse(&format!("checks{{{long}}} > 99%")).unwrap();
    assert_eq!(t.scope.as_deref(), Some(long.as_str()));
    let mut s = Summary::empty("t", 1.0);
    s.checks = ChecksSummary::of(
        std::slice::from_ref(&long),
        &[CheckCounts {
            passed: 1,
            failed: 0,
        }],
    );
    assert!(t.evaluate(&s).ok);

    let err = Threshold::parse(&format!("checks{{{long} > 99%")).unwrap_err();
    assert_eq!(err.reason, RuleError::ChecksUnterminated);
    let err = Threshold::parse(&format!("checks{{a}}{long} > 99%")).unwrap_err();
    match &err.reason {
        RuleError::ChecksTrailing { text } => assert!(text.chars().count() <= 41, "{text}"),
        other => panic!("{other:?}"),
    }
    let err = Threshold::parse(&format!("checks{{{long}}} > 99")).unwrap_err();
    assert!(err.reason.to_string().len() < 200, "{}", err.reason);
    let err = Threshold::parse(&format!("checks > 1{}%", "0".repeat(300))).unwrap_err();
    assert!(err.reason.to_string().contains("at most 100%"), "{err}");
    assert!(err.reason.to_string().len() < 200, "{}", err.reason);

    for text in [
        "{".repeat(10 * 1024),
        format!("checks{}", "{".repeat(10 * 1024)),
        format!("checks{}", "}".repeat(10 * 1024)),
        format!("checks{{{}}} > 1%", "<".repeat(10 * 1024)),
        format!("checks{}", ">".repeat(10 * 1024)),
        "checks{\u{0}} > 1%".to_string(),
    ] {
        let _ = Threshold::parse(&text);
    }
}
