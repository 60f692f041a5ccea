//! `headroom run --watch` end to end (issue 4): the built binary watching real
//! processes, a cgroup, a throwaway PostgreSQL and the built-in target's `/metrics`
//! while it drives load on loopback. One module per kind of watch; specs that cannot
//! start are checked here.

mod generator;
mod postgres;
mod process;
mod prometheus;
mod prometheus_tls;

use std::path::{Path, PathBuf};
use std::process::{Child, Output};
use std::time::Duration;

use headroom::metrics::summary::Summary;
use headroom::watch::WatchSummary;

use crate::support::{run_headroom, run_with_summary};

const LIMIT: Duration = Duration::from_secs(90);

/// Runs `headroom run ARGS... --quiet --out DIR/s.json` and returns its output and summary.
fn run(dir: &Path, args: &[&str]) -> (Output, Summary) {
    run_with_summary(dir, args, LIMIT)
}

/// Runs `headroom run --url URL --rate RATE --duration DURATION --watch SPEC` as [`run`]
/// does.
fn run_watching(
    dir: &Path,
    url: &str,
    rate: &str,
    duration: &str,
    spec: &str,
) -> (Output, Summary) {
    run(
        dir,
        &[
            "--url",
            url,
            "--rate",
            rate,
            "--duration",
            duration,
            "--watch",
            spec,
        ],
    )
}

/// The watch of `s` with this spec; fails the test when there is none.
fn watch<'a>(s: &'a Summary, spec: &str) -> &'a WatchSummary {
    s.watches
        .iter()
        .find(|w| w.spec == spec)
        .unwrap_or_else(|| panic!("no watch {spec} in {:?}", s.watches))
}

/// A child process killed (and reaped) when dropped.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loopback listener no one should connect to; `connected()` says whether anyone did.
struct Untouched(std::net::TcpListener);

impl Untouched {
    fn new() -> Untouched {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        Untouched(l)
    }
    fn url(&self) -> String {
        format!("http://{}", self.0.local_addr().unwrap())
    }
    fn connected(&self) -> bool {
        self.0.accept().is_ok()
    }
}

#[test]
fn a_watch_that_cannot_start_is_bad_input_naming_it_before_any_load() {
    let target = Untouched::new();
    for (spec, says) in [
        ("pid:abc", "expected a process id"),
        ("disk:/dev/sda", "unknown kind"),
        ("docker:db", "no Docker engine is reachable"),
        ("process:no-such-process-here", "no process named"),
        ("cgroup:/no/such/cgroup/here", "cpu.stat"),
        ("prometheus:http://127.0.0.1:1/metrics", "connect"),
    ] {
        let out = run_headroom(
            [
                "run",
                "--url",
                &target.url(),
                "--rate",
                "10",
                "--duration",
                "1s",
                "--watch",
                spec,
            ],
            LIMIT,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{spec}: {err}");
        assert!(err.contains(spec) && err.contains(says), "{spec}: {err}");
    }
    assert!(!target.connected(), "load was sent despite a bad watch");
    // The same check applies to a scenario's `watch` list, with the file position.
    let dir = tempfile::tempdir().unwrap();
    let file: PathBuf = dir.path().join("w.yaml");
    std::fs::write(
        &file,
        format!(
            "target: {}\nwatch: [\"pid:x\"]\nrequests: [{{path: /}}]\n",
            target.url()
        ),
    )
    .unwrap();
    let out = run_headroom(["run", file.to_str().unwrap(), "--rate", "10"], LIMIT);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("watch[0]") && err.contains("w.yaml:2:"),
        "{err}"
    );
}
