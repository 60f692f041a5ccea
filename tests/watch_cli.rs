//! `headroom run --watch` end to end (issue 4): the built binary watching real
//! processes, a cgroup, a throwaway PostgreSQL and the built-in target's `/metrics`
//! while it drives load on loopback.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use headroom::metrics::summary::Summary;
use headroom::target::{self, TargetOptions};
use headroom::watch::{Detail, WatchSummary};

use crate::support::{run_headroom, Cluster, Nginx};

const LIMIT: Duration = Duration::from_secs(90);

/// Runs `headroom run ARGS... --quiet --out DIR/s.json` and returns its output and summary.
fn run(dir: &Path, args: &[&str]) -> (Output, Summary) {
    let out_file = dir.join("s.json");
    let mut all: Vec<String> = vec!["run".into()];
    all.extend(args.iter().map(|a| a.to_string()));
    all.extend([
        "--quiet".into(),
        "--out".into(),
        out_file.display().to_string(),
    ]);
    let out = run_headroom(&all, LIMIT);
    let text = std::fs::read_to_string(&out_file).unwrap_or_else(|e| {
        panic!(
            "no summary ({e}); stderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let summary = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    (out, summary)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

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

#[test]
fn an_nginx_worker_shows_cpu_under_load_and_the_generator_comes_first() {
    let nginx = Nginx::start();
    let worker = nginx.worker_pids()[0];
    let spec = format!("pid:{worker}");
    let dir = tempfile::tempdir().unwrap();
    let (out, s) = run(
        dir.path(),
        &[
            "--url",
            &nginx.url(),
            "--rate",
            "3000",
            "--duration",
            "3s",
            "--watch",
            &spec,
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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

/// Creates the extension in the cluster's database.
fn create_extension(url: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .expect("connect to the test cluster");
        tokio::spawn(conn);
        client
            .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            .await
            .expect("create pg_stat_statements");
    });
}

#[test]
fn postgres_watch_shows_the_targets_insert_and_dead_tuples_after_deletes() {
    let cluster = match Cluster::start_with(&[
        "shared_preload_libraries=pg_stat_statements",
        // Dead tuples must still be there when the run ends.
        "autovacuum=off",
    ]) {
        Ok(c) => c,
        Err(reason) => {
            println!("skipping the PostgreSQL watch test: {reason}");
            return;
        }
    };
    create_extension(&cluster.url());
    let t = target::spawn(TargetOptions {
        postgres: Some(cluster.url()),
        ..TargetOptions::loopback()
    })
    .expect("target on PostgreSQL");
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("tasks.yaml");
    std::fs::write(
        &scenario,
        format!(
            "name: tasks\ntarget: {}\nload: {{model: arrival-rate, rate: 100, duration: 3s}}\n\
             watch: [\"postgres:{}\"]\n\
             requests:\n  - {{name: create, method: POST, path: /tasks, json: {{name: a}}}}\n\
             flows:\n  - name: create_delete\n    steps:\n\
             \x20     - request: {{method: POST, path: /tasks, json: {{name: b}}}}\n\
             \x20       capture: {{id: \"$.id\"}}\n\
             \x20     - request: {{method: DELETE, path: \"/tasks/{{{{ id }}}}\"}}\n",
            t.url(),
            cluster.url()
        ),
    )
    .unwrap();
    let (out, s) = run(dir.path(), &[scenario.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(s.errors.count, 0, "{:?}", s.errors);
    let w = watch(&s, &format!("postgres:{}", cluster.url()));
    assert!(w.notices.is_empty(), "{:?}", w.notices);
    let Detail::Postgres(p) = &w.detail else {
        panic!("not a postgres watch: {w:?}")
    };
    let insert = p
        .top_queries
        .iter()
        .find(|q| q.query.to_uppercase().starts_with("INSERT"))
        .unwrap_or_else(|| panic!("no INSERT among {:?}", p.top_queries));
    assert!(insert.calls > 0 && insert.total_ms > 0.0, "{insert:?}");
    let dead: i64 = p.tables.iter().map(|t| t.dead).sum();
    assert!(dead > 0, "no dead tuples after deletes: {:?}", p.tables);
    assert!(
        p.connections.limit > 0 && p.connections.max >= 1,
        "{:?}",
        p.connections
    );
    assert!(p.tps.max > 0.0, "{:?}", p.tps);
    assert!(
        stdout(&out).contains("top queries during the run"),
        "{}",
        stdout(&out)
    );
    t.shutdown();
}

#[test]
fn a_postgres_without_the_extension_is_a_notice_and_an_unreachable_one_is_bad_input() {
    let cluster = match Cluster::start() {
        Ok(c) => c,
        Err(reason) => {
            println!("skipping: {reason}");
            return;
        }
    };
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let spec = format!("postgres:{}", cluster.url());
    let (out, s) = run(
        dir.path(),
        &[
            "--url",
            &nginx.url(),
            "--rate",
            "50",
            "--duration",
            "2s",
            "--watch",
            &spec,
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let w = watch(&s, &spec);
    assert!(
        w.notices.iter().any(|n| n.contains("pg_stat_statements")),
        "{:?}",
        w.notices
    );
    drop(cluster);
    let out = run_headroom(
        [
            "run",
            "--url",
            &nginx.url(),
            "--rate",
            "50",
            "--duration",
            "2s",
            "--watch",
            &spec,
        ],
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&spec));
}

#[test]
fn prometheus_watch_sees_the_targets_request_counter_grow() {
    let t = target::spawn(TargetOptions::loopback()).expect("target");
    let dir = tempfile::tempdir().unwrap();
    let spec = format!(
        "prometheus:{}/metrics#headroom_target_requests_total",
        t.url()
    );
    let (out, s) = run(
        dir.path(),
        &[
            "--url",
            &format!("{}/health", t.url()),
            "--rate",
            "500",
            "--duration",
            "3s",
            "--watch",
            &spec,
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let w = watch(&s, &spec);
    let Detail::Prometheus(p) = &w.detail else {
        panic!("not a prometheus watch: {w:?}")
    };
    let health = p
        .series
        .iter()
        .find(|x| x.series.contains("endpoint=\"health\""))
        .unwrap_or_else(|| panic!("no health series in {:?}", p.series));
    assert!(health.series.starts_with("headroom_target_requests_total{"));
    assert_eq!(health.kind, "counter");
    assert!(health.last - health.first >= 1000.0, "{health:?}");
    let rate = health.rate_per_s.unwrap();
    assert!((300.0..700.0).contains(&rate), "rate {rate}");
    assert!(p
        .series
        .iter()
        .all(|x| x.series.starts_with("headroom_target_requests_total")));
    t.shutdown();
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
    let (out, s) = run(
        dir.path(),
        &[
            "--url",
            &nginx.url(),
            "--rate",
            "200",
            "--duration",
            "4s",
            "--watch",
            &spec,
        ],
    );
    killer.join().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
    let (out, s) = run(
        dir.path(),
        &[
            "--url",
            &nginx.url(),
            "--rate",
            "50",
            "--duration",
            "2s",
            "--watch",
            &spec,
        ],
    );
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

#[test]
fn an_impossible_rate_on_one_thread_is_a_generator_bound_warning() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let (out, s) = run(
        dir.path(),
        &[
            "--url",
            &nginx.url(),
            "--rate",
            "1000000",
            "--threads",
            "1",
            "--duration",
            "2s",
        ],
    );
    assert!(s.generator.bound, "{:?}", s.generator);
    let g = &s.watches[0];
    let Detail::Generator(d) = &g.detail else {
        panic!("first watch is not the generator")
    };
    assert!(d.bound && d.reason == s.generator.reason, "{d:?}");
    assert!(!g.warnings.is_empty(), "{g:?}");
    assert!(d.cpu_cores.max > 0.5, "{:?}", d.cpu_cores);
    assert!(
        stdout(&out).contains("WARNING (self): the generator"),
        "{}",
        stdout(&out)
    );
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
    let Some(mount) = cgroup2_mount() else {
        println!("skipping the cgroup watch test: cgroup v2 is not mounted");
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
    let (out, s) = run(
        out_dir.path(),
        &[
            "--url",
            &nginx.url(),
            "--rate",
            "50",
            "--duration",
            "3s",
            "--watch",
            &spec,
        ],
    );
    drop(busy);
    if own {
        // The emptied cgroup can be removed once its process is reaped.
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::fs::remove_dir(&dir).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
