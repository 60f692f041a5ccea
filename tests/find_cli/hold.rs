//! Issue 23 item 6: `find --hold D` runs the answer for D and says whether it held.
//!
//! The held answers are searched with `--to` below the built-in target's capacity, so
//! the value held is one the target serves with room to spare: a hold at exactly the
//! capacity (ρ = 1) keeps any backlog a busy machine makes, and its p95 creeps up, which
//! is the rule working, not what these tests are about. The degrading target is the
//! same target slowed mid-hold through `POST /admin/service?ms=N`.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use headroom::search::{Hold, LimitedBy, SearchResult, Unit};

use super::{all_output, find, serial, target, CAPS, LIMIT, QUICK, SLO};
use crate::support::{assert_adds_up, headroom_bin, http_post, run_headroom, test_store};

/// The figures of a hold that ran whole: they add up, match its summary, and the
/// latency trend was measured.
#[track_caller]
fn assert_figures(hold: &Hold, value: f64, secs: f64) {
    assert_eq!(hold.value, value, "{hold:?}");
    assert_eq!(hold.duration_s, secs);
    let s = &hold.summary;
    assert_adds_up(s);
    assert!(hold.requests > 0 && hold.requests == s.requests, "{hold:?}");
    assert_eq!(
        (hold.errors, hold.dropped),
        (s.errors.count, s.dropped),
        "{hold:?}"
    );
    assert_eq!(hold.p95_ms, s.latency_ms.p95);
    assert!(hold.measured_s >= secs - 0.05, "{hold:?}");
    let (first, last) = (hold.p95_first_ms.unwrap(), hold.p95_last_ms.unwrap());
    assert!(first > 0.0 && last > 0.0, "{hold:?}");
    assert!(hold.p95_slope_ms_per_min.unwrap().is_finite());
    // Each step of the search and the hold ran at the same value model.
    assert_eq!(s.thresholds.len(), 2, "{:?}", s.thresholds);
}

#[test]
fn a_ceiling_with_room_to_spare_holds_and_says_so_first() {
    let _one = serial();
    let t = target(4, 5);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("history.db").display().to_string();
    let url = format!("{}/work", t.url());
    let mut args = vec!["--url", &url, "--from", "100", "--to", "200"];
    args.extend(QUICK);
    args.extend(SLO);
    args.extend(["--hold", "3s", "--store", &store]);
    let (out, result) = find(&args, &dir.path().join("r.json"));
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(result.ceiling, Some(200.0), "{text}");
    let hold = result
        .hold
        .as_ref()
        .unwrap_or_else(|| panic!("no hold\n{text}"));
    assert!(hold.held && !hold.interrupted, "{hold:?}\n{text}");
    assert_eq!(hold.reason, None);
    assert_figures(hold, 200.0, 3.0);
    // The hold ran its value: 200 req/s offered over 3 s, and kept up.
    assert!((hold.offered - 200.0).abs() < 1.0, "{hold:?}");
    assert!(hold.keep_up.kept_up() && hold.errors == 0, "{hold:?}");

    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().next(),
        Some("Held for 3s at 200 req/s."),
        "{stdout}"
    );
    assert!(
        stdout.contains("Ceiling:    at least 200 req/s (a lower bound), held for 3s"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Hold:       held for 3s\n            ")
            && stdout.contains(" requests, 0 errors (0.00%), 0 dropped, achieved "),
        "{stdout}"
    );
    assert!(
        result.conclusion.contains("Held for 3s at 200 req/s"),
        "{}",
        result.conclusion
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("holding 200 req/s for 3s") && stderr.contains("hold held for 3s"),
        "{stderr}"
    );

    // Stored beside the steps, and the report's first line says it held.
    let stored = headroom::store::Store::open(Path::new(&store))
        .unwrap()
        .load(1)
        .unwrap();
    assert_eq!(stored.steps.len(), result.steps.len());
    let kept = stored.hold.expect("the hold is stored");
    assert!(kept.ok && kept.rate == 200.0);
    let back: Hold = serde_json::from_value(kept.json).unwrap();
    assert_eq!(&back, hold);
    let md = run_headroom(["report", "latest", "--store", &store], LIMIT);
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.lines()
            .next()
            .is_some_and(|l| l.starts_with("## Ceiling: at least 200 req/s, held for 3s — ")),
        "{md}"
    );
    assert!(md.contains("- Hold: held for 3s at 200 req/s ("), "{md}");
}

#[test]
fn a_users_ceiling_holds_its_user_count() {
    // 4 workers serve 4 looping users at once: no queue, nothing to grow.
    let _one = serial();
    let t = target(4, 5);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/work", t.url());
    let mut args = vec!["--url", &url, "--users", "--from", "2", "--to", "4"];
    args.extend(QUICK);
    args.extend(["--threshold", "p95 < 100ms", "--hold", "3s"]);
    let (out, result) = find(&args, &dir.path().join("r.json"));
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(result.unit, Unit::Users);
    let hold = result.hold.as_ref().expect("a hold");
    assert!(hold.held, "{hold:?}\n{text}");
    assert_figures(hold, 4.0, 3.0);
    assert_eq!(hold.summary.model, "users");
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("Held for 3s at 4 users."),
        "{text}"
    );
}

/// `headroom find ARGS --out OUT` started with its stderr read line by line as it
/// comes: the child, its stderr lines, and the threads collecting stdout and stderr.
struct Live {
    child: Child,
    lines: Receiver<String>,
    stdout: JoinHandle<Vec<u8>>,
    stderr: JoinHandle<Vec<u8>>,
    started: Instant,
}

impl Live {
    fn start(args: &[&str], out: &Path) -> Live {
        let mut child = Command::new(headroom_bin())
            .env("HEADROOM_STORE", test_store())
            .arg("find")
            .args(args)
            .arg("--out")
            .arg(out)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out_pipe = child.stdout.take().unwrap();
        let stdout = thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = out_pipe.read_to_end(&mut buf);
            buf
        });
        let (tx, lines) = mpsc::channel();
        let err_pipe = child.stderr.take().unwrap();
        let stderr = thread::spawn(move || {
            let mut all = Vec::new();
            for line in BufReader::new(err_pipe).lines().map_while(Result::ok) {
                all.extend_from_slice(line.as_bytes());
                all.push(b'\n');
                let _ = tx.send(line);
            }
            all
        });
        Live {
            child,
            lines,
            stdout,
            stderr,
            started: Instant::now(),
        }
    }

    /// Waits for the stderr line starting with `prefix`; without one (the child ended,
    /// or the test's limit passed) kills the child and panics, showing its output.
    fn wait_for(mut self, prefix: &str) -> (Live, String) {
        loop {
            let left = LIMIT.saturating_sub(self.started.elapsed());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return (self, line),
                Ok(_) => {}
                Err(_) => {
                    let _ = self.child.kill();
                    let out = self.finish();
                    panic!("no line `{prefix}…`\n{}", all_output(&out));
                }
            }
        }
    }

    fn finish(mut self) -> Output {
        let deadline = self.started + LIMIT;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                break self.child.wait().unwrap();
            }
            thread::sleep(Duration::from_millis(20));
        };
        Output {
            status,
            stdout: self.stdout.join().unwrap(),
            stderr: self.stderr.join().unwrap(),
        }
    }
}

fn read_result(out: &Output, path: &Path) -> SearchResult {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no result: {e}\n{}", all_output(out)));
    let result: SearchResult = serde_json::from_str(&text).unwrap();
    for step in &result.steps {
        assert_adds_up(&step.summary);
    }
    result
}

#[test]
fn a_target_that_slows_down_mid_hold_did_not_hold_and_says_what_broke() {
    let _one = serial();
    let t = target(4, 5);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/work", t.url());
    let mut args = vec!["--url", &url, "--from", "100", "--to", "400"];
    args.extend(QUICK);
    args.extend(CAPS);
    args.extend(SLO);
    args.extend(["--hold", "4s"]);
    let path = dir.path().join("r.json");
    let (live, line) = Live::start(&args, &path).wait_for("holding ");
    assert!(line.starts_with("holding 400 req/s for 4s"), "{line}");
    // Past the 500 ms warm-up and 1.5 s into the measured window, each request starts
    // holding a worker 20 ms: the capacity falls from 800/s to 200/s under 400/s.
    thread::sleep(Duration::from_millis(2000));
    let (status, body) = http_post(t.addr(), "/admin/service?ms=20");
    assert_eq!(status, 200, "{body}");
    let out = live.finish();
    let text = all_output(&out);
    let result = read_result(&out, &path);
    // The search's answer stands; its hold did not, and that fails the command.
    assert_eq!(result.ceiling, Some(400.0), "{text}");
    assert_eq!(result.limited_by, LimitedBy::Range);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let hold = result.hold.as_ref().expect("a hold");
    assert!(!hold.held && !hold.interrupted, "{hold:?}\n{text}");
    assert_figures(hold, 400.0, 4.0);
    let reason = hold.reason.clone().unwrap();
    // What broke, by name: the latency rule and the keep-up rule, and the trend.
    assert!(reason.contains("p95 < 100ms ("), "{reason}");
    assert!(reason.contains("did not keep up (achieved "), "{reason}");
    assert!(reason.contains("p95 rose from "), "{reason}");
    assert!(
        hold.p95_last_ms.unwrap() > 10.0 * hold.p95_first_ms.unwrap(),
        "{hold:?}"
    );
    assert!(hold.p95_slope_ms_per_min.unwrap() > 0.0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let first = stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("Did not hold for 4s at 400 req/s: p95 < 100ms ("),
        "{stdout}"
    );
    assert!(
        stdout.contains("Ceiling:    at least 400 req/s (a lower bound), did not hold for 4s"),
        "{stdout}"
    );
}

#[test]
fn ctrl_c_during_the_hold_keeps_the_answer_and_marks_the_hold_interrupted() {
    let _one = serial();
    let t = target(4, 5);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/work", t.url());
    let mut args = vec!["--url", &url, "--from", "100", "--to", "200"];
    args.extend(QUICK);
    args.extend(["--hold", "60s"]);
    let path = dir.path().join("r.json");
    let (live, _) = Live::start(&args, &path).wait_for("holding ");
    thread::sleep(Duration::from_millis(2000));
    let stop = Instant::now();
    let kill = Command::new("kill")
        .args(["-INT", &live.child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = live.finish();
    assert!(
        stop.elapsed() < Duration::from_secs(10),
        "headroom took {:?} to stop",
        stop.elapsed()
    );
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(105), "{text}");
    let result = read_result(&out, &path);
    assert_eq!(result.ceiling, Some(200.0), "{text}");
    assert!(result.found(), "the answer is kept: {text}");
    let hold = result.hold.as_ref().expect("a hold");
    assert!(hold.interrupted && !hold.held, "{hold:?}");
    assert!(hold.measured_s > 0.5 && hold.measured_s < 30.0, "{hold:?}");
    assert_adds_up(&hold.summary);
    assert!(
        hold.reason
            .as_deref()
            .is_some_and(|r| r.starts_with("interrupted after ") && r.ends_with(" of 1m")),
        "{hold:?}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("Hold at 200 req/s interrupted after "),
        "{stdout}"
    );
}

#[test]
fn a_bad_hold_is_refused_before_any_load() {
    for (bad, says) in [
        ("2s", "expected a hold of at least 3s"),
        ("0s", "expected a hold of at least 3s"),
        ("10", "expected a duration such as 10m"),
        ("soon", "expected a duration such as 10m"),
        ("9000h", "at most a year"),
    ] {
        let out = run_headroom(
            ["find", "--url", "http://127.0.0.1:9/", "--hold", bad],
            LIMIT,
        );
        let text = all_output(&out);
        assert_eq!(out.status.code(), Some(2), "{bad}: {text}");
        assert!(
            text.contains("--hold") && text.contains(says),
            "{bad}: {text}"
        );
        assert!(!text.contains("step "), "{bad}: {text}");
    }
}
