//! Loads that count their iterations (`iterations: {per_user: K}` or `{shared: K}`)
//! against the built-in target: exactly that many iterations run, and the run ends
//! when they are done, well before its duration.

use std::time::{Duration, Instant};

use headroom::metrics::summary::Summary;
use headroom::target::{self, TargetOptions};

use crate::support::{assert_exit, run_with_summary};

/// Runs `load` over `items` against a fresh built-in target with `args`; returns the
/// summary (which adds up) and how long the command took.
fn run(load: &str, items: &str, args: &[&str]) -> (Summary, Duration) {
    let t = target::spawn(TargetOptions::loopback()).expect("start the built-in target");
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("counted.yaml");
    let yaml = format!("target: {}\nload: {load}\n{items}", t.url());
    std::fs::write(&scenario, yaml).unwrap();
    let mut all = vec![scenario.to_str().unwrap()];
    all.extend_from_slice(args);
    let began = Instant::now();
    let (out, s) = run_with_summary(dir.path(), &all, Duration::from_secs(60));
    assert_exit(&out, 0);
    assert_eq!(s.errors.count, 0, "{:?}", s.errors);
    (s, began.elapsed())
}

/// A flow of two requests.
const FLOW: &str = "flows:
  - name: play
    steps:
      - request: {name: list, path: /health}
      - request: {name: work, path: /work}
";

#[test]
fn each_user_runs_its_iterations_then_the_run_ends() {
    // 4 users × 5 iterations × 2 requests, within a 30 s bound.
    let (s, took) = run(
        "{model: users, users: 4, duration: 30s, iterations: {per_user: 5}}",
        FLOW,
        &[],
    );
    assert_eq!((s.requests, s.scheduled), (40, 40));
    assert_eq!(
        (s.by_name["list"].requests, s.by_name["work"].requests),
        (20, 20)
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(s.duration_s < 5.0, "{} s", s.duration_s);
    // The rate is over the time the iterations took, not the bound.
    assert!(s.rate.achieved > 40.0 / 5.0, "{:?}", s.rate);
}

#[test]
fn the_users_share_a_count_of_iterations() {
    let (s, took) = run(
        "{users: 3, iterations: {shared: 17}}",
        "requests: [{path: /work}]\n",
        &[],
    );
    assert_eq!((s.requests, s.scheduled), (17, 17));
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn a_shared_count_is_split_over_shards() {
    let (s, _) = run(
        "{users: 2, duration: 30s, iterations: {shared: 17}}",
        FLOW,
        &["--shards", "2"],
    );
    assert_eq!(s.requests, 34);
    let per_shard: Vec<u64> = s.shards.iter().map(|sh| sh.requests).collect();
    assert_eq!(per_shard, [18, 16], "9 and 8 iterations of two requests");
}
