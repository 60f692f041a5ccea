//! A killed run keeps its numbers (issue 31): `kill -9` of runs, searches and sharded
//! runs at pseudo-random instants, against the built-in target on loopback; every run
//! is read back from its store, in every report format, and its summary so far must
//! add up and agree with the seconds stored beside it.
//!
//! The instants come from a seed printed by the test (`HEADROOM_KILL_SEED` replays
//! one). Kills run in four lanes at once, each with its own store: the figures are not
//! judged for speed, only for being whole.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use headroom::metrics::summary::Summary;
use headroom::store::{RunStatus, Store, StoredRun};
use headroom::target::{self, TargetOptions};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use crate::support::{assert_adds_up, headroom_bin, run_headroom, stderr, stdout};

const LIMIT: Duration = Duration::from_secs(60);

/// Kills run this many at a time: most of each is waiting for its instant.
const LANES: usize = 4;

/// What is killed, and how long after its start.
#[derive(Debug, Clone)]
struct Kill {
    kind: Kind,
    after: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// `run`, 4 s at 300/s.
    Run,
    /// `find`, 3 s steps: killed during a step or between two.
    Find,
    /// `run --shards 2`, 2 s: killed mid-run or while the coordinator merges.
    Sharded,
}

/// A small xorshift, so a seed replays the same instants.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn kills(seed: u64) -> Vec<Kill> {
    let mut rng = Rng(seed | 1);
    let mut out = Vec::new();
    // Runs: anywhere from before the first second to the end.
    for _ in 0..12 {
        let after = Duration::from_millis(200 + rng.below(3_700));
        out.push(Kill {
            kind: Kind::Run,
            after,
        });
    }
    // Searches: within their first three steps, mid-step or between two.
    for _ in 0..4 {
        let after = Duration::from_millis(1_000 + rng.below(9_000));
        out.push(Kill {
            kind: Kind::Find,
            after,
        });
    }
    // Sharded runs: two mid-run, two at the end of their 2 s, where the coordinator
    // merges the shards' last seconds and shares (a 2 s run ends about 2.1 s in).
    for i in 0..4 {
        let after = match i {
            0 | 1 => Duration::from_millis(1_000 + rng.below(1_000)),
            _ => Duration::from_millis(1_950 + rng.below(170)),
        };
        out.push(Kill {
            kind: Kind::Sharded,
            after,
        });
    }
    out
}

fn args(kind: Kind, url: &str, store: &Path) -> Vec<String> {
    let work = format!("{url}/work");
    let mut args: Vec<String> = match kind {
        Kind::Run => vec![
            "run",
            "--url",
            &work,
            "--rate",
            "300",
            "--duration",
            "4s",
            "--threads",
            "2",
        ],
        Kind::Find => vec![
            "find",
            "--url",
            &work,
            "--threshold",
            "p95 < 100ms",
            "--from",
            "100",
            "--to",
            "3000",
            "--step-duration",
            "3s",
            "--warmup",
            "300ms",
            "--cooldown",
            "100ms",
            "--time-wait-limit",
            "1000000",
        ],
        Kind::Sharded => vec![
            "run",
            "--url",
            &work,
            "--rate",
            "200",
            "--duration",
            "2s",
            "--shards",
            "2",
            "--threads",
            "1",
        ],
    }
    .into_iter()
    .map(String::from)
    .collect();
    args.extend([
        "--quiet".into(),
        "--store".into(),
        store.display().to_string(),
    ]);
    args
}

/// Starts `args` in a process group of its own (a sharded run's shards with it) and
/// kills the whole group with SIGKILL `after` its start, unless it ended before.
fn kill_after(args: &[String], after: Duration) -> bool {
    let mut child = Command::new(headroom_bin())
        .args(args)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start headroom");
    let deadline = Instant::now() + after;
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let group = Pid::from_raw(child.id() as i32);
    let _ = killpg(group, Signal::SIGKILL);
    child.wait().unwrap();
    // The shards of a sharded run were in the group too; let the kernel reap them.
    let _ = killpg(group, Signal::SIGKILL);
    true
}

/// Reads the newest run of `store` back, through the library and every report
/// format of the command line, and checks what it says.
fn read_back(store: &Path, kill: &Kill, killed: bool) {
    let db = Store::open(store).expect("a killed run leaves a readable store");
    let rows = db.runs(&Default::default()).unwrap();
    let Some(row) = rows.first() else {
        // Killed before it recorded its start: nothing to read, nothing lost.
        assert!(
            kill.after < Duration::from_secs(2),
            "{kill:?}: no run stored"
        );
        return;
    };
    let run = db.load(row.id).expect("the run loads");
    let partial = run.row.summary.as_ref().and_then(|s| s.partial);
    eprintln!(
        "{kill:?}: killed {killed}, {} second(s), {} step(s), partial {partial:?}",
        run.timeline.len(),
        run.steps.len()
    );
    // A run that wrote its end is whole, even when the kill came after that write and
    // before the process exited (a sharded run killed as it ends can be): its summary
    // has no `partial`. One that did not is never `done`, and one left alone always is.
    if run.row.status == RunStatus::Done {
        assert!(partial.is_none(), "{kill:?}: done but partial");
        assert!(
            run.row.summary.is_some(),
            "{kill:?}: done without a summary"
        );
    } else {
        assert!(killed, "{kill:?}: ended on its own as {:?}", run.row.status);
        assert!(
            partial.is_some() || run.row.summary.is_none(),
            "{kill:?}: killed, not done, yet its summary is not marked partial"
        );
    }
    let store_arg = store.display().to_string();
    for format in ["md", "html", "junit"] {
        let out = run_headroom(
            [
                "report", "latest", "--format", format, "--store", &store_arg,
            ],
            LIMIT,
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{kill:?} {format}: {}",
            stderr(&out)
        );
    }
    let json = run_headroom(
        [
            "report", "latest", "--format", "json", "--store", &store_arg,
        ],
        LIMIT,
    );
    match &run.row.summary {
        Some(s) => {
            assert_eq!(json.status.code(), Some(0), "{kill:?}: {}", stderr(&json));
            let back: Summary = serde_json::from_str(&stdout(&json)).unwrap();
            assert_eq!(back.partial, s.partial);
            check(&run, s, kill);
        }
        None => {
            assert_ne!(json.status.code(), Some(0));
            assert!(stderr(&json).contains("no summary"), "{}", stderr(&json));
            // Only a run killed before its first second was recorded has none.
            assert!(
                run.timeline.is_empty() && run.steps.is_empty(),
                "{kill:?}: seconds or steps stored but no summary"
            );
        }
    }
    // Well after its start, a run has recorded seconds: it cannot have lost them.
    if killed && kill.after >= Duration::from_secs(3) && kill.kind == Kind::Run {
        let s = run.row.summary.as_ref();
        assert!(
            s.is_some_and(|s| s.partial.is_some_and(|p| p.seconds >= 1)),
            "{kill:?}: no partial summary after 3 s"
        );
    }
}

/// A summary read back adds up; a partial one agrees with the seconds stored beside
/// it (written in the same transaction) or, for a search, names its step.
fn check(run: &StoredRun, s: &Summary, kill: &Kill) {
    assert_adds_up(s);
    let Some(p) = s.partial else {
        return;
    };
    assert_eq!(p.last_second + 1, p.seconds, "{kill:?}");
    assert!(!s.by_name.is_empty(), "{kill:?}: no figures per name");
    match kill.kind {
        Kind::Find => {
            let step = p
                .step
                .unwrap_or_else(|| panic!("{kill:?}: a search's partial names its step"));
            // Killed during a step: the steps before it are stored; between steps:
            // the partial is the last step stored, whole.
            let index = step.index as usize;
            assert!(
                index == run.steps.len() || index + 1 == run.steps.len(),
                "{kill:?}: step {index} with {} stored",
                run.steps.len()
            );
            for stored in &run.steps {
                assert_adds_up(&stored.summary);
            }
        }
        Kind::Run | Kind::Sharded => {
            let last = run.timeline.last().map(|second| second.t);
            assert_eq!(last, Some(p.last_second), "{kill:?}");
            assert_eq!(s.timeline.len(), run.timeline.len(), "{kill:?}");
            let requests: u64 = run.timeline.iter().map(|second| second.requests).sum();
            assert_eq!(
                requests, s.requests,
                "{kill:?}: the seconds and the summary differ"
            );
            let errors: u64 = run.timeline.iter().map(|second| second.errors).sum();
            assert_eq!(errors, s.errors.count, "{kill:?}");
            if s.requests > 0 {
                assert!(s.latency_ms.p95 > 0.0, "{kill:?}: {:?}", s.latency_ms);
            }
        }
    }
}

#[test]
fn runs_searches_and_sharded_runs_killed_at_random_instants_read_back_whole() {
    let seed = std::env::var("HEADROOM_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("HEADROOM_KILL_SEED={seed}");
    let target = target::spawn(TargetOptions {
        workers: 8,
        service_time: Duration::from_millis(2),
        ..TargetOptions::loopback()
    })
    .expect("start the built-in target");
    let url = target.url();
    let dir = tempfile::tempdir().unwrap();
    let all = kills(seed);
    let lanes: Vec<Vec<(usize, Kill)>> = (0..LANES)
        .map(|lane| {
            all.iter()
                .cloned()
                .enumerate()
                .filter(|(i, _)| i % LANES == lane)
                .collect()
        })
        .collect();
    std::thread::scope(|scope| {
        for lane in &lanes {
            let (url, dir) = (&url, dir.path());
            scope.spawn(move || {
                for (i, kill) in lane {
                    let store: PathBuf = dir.join(format!("kill-{i}.db"));
                    let killed = kill_after(&args(kill.kind, url, &store), kill.after);
                    read_back(&store, kill, killed);
                }
            });
        }
    });
}
