//! Load shapes over time: staged arrival rates and staged user counts follow their
//! linear ramps.

use std::time::Duration;

use headroom::metrics::summary::Summary;

use crate::support::{assert_exit, run_with_summary, Nginx};

/// Runs the scenario `yaml` to completion and returns its summary.
fn run_scenario(yaml: &str) -> Summary {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("shape.yaml");
    std::fs::write(&scenario, yaml).unwrap();
    let (out, summary) = run_with_summary(
        dir.path(),
        &[scenario.to_str().unwrap()],
        Duration::from_secs(60),
    );
    assert_exit(&out, 0);
    summary
}

#[test]
fn staged_arrival_rate_ramps_linearly() {
    let nginx = Nginx::start();
    // 0 → 1000/s over 2 s, then 1000/s for 1 s: 1000 + 1000 arrivals.
    let s = run_scenario(&format!(
        "name: ramp\ntarget: {}\nload:\n  model: arrival-rate\n  stages: [{{duration: 2s, target: 1000}}, {{duration: 1s, target: 1000}}]\nrequests: [{{path: /}}]\n",
        nginx.url()
    ));
    assert!(
        (s.requests as f64 - 2000.0).abs() <= 20.0,
        "{} requests",
        s.requests
    );
    let per_second: Vec<u64> = s.timeline.iter().map(|t| t.requests).collect();
    // Second 0 carries ~250 arrivals (the area under the first half of the ramp),
    // second 1 ~750, second 2 ~1000.
    assert!((150..=350).contains(&per_second[0]), "{per_second:?}");
    assert!((650..=850).contains(&per_second[1]), "{per_second:?}");
    assert!((900..=1100).contains(&per_second[2]), "{per_second:?}");
    assert!(
        s.timeline[0].offered < s.timeline[1].offered
            && s.timeline[1].offered < s.timeline[2].offered
    );
}

#[test]
fn staged_users_ramp_up_and_down() {
    let nginx = Nginx::start();
    let s = run_scenario(&format!(
        "name: users\ntarget: {}\nload:\n  model: users\n  think: 100ms\n  stages: [{{duration: 2s, target: 10}}, {{duration: 1s, target: 10}}, {{duration: 1s, target: 2}}]\nrequests: [{{path: /}}]\n",
        nginx.url()
    ));
    let users: Vec<f64> = s.timeline.iter().map(|t| t.offered).collect();
    assert!(users[0] <= 6.0, "{users:?}");
    assert!(users[2] >= 9.0, "{users:?}");
    assert!(users[3] <= 3.0, "{users:?}");
    // Each user makes about 10 requests per second (100 ms think, sub-ms latency).
    let peak = s.timeline[2].requests as f64;
    assert!(
        (85.0..=110.0).contains(&peak),
        "peak second {peak} requests, users {users:?}"
    );
}
