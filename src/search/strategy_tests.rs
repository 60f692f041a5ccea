//! Table tests of [`super::Strategy`]: the order of values tried against pass rules.
use super::*;
use crate::search::trials::Trials;

/// Runs a strategy against a pass rule and returns the values tried (confirmations
/// marked negative) and the conclusion.
fn drive(range: Range, mut passes: impl FnMut(f64, bool) -> bool) -> (Vec<f64>, Conclusion) {
    drive_as(
        range,
        Trials::default(),
        Probing::Bisect,
        |value, confirm| (passes(value, confirm), None),
    )
}

/// As [`drive`], with each verdict's estimate of the boundary (if any).
fn drive_with(
    range: Range,
    verdict: impl FnMut(f64, bool) -> (bool, Option<f64>),
) -> (Vec<f64>, Conclusion) {
    drive_as(range, Trials::default(), ESTIMATES, verdict)
}

/// Estimates with no tolerance in the pass rule (the users model).
const ESTIMATES: Probing = Probing::Estimates { overshoot: 0.0 };

/// As [`drive_with`], with the trials and probing given.
fn drive_as(
    range: Range,
    trials: Trials,
    probing: Probing,
    mut verdict: impl FnMut(f64, bool) -> (bool, Option<f64>),
) -> (Vec<f64>, Conclusion) {
    let mut s = Strategy::new(range, trials, probing);
    let mut tried = Vec::new();
    for _ in 0..200 {
        match s.next() {
            Next::Run { value, confirm } => {
                tried.push(if confirm { -value } else { value });
                let (passed, estimate) = verdict(value, confirm);
                s.record_measured(value, passed, estimate);
            }
            Next::Done(c) => return (tried, c),
        }
    }
    panic!("search did not end: {tried:?}");
}

fn range(from: f64, to: f64) -> Range {
    Range {
        from,
        to,
        precision: 0.05,
    }
}

#[test]
fn grows_then_bisects_then_confirms() {
    let (tried, c) = drive(range(100.0, 1e6), |v, _| v <= 800.0);
    assert_eq!(
        tried,
        [100.0, 200.0, 400.0, 800.0, 1600.0, 1200.0, 1000.0, 900.0, 850.0, 825.0, -800.0]
    );
    assert_eq!(
        c,
        Conclusion::Ceiling {
            ceiling: 800.0,
            failed: 825.0
        }
    );
}

/// As [`drive`], with each failed step measuring the capacity as an overloaded
/// open-model step does: it completes `capacity` and no more.
fn drive_measured(range: Range, capacity: f64) -> (Vec<f64>, Conclusion) {
    drive_with(range, |value, _| {
        let passed = value <= capacity;
        (passed, (!passed).then_some(capacity))
    })
}

#[test]
fn a_measured_capacity_brackets_the_boundary_in_two_steps() {
    // The demo: the first overloaded step (1600/s) completed 800/s.
    let (tried, c) = drive_measured(range(100.0, 1e6), 800.0);
    assert_eq!(tried, [100.0, 200.0, 400.0, 800.0, 1600.0, 818.0, -800.0]);
    assert_eq!(
        c,
        Conclusion::Ceiling {
            ceiling: 800.0,
            failed: 818.0
        }
    );
    // A capacity inside the gap: just below it, then just above, then confirm.
    let (tried, _) = drive_measured(range(100.0, 1e6), 1000.0);
    assert_eq!(
        tried,
        [100.0, 200.0, 400.0, 800.0, 1600.0, 977.0, 1023.0, -977.0]
    );
}

/// Asserts that `c` is a ceiling at or below `capacity` with a failure above it, the
/// two within the 5 % precision (or one apart).
fn assert_within_precision(capacity: f64, c: Conclusion) {
    let Conclusion::Ceiling { ceiling, failed } = c else {
        panic!("capacity {capacity}: {c:?}")
    };
    assert!(
        ceiling <= capacity && failed > capacity,
        "{capacity}: {c:?}"
    );
    assert!(
        failed - ceiling <= (ceiling * 0.05).max(1.0),
        "{capacity}: {c:?}"
    );
}

#[test]
fn a_measured_capacity_finds_the_same_ceiling_within_precision_in_fewer_steps() {
    for capacity in [1.0, 7.0, 13.0, 99.0, 640.0, 801.0, 12_345.0, 999_999.0] {
        let (bisected, _) = drive(range(1.0, 1e6), |v, _| v <= capacity);
        let (tried, c) = drive_measured(range(1.0, 1e6), capacity);
        assert_within_precision(capacity, c);
        assert!(
            tried.len() <= bisected.len(),
            "{capacity}: {tried:?} vs {bisected:?}"
        );
    }
}

#[test]
fn a_wrong_estimate_falls_back_to_bisecting() {
    // Every failure claims 300 though the target takes 800: the probes surprise,
    // and the search still ends at 800.
    let (tried, c) = drive_with(range(100.0, 1e6), |value, _| {
        let passed = value <= 800.0;
        (passed, (!passed).then_some(300.0))
    });
    assert!(
        matches!(c, Conclusion::Ceiling { ceiling: 800.0, .. }),
        "{tried:?}"
    );
}

#[test]
fn finds_any_ceiling_within_precision() {
    for capacity in [1.0, 7.0, 13.0, 99.0, 640.0, 801.0, 12_345.0, 999_999.0] {
        let (_, c) = drive(range(1.0, 1e6), |v, _| v <= capacity);
        assert_within_precision(capacity, c);
    }
}

#[test]
fn user_counts_bisect_to_one() {
    let (tried, c) = drive(range(1.0, 100_000.0), |v, _| v <= 13.0);
    assert_eq!(tried, [1.0, 2.0, 4.0, 8.0, 16.0, 12.0, 14.0, 13.0, -13.0]);
    assert_eq!(
        c,
        Conclusion::Ceiling {
            ceiling: 13.0,
            failed: 14.0
        }
    );
}

#[test]
fn everything_passing_stops_at_to_after_confirming_it() {
    let (tried, c) = drive(range(100.0, 500.0), |_, _| true);
    assert_eq!(tried, [100.0, 200.0, 400.0, 500.0, -500.0]);
    assert_eq!(c, Conclusion::Range(500.0));
}

#[test]
fn a_failing_first_step_ends_the_search() {
    let (tried, c) = drive(range(100.0, 1e6), |_, _| false);
    assert_eq!(tried, [100.0]);
    assert_eq!(c, Conclusion::NothingPassed(100.0));
}

#[test]
fn a_failed_confirmation_bisects_below_it() {
    // 800 passes once, then fails when run again; 780 holds.
    let mut runs_at_800 = 0;
    let (tried, c) = drive(range(100.0, 1e6), |v, _| {
        if v == 800.0 {
            runs_at_800 += 1;
            runs_at_800 == 1
        } else {
            v <= 780.0
        }
    });
    assert_eq!(
        &tried[..11],
        [100.0, 200.0, 400.0, 800.0, 1600.0, 1200.0, 1000.0, 900.0, 850.0, 825.0, -800.0]
    );
    assert_eq!(&tried[11..], [600.0, 700.0, 750.0, 775.0, -775.0]);
    assert_eq!(
        c,
        Conclusion::Ceiling {
            ceiling: 775.0,
            failed: 800.0
        }
    );
}

#[test]
fn an_unrepeatable_first_pass_finds_nothing() {
    let (tried, c) = drive(range(100.0, 150.0), |v, confirm| v == 100.0 && !confirm);
    assert_eq!(tried, [100.0, 150.0, 125.0, 112.0, 106.0, 103.0, -100.0]);
    assert_eq!(c, Conclusion::NotReproducible(100.0));
}

#[test]
fn validates_the_range() {
    assert!(range(1.0, 1.0).validate().is_ok());
    assert!(range(0.5, 10.0).validate().is_err());
    assert!(range(10.0, 5.0).validate().is_err());
    assert!(range(10.0, f64::INFINITY).validate().is_err());
    let mut r = range(1.0, 10.0);
    r.precision = 0.0;
    assert!(r.validate().is_err());
}

/// The open model's probing: the keep-up rule lets a step 2 % behind pass.
const KEEP_UP: Probing = Probing::Estimates {
    overshoot: 0.02 / 0.98,
};

#[test]
fn the_probe_above_clears_the_pass_rules_tolerance() {
    // A target at 800/s passes anything up to 800/0.98 = 816.3/s on the rate rule: the
    // probe above must offer more than that, and the demo still ends in 7 steps.
    let keep_up = |v: f64, _| {
        let passed = v * 0.98 <= 800.0;
        (passed, (!passed).then_some(800.0))
    };
    let (tried, c) = drive_as(range(100.0, 1e6), Trials::default(), KEEP_UP, keep_up);
    assert_eq!(tried, [100.0, 200.0, 400.0, 800.0, 1600.0, 821.0, -800.0]);
    assert!(matches!(c, Conclusion::Ceiling { ceiling: 800.0, .. }));
    // At 3 % precision the probe below moves up to within precision of the one above.
    let capacity = |v: f64, _| {
        let passed = v * 0.98 <= 1200.0;
        (passed, (!passed).then_some(1200.0))
    };
    let tight = Range {
        precision: 0.03,
        ..range(1100.0, 1400.0)
    };
    let (tried, c) = drive_as(tight, Trials::default(), KEEP_UP, capacity);
    assert_eq!(tried, [1100.0, 1400.0, 1196.0, 1231.0, -1196.0]);
    assert!(matches!(
        c,
        Conclusion::Ceiling {
            ceiling: 1196.0,
            failed: 1231.0
        }
    ));
}

#[test]
fn the_boundary_runs_until_its_trials_decide_it() {
    let three = Trials {
        per_load: 3,
        allowed_failures: 0,
    };
    let (tried, c) = drive_as(range(100.0, 1e6), three, KEEP_UP, |v, _| {
        let passed = v <= 800.0;
        (passed, (!passed).then_some(800.0))
    });
    // 800 passes three times; 821 failed once, which decides it with none allowed.
    assert_eq!(
        tried,
        [100.0, 200.0, 400.0, 800.0, 1600.0, 821.0, -800.0, -800.0]
    );
    assert!(matches!(c, Conclusion::Ceiling { ceiling: 800.0, .. }));
    // One trial: nothing is run twice.
    let one = Trials {
        per_load: 1,
        allowed_failures: 0,
    };
    let (tried, _) = drive_as(range(100.0, 1e6), one, Probing::Bisect, |v, _| {
        (v <= 800.0, None)
    });
    assert_eq!(
        tried,
        [100.0, 200.0, 400.0, 800.0, 1600.0, 1200.0, 1000.0, 900.0, 850.0, 825.0]
    );
}

#[test]
fn a_lowest_fail_that_passes_its_trials_moves_the_search_up() {
    // Three trials, one may fail. 825 fails its first run by bad luck, then passes
    // twice: it passes its trials and becomes the best pass; the search goes on above
    // it and finds the real boundary at 850.
    let lenient = Trials {
        per_load: 3,
        allowed_failures: 1,
    };
    let mut runs_at_825 = 0;
    let (tried, c) = drive_as(range(100.0, 1e6), lenient, Probing::Bisect, |v, _| {
        if v == 825.0 {
            runs_at_825 += 1;
            return (runs_at_825 > 1, None);
        }
        (v <= 850.0, None)
    });
    assert_eq!(
        &tried[..10],
        [100.0, 200.0, 400.0, 800.0, 1600.0, 1200.0, 1000.0, 900.0, 850.0, 875.0]
    );
    assert!(
        matches!(
            c,
            Conclusion::Ceiling {
                ceiling: 850.0,
                failed: 875.0
            }
        ),
        "{tried:?} {c:?}"
    );
    // With K = 1 a first failure at `from` is not yet the end: it runs again.
    let (tried, c) = drive_as(range(100.0, 150.0), lenient, Probing::Bisect, |_, _| {
        (false, None)
    });
    assert_eq!(tried, [100.0, -100.0]);
    assert_eq!(c, Conclusion::NothingPassed(100.0));
}

#[test]
fn a_probe_above_that_passes_moves_the_estimate_up_once() {
    // A rate limiter at 500/s with a burst: every overloaded step's successes say 500,
    // but a short step passes up to 516. The probe above (513) passes; the next one
    // goes just above it instead of bisecting up to the failed 800.
    let limiter = |v: f64, _| {
        let passed = v <= 516.0;
        (passed, (!passed).then_some(500.0))
    };
    let (tried, c) = drive_as(range(50.0, 1e6), Trials::default(), KEEP_UP, limiter);
    assert_eq!(
        tried,
        [50.0, 100.0, 200.0, 400.0, 800.0, 489.0, 513.0, 538.0, -513.0]
    );
    assert!(matches!(
        c,
        Conclusion::Ceiling {
            ceiling: 513.0,
            failed: 538.0
        }
    ));
}

/// As [`drive_with`], with the open model's pass rule, which forgives a step 2 %
/// behind its rate.
fn drive_open(
    range: Range,
    verdict: impl FnMut(f64, bool) -> (bool, Option<f64>),
) -> (Vec<f64>, Conclusion) {
    drive_as(
        range,
        Trials::default(),
        Probing::Estimates { overshoot: 0.02 },
        verdict,
    )
}

#[test]
fn a_pass_at_the_capacity_that_fails_its_confirmation_is_bracketed_again() {
    // The capacity is 800 and growth lands on it: 800 passes once, then its
    // confirmation fails on latency (a queue at ρ = 1 after a stall) without measuring
    // a capacity. The probe just below it decides, as bisecting from 400 would in
    // four steps more (600, 700, 750, 775).
    let (tried, c) = drive_open(range(100.0, 1e6), |v, confirm| match v {
        _ if v < 800.0 => (true, None),
        800.0 => (!confirm, None),
        // Overloaded: completes 800/s; the probe just above keeps up within the
        // estimate's precision, so it fails on latency alone.
        _ if v > 840.0 => (false, Some(800.0)),
        _ => (false, None),
    });
    assert_eq!(
        tried,
        [100.0, 200.0, 400.0, 800.0, 1600.0, 820.0, -800.0, 782.0, -782.0]
    );
    assert_eq!(
        c,
        Conclusion::Ceiling {
            ceiling: 782.0,
            failed: 800.0
        }
    );
}

#[test]
fn a_failure_within_the_bracket_lets_the_probe_below_end_the_search() {
    // 800 fails in growth and says 775: the probe below comes within precision of 800
    // (762), so no probe above is needed.
    let (tried, c) = drive_open(range(100.0, 1e6), |v, _| {
        (v <= 775.0, (v > 775.0).then_some(775.0))
    });
    assert_eq!(tried, [100.0, 200.0, 400.0, 800.0, 762.0, -762.0]);
    assert_within_precision(775.0, c);
}

#[test]
fn a_second_failure_without_a_capacity_bisects() {
    // A target whose latency breaks far below the rate it can complete: failures in
    // the bracket measure nothing, and after one re-bracketing the search bisects
    // rather than creeping down by 2 % a step.
    let (tried, c) = drive_open(range(110.0, 1e6), |v, _| match v {
        _ if v <= 500.0 => (true, None),
        _ if v > 840.0 => (false, Some(800.0)),
        _ => (false, None),
    });
    assert_eq!(&tried[..6], [110.0, 220.0, 440.0, 880.0, 782.0, 764.0]);
    assert!(tried.len() <= 14, "{tried:?}");
    assert_within_precision(500.0, c);
}
