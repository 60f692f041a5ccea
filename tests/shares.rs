//! The engine split (issue 13): a plan run as N shares against the built-in target, in
//! one process, each share's raw result sent through serde as a shard would send it,
//! then merged. The merged summary offers exactly the single-process schedule, adds up,
//! and its percentiles are those of all shares' raw histograms added together.

use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;
use headroom::engine::{self, Control, Live, Share};
use headroom::metrics::summary::Summary;
use headroom::plan::{Plan, Slice};
use headroom::scenario::{self, Overrides};
use headroom::target::{self, TargetOptions};

use crate::support::assert_adds_up;

/// A quick plan against `url` with the given load and two engine threads per share.
fn plan(url: String, rate: Option<f64>, users: Option<u64>) -> Arc<Plan> {
    let overrides = Overrides {
        url: Some(url),
        rate,
        users,
        duration: Some(Duration::from_secs(2)),
        threads: Some(2),
        ..Overrides::default()
    };
    Arc::new(scenario::load(None, &overrides).expect("a valid quick plan"))
}

/// Runs `plan` as `count` shares at once, each on its own thread as a shard would in
/// its own process, and returns each share after a trip through JSON.
fn run_shares(plan: &Arc<Plan>, count: u64) -> Vec<Share> {
    let runs: Vec<_> = (0..count)
        .map(|i| {
            let plan = plan.clone();
            std::thread::spawn(move || {
                let shard = Slice::new(i, count).unwrap();
                let mut quiet = |_: &Live| {};
                engine::run_share(plan, shard, &Control::default(), &mut quiet)
                    .expect("the share ran")
            })
        })
        .collect();
    runs.into_iter()
        .map(|r| {
            let share = r.join().expect("no panic");
            let wire = serde_json::to_vec(&share).expect("a share serialises");
            let back: Share = serde_json::from_slice(&wire).expect("and reads back");
            assert_eq!(
                back.recorder.overall.latency,
                share.recorder.overall.latency
            );
            assert_eq!(back.recorder.scheduled, share.recorder.scheduled);
            assert_eq!(back.seconds.len(), share.seconds.len());
            back
        })
        .collect()
}

/// All shares' raw histograms of one kind added together, computed here, apart from
/// the engine's merge.
fn added(shares: &[Share], pick: impl Fn(&Share) -> &Histogram<u64>) -> Histogram<u64> {
    let mut all = Histogram::<u64>::new(3).unwrap();
    all.auto(true);
    for share in shares {
        all.add(pick(share)).unwrap();
    }
    all
}

/// The summary's percentiles equal those of `h` (microseconds), exactly.
#[track_caller]
fn assert_percentiles(s: &headroom::metrics::summary::Latency, h: &Histogram<u64>) {
    let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    assert_eq!(
        (s.p50, s.p90, s.p95, s.p99, s.p999),
        (ms(0.5), ms(0.9), ms(0.95), ms(0.99), ms(0.999))
    );
    assert_eq!(
        (s.min, s.max),
        (h.min() as f64 / 1000.0, h.max() as f64 / 1000.0)
    );
}

#[test]
fn n_shares_offer_exactly_the_single_schedule_and_merge_their_histograms_exactly() {
    let target = target::spawn(TargetOptions::loopback()).expect("built-in target");
    let plan = plan(format!("{}/status/200", target.url()), Some(200.0), None);

    // One share: the single-process path, 2 s at 200/s.
    let single = engine::merge(&plan, &run_shares(&plan, 1));
    assert_adds_up(&single.summary);
    assert_eq!(single.summary.scheduled, 400, "{:?}", single.summary);
    assert_eq!(single.shards.len(), 1);

    for count in [2, 4] {
        let shares = run_shares(&plan, count);
        for share in &shares {
            share.check(&plan).expect("a share fits its plan");
            // Every count-th arrival of the 400: exactly 400 / count each.
            assert_eq!(share.recorder.scheduled, 400 / count, "{:?}", share.shard);
        }
        let merged = engine::merge(&plan, &shares);
        let s: &Summary = &merged.summary;
        assert_adds_up(s);
        assert_eq!(s.scheduled, single.summary.scheduled, "{count} shares");
        assert_eq!(s.errors.count, 0, "{:?}", s.errors);
        assert_eq!(s.requests + s.dropped + s.abandoned, 400);
        assert!((s.rate.offered - 200.0).abs() < 0.5, "{:?}", s.rate);
        assert_eq!(merged.shards.len(), count as usize);
        assert_eq!(s.generator.threads, 2 * count as usize);

        let overall = added(&shares, |sh| &sh.recorder.overall.latency);
        assert_eq!(overall.len(), s.requests);
        assert_percentiles(&s.latency_ms, &overall);
        let uncorrected = added(&shares, |sh| &sh.recorder.overall.uncorrected);
        assert_percentiles(&s.latency_uncorrected_ms, &uncorrected);
        let name = &plan.names[0];
        let by_name = added(&shares, |sh| &sh.recorder.by_name[0].latency);
        assert_percentiles(&s.by_name[name].latency_ms, &by_name);

        // The timeline aligns the shares' seconds: every request is in one second.
        let in_seconds: u64 = s.timeline.iter().map(|t| t.requests).sum();
        assert_eq!(in_seconds, s.requests, "{:?}", s.timeline);
        let ts: Vec<u64> = s.timeline.iter().map(|t| t.t).collect();
        assert!(ts.windows(2).all(|w| w[0] < w[1]), "{ts:?}");
        assert!(ts.len() >= 2 && ts.len() <= 3, "{ts:?}");
    }
    target.shutdown();
}

#[test]
fn users_split_over_shards_add_up_to_the_plan() {
    let target = target::spawn(TargetOptions::loopback()).expect("built-in target");
    let plan = plan(format!("{}/status/200", target.url()), None, Some(5));
    let shares = run_shares(&plan, 3);
    let merged = engine::merge(&plan, &shares);
    let s = &merged.summary;
    assert_adds_up(s);
    assert!(s.requests > 0);
    // 5 users over 3 shards: 2, 2 and 1, all running at the end of the first second.
    // (The last second's gauge is read as the users stop at the schedule's end.)
    for share in &shares {
        let want = [2, 2, 1][share.shard.index() as usize];
        assert_eq!(share.seconds[0].users, want, "{:?}", share.shard);
    }
    assert_eq!(s.timeline[0].offered, 5.0, "{:?}", s.timeline);
    target.shutdown();
}

#[test]
fn a_share_that_does_not_fit_its_plan_is_refused_with_its_shard_named() {
    let target = target::spawn(TargetOptions::loopback()).expect("built-in target");
    let plan = plan(format!("{}/status/200", target.url()), Some(20.0), None);
    let mut shares = run_shares(&plan, 2);
    let mut names_missing = shares.pop().unwrap();
    names_missing.recorder.by_name.clear();
    let err = names_missing.check(&plan).unwrap_err();
    assert_eq!(err.shard, 1);
    assert!(err.to_string().contains("0 request names"), "{err}");
    let good = shares.pop().unwrap();
    let mut backwards = good.clone();
    backwards.seconds.reverse();
    assert!(backwards.seconds.len() > 1, "{:?}", backwards.seconds);
    assert!(backwards.check(&plan).is_err());
    // A histogram that claims more payload than it carries does not read back.
    let mut wire = serde_json::to_value(&good).unwrap();
    wire["recorder"]["overall"]["latency"][4] = serde_json::json!(127);
    assert!(serde_json::from_value::<Share>(wire).is_err());
    target.shutdown();
}
