//! Faults while a run goes (issue 31): the store's disk filling up, the target killed
//! and started again under load, a watched PostgreSQL going away. Each fault is made
//! for real, mid-run, and the run must go on to a summary that adds up and says what
//! happened.

use std::io::Read as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use headroom::metrics::summary::Summary;
use headroom::store::{RunFilter, RunStatus, Store};
use headroom::target::{self, TargetOptions};

use super::Tmpfs;
use crate::support::{
    assert_adds_up, free_port, headroom_bin, postgres_cluster, read_summary, require,
};

/// Starts `headroom ARGS` with its output captured.
fn spawn(args: &[&str]) -> Child {
    Command::new(headroom_bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start headroom")
}

/// Waits for `child` (at most 60 s) and returns its exit code, stdout and stderr.
fn finish(mut child: Child) -> (Option<i32>, String, String) {
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let reader = thread::spawn(move || {
        let mut text = String::new();
        out.read_to_string(&mut text).unwrap();
        text
    });
    let mut errors = String::new();
    err.read_to_string(&mut errors).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "headroom did not end: {errors}");
        thread::sleep(Duration::from_millis(20));
    };
    (status.code(), reader.join().unwrap(), errors)
}

/// `headroom target --listen LISTEN ARGS` in a process of its own (so a test can kill
/// it), once it listens.
fn target_process(listen: &str, args: &[&str]) -> Child {
    let child = Command::new(headroom_bin())
        .args(["target", "--listen", listen])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the target");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(listen).is_err() {
        assert!(
            Instant::now() < deadline,
            "the target did not listen on {listen}"
        );
        thread::sleep(Duration::from_millis(20));
    }
    child
}

/// Waits until the store at `path` holds at least `seconds` seconds of its newest run.
fn wait_for_seconds(path: &Path, seconds: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        assert!(
            Instant::now() < deadline,
            "no {seconds} seconds stored in 20 s"
        );
        let stored = Store::open(path).ok().and_then(|store| {
            let id = store.runs(&RunFilter::default()).ok()?.first()?.id;
            Some(store.load(id).ok()?.timeline.len())
        });
        if stored.is_some_and(|n| n >= seconds) {
            return;
        }
        thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_store_whose_disk_fills_mid_run_warns_once_and_the_run_still_writes_its_results() {
    let Some(tmpfs) = require("a tmpfs (`mount -t tmpfs`, as root)", Tmpfs::mount("8m")) else {
        return;
    };
    let target = target::spawn(TargetOptions::loopback()).expect("built-in target");
    let url = format!("{}/status/200", target.url());
    let store = tmpfs.path().join("history.db");
    let elsewhere = tempfile::tempdir().unwrap();
    let out = elsewhere.path().join("s.json");
    let child = spawn(&[
        "run",
        "--url",
        &url,
        "--rate",
        "100",
        "--duration",
        "5s",
        "--store",
        store.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    wait_for_seconds(&store, 2);
    tmpfs.fill();
    let (code, stdout, stderr) = finish(child);
    assert_eq!(code, Some(0), "{stderr}");
    // Said once, naming the store and why; not once a second.
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("store") && warnings[0].contains("full"),
        "{stderr}"
    );
    // The run went on to the end, and wrote its results where there was room.
    let s = read_summary(&out);
    assert_adds_up(&s);
    assert!(
        !s.interrupted && (450..=550).contains(&s.requests),
        "{} requests",
        s.requests
    );
    assert!(stdout.contains("requests"), "{stdout}");
    // The store holds the run as far as it could, marked partial.
    let db = Store::open(&store).expect("a full store is still readable");
    let rows = db.runs(&RunFilter::default()).unwrap();
    assert_eq!(rows[0].status, RunStatus::Interrupted);
    let kept = rows[0].summary.as_ref().expect("the summary so far");
    let partial = kept.partial.expect("marked partial");
    assert!(
        partial.seconds >= 2 && kept.requests < s.requests,
        "{partial:?}"
    );
    assert_adds_up(kept);
}

/// Runs `args` against a built-in target in its own process on `port`, which is killed
/// about 1.5 s in and started again on the same port a second later; returns the
/// run's summary.
fn through_a_restart(args: &[&str]) -> Summary {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let start_target = || target_process(&listen, &["--workers", "16", "--service-time", "1ms"]);
    let mut target = start_target();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    let url = format!("http://{listen}/work");
    let mut argv = vec!["run", "--url", &url, "--duration", "5s", "--quiet"];
    argv.extend_from_slice(args);
    let out_arg = out.to_str().unwrap().to_string();
    argv.extend(["--out", &out_arg]);
    let run = spawn(&argv);
    thread::sleep(Duration::from_millis(1_500));
    target.kill().unwrap();
    target.wait().unwrap();
    thread::sleep(Duration::from_secs(1));
    let mut target = start_target();
    let (code, _, stderr) = finish(run);
    let _ = target.kill();
    let _ = target.wait();
    // Errors and no threshold: the run itself passes.
    assert_eq!(code, Some(0), "{stderr}");
    let s = read_summary(&out);
    assert_adds_up(&s);
    s
}

/// What went wrong while the target was down, and that the last seconds were whole
/// again.
fn check_recovered(s: &Summary) {
    eprintln!(
        "failed {} of {}: {:?}",
        s.errors.count, s.scheduled, s.errors.by_kind
    );
    assert!(s.errors.count > 0, "the restart was seen: {:?}", s.errors);
    let kinds: Vec<&String> = s.errors.by_kind.keys().collect();
    assert!(
        kinds
            .iter()
            .all(|k| ["connect", "reset", "protocol"].contains(&k.as_str())),
        "failures by kind: {:?}",
        s.errors.by_kind
    );
    assert!(
        s.errors.by_kind.contains_key("connect"),
        "{:?}",
        s.errors.by_kind
    );
    let tail = &s.timeline[s.timeline.len() - 2..];
    assert!(
        tail.iter().all(|t| t.requests > 0 && t.errors == 0),
        "after the restart the users are back: {:?}",
        s.timeline
    );
}

#[test]
fn a_target_restarted_under_open_load_costs_the_requests_of_its_outage_counted_by_kind() {
    let s = through_a_restart(&["--rate", "200"]);
    check_recovered(&s);
    // About a second of arrivals failed: the outage, not the whole run.
    assert!(
        (100..=600).contains(&s.errors.count),
        "{} failed of {}",
        s.errors.count,
        s.scheduled
    );
}

#[test]
fn users_of_a_restarted_target_reconnect_with_backoff_not_in_a_tight_loop() {
    let s = through_a_restart(&["--users", "4"]);
    check_recovered(&s);
    // Four users without a target for about a second: each waits 50 ms after a
    // refused connection, so at most about 4 × 20 attempts a second, not thousands.
    let connect = s.errors.by_kind.get("connect").copied().unwrap_or(0);
    assert!(
        connect <= 4 * 20 * 3,
        "{connect} refused connections: no backoff?"
    );
}

/// Runs 5 s at 50/s against a built-in target while watching `spec`, calls `stop`
/// (which takes the watched source away) 2 s in, and checks that the run went on to
/// the end and that the watch has one gap, from about then to the end, in the summary
/// and in the text.
fn watched_source_goes_away(spec: &str, stop: impl FnOnce()) {
    let target = target::spawn(TargetOptions::loopback()).expect("built-in target");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    let url = format!("{}/status/200", target.url());
    let run = spawn(&[
        "run",
        "--url",
        &url,
        "--rate",
        "50",
        "--duration",
        "5s",
        "--watch",
        spec,
        "--out",
        out.to_str().unwrap(),
    ]);
    thread::sleep(Duration::from_millis(2_000));
    stop();
    let (code, stdout, stderr) = finish(run);
    assert_eq!(code, Some(0), "{stderr}");
    let s = read_summary(&out);
    assert_adds_up(&s);
    assert!((225..=275).contains(&s.requests), "{} requests", s.requests);
    let w = s
        .watches
        .iter()
        .find(|w| w.spec == spec)
        .unwrap_or_else(|| panic!("no watch {spec}: {:?}", s.watches));
    assert_eq!(w.gaps.len(), 1, "{:?}", w.gaps);
    let gap = &w.gaps[0];
    // Lost within a sample or two of the stop, and never found again.
    assert!(
        (1.0..=4.5).contains(&gap.from_t) && gap.to_t >= 4.5,
        "{gap:?}"
    );
    assert!(!gap.reason.is_empty());
    // The text summary says when.
    let kind = spec.split(':').next().unwrap();
    assert!(stdout.contains(&format!("gap in {kind}:")), "{stdout}");
}

#[test]
fn a_watched_postgres_that_goes_away_mid_run_is_a_gap_with_its_time_and_the_run_goes_on() {
    let Some(cluster) = postgres_cluster() else {
        return;
    };
    let spec = format!("postgres:{}", cluster.url());
    // Dropping the cluster stops it: `pg_ctl stop -m immediate`.
    watched_source_goes_away(&spec, move || drop(cluster));
}

#[test]
fn a_watched_prometheus_endpoint_that_goes_away_mid_run_is_a_gap_and_the_run_goes_on() {
    // What is scraped: another target's `/metrics`, in a process of its own.
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut scraped = target_process(&listen, &[]);
    let spec = format!("prometheus:http://{listen}/metrics#headroom_target_requests_total");
    watched_source_goes_away(&spec, move || {
        scraped.kill().unwrap();
        scraped.wait().unwrap();
    });
}
