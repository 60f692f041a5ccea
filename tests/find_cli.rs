//! `headroom find` and `headroom demo` end to end: the built binary against the
//! built-in target (known capacity) and nginx on loopback (issue 3).
//!
//! The searches share two cores with each other and with the targets, so they run one
//! at a time (`SERIAL`) with short steps; together they take about two minutes.
//! Issue 9's honest-verdict checks of a search live in submodules.

mod answer;
mod bottleneck;
mod hold;
mod isolation;
mod keep_up;
mod model;
mod trials;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Mutex;
use std::time::Duration;

use headroom::search::{LimitedBy, SearchResult, Unit};
use headroom::target::{self, RunningTarget, TargetOptions};

use crate::support::{assert_adds_up, run_headroom, Nginx};

const LIMIT: Duration = Duration::from_secs(120);

/// One search at a time: each measures timing, and two at once would skew both.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn target(workers: usize, service_ms: u64) -> RunningTarget {
    target::spawn(TargetOptions {
        workers,
        service_time: Duration::from_millis(service_ms),
        ..TargetOptions::loopback()
    })
    .expect("start the built-in target")
}

/// Short steps, and no waiting on TIME_WAIT sockets (loopback reuses them; the drain
/// wait has its own test in `search::isolation`).
const QUICK: [&str; 8] = [
    "--step-duration",
    "1s",
    "--warmup",
    "500ms",
    "--cooldown",
    "200ms",
    "--time-wait-limit",
    "1000000",
];

/// Open-model caps that keep overloaded steps short: a bounded backlog to drain after
/// each window, and few connections left in TIME_WAIT.
const CAPS: [&str; 4] = ["--max-in-flight", "512", "--connections", "64"];

/// The thresholds most searches of the built-in target's `/work` are held to.
const SLO: [&str; 4] = ["--threshold", "p95 < 100ms", "--threshold", "errors < 1%"];

fn find(args: &[&str], out: &Path) -> (Output, SearchResult) {
    let mut argv: Vec<String> = vec!["find".into()];
    argv.extend(args.iter().map(|a| a.to_string()));
    argv.extend(["--out".into(), out.display().to_string()]);
    let output = run_headroom(&argv, LIMIT);
    let text = std::fs::read_to_string(out).unwrap_or_else(|e| {
        panic!(
            "no result at {}: {e}\n{}",
            out.display(),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let result: SearchResult =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not a search result: {e}\n{text}"));
    // Every step's window accounts for every request it scheduled.
    for step in &result.steps {
        assert_adds_up(&step.summary);
    }
    (output, result)
}

fn all_output(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn assert_ceiling_near(result: &SearchResult, out: &Output, capacity: f64, tolerance: f64) {
    let text = all_output(out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(result.limited_by, LimitedBy::Thresholds, "{text}");
    let ceiling = result
        .ceiling
        .unwrap_or_else(|| panic!("no ceiling\n{text}"));
    assert!(
        (ceiling - capacity).abs() <= capacity * tolerance,
        "ceiling {ceiling} vs capacity {capacity}\n{text}"
    );
    assert!(!result.ceiling_is_lower_bound);
    // The boundary was run twice and passed both times; a failure lies just above it.
    let last = result.steps.last().unwrap();
    assert!(
        last.confirmation && last.passed && last.rate == ceiling,
        "{last:?}"
    );
    let failed = result.failed_at.unwrap();
    assert!(failed > ceiling && failed - ceiling <= ceiling * 0.05 + 1.0);
    // Every step keeps its own summary, verdicts and self-check. A step the generator
    // could not drive (a scheduler stall on a busy machine) says nothing of the
    // target: it is re-run at once, and most steps are not.
    let bound = result.steps.iter().filter(|s| s.summary.generator.bound);
    assert!(bound.count() * 2 < result.steps.len(), "{text}");
    for (i, step) in result.steps.iter().enumerate() {
        assert!(step.summary.requests > 0);
        assert_eq!(step.summary.thresholds.len(), 2);
        if step.summary.generator.bound {
            let next = result.steps.get(i + 1).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(next.rate, step.rate, "a bound step is re-run\n{text}");
            continue;
        }
        let thresholds_held = step.summary.thresholds.iter().all(|t| t.ok);
        assert_eq!(step.passed, thresholds_held && step.keep_up.kept_up());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Achieved  Success"), "{stdout}");
    assert!(
        stdout.contains(&format!("Ceiling:    {ceiling} {}", result.unit.as_str())),
        "{stdout}"
    );
    assert!(stdout.contains("Limited by: thresholds"), "{stdout}");
}

#[test]
fn finds_800_per_second_within_10_percent() {
    let _one = serial();
    let t = target(4, 5);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/work", t.url());
    let mut args = vec!["--url", &url, "--from", "200"];
    args.extend(QUICK);
    args.extend(CAPS);
    args.extend(SLO);
    let (out, result) = find(&args, &dir.path().join("r.json"));
    assert_ceiling_near(&result, &out, 800.0, 0.10);
    assert_eq!(result.unit, Unit::Rate);
    // A live line per step went to stderr.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.lines().filter(|l| l.starts_with("step ")).count(),
        result.steps.len(),
        "{stderr}"
    );
}

#[test]
fn finds_200_per_second_within_10_percent() {
    let _one = serial();
    let t = target(2, 10);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/work", t.url());
    let mut args = vec!["--url", &url, "--from", "50"];
    args.extend(QUICK);
    args.extend(CAPS);
    args.extend(SLO);
    let (out, result) = find(&args, &dir.path().join("r.json"));
    assert_ceiling_near(&result, &out, 200.0, 0.10);
    // Nothing but the generator was watched: no bottleneck, and the conclusion says
    // which watch would name one.
    assert!(result.bottleneck.is_none(), "{:?}", result.bottleneck);
    assert!(
        result
            .conclusion
            // The target runs in this test process, which listens on its port.
            .contains(&format!(
                "No watch explains the failure: add --watch pid:{} (",
                std::process::id()
            )),
        "{}",
        result.conclusion
    );
}

#[test]
fn finds_the_user_count_where_queueing_breaks_p95() {
    // 4 workers × 10 ms serve 400 requests/s; n looping users each wait n/400 s, so
    // p95 < 35 ms holds up to 13 users (32.5 ms) and fails from 14 (35 ms).
    let _one = serial();
    let t = target(4, 10);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/work", t.url());
    let mut args = vec!["--url", &url, "--users", "--from", "2"];
    args.extend(QUICK);
    args.extend(["--threshold", "p95 < 35ms", "--threshold", "errors < 1%"]);
    let (out, result) = find(&args, &dir.path().join("r.json"));
    assert_eq!(result.unit, Unit::Users);
    let ceiling = result.ceiling.unwrap_or_default();
    assert!(
        (11.0..=14.0).contains(&ceiling),
        "ceiling {ceiling} users\n{}",
        all_output(&out)
    );
    assert_ceiling_near(&result, &out, 12.5, 0.15);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Users  Achieved"));
}

fn scenario(dir: &Path, url: &str, hooks: &str) -> PathBuf {
    let path = dir.join("hooks.yaml");
    let text = format!(
        "name: hooked\ntarget: {url}\nthresholds: [\"p95 < 100ms\", \"errors < 1%\"]\nrequests: [{{path: /work}}]\nhooks:\n{hooks}"
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn hooks_run_in_order_around_every_step() {
    let _one = serial();
    let t = target(4, 5);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hooks.log");
    let l = log.display();
    let hooks = format!(
        "  before_step: [\"echo before $HEADROOM_STEP $HEADROOM_STEP_VALUE >> {l}\", \"echo vacuum >> {l}\"]\n  \
         after_step: [\"echo after $HEADROOM_STEP $HEADROOM_STEP_PASSED $HEADROOM_STEP_GENERATOR_BOUND >> {l}\"]\n  \
         wait_until: {{command: \"echo ready >> {l}\", timeout: 5s, interval: 100ms}}\n"
    );
    let file = scenario(dir.path(), &t.url(), &hooks);
    let mut args = vec![file.to_str().unwrap(), "--from", "100", "--to", "200"];
    args.extend(QUICK);
    let (out, result) = find(&args, &dir.path().join("r.json"));
    assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
    // 100 and 200 pass; 200 is the top of the range and is confirmed.
    assert_eq!(result.limited_by, LimitedBy::Range);
    assert_eq!(result.ceiling, Some(200.0));
    let lines = std::fs::read_to_string(&log).unwrap();
    // Every step runs its hooks in order: before, the second before command,
    // wait_until, after. A step the self-check flags on a busy machine says so to its
    // after hook and is run again; the steps that count go 100, 200, 200
    // (the confirmation), all passed.
    let all: Vec<&str> = lines.lines().collect();
    assert_eq!(all.len() % 4, 0, "{lines}");
    let blocks: Vec<&[&str]> = all.chunks(4).collect();
    let mut counted = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        let step = i + 1;
        let value = block[0]
            .strip_prefix(&format!("before {step} "))
            .unwrap_or_else(|| panic!("{lines}"));
        assert_eq!(&block[1..3], &["vacuum", "ready"], "{lines}");
        let after = block[3]
            .strip_prefix(&format!("after {step} "))
            .unwrap_or_else(|| panic!("{lines}"));
        let bound = result.steps[i].summary.generator.bound;
        let passed = result.steps[i].passed;
        assert_eq!(
            after,
            format!("{} {}", u8::from(passed), u8::from(bound)),
            "{lines}"
        );
        if !bound {
            assert!(passed, "{lines}");
            counted.push(value.to_string());
        }
    }
    assert_eq!(counted, ["100", "200", "200"], "{lines}");
}

#[test]
fn a_failing_hook_stops_the_search_and_keeps_the_steps_done() {
    let _one = serial();
    let t = target(4, 5);
    let dir = tempfile::tempdir().unwrap();
    let hooks = "  after_step: [\"echo 'VACUUM: disk full' >&2; exit 7\"]\n";
    let file = scenario(dir.path(), &t.url(), hooks);
    let mut args = vec![file.to_str().unwrap(), "--from", "100"];
    args.extend(QUICK);
    let (out, result) = find(&args, &dir.path().join("r.json"));
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert_eq!(result.limited_by, LimitedBy::Error);
    assert_eq!(result.steps.len(), 1);
    for needle in ["hooks.after_step[0]", "exit status 7", "VACUUM: disk full"] {
        assert!(result.conclusion.contains(needle), "{}", result.conclusion);
        assert!(text.contains(needle), "{text}");
    }
}

#[test]
fn a_generator_bound_step_ends_the_search_without_claiming_a_ceiling() {
    let _one = serial();
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let url = nginx.url();
    let mut args = vec!["--url", &url, "--threads", "1", "--from", "1000000"];
    args.extend(QUICK);
    let (out, result) = find(&args, &dir.path().join("r.json"));
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert_eq!(result.limited_by, LimitedBy::Generator, "{text}");
    // Bound, re-run in case the machine was busy for a moment, bound again: the end.
    assert_eq!(result.steps.len(), 2);
    assert!(result
        .steps
        .iter()
        .all(|s| s.summary.generator.bound && s.rate == 1e6));
    assert_eq!(result.ceiling, None, "a bound step is never a ceiling");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Limited by: generator"), "{stdout}");
    assert!(stdout.contains("--threads"), "{stdout}");
    assert!(stdout.contains("generator-bound"), "{stdout}");
}

#[test]
fn even_the_first_step_failing_says_to_start_lower() {
    let _one = serial();
    let t = target(1, 10);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/work", t.url());
    let mut args = vec!["--url", &url, "--from", "300", "--threshold", "p95 < 20ms"];
    args.extend(QUICK);
    args.extend(CAPS);
    let (out, result) = find(&args, &dir.path().join("r.json"));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(result.ceiling, None);
    assert_eq!(result.steps.len(), 1);
    assert!(
        result.conclusion.contains("lower --from"),
        "{}",
        result.conclusion
    );
}

#[test]
fn demo_runs_end_to_end_and_writes_its_report() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = run_headroom(
        ["demo", "--out-dir", &dir.path().display().to_string()],
        LIMIT,
    );
    let text = all_output(&out);
    // The report leads with the answer whatever the search found.
    answer::check_demo_report(dir.path(), &String::from_utf8_lossy(&out.stdout));
    assert_eq!(out.status.code(), Some(0), "{text}");
    let report = dir.path().join("headroom-demo-report.md");
    let md = std::fs::read_to_string(&report).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&report.display().to_string()), "{stdout}");
    // The printed ceiling is the one the report names, within 10 % of 800 req/s.
    let line = stdout
        .lines()
        .find(|l| l.starts_with("Ceiling:"))
        .unwrap_or_else(|| panic!("{stdout}"));
    let ceiling: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!((720.0..=880.0).contains(&ceiling), "{line}");
    assert!(
        md.contains(&format!("Ceiling: **{ceiling} req/s**")),
        "{md}"
    );
    assert!(md.contains("capacity 800 req/s"), "{md}");
    // Issue 23: the first overloaded step measures the capacity, so the demo answers
    // in at most 7 steps (grow 100 → 1600, one probe, the confirmation). Growth lands
    // on the capacity itself (800), where a queue is not stable: a confirmation there
    // that a stall failed costs one re-bracketing (two steps, and the search says the
    // target was noisy); each step the generator could not drive on a busy machine is
    // re-run and adds one. An overloaded step may also measure the capacity a few
    // percent high (a run answered 808, its estimate near 825): the search then
    // brackets it from below (a
    // probe under the estimate, the probe above, the confirmation), the path every
    // target whose capacity growth does not land on takes, one step more. How often
    // the answer takes 7 is bench/find-speed.sh's.
    let steps: usize = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Steps:"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    let reruns: usize = md
        .split("- Generator: bound in ")
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .map_or(0, |n| n.parse().unwrap_or_else(|_| panic!("{md}")));
    let surprises = if stdout.contains("The target is noisy") {
        2
    } else {
        0
    };
    assert!(steps <= 8 + reruns + surprises, "{steps} steps\n{stdout}");
    assert!(stdout.contains("Interval:   "), "{stdout}");
    assert!(md.contains("trials;") || md.contains("trials)"), "{md}");
    assert!(md.contains("| Rate | Achieved |"), "{md}");
    assert!(md.contains("Limited by: `thresholds`"), "{md}");
    // The fitted model's line, in the terminal and the report (issue 23 item 3).
    assert!(md.contains("- Model (USL): "), "{md}");
    assert!(stdout.contains("\nModel (USL): "), "{stdout}");
    // The demo watches its target's own metrics and names its worker pool with evidence.
    let neck = stdout
        .lines()
        .find(|l| l.starts_with("Bottleneck: "))
        .unwrap_or_else(|| panic!("no Bottleneck line\n{stdout}"));
    assert!(
        neck.contains("the built-in target's workers")
            && neck.contains("all busy: 8 of 8 busy at "),
        "{neck}"
    );
    // The verdict covers every step, re-runs included: on a shared 2-core machine a
    // scheduler hiccup can make one step bound (then re-run and not judged), which the
    // report must say rather than hide. The ceiling above is the guard on the answer.
    assert!(
        md.contains("- Generator: kept up in every step")
            || (md.contains("- Generator: bound in") && md.contains("each was re-run")),
        "{md}"
    );
    // The HTML report, rendered from the demo's own store, draws the capacity chart.
    let html_path = dir.path().join("headroom-demo-report.html");
    let html = std::fs::read_to_string(&html_path).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(
        stdout.contains(&html_path.display().to_string()),
        "{stdout}"
    );
    assert!(html.contains("<svg"), "{html}");
    assert!(html.contains(&format!("{ceiling} req/s</text>")), "{html}");
    assert!(dir.path().join(".headroom/history.db").is_file());
    // The delivery phase: 50 tasks/s for 2 s through the scheduler, due in 500 ms, to a
    // sink; all 100 delivered, none lost, latency at least the delay.
    let table = stdout
        .split("Delivery: ")
        .nth(1)
        .unwrap_or_else(|| panic!("no delivery phase: {stdout}"));
    let row = table
        .lines()
        .find(|l| l.starts_with("| 100 |"))
        .unwrap_or_else(|| panic!("{table}"));
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    assert_eq!(&cells[1..4], ["100", "100", "0 (0.00%)"], "{row}");
    let p50: f64 = cells[7].trim_end_matches(" ms").parse().unwrap();
    assert!((500.0..600.0).contains(&p50), "{row}");
    assert!(table.contains("delivery.lost < 0.1% PASS"), "{table}");
    assert!(md.contains("## Delivery"), "{md}");
    assert!(dir.path().join(".headroom/demo-delivery.yaml").is_file());
    // Nothing went wrong on the way: no warning of any kind.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("warning"), "{stderr}");
}

#[test]
fn a_search_is_recorded_in_the_store_step_by_step() {
    let _one = serial();
    let t = target(4, 5);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("history.db");
    let store_arg = store.display().to_string();
    let url = format!("{}/work", t.url());
    let mut args = vec!["--url", &url, "--from", "100", "--to", "200"];
    args.extend(QUICK);
    args.extend(["--store", &store_arg, "--label", "round=7"]);
    let (out, result) = find(&args, &dir.path().join("r.json"));
    assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
    assert_eq!(result.ceiling, Some(200.0));

    let runs = run_headroom(["runs", "--store", &store_arg], LIMIT);
    let table = String::from_utf8_lossy(&runs.stdout);
    let line = table
        .lines()
        .find(|l| l.contains("round=7"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        line.split_whitespace().nth(1) == Some("find") && line.contains("pass"),
        "{table}"
    );

    let stored = headroom::store::Store::open(&store)
        .unwrap()
        .load(1)
        .unwrap();
    assert_eq!(stored.row.kind, "find");
    let rates: Vec<f64> = stored.steps.iter().map(|s| s.rate).collect();
    let expected: Vec<f64> = result.steps.iter().map(|s| s.rate).collect();
    assert_eq!(rates, expected);
    assert!(stored.steps.iter().all(|s| s.ok && s.summary.requests > 0));
    // The run's summary is the best passing step's: a window at 200 req/s.
    let summary = stored.row.summary.expect("a finished search has a summary");
    assert!((summary.rate.offered - 200.0).abs() < 1.0, "{summary:?}");
    let overall = stored
        .histograms
        .overall
        .expect("histograms of the best step");
    assert_eq!(overall.len(), summary.requests);

    // The HTML report draws the steps against their offered rate: p95, p99 and the
    // achieved rate, ceiling marked.
    let report = run_headroom(
        [
            "report", "latest", "--format", "html", "--store", &store_arg,
        ],
        LIMIT,
    );
    assert_eq!(report.status.code(), Some(0), "{}", all_output(&report));
    let html = String::from_utf8_lossy(&report.stdout);
    let chart_at = html
        .find("<svg viewBox=\"0 0 720 340\" role=\"img\" aria-label=\"Capacity")
        .unwrap_or_else(|| panic!("no capacity chart\n{html}"));
    let chart = &html[chart_at..chart_at + html[chart_at..].find("</svg>").unwrap()];
    assert!(chart.contains("class=\"mark ceiling\""), "{chart}");
    assert!(chart.contains("200 req/s</text>"), "{chart}");
    // A dot per step on each of the three lines (bound steps are triangles), and the
    // legend's.
    let bound = result
        .steps
        .iter()
        .filter(|s| s.summary.generator.bound)
        .count();
    assert_eq!(
        chart.matches("<circle").count(),
        3 * (result.steps.len() - bound) + 1
    );
    assert!(
        html.contains("Ceiling: <strong>200 req/s</strong>"),
        "{html}"
    );
    assert!(!html.contains("<script"), "{html}");
    let md = run_headroom(["report", "latest", "--store", &store_arg], LIMIT);
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains("| step | req/s | achieved | p95 | p99 |"),
        "{md}"
    );
}

#[test]
fn watches_run_around_each_measured_window_and_land_in_its_summary() {
    let _one = serial();
    // The built-in target serves from this test process: watch it.
    let t = target(4, 5);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/work", t.url());
    let spec = format!("pid:{}", std::process::id());
    let mut args = vec!["--url", &url, "--from", "100", "--to", "200"];
    args.extend(QUICK);
    args.extend(["--watch", &spec, "--watch-interval", "250ms"]);
    let (out, result) = find(&args, &dir.path().join("r.json"));
    assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
    assert_eq!(result.steps.len(), 3);
    for step in &result.steps {
        let specs: Vec<&str> = step
            .summary
            .watches
            .iter()
            .map(|w| w.spec.as_str())
            .collect();
        assert_eq!(specs, ["self", spec.as_str()], "{step:?}");
        let headroom::watch::Detail::Process(p) = &step.summary.watches[1].detail else {
            panic!("{:?}", step.summary.watches[1])
        };
        // A 1 s window sampled every 250 ms: a few samples, none from the warm-up.
        assert!(
            (2..=6).contains(&p.samples.len()),
            "{} samples",
            p.samples.len()
        );
    }

    // A spec that cannot start is bad input, before any step runs.
    let out = run_headroom(["find", "--url", &url, "--watch", "pid:abc"], LIMIT);
    assert_eq!(out.status.code(), Some(2), "{}", all_output(&out));
    assert!(all_output(&out).contains("expected a process id"));
}
