//! Several workloads at once (`workloads:`) against the built-in target: each at its
//! own rate from its own start, figures per workload that add up to the run's, a
//! workload's own rule failing the run, the workloads split over shards, and `find
//! --workload` running the others in every step.

use std::path::Path;
use std::time::Duration;

use headroom::metrics::summary::Summary;
use headroom::search::SearchResult;
use headroom::target::{self, RunningTarget, TargetOptions};

use crate::support::{assert_adds_up, assert_exit, run_headroom, run_with_summary, stderr};

fn target() -> RunningTarget {
    target::spawn(TargetOptions::loopback()).expect("start the built-in target")
}

/// Runs the scenario `yaml` (in a fresh directory) with `args`; the summary adds up.
fn run(yaml: &str, args: &[&str]) -> (std::process::Output, Summary) {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("workloads.yaml");
    std::fs::write(&scenario, yaml).unwrap();
    let mut all = vec![scenario.to_str().unwrap()];
    all.extend_from_slice(args);
    run_with_summary(dir.path(), &all, Duration::from_secs(60))
}

/// A users workload (`players`: a flow of two requests, 100 ms think) beside an
/// arrival-rate one (`hammer`: 50/s), both for 2 s, `hammer` from `start`, with rules.
fn two(url: &str, start: &str, hammer_rule: &str) -> String {
    format!(
        "name: two\ntarget: {url}\nworkloads:
  - name: players
    load: {{model: users, users: 2, think: 100ms, duration: 2s}}
    flows:
      - name: play
        steps:
          - request: {{name: list, path: /health}}
          - request: {{name: work, path: /work}}
    thresholds: [\"p95 < 5s\"]
  - name: hammer
    load: {{model: arrival-rate, rate: 50, duration: 2s}}
    start: {start}
    requests: [{{name: hammer, path: /health}}]
    thresholds: [\"{hammer_rule}\"]
"
    )
}

/// Every workload's figures add up to the run's.
#[track_caller]
fn assert_workloads_add_up(s: &Summary) {
    let sum = |f: fn(&headroom::metrics::workloads::WorkloadSummary) -> u64| -> u64 {
        s.by_workload.values().map(f).sum()
    };
    assert_eq!(sum(|w| w.requests), s.requests, "{:?}", s.by_workload);
    assert_eq!(sum(|w| w.completed), s.completed);
    assert_eq!(sum(|w| w.errors.count), s.errors.count);
    for w in s.by_workload.values() {
        assert_eq!(w.requests, w.completed + w.errors.count);
    }
}

#[test]
fn two_workloads_run_at_once_each_at_its_own_rate_and_add_up() {
    let t = target();
    let (out, s) = run(&two(&t.url(), "0s", "p95 < 5s"), &[]);
    assert_exit(&out, 0);
    assert_workloads_add_up(&s);
    let names: Vec<&String> = s.by_workload.keys().collect();
    assert_eq!(names, ["hammer", "players"]);
    let hammer = &s.by_workload["hammer"];
    // 50/s for 2 s, arrival for arrival, beside the users.
    assert_eq!(
        (hammer.model.as_str(), hammer.requests),
        ("arrival-rate", 100)
    );
    assert!(
        (hammer.rate.offered - 50.0).abs() < 1e-6,
        "{:?}",
        hammer.rate
    );
    assert_eq!(s.by_name["hammer"].requests, 100);
    let players = &s.by_workload["players"];
    assert_eq!(players.model, "users");
    // Two users, each an iteration of two requests per ~100 ms: ~40 requests a second.
    assert!((40..=90).contains(&players.requests), "{players:?}");
    assert_eq!(
        players.requests,
        s.by_name["list"].requests + s.by_name["work"].requests
    );
    // Both ran in every second of the run, and the rules of both were judged.
    assert!(s.timeline.len() >= 2 && s.timeline.iter().all(|t| t.requests > 25));
    assert!(s.timeline.iter().all(|t| (t.offered - 50.0).abs() < 1e-6));
    let rules: Vec<(&str, bool)> = s
        .thresholds
        .iter()
        .map(|r| (r.expr.as_str(), r.ok))
        .collect();
    assert_eq!(
        rules,
        [("players: p95 < 5s", true), ("hammer: p95 < 5s", true)]
    );
    assert_eq!(hammer.thresholds.len(), 1);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("workload") && text.contains("arrival-rate"),
        "{text}"
    );
}

#[test]
fn a_workload_starts_at_its_offset() {
    let t = target();
    // Five requests a second from one user, then 100/s from 1 s on.
    let yaml = format!(
        "target: {}\nworkloads:
  - {{name: slow, load: {{users: 1, think: 200ms, duration: 2s}}, requests: [{{name: slow, path: /health}}]}}
  - {{name: late, load: {{rate: 100, duration: 1s}}, start: 1s, requests: [{{name: late, path: /health}}]}}
",
        t.url()
    );
    let (out, s) = run(&yaml, &[]);
    assert_exit(&out, 0);
    assert_workloads_add_up(&s);
    let late = &s.by_workload["late"];
    assert_eq!((late.requests, late.start_s), (100, 1.0));
    assert!((late.rate.achieved - 100.0).abs() < 15.0, "{late:?}");
    let second = |t: u64| {
        s.timeline
            .iter()
            .find(|x| x.t == t)
            .map_or(0, |x| x.requests)
    };
    // Second 0 holds the user's requests alone; second 1 the arrivals too.
    assert!(second(0) <= 8, "{:?}", s.timeline);
    assert!(second(1) >= 100, "{:?}", s.timeline);
    assert_eq!(s.timeline[0].offered, 0.0);
}

#[test]
fn a_failing_workload_rule_fails_the_run() {
    let t = target();
    let (out, s) = run(&two(&t.url(), "0s", "p95 < 1us"), &[]);
    assert_exit(&out, 99);
    assert_workloads_add_up(&s);
    let hammer = &s.by_workload["hammer"].thresholds;
    assert!(!hammer[0].ok && hammer[0].expr == "p95 < 1us", "{hammer:?}");
    assert!(s.by_workload["players"].thresholds[0].ok);
    let failed: Vec<&str> = (s.thresholds.iter())
        .filter(|r| !r.ok)
        .map(|r| r.expr.as_str())
        .collect();
    assert_eq!(failed, ["hammer: p95 < 1us"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1 of 2 thresholds FAILED"), "{text}");
}

#[test]
fn every_workload_is_split_over_shards() {
    let t = target();
    let (out, s) = run(&two(&t.url(), "0s", "p95 < 5s"), &["--shards", "2"]);
    assert_exit(&out, 0);
    assert_workloads_add_up(&s);
    assert_eq!(s.shards.len(), 2);
    // The arrivals interleave over the shards: together, the one schedule.
    assert_eq!(s.by_workload["hammer"].requests, 100);
    // Each shard runs one of the two users.
    assert!(s.shards.iter().all(|sh| sh.requests > 30), "{:?}", s.shards);
}

/// `headroom find ARGS --out DIR/r.json`: its output and result; every step adds up.
fn find(dir: &Path, args: &[&str]) -> (std::process::Output, Option<SearchResult>) {
    let out_file = dir.join("r.json");
    let mut argv = vec!["find"];
    argv.extend_from_slice(args);
    argv.extend(["--out", out_file.to_str().unwrap()]);
    let out = run_headroom(&argv, Duration::from_secs(90));
    let result = std::fs::read_to_string(&out_file).ok().map(|text| {
        let r: SearchResult = serde_json::from_str(&text).expect("a search result");
        for step in &r.steps {
            assert_adds_up(&step.summary);
            assert_workloads_add_up(&step.summary);
        }
        r
    });
    (out, result)
}

#[test]
fn find_searches_one_workload_and_runs_the_others_in_every_step() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("find.yaml");
    let yaml = format!(
        "target: {}\nworkloads:
  - {{name: api, load: {{rate: 10, duration: 5s}}, requests: [{{name: api, path: /health}}]}}
  - {{name: background, load: {{rate: 20, duration: 5s}}, requests: [{{name: bg, path: /health}}]}}
",
        t.url()
    );
    std::fs::write(&scenario, yaml).unwrap();
    let path = scenario.to_str().unwrap();
    // Which load is searched must be said.
    let (out, _) = find(dir.path(), &[path, "--to", "20"]);
    assert_exit(&out, 2);
    let said = stderr(&out);
    assert!(
        said.contains("--workload") && said.contains("api, background"),
        "{said}"
    );

    let quick = [
        "--workload",
        "api",
        "--from",
        "10",
        "--to",
        "20",
        "--step-duration",
        "1s",
        "--warmup",
        "200ms",
        "--cooldown",
        "100ms",
    ];
    let mut args = vec![path];
    args.extend_from_slice(&quick);
    let (out, result) = find(dir.path(), &args);
    assert_exit(&out, 0);
    let result = result.expect("a result");
    assert!(result.steps.len() >= 2, "{}", stderr(&out));
    for step in &result.steps {
        let s = &step.summary;
        // The searched workload at the step's rate, the other at its own, both over
        // the measured second alone.
        assert_eq!(s.by_workload["api"].requests, step.rate as u64, "{s:?}");
        assert_eq!(
            s.by_workload["background"].requests, 20,
            "{:?}",
            s.by_workload
        );
        assert_eq!(s.requests, step.rate as u64 + 20);
    }
}
