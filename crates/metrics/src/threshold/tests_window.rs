//! `over D`: its parsing, and rules judged on every window of the per-second buckets.

use std::time::Duration;

use super::window::{judge_all, LiveJudge};
use super::{LatencyStat, Metric, Threshold};
use crate::recorder::{Hit, Recorder, SecondBucket, Timing};
use crate::summary::Summary;
use crate::ErrorKind;

#[test]
fn over_takes_a_whole_number_of_seconds_minutes_or_hours() {
    for (expr, window, metric, limit) in [
        (
            "p95 < 500ms over 10s",
            10,
            Metric::Latency(LatencyStat::P95),
            500.0,
        ),
        (
            "p99<1s over 2m",
            120,
            Metric::Latency(LatencyStat::P99),
            1000.0,
        ),
        ("errors < 1% OVER 1h", 3600, Metric::ErrorPercent, 1.0),
        ("login.errors < 2% over 1.5m", 90, Metric::ErrorPercent, 2.0),
        (
            "max < 2 s  over  30 s ",
            30,
            Metric::Latency(LatencyStat::Max),
            2000.0,
        ),
    ] {
        let t = Threshold::parse(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
        assert_eq!(t.window_s, Some(window), "{expr}");
        assert_eq!((t.metric, t.limit), (metric, limit), "{expr}");
        assert_eq!(t.expr, expr.trim());
    }
    // No suffix, and a request name that merely contains "over".
    assert_eq!(Threshold::parse("p95 < 5ms").unwrap().window_s, None);
    let named = Threshold::parse("takeover.errors < 1%").unwrap();
    assert_eq!(
        (named.scope.as_deref(), named.window_s),
        (Some("takeover"), None)
    );
    let named = Threshold::parse("over.errors < 1% over 5s").unwrap();
    assert_eq!(
        (named.scope.as_deref(), named.window_s),
        (Some("over"), Some(5))
    );
}

#[test]
fn bad_windows_are_refused_with_a_useful_message() {
    let long = format!("p95 < 5ms over {}s", "9".repeat(400));
    for (expr, says) in [
        ("p95 < 500ms over 0s", "at least 1s"),
        ("p95 < 500ms over 0.0m", "at least 1s"),
        ("p95 < 500ms over", "expected a window length"),
        ("p95 < 500ms over ten seconds", "expected a window length"),
        ("p95 < 500ms over 10", "expected a window length"),
        ("p95 < 500ms over -5s", "expected a window length"),
        ("p95 < 500ms over 10d", "expected a window length"),
        ("p95 < 500ms over 1.2.3s", "expected a window length"),
        ("p95 < 500ms over 500ms", "whole number of seconds"),
        ("p95 < 500ms over 1.5s", "whole number of seconds"),
        ("p95 < 500ms over 169h", "at most a week"),
        (long.as_str(), "expected a window length"),
        ("rate > 10/s over 10s", "not to rate"),
        ("dropped == 0 over 10s", "not to dropped"),
        ("success_p95 < 1s over 10s", "not to success_p95"),
        ("gap_p95 < 1s over 10s", "not to gap_p95"),
        ("delivery.p95 < 1s over 10s", "not to p95"),
        ("login.p95 < 1s over 10s", "not kept per name"),
        ("p95 < 500 over 10s", "needs a unit"),
    ] {
        let err = Threshold::parse(expr).expect_err(expr).to_string();
        assert!(err.starts_with("threshold \""), "{err}");
        assert!(err.contains(says), "{expr}: {err:?} lacks {says:?}");
        // The rule is quoted once; what follows `over` at most 40 characters more.
        assert!(
            err.len() < expr.len() + 250,
            "{expr}: the message quotes too much: {err}"
        );
    }
}

/// The merged bucket of second `t`: `n` requests of `ms` each, `errors` of them failed
/// (on name 0).
fn second(t: u64, n: u64, ms: u64, errors: u64) -> SecondBucket {
    let mut rec = Recorder::new(1);
    rec.second = SecondBucket::new(t);
    for i in 0..n {
        let d = Duration::from_millis(ms);
        rec.record(&Hit {
            name_id: 0,
            corrected: d,
            uncorrected: d,
            error: (i < errors).then_some(ErrorKind::Timeout),
            timing: Timing::default(),
        });
    }
    rec.take_second(t + 1)
}

/// Twelve seconds of 100 requests at 10 ms, seconds 5, 6 and 7 at 800 ms with 20
/// errors each: the whole run's p95 (36 slow of 1200) stays at 10 ms.
fn slow_spell() -> Vec<SecondBucket> {
    (0..12)
        .map(|t| match t {
            5..=7 => second(t, 100, 800, 20),
            _ => second(t, 100, 10, 0),
        })
        .collect()
}

fn judge(expr: &str, seconds: &[SecondBucket], run_s: u64) -> crate::summary::ThresholdResult {
    let rule = Threshold::parse(expr).unwrap();
    let names = ["get".to_string()];
    let summary = Summary::empty("t", run_s as f64);
    judge_all(&[rule], &summary, seconds, &names, run_s).remove(0)
}

#[test]
fn the_first_failing_window_is_reported_with_its_time() {
    let seconds = slow_spell();
    let r = judge("p95 < 500ms over 10s", &seconds, 12);
    assert!(!r.ok, "{r:?}");
    let w = r.window.unwrap();
    // The first 10 s window, 0–10, holds 300 slow requests of 1000: its p95 is slow.
    assert_eq!((w.start_s, w.end_s, w.whole_run), (0, 10, false));
    assert!((790.0..=810.0).contains(&w.value), "{w:?}");
    assert_eq!(r.value, w.value);
    // A 3 s window first fails where the spell begins to weigh more than 5%.
    let w = judge("p95 < 500ms over 3s", &seconds, 12).window.unwrap();
    assert_eq!((w.start_s, w.end_s), (3, 6));
    // Errors per window: 20% in 5–6, 0.2% of the whole run.
    let r = judge("errors < 5% over 1s", &seconds, 12);
    assert_eq!(r.window.map(|w| (w.start_s, w.value)), Some((5, 20.0)));
    let r = judge("get.errors < 5% over 2s", &seconds, 12);
    assert_eq!(r.window.map(|w| (w.start_s, w.value)), Some((4, 10.0)));
}

#[test]
fn a_rule_that_holds_reports_its_worst_window() {
    let seconds = slow_spell();
    let r = judge("p95 < 1s over 4s", &seconds, 12);
    assert!(r.ok, "{r:?}");
    let w = r.window.unwrap();
    assert!((790.0..=810.0).contains(&w.value), "{w:?}");
    assert_eq!(
        (w.start_s, w.end_s),
        (2, 6),
        "the first window at the spell's worst"
    );
    let r = judge("p50 < 20ms over 8s", &seconds, 12);
    assert!(r.ok && r.window.unwrap().value <= 10.2, "{r:?}");
}

#[test]
fn a_window_longer_than_the_run_judges_the_whole_run() {
    let mut s = Summary::empty("t", 12.0);
    s.requests = 1200;
    s.latency_ms.p95 = 10.0;
    let rule = Threshold::parse("p95 < 500ms over 1m").unwrap();
    let r = judge_all(&[rule], &s, &slow_spell(), &["get".into()], 12).remove(0);
    assert!(r.ok, "{r:?}");
    let w = r.window.unwrap();
    assert!(w.whole_run);
    assert_eq!((w.start_s, w.end_s, w.value), (0, 12, 10.0));
}

#[test]
fn empty_seconds_are_not_judged_by_latency_and_count_as_no_errors() {
    let mut seconds = slow_spell();
    seconds.retain(|b| b.t < 4 || b.t > 8);
    let r = judge("p95 < 500ms over 3s", &seconds, 12);
    assert!(r.ok, "{r:?}");
    let r = judge("errors < 1% over 2s", &seconds, 12);
    assert!(r.ok, "{r:?}");
}

#[test]
fn live_judging_waits_out_the_grace_then_stops_on_the_first_failure() {
    let rules: Vec<Threshold> = ["p95 < 500ms over 2s", "errors < 50%"]
        .iter()
        .map(|e| Threshold::parse(e).unwrap())
        .collect();
    let mut judge = LiveJudge::new(&rules, &["get".into()], 3);
    let mut failed = None;
    for b in slow_spell() {
        if let Some(f) = judge.second(&b) {
            failed = Some(f);
            break;
        }
    }
    let f = failed.expect("the slow spell fails the 2 s window");
    // Second 5 alone is 100 of 200 slow in 4–6: p95 slow, judged at its end.
    assert_eq!(f.at_s, 6);
    assert!(
        f.reason
            .starts_with("p95 < 500ms over 2s: failed in 4s–6s (p95 "),
        "{f:?}"
    );
    // A whole-run rule is judged on everything so far, and not before the grace.
    let rules = [Threshold::parse("p95 < 5ms").unwrap()];
    let mut judge = LiveJudge::new(&rules, &[], 3);
    let seconds = slow_spell();
    assert_eq!(judge.second(&seconds[0]), None);
    assert_eq!(judge.second(&seconds[1]), None);
    let f = judge
        .second(&seconds[2])
        .expect("10 ms > 5 ms from the third second");
    assert_eq!(f.at_s, 3);
    assert!(f.reason.starts_with("p95 < 5ms: p95 10"), "{f:?}");
}
