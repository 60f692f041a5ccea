//! Issue 9 item 12: the wait between steps waits for what can affect the next step
//! (free local ports toward the target), shows how long it waited, and follows the
//! user's rule.

use super::{all_output, find, serial, target};

/// Light steps (10 and 20/s, 1 s each), no warm-up, short cooldown.
const LIGHT: [&str; 10] = [
    "--from",
    "10",
    "--to",
    "20",
    "--step-duration",
    "1s",
    "--warmup",
    "0s",
    "--cooldown",
    "100ms",
];

#[test]
fn with_ports_free_the_next_step_starts_after_the_cooldown() {
    let _one = serial();
    let t = target(4, 5);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/work", t.url());
    let mut args = vec!["--url", &url];
    args.extend(LIGHT);
    let (out, result) = find(&args, &dir.path().join("r.json"));
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(result.steps.len(), 3, "{text}");
    for step in &result.steps[1..] {
        let r = step
            .isolation
            .expect("every step after the first is isolated");
        // 20/s needs a few connections: 100-odd ports, of ~28 000.
        let needed = r.ports_needed.expect("the auto rule looks at ports");
        assert!((100..1000).contains(&needed), "{r:?}");
        assert!(r.ports_free_before.unwrap() > needed, "{r:?}");
        assert!(r.drained && r.drain_wait_s < 0.2, "{r:?}");
    }
    assert!(!text.contains("waited"), "{text}");
    // Issue 9 item 14's evidence reaches every step's self-check: the host's CPU as
    // a share. (A light step on an idle machine may read 0 in whole 10 ms ticks; the
    // unit test in engine::cpu spins a thread to see ticks counted.)
    for step in &result.steps {
        let host = step.summary.generator.host_cpu_percent;
        assert!(
            (0.0..=100.0).contains(&host),
            "{:?}",
            step.summary.generator
        );
        assert!(
            !step.summary.generator.starved,
            "{:?}",
            step.summary.generator
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Dropped  Wait  Verdict"), "{stdout}");
}

#[test]
fn a_port_count_that_cannot_be_met_waits_until_the_drain_timeout_and_says_so() {
    let _one = serial();
    let t = target(4, 5);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/work", t.url());
    // More ports than the range holds: capped at the range, never all free (the
    // target's own listener may sit in it, and the steps' sockets do).
    let mut args = vec![
        "--url",
        &url,
        "--wait-ports",
        "1000000",
        "--drain-timeout",
        "1s",
    ];
    args.extend(LIGHT);
    let (out, result) = find(&args, &dir.path().join("r.json"));
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for step in &result.steps[1..] {
        let r = step.isolation.unwrap();
        assert!(!r.drained && !r.stalled, "{r:?}");
        assert!(r.drain_wait_s >= 1.0 && r.drain_wait_s < 2.0, "{r:?}");
        assert!(
            r.ports_needed.unwrap() > r.ports_free_after.unwrap(),
            "{r:?}"
        );
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("gave up at the drain timeout").count(),
        2,
        "{stderr}"
    );
    assert!(
        stderr.contains("for free local ports toward the target ("),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("waiting beyond the cooldowns"), "{stdout}");

    // `off` looks at no ports; the old TIME_WAIT limit still works beside it.
    let mut args = vec![
        "--url",
        &url,
        "--wait-ports",
        "off",
        "--time-wait-limit",
        "100000",
    ];
    args.extend(LIGHT);
    let (out, result) = find(&args, &dir.path().join("off.json"));
    assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
    let r = result.steps[1].isolation.unwrap();
    assert!(
        r.ports_needed.is_none() && r.drained && r.drain_wait_s < 0.2,
        "{r:?}"
    );
    let bad = crate::support::run_headroom(
        ["find", "--url", &url, "--wait-ports", "some"],
        std::time::Duration::from_secs(10),
    );
    assert_eq!(bad.status.code(), Some(2), "{}", all_output(&bad));
    assert!(all_output(&bad).contains("--wait-ports"));
}
