//! Issue 23 item 4: `find` names the bottleneck with evidence, each kind against a
//! real setup on loopback — nginx with one worker pinned to one core (CPU), nginx with
//! a low `worker_rlimit_nofile` (descriptors), the built-in target's worker pool from
//! its own metrics, the built-in target on a PostgreSQL with a small
//! `max_connections` (connections), and a server in a cgroup v2 CPU quota (throttling).

use std::path::Path;
use std::process::Output;

use headroom::search::bottleneck::{attribute, Confidence, Kind};
use headroom::search::{LimitedBy, SearchResult};

use super::{all_output, find, serial, QUICK, SLO};
use crate::support::{prose, Nginx, NginxExtra};

/// The search ended at a failure and named `kind`, at or near its cap, with the
/// failing step's figure no lower than the passing step's (at the ceiling a resource
/// may already be full) and above the first, lightest step's; the text says it in one
/// line and the JSON in the contract's keys.
fn assert_named(result: &SearchResult, out: &Output, kind: Kind) {
    let text = all_output(out);
    assert_eq!(result.limited_by, LimitedBy::Thresholds, "{text}");
    let b = result
        .bottleneck
        .as_ref()
        .unwrap_or_else(|| panic!("no bottleneck named\n{text}"));
    assert_eq!(b.top.kind, kind, "{b:#?}\n{text}");
    assert!(b.top.confidence >= Confidence::Medium, "{b:#?}");
    let e = &b.top.evidence[0];
    assert_eq!(Some(e.failing.rate), result.failed_at, "{b:#?}");
    let p = e
        .passing
        .unwrap_or_else(|| panic!("no passing figure: {b:#?}"));
    assert_eq!(Some(p.rate), result.ceiling, "{b:#?}");
    // At the ceiling the resource may already be full, and two full readings differ
    // by their sampling: the failing one is not lower beyond that.
    assert!(e.failing.value >= 0.9 * p.value, "{b:#?}");
    let first = &result.steps[0];
    let failing = result
        .steps
        .iter()
        .find(|s| Some(s.rate) == result.failed_at && !s.passed)
        .unwrap();
    let light = attribute(
        Some((first.rate, &first.summary)),
        (failing.rate, &failing.summary),
    )
    .unwrap();
    let rose = light.top.evidence[0].passing.unwrap();
    assert!(
        rose.value < e.failing.value,
        "{} at the first step is no lower: {light:#?}",
        e.figure
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("Bottleneck: "))
        .unwrap_or_else(|| panic!("no Bottleneck line\n{stdout}"));
    assert!(line.contains(&b.top.what), "{line}");
    // The raw JSON carries the contract's names.
    let json: serde_json::Value = serde_json::to_value(result).unwrap();
    for key in ["what", "kind", "evidence", "confidence"] {
        assert!(json["bottleneck"].get(key).is_some(), "{key}: {json}");
    }
}

/// A scenario of `GET path` on `url` with gzip accepted, thresholds p95 and errors.
fn scenario(dir: &Path, url: &str, path: &str, p95: &str) -> String {
    let file = dir.join("s.yaml");
    std::fs::write(
        &file,
        format!(
            "name: neck\ntarget: {url}\nthresholds: [\"p95 < {p95}\", \"errors < 1%\"]\n\
             requests:\n  - {{path: {path}, headers: {{accept-encoding: gzip}}}}\n"
        ),
    )
    .unwrap();
    file.display().to_string()
}

#[test]
fn nginx_with_one_worker_pinned_to_one_core_is_named_at_one_core() {
    let _one = serial();
    // One worker on CPU 1 only; gzipping 128 KiB costs it about 2.5 ms a request, so
    // one core serves about 400 requests/s, far below what the generator can send.
    let nginx = Nginx::start_with(&NginxExtra {
        main: "worker_cpu_affinity 10;".into(),
        ..NginxExtra::default()
    });
    nginx.put_file("big.txt", &prose(128 * 1024));
    let worker = nginx.worker_pids()[0];
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), &nginx.url(), "/files/big.txt", "100ms");
    let spec = format!("pid:{}", nginx.pid());
    let mut args = vec![file.as_str(), "--from", "50", "--to", "1600"];
    args.extend(QUICK);
    args.extend(["--watch", &spec, "--watch-interval", "250ms"]);
    let (out, result) = find(&args, &dir.path().join("r.json"));
    assert_named(&result, &out, Kind::Cpu);
    let b = result.bottleneck.as_ref().unwrap();
    assert_eq!(b.top.what, format!("nginx (pid {worker})"), "{b:#?}");
    assert_eq!(b.top.evidence[0].cap, Some(1.0), "{b:#?}");
    assert!(b.top.state.contains("1 core"), "{b:#?}");
}

#[test]
fn nginx_with_a_low_descriptor_limit_is_named_out_of_descriptors() {
    let _one = serial();
    // Each request holds two of the worker's 64 descriptors for 200 ms (the client's
    // connection and the one to the upstream), so about 25 fit: near 120 requests/s.
    let upstream = super::target(1, 1);
    let nginx = Nginx::start_with(&NginxExtra {
        rlimit_nofile: Some(64),
        locations: format!("location /up/ {{ proxy_pass {}/; }}", upstream.url()),
        ..NginxExtra::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), &nginx.url(), "/up/slow?ms=200", "500ms");
    let spec = format!("pid:{}", nginx.pid());
    let mut args = vec![file.as_str(), "--from", "20", "--to", "800"];
    args.extend(QUICK);
    args.extend(["--connections", "400", "--timeout", "2s"]);
    args.extend(["--watch", &spec, "--watch-interval", "250ms"]);
    let (out, result) = find(&args, &dir.path().join("r.json"));
    assert_named(&result, &out, Kind::Fds);
    let b = result.bottleneck.as_ref().unwrap();
    assert_eq!(b.top.evidence[0].cap, Some(64.0), "{b:#?}");
    assert!(b.top.what.starts_with("nginx (pid:"), "{b:#?}");
}

#[test]
fn the_built_in_targets_worker_pool_is_named_from_its_own_metrics() {
    let _one = serial();
    // 4 workers × 5 ms: 800 requests/s, past which all 4 are busy all the time.
    let t = super::target(4, 5);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/work", t.url());
    let spec = format!(
        "prometheus:{}/metrics#headroom_target_workers_busy,headroom_target_workers",
        t.url()
    );
    let mut args = vec!["--url", &url, "--from", "200"];
    args.extend(QUICK);
    args.extend(super::CAPS);
    args.extend(SLO);
    args.extend(["--watch", &spec, "--watch-interval", "250ms"]);
    let store = dir.path().join("h.db").display().to_string();
    args.extend(["--store", &store]);
    let (out, result) = find(&args, &dir.path().join("r.json"));
    assert_named(&result, &out, Kind::Workers);
    let b = result.bottleneck.as_ref().unwrap();
    assert_eq!(b.top.evidence[0].cap, Some(4.0), "{b:#?}");
    assert_eq!(b.top.confidence, Confidence::High, "{b:#?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("all busy: 4 of 4 busy at "), "{stdout}");
    // The stored search's report names it too, from the stored steps' watches.
    let md = crate::support::run_headroom(["report", "latest", "--store", &store], super::LIMIT);
    let md = String::from_utf8_lossy(&md.stdout);
    let line = md
        .lines()
        .find(|l| l.starts_with("Bottleneck: "))
        .unwrap_or_else(|| panic!("no Bottleneck line in the report\n{md}"));
    assert!(line.contains("all busy: 4 of 4 busy at "), "{line}");
}

#[test]
fn the_built_in_target_on_a_postgres_with_few_connections_is_named_at_max_connections() {
    // Six connections, one kept for superusers: five for the target's pool (which would
    // open 16) as the role `app`, and the reserved one for the watch, which connects
    // again at each step (as a monitoring superuser does once the others are taken).
    // Each commit waits 20 ms for its WAL flush (`commit_delay`, which needs fsync on),
    // so past about 5 / 21 ms ≈ 240 requests/s the pool wants a sixth connection and
    // the server refuses it.
    let Some(cluster) = crate::support::statements_cluster(&[
        "max_connections=6",
        "superuser_reserved_connections=1",
        "max_wal_senders=0",
        "fsync=on",
        "commit_delay=20000",
        "commit_siblings=0",
    ]) else {
        return;
    };
    let _one = serial();
    crate::support::pg_execute(
        &cluster.url(),
        "CREATE ROLE app LOGIN; GRANT ALL ON SCHEMA public TO app",
    );
    let t = headroom::target::spawn(headroom::target::TargetOptions {
        postgres: Some(cluster.url().replacen("postgres@", "app@", 1)),
        ..headroom::target::TargetOptions::loopback()
    })
    .expect("the built-in target on PostgreSQL");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tasks.yaml");
    std::fs::write(
        &file,
        format!(
            "name: tasks\ntarget: {}\nthresholds: [\"p95 < 200ms\", \"errors < 1%\"]\n\
             requests:\n  - {{name: create, method: POST, path: /tasks, json: {{name: a}}}}\n",
            t.url()
        ),
    )
    .unwrap();
    let file = file.display().to_string();
    let spec = format!("postgres:{}", cluster.url());
    let mut args = vec![file.as_str(), "--from", "20", "--to", "2000"];
    args.extend(QUICK);
    args.extend(super::CAPS);
    args.extend(["--watch", &spec, "--watch-interval", "250ms"]);
    let (out, result) = find(&args, &dir.path().join("r.json"));
    assert_named(&result, &out, Kind::Connections);
    let b = result.bottleneck.as_ref().unwrap();
    let e = &b.top.evidence[0];
    assert_eq!((e.cap, e.failing.value), (Some(6.0), 6.0), "{b:#?}");
    assert_eq!(b.top.confidence, Confidence::High, "{b:#?}");
}

/// A child cgroup v2 with a CPU quota, removed when dropped (once its processes are gone).
struct QuotaCgroup {
    dir: std::path::PathBuf,
}

impl QuotaCgroup {
    /// A child of the cgroup2 mount limited to `quota` cores, or why this machine
    /// cannot make one (no cgroup2, no cpu controller to enable, not writable).
    fn create(quota: f64) -> Result<QuotaCgroup, String> {
        let info = std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| e.to_string())?;
        let mount = info
            .lines()
            .find_map(|l| {
                let (before, after) = l.split_once(" - ")?;
                let point = before.split_whitespace().nth(4)?;
                after
                    .starts_with("cgroup2 ")
                    .then(|| std::path::PathBuf::from(point))
            })
            .ok_or("no cgroup2 file system in /proc/self/mountinfo")?;
        let controllers = std::fs::read_to_string(mount.join("cgroup.controllers"))
            .map_err(|e| format!("{}: {e}", mount.display()))?;
        if !controllers.split_whitespace().any(|c| c == "cpu") {
            return Err(format!(
                "the cpu controller is not on the cgroup v2 hierarchy at {} (controllers: {:?})",
                mount.display(),
                controllers.trim()
            ));
        }
        std::fs::write(mount.join("cgroup.subtree_control"), "+cpu")
            .map_err(|e| format!("cannot enable the cpu controller for children: {e}"))?;
        let dir = mount.join(format!("headroom-neck-{}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let cg = QuotaCgroup { dir };
        let period = 100_000;
        std::fs::write(
            cg.dir.join("cpu.max"),
            format!("{} {period}", (quota * period as f64) as u64),
        )
        .map_err(|e| format!("cpu.max: {e}"))?;
        Ok(cg)
    }

    /// Moves process `pid` into the cgroup.
    fn add(&self, pid: u32) {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string())
            .unwrap_or_else(|e| panic!("move {pid} into {}: {e}", self.dir.display()));
    }
}

impl Drop for QuotaCgroup {
    fn drop(&mut self) {
        // The processes were stopped before (declared after the cgroup, dropped first);
        // rmdir fails while the kernel still counts them, so give it a moment.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

#[test]
fn nginx_in_a_cgroup_with_a_cpu_quota_is_named_throttled() {
    let Some(cgroup) = crate::support::machine_feature(
        "a cgroup v2 with the cpu controller",
        QuotaCgroup::create(0.2),
    ) else {
        return;
    };
    let _one = serial();
    // A fifth of a core: at about 2.5 ms of gzip a request, near 80 requests/s.
    let nginx = Nginx::start();
    cgroup.add(nginx.pid());
    for worker in nginx.worker_pids() {
        cgroup.add(worker);
    }
    nginx.put_file("big.txt", &prose(128 * 1024));
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), &nginx.url(), "/files/big.txt", "100ms");
    let spec = format!("cgroup:{}", cgroup.dir.display());
    let mut args = vec![file.as_str(), "--from", "10", "--to", "400"];
    args.extend(QUICK);
    args.extend(["--watch", &spec, "--watch-interval", "250ms"]);
    let (out, result) = find(&args, &dir.path().join("r.json"));
    assert_named(&result, &out, Kind::Throttling);
    let b = result.bottleneck.as_ref().unwrap();
    assert_eq!(b.top.evidence[0].figure, "throttled_share", "{b:#?}");
    assert!(b.top.evidence[0].failing.value >= 0.2, "{b:#?}");
}
