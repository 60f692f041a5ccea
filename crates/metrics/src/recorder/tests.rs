//! Tests of the recorder: merging, growing histograms, seconds, lazily copied tallies.
use super::*;

fn hit(name_id: usize, ms: u64, error: Option<ErrorKind>) -> Hit {
    let d = Duration::from_millis(ms);
    Hit {
        name_id,
        corrected: d,
        uncorrected: d / 2,
        error,
        timing: Timing::default(),
    }
}

#[test]
fn merging_recorders_equals_recording_everything_in_one() {
    let mut a = Recorder::new(2);
    let mut b = Recorder::new(2);
    let mut all = Recorder::new(2);
    for i in 0..1000u64 {
        let h = hit(
            (i % 2) as usize,
            i % 97 + 1,
            (i % 10 == 0).then_some(ErrorKind::Timeout),
        );
        if i % 3 == 0 {
            a.record(&h)
        } else {
            b.record(&h)
        }
        all.record(&h);
    }
    let (mut a, b, all) = (a.finish(), b.finish(), all.finish());
    a.merge(&b);
    assert_eq!(a.overall.requests(), 1000);
    assert_eq!(a.overall.error_count(), 100);
    assert_eq!(a.overall.errors[ErrorKind::Timeout as usize], 100);
    for q in [0.5, 0.95, 0.99, 1.0] {
        assert_eq!(
            a.overall.latency.value_at_quantile(q),
            all.overall.latency.value_at_quantile(q)
        );
    }
    assert_eq!(a.by_name[1].requests(), 500);
    assert_eq!(a.overall.uncorrected.max(), all.overall.uncorrected.max());
}

#[test]
fn uncorrected_and_success_copied_late_hold_exactly_what_recording_each_would() {
    // Closed-model hits (uncorrected = corrected), an error at the 300th, a late
    // send from the 600th on: the lazily copied histograms must equal histograms
    // recorded request by request.
    let mut r = Recorder::new(1);
    let (mut latency, mut uncorrected, mut success) = (
        new_histogram(SIGFIG),
        new_histogram(SIGFIG),
        new_histogram(SIGFIG),
    );
    for i in 0..1000u64 {
        let d = Duration::from_micros(100 + i % 89);
        let h = Hit {
            name_id: 0,
            corrected: d,
            uncorrected: if i >= 600 { d / 2 } else { d },
            error: (i == 300 || i == 700).then_some(ErrorKind::Timeout),
            timing: Timing::default(),
        };
        put(&mut latency, h.corrected);
        put(&mut uncorrected, h.uncorrected);
        if h.error.is_none() {
            put(&mut success, h.corrected);
        }
        r.record(&h);
    }
    let r = r.finish();
    for t in [&r.overall, &r.by_name[0]] {
        assert_eq!(t.latency, latency);
        assert_eq!(t.uncorrected, uncorrected);
        assert_eq!(t.success, success);
        assert_eq!(t.success.len(), 998);
    }
    // A run with neither: both copies are the latency histogram.
    let mut r = Recorder::new(1);
    for i in 0..10 {
        let d = Duration::from_micros(100 + i);
        r.record(&Hit {
            name_id: 0,
            corrected: d,
            uncorrected: d,
            error: None,
            timing: Timing::default(),
        });
    }
    let r = r.finish();
    assert_eq!(r.overall.uncorrected, r.overall.latency);
    assert_eq!(r.overall.success, r.overall.latency);
    assert_eq!(r.by_name[0].success.len(), 10);
}

#[test]
fn large_values_grow_the_histogram_instead_of_clamping() {
    let mut r = Recorder::new(1);
    r.record(&hit(0, 1, None));
    r.record(&hit(0, 5_000, None));
    let max = r.finish().overall.latency.max();
    assert!((4_990_000..=5_010_000).contains(&max), "max {max} µs");
}

#[test]
fn seconds_are_handed_over_and_restarted() {
    let mut r = Recorder::new(1);
    r.record(&hit(0, 5, None));
    r.record_dropped();
    let first = r.take_second(1);
    assert_eq!((first.t, first.latency.len(), first.dropped), (0, 1, 1));
    assert_eq!((r.second.t, r.second.latency.len()), (1, 0));
    assert_eq!(r.dropped, 1, "run totals survive the hand-over");
}

#[test]
fn a_second_counts_errors_by_kind_and_requests_by_name_and_merges_them() {
    let mut a = Recorder::new(3);
    a.record(&hit(2, 5, Some(ErrorKind::Status5xx)));
    a.record(&hit(0, 5, None));
    let mut b = Recorder::new(3);
    b.record(&hit(0, 5, Some(ErrorKind::Timeout)));
    let (mut first, other) = (a.take_second(1), b.take_second(1));
    assert_eq!(first.by_name.len(), 3, "grown to the highest name seen");
    assert_eq!(other.by_name.len(), 1);
    first.merge(&other);
    assert_eq!(first.errors, 2);
    assert_eq!(first.error_kinds[ErrorKind::Status5xx as usize], 1);
    assert_eq!(first.error_kinds[ErrorKind::Timeout as usize], 1);
    let requests: Vec<u64> = first.by_name.iter().map(|n| n.requests).collect();
    assert_eq!(requests, [2, 0, 1]);
    assert_eq!(first.by_name[0].errors[ErrorKind::Timeout as usize], 1);
    assert_eq!(first.by_name[2].errors[ErrorKind::Status5xx as usize], 1);
    assert_eq!(a.second.by_name.len(), 0, "the next second starts empty");
}

#[test]
fn ttfb_and_receive_kept_lazily_hold_exactly_what_recording_each_would() {
    // Closed-model responses that came whole in one read (ttfb = corrected latency,
    // receive zero), then from the 400th on responses read in two parts, a failure
    // without a response at the 700th: the breakdown must equal one recorded request
    // by request, in the breakdown's own precision.
    let mut r = Recorder::new(1);
    let (mut ttfb, mut receive) = (
        new_histogram(timing::BREAKDOWN_SIGFIG),
        new_histogram(timing::BREAKDOWN_SIGFIG),
    );
    for i in 0..1000u64 {
        // Values spread over several of the histograms' buckets, many not on a
        // coarse bucket's boundary.
        let d = Duration::from_micros(97 + i * 37 % 20_011);
        let whole = i < 400;
        let failed = i == 700;
        let timing = Timing {
            ttfb: (!failed).then_some(if whole { d } else { d / 3 }),
            receive: (!failed).then_some(if whole { Duration::ZERO } else { d - d / 3 }),
            ..Timing::default()
        };
        if let Some(t) = timing.ttfb {
            put(&mut ttfb, t);
        }
        if let Some(t) = timing.receive {
            put(&mut receive, t);
        }
        r.record(&Hit {
            name_id: 0,
            corrected: d,
            uncorrected: d,
            error: failed.then_some(ErrorKind::Timeout),
            timing,
        });
    }
    let r = r.finish();
    for t in [&r.overall, &r.by_name[0]] {
        assert_eq!(t.timing.ttfb, ttfb);
        assert_eq!(t.timing.receive, receive);
        assert_eq!(t.timing.ttfb.len(), 999);
        for q in [0.5, 0.9, 0.99, 1.0] {
            assert_eq!(
                t.timing.ttfb.value_at_quantile(q),
                ttfb.value_at_quantile(q)
            );
        }
    }
    // A run of whole responses only: ttfb is the latency, in the breakdown's precision.
    let mut r = Recorder::new(1);
    let mut ttfb = new_histogram(timing::BREAKDOWN_SIGFIG);
    for i in 0..500u64 {
        let d = Duration::from_micros(1_000 + i * 7_919 % 90_001);
        put(&mut ttfb, d);
        r.record(&Hit {
            name_id: 0,
            corrected: d,
            uncorrected: d,
            error: None,
            timing: Timing {
                ttfb: Some(d),
                receive: Some(Duration::ZERO),
                ..Timing::default()
            },
        });
    }
    let r = r.finish();
    assert_eq!(r.overall.timing.ttfb, ttfb);
    assert_eq!(r.overall.timing.receive.len(), 500);
    assert_eq!(r.overall.timing.receive.max(), 0);
}
