//! Issue 23 items 1 and 2: the search jumps to where an overloaded step says the
//! capacity is, decides the boundary by `--trials` / `--allow-failed-trials`, reports
//! `ceiling_interval`, and names a target whose trials disagree (`noisy`).
//!
//! The noisy target is the built-in target slowed for one step by a `before_step` hook
//! through `POST /admin/service?ms=N`: the same load then passes once and fails (or
//! passes far slower) the next time, which is what a shared or warming-up service does.

use std::path::Path;

use headroom::search::LimitedBy;

use super::{all_output, find, scenario, serial, target, CAPS, QUICK, SLO};

/// Hooks that set the target's service time to `slow_ms` for the `slow_call`-th step
/// the search counts (1-based) and to `fast_ms` for every other. The `after_step` hook
/// counts the steps in a file of its own, leaving out a generator-bound one: the search
/// runs that again, and the re-run must be as slow as the step it replaces, or a stall
/// of a shared machine would turn the slow trial into a fast one.
fn slow_once(dir: &Path, port: u16, slow_call: usize, fast_ms: u64, slow_ms: u64) -> String {
    let count = dir.join("counted");
    std::fs::write(&count, "").unwrap();
    let script = dir.join("service.sh");
    let text = format!(
        "#!/bin/bash\nset -e\nn=$(( $(wc -l < {count}) + 1 ))\nms={fast_ms}\n\
         if [ \"$n\" = {slow_call} ]; then ms={slow_ms}; fi\n\
         exec 3<>/dev/tcp/127.0.0.1/{port}\n\
         printf 'POST /admin/service?ms=%s HTTP/1.1\\r\\nHost: t\\r\\nContent-Length: 0\\r\\nConnection: close\\r\\n\\r\\n' \"$ms\" >&3\n\
         head -1 <&3 | grep -q ' 200 '\n",
        count = count.display()
    );
    std::fs::write(&script, text).unwrap();
    format!(
        "  before_step: [\"bash {}\"]\n  \
         after_step: [\"[ $HEADROOM_STEP_GENERATOR_BOUND = 1 ] || echo x >> {}\"]\n",
        script.display(),
        count.display()
    )
}

/// The verdicts of the steps the search counted, in order (a generator-bound step is
/// run again and does not count).
fn counted(result: &headroom::search::SearchResult) -> Vec<bool> {
    let steps = result.steps.iter();
    steps
        .filter(|s| !s.summary.generator.bound)
        .map(|s| s.passed)
        .collect()
}

#[test]
fn three_trials_decide_the_boundary_and_the_interval_says_so() {
    // 4 workers × 6 ms: 667/s, a capacity no step of the growth from 200 lands on
    // (a load at the capacity itself passes or fails by luck). The search grows to 800
    // (fail, achieving ~667/s), brackets 667, and runs the best pass three times.
    let _one = serial();
    let t = target(4, 6);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/work", t.url());
    let mut args = vec!["--url", &url, "--from", "200", "--trials", "3"];
    args.extend(QUICK);
    args.extend(CAPS);
    args.extend(SLO);
    let path = dir.path().join("r.json");
    let (out, result) = find(&args, &path);
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(result.limited_by, LimitedBy::Thresholds, "{text}");
    let ceiling = result.ceiling.unwrap();
    let capacity = 4000.0 / 6.0;
    assert!(
        (capacity * 0.9..=capacity * 1.05).contains(&ceiling),
        "{text}"
    );
    let i = result.ceiling_interval.expect("an interval");
    assert_eq!(i.low, ceiling);
    assert_eq!(i.high, result.failed_at);
    assert_eq!((i.trials, i.passed), (3, 3), "{i:?}\n{text}");
    assert_eq!((i.trials_per_load, i.allowed_failures), (3, 0));
    assert_eq!(i.high_failed, Some(1), "{i:?}");
    // The runs at the ceiling are the steps: three of them, all passed.
    let at_ceiling: Vec<_> = result.steps.iter().filter(|s| s.rate == ceiling).collect();
    assert_eq!(at_ceiling.len(), 3, "{text}");
    assert!(at_ceiling.iter().all(|s| s.passed));
    // The first overloaded step measured the capacity: the search did not bisect down
    // from it. Growing 200, 400, 800, then the two probes and the trials; a trial a
    // stall failed costs one re-bracketing (two steps), and a step the generator could
    // not drive is re-run.
    let first_fail = result.steps.iter().position(|s| !s.passed).unwrap();
    let reruns = result
        .steps
        .iter()
        .filter(|s| s.summary.generator.bound)
        .count();
    let surprises = if result.noisy.is_some() { 2 } else { 0 };
    assert!(
        result.steps.len() <= first_fail + 1 + 2 + 2 + surprises + reruns,
        "{text}"
    );
    // The JSON spells the contract's keys; the text says the trials.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for key in ["low", "high", "trials", "passed"] {
        assert!(!json["ceiling_interval"][key].is_null(), "{key}: {json}");
    }
    // Trials that agree, with p95 far under its 100 ms limit, are not noise however far
    // apart they land; only a verdict a stall flipped may be.
    if let Some(n) = &result.noisy {
        assert!(n.disagree(), "{n:?}\n{text}");
    } else {
        assert!(json["noisy"].is_null(), "{text}");
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("passed 3 of 3 trials; "), "{stdout}");
    assert!(stdout.contains("Interval:   "), "{stdout}");
}

#[test]
fn trials_that_disagree_mark_the_target_noisy() {
    let _one = serial();
    let t = target(4, 5);
    let dir = tempfile::tempdir().unwrap();
    // 200/s on 4 workers: 5 ms per request serves it easily; 40 ms needs 8 workers.
    // The second step (the confirmation of 200) runs slow and fails.
    let hooks = slow_once(dir.path(), t.addr().port(), 2, 5, 40);
    let file = scenario(dir.path(), &t.url(), &hooks);
    let mut args = vec![file.to_str().unwrap(), "--from", "200", "--to", "200"];
    args.extend(QUICK);
    args.extend(CAPS);
    let (out, result) = find(&args, &dir.path().join("r.json"));
    let text = all_output(&out);
    // The steps that count: a generator-bound step (a stall of a shared machine) is
    // run again, as slow as the step it replaces.
    assert_eq!(counted(&result), [true, false], "{text}");
    // Nothing is known to pass: no ceiling, no interval, and exit 1.
    assert_eq!(result.ceiling, None, "{text}");
    assert!(result.ceiling_interval.is_none());
    assert_eq!(out.status.code(), Some(1), "{text}");
    let noisy = result.noisy.as_ref().expect("noisy");
    assert_eq!((noisy.value, noisy.trials, noisy.passed), (200.0, 2, 1));
    assert!(
        noisy.p95_max_ms > 100.0 && noisy.p95_min_ms < 50.0,
        "{noisy:?}"
    );
    assert!(
        result
            .conclusion
            .contains("The target is noisy: at 200 req/s 1 of 2 trials passed"),
        "{}",
        result.conclusion
    );
    assert!(
        result.conclusion.contains("Isolate runs"),
        "{}",
        result.conclusion
    );
}

#[test]
fn an_allowed_failed_trial_still_passes_the_load_and_says_it_was_noisy() {
    let _one = serial();
    let t = target(4, 5);
    let dir = tempfile::tempdir().unwrap();
    let hooks = slow_once(dir.path(), t.addr().port(), 2, 5, 40);
    let file = scenario(dir.path(), &t.url(), &hooks);
    let mut args = vec![file.to_str().unwrap(), "--from", "200", "--to", "200"];
    args.extend(["--trials", "3", "--allow-failed-trials", "1"]);
    args.extend(QUICK);
    args.extend(CAPS);
    let (out, result) = find(&args, &dir.path().join("r.json"));
    let text = all_output(&out);
    // pass, fail (slowed), pass: two of three passed, one failure allowed.
    assert_eq!(counted(&result), [true, false, true], "{text}");
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(result.limited_by, LimitedBy::Range);
    assert_eq!(result.ceiling, Some(200.0));
    let i = result.ceiling_interval.expect("an interval");
    assert_eq!((i.low, i.high, i.trials, i.passed), (200.0, None, 3, 2));
    let noisy = result.noisy.as_ref().expect("noisy");
    assert_eq!((noisy.trials, noisy.passed), (3, 2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("passed 2 of 3 trials"));
}

#[test]
fn as_many_allowed_failures_as_trials_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--url",
        "http://127.0.0.1:9/",
        "--trials",
        "2",
        "--allow-failed-trials",
        "2",
    ];
    let mut argv = vec!["find"];
    argv.extend(args);
    let out_path = dir.path().join("r.json");
    let out_arg = out_path.display().to_string();
    argv.extend(["--out", &out_arg]);
    let out = crate::support::run_headroom(&argv, std::time::Duration::from_secs(20));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--allow-failed-trials 2 must be less than --trials 2"),
        "{stderr}"
    );
    assert!(!out_path.exists());
}
