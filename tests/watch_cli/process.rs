//! Process and cgroup watches: a process's CPU and file descriptors, a gap when it
//! dies mid-run, and a busy cgroup's CPU.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use headroom::watch::Detail;

use super::{run_watching, watch, Reaped};
use crate::support::{assert_exit, machine_feature, prose, stdout, Nginx};

#[test]
fn an_nginx_worker_shows_cpu_under_load_and_the_generator_comes_first() {
    let nginx = Nginx::start();
    let worker = nginx.worker_pids()[0];
    let spec = format!("pid:{worker}");
    let dir = tempfile::tempdir().unwrap();
    let (out, s) = run_watching(dir.path(), &nginx.url(), "3000", "3s", &spec);
    assert_exit(&out, 0);
    assert_eq!(s.watches[0].spec, "self");
    let Detail::Generator(g) = &s.watches[0].detail else {
        panic!("the first watch is not the generator: {:?}", s.watches[0])
    };
    assert!(g.cpu_cores.max > 0.0 && g.rss_mb.max > 0.0, "{g:?}");
    let w = watch(&s, &spec);
    let Detail::Process(p) = &w.detail else {
        panic!("not a process watch: {w:?}")
    };
    assert!(p.cpu_cores.max > 0.0, "nginx worker CPU {:?}", p.cpu_cores);
    assert!(p.samples.len() >= 2, "{} samples", p.samples.len());
    assert!(p.fds.limit.is_some() && p.fds.max > 0, "{:?}", p.fds);
    let text = stdout(&out);
    assert!(text.contains("Resource profile"), "{text}");
    assert!(text.contains(&spec), "{text}");
    // The JSON carries the kind by name, as the contract says.
    let raw = std::fs::read_to_string(dir.path().join("s.json")).unwrap();
    assert!(raw.contains("\"kind\": \"process\""), "{raw}");
}

#[test]
fn a_watched_process_killed_mid_run_leaves_a_gap_and_the_run_goes_on() {
    let nginx = Nginx::start();
    let sleeper = Reaped(Command::new("sleep").arg("30").spawn().unwrap());
    let pid = sleeper.0.id();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        // Killed and reaped.
        drop(sleeper);
    });
    let dir = tempfile::tempdir().unwrap();
    let spec = format!("pid:{pid}");
    let (out, s) = run_watching(dir.path(), &nginx.url(), "200", "4s", &spec);
    killer.join().unwrap();
    assert_exit(&out, 0);
    assert!(s.requests >= 700, "{}", s.requests);
    let w = watch(&s, &spec);
    assert_eq!(w.gaps.len(), 1, "{:?}", w.gaps);
    let gap = &w.gaps[0];
    assert!(gap.reason.contains("gone"), "{gap:?}");
    assert!(gap.from_t >= 1.0 && gap.to_t > gap.from_t, "{gap:?}");
    assert!(stdout(&out).contains("gap in"), "{}", stdout(&out));
}

/// Open file descriptors of `pid`, or 0 when unreadable.
fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

#[test]
fn fds_near_a_low_ulimit_raise_a_warning() {
    // 52 extra descriptors under a limit of 64: with stdin/out/err, 55 of 64 (86%).
    let holder = Reaped(
        Command::new("bash")
            .args([
                "-c",
                "ulimit -n 64; for i in $(seq 52); do exec {fd}</dev/null; done; exec sleep 30",
            ])
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = holder.0.id();
    let deadline = Instant::now() + Duration::from_secs(10);
    while fd_count(pid) < 55
        || !std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep")
    {
        assert!(Instant::now() < deadline, "the fd holder did not get ready");
        std::thread::sleep(Duration::from_millis(20));
    }
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let spec = format!("pid:{pid}");
    let (out, s) = run_watching(dir.path(), &nginx.url(), "50", "2s", &spec);
    let w = watch(&s, &spec);
    let Detail::Process(p) = &w.detail else {
        panic!("not a process watch")
    };
    assert_eq!(p.fds.limit, Some(64));
    assert!(p.fds.max >= 55, "{:?}", p.fds);
    assert!(
        w.warnings
            .iter()
            .any(|x| x.contains("of the soft limit 64")),
        "{:?}",
        w.warnings
    );
    assert!(stdout(&out).contains("WARNING (pid:"), "{}", stdout(&out));
    drop(holder);
}

/// The cgroup v2 mount point, if any.
fn cgroup2_mount() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|l| {
        let (before, after) = l.split_once(" - ")?;
        let point = before.split_whitespace().nth(4)?;
        after.starts_with("cgroup2 ").then(|| PathBuf::from(point))
    })
}

#[test]
fn a_cgroup_with_a_busy_process_shows_its_cpu() {
    let found = cgroup2_mount().ok_or("no cgroup2 file system in /proc/self/mountinfo");
    let Some(mount) = machine_feature("cgroup v2", found) else {
        return;
    };
    let name = format!("headroom-watch-test-{}", std::process::id());
    let dir = mount.join(&name);
    let busy = Reaped(
        Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap(),
    );
    // A child cgroup of our own when the hierarchy is writable; else our own cgroup.
    let (spec, own) = match std::fs::create_dir(&dir)
        .and_then(|()| std::fs::write(dir.join("cgroup.procs"), busy.0.id().to_string()))
    {
        Ok(()) => (format!("cgroup:/{name}"), true),
        Err(e) => {
            println!("cannot make a child cgroup ({e}); watching our own");
            let _ = std::fs::remove_dir(&dir);
            let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
            let path = own
                .lines()
                .find_map(|l| l.strip_prefix("0::"))
                .unwrap()
                .to_string();
            (format!("cgroup:{path}"), false)
        }
    };
    let nginx = Nginx::start();
    let out_dir = tempfile::tempdir().unwrap();
    let (out, s) = run_watching(out_dir.path(), &nginx.url(), "50", "3s", &spec);
    drop(busy);
    if own {
        // The emptied cgroup can be removed once its process is reaped.
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::fs::remove_dir(&dir).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    assert_exit(&out, 0);
    let w = watch(&s, &spec);
    let Detail::Cgroup(c) = &w.detail else {
        panic!("not a cgroup watch: {w:?}")
    };
    assert!(c.samples.len() >= 2, "{c:?}");
    assert!(
        c.cpu_cores.avg > 0.3,
        "a busy loop should use most of a core: {:?}",
        c.cpu_cores
    );
    assert!(stdout(&out).contains(&spec), "{}", stdout(&out));
}

#[test]
fn a_master_pid_covers_its_workers_cpu() {
    // The master does no serving: before the watch covered descendants it showed 0 CPU.
    let nginx = Nginx::start();
    assert!(!nginx.worker_pids().is_empty(), "nginx started no worker");
    // Gzipping 128 KiB per request keeps the worker busy for ms at a gentle rate, so its
    // CPU is well above the 10 ms resolution of /proc's counters.
    nginx.put_file("big.txt", &prose(128 * 1024));
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("gz.yaml");
    std::fs::write(
        &scenario,
        format!(
            "target: {}\nrequests:\n  - {{path: /files/big.txt, headers: {{accept-encoding: gzip}}}}\n",
            nginx.url()
        ),
    )
    .unwrap();
    let spec = format!("pid:{}", nginx.pid());
    let (out, s) = super::run(
        dir.path(),
        &[
            scenario.to_str().unwrap(),
            "--rate",
            "20",
            "--duration",
            "3s",
            "--watch",
            &spec,
            "--watch-interval",
            "500ms",
        ],
    );
    assert_exit(&out, 0);
    assert!(s.errors.count == 0, "{:?}", s.errors);
    let w = watch(&s, &spec);
    let Detail::Process(p) = &w.detail else {
        panic!("not a process watch: {w:?}")
    };
    assert!(p.processes >= 2, "master and worker: {p:?}");
    assert!(p.processes_seen >= p.processes, "{p:?}");
    assert_eq!(p.command.as_deref(), Some("nginx"));
    // About 0.1 core here; the master alone shows 0.
    assert!(
        p.cpu_cores.avg > 0.02,
        "nginx master + worker CPU {:?}",
        p.cpu_cores
    );
    assert!(
        p.samples.iter().all(|x| x.processes >= 2),
        "{:?}",
        p.samples
    );
    let text = stdout(&out);
    assert!(
        text.contains(&format!("{spec} (nginx + 1 descendant)")),
        "{text}"
    );
    let raw = std::fs::read_to_string(dir.path().join("s.json")).unwrap();
    assert!(raw.contains("\"processes\": 2"), "{raw}");
}
