//! Run history end to end (issue 5): the built binary against real nginx on loopback,
//! writing a store in a temporary directory; `runs` and `compare` read it back.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use headroom::store::{RunFilter, RunStatus, Store};

use crate::support::{headroom_bin, run_headroom, Nginx};

const LIMIT: Duration = Duration::from_secs(60);

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// Arguments of a quiet 1 s run at 200/s against `url`, kept in `store`.
fn run_args(url: &str, store: &Path, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "run",
        "--url",
        url,
        "--rate",
        "200",
        "--duration",
        "1s",
        "--threads",
        "1",
        "--quiet",
        "--store",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(store.display().to_string());
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn spawn(args: &[String]) -> Child {
    Command::new(headroom_bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start headroom")
}

fn wait(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("headroom did not finish within {limit:?}");
        }
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn labelled_runs_are_listed_and_compared_with_deltas() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("history.db");
    for round in ["1", "2"] {
        let label = format!("round={round}");
        let args = run_args(
            &nginx.url(),
            &store,
            &["--label", &label, "--label", "change=ETS cache"],
        );
        let out = run_headroom(&args, LIMIT);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let store_arg = store.display().to_string();
    let runs = run_headroom(["runs", "--store", &store_arg], LIMIT);
    assert_eq!(runs.status.code(), Some(0), "{}", text(&runs.stderr));
    let listing = text(&runs.stdout);
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.len(), 3, "header and two runs:\n{listing}");
    assert!(
        lines[1].contains("round=2") && lines[2].contains("round=1"),
        "newest first:\n{listing}"
    );
    assert!(
        lines[1].contains("change=ETS cache") && lines[1].contains("pass"),
        "{listing}"
    );

    let only = run_headroom(["runs", "--store", &store_arg, "--label", "round=1"], LIMIT);
    assert_eq!(
        text(&only.stdout).lines().count(),
        2,
        "{}",
        text(&only.stdout)
    );

    let compare = run_headroom(
        ["compare", "latest~1", "latest", "--store", &store_arg],
        LIMIT,
    );
    assert_eq!(compare.status.code(), Some(0), "{}", text(&compare.stderr));
    let table = text(&compare.stdout);
    assert!(
        table.contains("round=1") && table.contains("round=2"),
        "{table}"
    );
    let second_row = table.lines().nth(2).unwrap_or_default();
    assert!(
        second_row.contains('%'),
        "the second row shows deltas:\n{table}"
    );
    assert!(table.contains("within noise"), "{table}");

    let json = run_headroom(
        [
            "compare",
            "label:round=1",
            "label:round=2",
            "--format",
            "json",
            "--store",
            &store_arg,
        ],
        LIMIT,
    );
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).expect("compare JSON");
    let rounds = value["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 2);
    assert!(
        rounds[0]["delta_pct"].is_null() && rounds[1]["delta_pct"].is_array(),
        "{value}"
    );

    // A run compared with itself has not regressed.
    let same = run_headroom(
        [
            "compare",
            "latest",
            "latest",
            "--fail-on-regression",
            "1%",
            "--store",
            &store_arg,
        ],
        LIMIT,
    );
    assert_eq!(same.status.code(), Some(0), "{}", text(&same.stderr));
}

#[test]
fn a_killed_run_leaves_its_seconds_and_shows_as_interrupted() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let store_path = dir.path().join("history.db");
    let mut args = run_args(&nginx.url(), &store_path, &["--label", "round=killed"]);
    let duration = args.iter().position(|a| a == "1s").unwrap();
    args[duration] = "30s".into();
    let mut child = spawn(&args);
    // Wait until at least two seconds are stored, then kill -9.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        assert!(
            Instant::now() < deadline,
            "no seconds were stored within 20 s"
        );
        if let Ok(store) = Store::open(&store_path) {
            if let Ok(rows) = store.runs(&RunFilter::default()) {
                if let Some(row) = rows.first() {
                    assert_eq!(row.status, RunStatus::Running);
                    if store.load(row.id).unwrap().timeline.len() >= 2 {
                        break;
                    }
                }
            }
        }
        thread::sleep(Duration::from_millis(100));
    }
    child.kill().expect("SIGKILL headroom");
    child.wait().unwrap();

    let store = Store::open(&store_path).expect("the store stays readable");
    let rows = store.runs(&RunFilter::default()).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].status, RunStatus::Interrupted);
    let run = store.load(rows[0].id).unwrap();
    assert!(
        run.timeline.len() >= 2,
        "seconds so far: {}",
        run.timeline.len()
    );
    assert!(
        run.timeline.iter().all(|s| s.requests > 0),
        "{:?}",
        run.timeline
    );
    // What it had measured is kept: a summary of the seconds stored, marked partial.
    let s = run.row.summary.as_ref().expect("a partial summary");
    let partial = s.partial.expect("marked partial");
    assert_eq!(run.timeline.last().map(|t| t.t), Some(partial.last_second));
    let requests: u64 = run.timeline.iter().map(|t| t.requests).sum();
    assert_eq!(s.requests, requests);
    crate::support::assert_adds_up(s);

    let store_arg = store_path.display().to_string();
    let listing = run_headroom(["runs", "--store", &store_arg], LIMIT);
    assert!(
        text(&listing.stdout).contains("interrupted"),
        "{}",
        text(&listing.stdout)
    );
    let report = run_headroom(["report", "latest", "--store", &store_arg], LIMIT);
    assert_eq!(report.status.code(), Some(0), "{}", text(&report.stderr));
    assert!(
        text(&report.stdout).contains("PARTIAL") && text(&report.stdout).contains("### Latency"),
        "{}",
        text(&report.stdout)
    );
}

#[test]
fn two_runs_writing_one_store_at_once_both_land() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let store_path = dir.path().join("shared.db");
    let mut children: Vec<Child> = ["a", "b"]
        .iter()
        .map(|who| {
            spawn(&run_args(
                &nginx.url(),
                &store_path,
                &["--label", &format!("who={who}")],
            ))
        })
        .collect();
    for child in &mut children {
        let status = wait(child, LIMIT);
        let mut err = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
        assert!(status.success(), "{status}: {err}");
        assert!(!err.contains("warning"), "{err}");
    }
    let store = Store::open(&store_path).unwrap();
    let rows = store.runs(&RunFilter::default()).unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert_eq!(row.status, RunStatus::Done);
        let summary = row.summary.expect("a summary");
        assert!(summary.requests > 100, "{}", summary.requests);
        let run = store.load(row.id).unwrap();
        assert_eq!(run.histograms.overall.unwrap().len(), summary.requests);
    }
}

#[test]
fn an_authorization_header_value_never_reaches_the_store() {
    const SECRET: &str = "s3cr3t-7f1c9e2a";
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("secret.yaml");
    std::fs::write(
        &scenario,
        format!(
            "name: secret\ntarget: {}\nload: {{model: arrival-rate, rate: 100, duration: 1s}}\n\
             requests:\n  - {{name: get, path: /, headers: {{authorization: \"Bearer {{{{ env.SECRET_TOKEN }}}}\"}}}}\n",
            nginx.url()
        ),
    )
    .unwrap();
    let store_path = dir.path().join("history.db");
    let mut child = Command::new(headroom_bin())
        .arg("run")
        .arg(&scenario)
        .args(["--quiet", "--label", "k=v", "--store"])
        .arg(&store_path)
        .env("SECRET_TOKEN", SECRET)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(wait(&mut child, LIMIT).success());
    let mut stored = Vec::new();
    for suffix in ["", "-wal", "-shm"] {
        let path = format!("{}{suffix}", store_path.display());
        if let Ok(bytes) = std::fs::read(&path) {
            stored.extend(bytes);
        }
    }
    assert!(stored.len() > 4096, "the store holds the run");
    let found = stored.windows(SECRET.len()).any(|w| w == SECRET.as_bytes());
    assert!(!found, "the secret was written to the store");
    let store = Store::open(&store_path).unwrap();
    let row = &store.runs(&RunFilter::default()).unwrap()[0];
    assert_eq!(row.summary.as_ref().unwrap().errors.count, 0);
    assert_eq!(row.scenario_hash.as_ref().map(String::len), Some(64));
}
