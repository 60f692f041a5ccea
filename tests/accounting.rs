//! Every scheduled request accounted for, and honest exit codes, against servers that
//! misbehave in ways the engine (not the HTTP parser) must absorb: a target that never
//! answers, a run interrupted by Ctrl-C or SIGTERM, a connection pool that never frees
//! up, a generator out of file descriptors, a keep-alive connection closed under a
//! request, a target restarted mid-run. Every summary read here must add up
//! (`read_summary` asserts `scheduled = completed + failed + dropped + abandoned`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use headroom::metrics::summary::Summary;

use crate::support::{
    headroom_bin, keep_alive_server, read_summary, run_command, run_with_summary, stderr,
    test_store, Nginx,
};

const LIMIT: Duration = Duration::from_secs(60);

/// Fails unless the run ended with a verdict (0 or 99), showing its stderr.
#[track_caller]
fn assert_ran(out: &std::process::Output) {
    assert!(matches!(out.status.code(), Some(0 | 99)), "{}", stderr(out));
}

fn kind(s: &Summary, k: &str) -> u64 {
    s.errors.by_kind.get(k).copied().unwrap_or(0)
}

/// A server that accepts connections (up to `max`) and holds them open without ever
/// answering, for at most `life`.
fn black_hole(max: usize, life: Duration) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    thread::spawn(move || {
        let end = Instant::now() + life;
        let mut held = Vec::new();
        while Instant::now() < end {
            match listener.accept() {
                Ok((stream, _)) if held.len() < max => held.push(stream),
                Ok(_) => {}
                Err(_) => thread::sleep(Duration::from_millis(2)),
            }
        }
    });
    addr
}

/// Starts `headroom run ARGS --quiet --out DIR/s.json` without waiting for it.
fn spawn_run(args: &[&str], out: &std::path::Path) -> std::process::Child {
    Command::new(headroom_bin())
        .arg("run")
        .args(args)
        .args(["--quiet", "--out"])
        .arg(out)
        .env("HEADROOM_STORE", test_store())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start headroom")
}

/// Waits for a run started by [`spawn_run`]; returns its status and what it said.
fn wait_with_stderr(child: &mut std::process::Child) -> (std::process::ExitStatus, String) {
    let mut err = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut err);
    }
    (child.wait().unwrap(), err)
}

#[test]
fn an_interrupted_run_exits_105_with_what_was_in_flight_abandoned() {
    for signal in ["INT", "TERM"] {
        let addr = black_hole(200, Duration::from_secs(20));
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("s.json");
        let url = format!("http://{addr}/");
        // Nothing ever answers: every request begun is still in flight at the signal.
        let mut child = spawn_run(
            &[
                "--url",
                &url,
                "--rate",
                "20",
                "--duration",
                "5s",
                "--timeout",
                "10s",
            ],
            &out,
        );
        thread::sleep(Duration::from_millis(1500));
        let killed = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let sent = Instant::now();
        let (status, err) = wait_with_stderr(&mut child);
        // One second of grace for what is in flight, then out.
        assert!(
            sent.elapsed() < Duration::from_secs(4),
            "{:?}",
            sent.elapsed()
        );
        assert_eq!(status.code(), Some(105), "SIG{signal}: {err}");
        let s = read_summary(&out);
        assert!(s.interrupted, "SIG{signal}");
        // About 1.5 s at 20/s were begun, none finished: all abandoned, none lost.
        assert!((20..=40).contains(&s.scheduled), "SIG{signal}: {s:?}");
        assert_eq!(s.abandoned, s.scheduled, "SIG{signal}");
        assert_eq!(s.requests, 0);
    }
}

#[test]
fn waiting_for_a_pooled_connection_is_bounded_by_the_timeout() {
    let addr = black_hole(100, Duration::from_secs(20));
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://{addr}/");
    let started = Instant::now();
    // One connection that never answers: every other arrival waits for it in vain.
    let (out, s) = run_with_summary(
        dir.path(),
        &[
            "--url",
            &url,
            "--rate",
            "20",
            "--duration",
            "2s",
            "--timeout",
            "1s",
            "--connections",
            "1",
            "--threads",
            "1",
        ],
        LIMIT,
    );
    assert!(
        started.elapsed() < Duration::from_secs(2 + 1 + 3),
        "{:?}",
        started.elapsed()
    );
    assert_ran(&out);
    assert_eq!(s.scheduled, 40, "{s:?}");
    // Each waited at most its timeout, counted from its schedule, and timed out.
    assert_eq!(kind(&s, "timeout"), 40, "{:?}", s.errors);
    assert_eq!(s.abandoned, 0);
    assert!(s.latency_ms.max < 1100.0, "{:?}", s.latency_ms);
    assert!(s.latency_ms.min >= 999.0, "{:?}", s.latency_ms);
}

/// Runs `headroom run` under `ulimit` settings given as a shell prefix.
fn run_limited(ulimit: &str, args: &str, dir: &std::path::Path) -> (std::process::Output, Summary) {
    let out_file = dir.join("s.json");
    let script = format!(
        "{ulimit}; exec {} run {args} --quiet --out {}",
        headroom_bin().display(),
        out_file.display()
    );
    let mut command = Command::new("sh");
    command.args(["-c", &script]);
    // Within LIMIT, or killed and named: a hang here must not hang the suite.
    let out = run_command(command, LIMIT);
    assert!(out_file.is_file(), "no summary: {}", stderr(&out));
    (out, read_summary(&out_file))
}

#[test]
fn a_generator_out_of_file_descriptors_blames_itself_not_the_target() {
    let addr = black_hole(1000, Duration::from_secs(20));
    let dir = tempfile::tempdir().unwrap();
    // A hard limit of 128 descriptors; 300 connections are needed at once.
    let args = format!("--url http://{addr}/ --rate 300 --duration 1s --timeout 2s --threads 1");
    let (out, s) = run_limited("ulimit -n 128", &args, dir.path());
    assert_ran(&out);
    let own = kind(&s, "generator");
    assert!(own >= 100, "{:?}", s.errors);
    assert_eq!(
        kind(&s, "connect"),
        0,
        "the target is not to blame: {:?}",
        s.errors
    );
    assert_eq!(own + kind(&s, "timeout"), s.scheduled, "{:?}", s.errors);
    assert!(s.generator.bound, "{:?}", s.generator);
    assert!(
        s.generator.reason.contains("file descriptors"),
        "{}",
        s.generator.reason
    );
}

#[test]
fn the_soft_open_files_limit_is_raised_to_the_hard_one() {
    let addr = black_hole(1000, Duration::from_secs(20));
    let dir = tempfile::tempdir().unwrap();
    // A soft limit of 128 under a high hard one: headroom raises it and opens all 300.
    let args = format!("--url http://{addr}/ --rate 300 --duration 1s --timeout 1s --threads 1");
    let (out, s) = run_limited("ulimit -Hn 4096; ulimit -Sn 128", &args, dir.path());
    assert_ran(&out);
    assert_eq!(kind(&s, "generator"), 0, "{:?}", s.errors);
    assert_eq!(kind(&s, "timeout"), 300, "{:?}", s.errors);
}

/// A keep-alive server that answers the first request on each connection and, on the
/// second, reads it and closes without a word: the race of a server closing an idle
/// connection just as the client reuses it. Counts every request it read, by method.
struct Closer {
    addr: SocketAddr,
    gets: Arc<AtomicU64>,
    posts: Arc<AtomicU64>,
}

fn closer() -> Closer {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let gets = Arc::new(AtomicU64::new(0));
    let posts = Arc::new(AtomicU64::new(0));
    let (g, p) = (gets.clone(), posts.clone());
    thread::spawn(move || {
        for stream in listener.incoming().take(2_000) {
            let Ok(stream) = stream else { continue };
            let (g, p) = (g.clone(), p.clone());
            thread::spawn(move || serve_one_then_close(stream, &g, &p));
        }
    });
    Closer { addr, gets, posts }
}

fn serve_one_then_close(mut stream: TcpStream, gets: &AtomicU64, posts: &AtomicU64) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    for n in 0..2 {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && head.len() < 8192 {
            match stream.read(&mut byte) {
                Ok(1) => head.push(byte[0]),
                _ => return,
            }
        }
        let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
        let body_len: usize = text
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        let mut body = vec![0u8; body_len.min(8192)];
        if stream.read_exact(&mut body).is_err() {
            return;
        }
        if text.starts_with("post") {
            posts.fetch_add(1, Ordering::SeqCst);
        } else {
            gets.fetch_add(1, Ordering::SeqCst);
        }
        if n == 1 {
            return; // Read the second request, then close without answering.
        }
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    }
}

#[test]
fn a_stale_connection_resends_only_what_is_safe_to_repeat() {
    let dir = tempfile::tempdir().unwrap();
    for (method, retried) in [("GET", true), ("POST", false)] {
        let server = closer();
        let scenario = dir.path().join(format!("{method}.yaml"));
        std::fs::write(
            &scenario,
            format!(
                "target: http://{}\nload: {{model: users, users: 1, duration: 1s, think: 10ms}}\n\
                 requests: [{{name: r, method: {method}, path: /, body: \"x\"}}]\n",
                server.addr
            ),
        )
        .unwrap();
        let (out, s) = run_with_summary(
            dir.path(),
            &[scenario.to_str().unwrap(), "--threads", "1"],
            LIMIT,
        );
        assert!(
            matches!(out.status.code(), Some(0 | 99)),
            "{}",
            stderr(&out)
        );
        let seen = match method {
            "GET" => server.gets.load(Ordering::SeqCst),
            _ => server.posts.load(Ordering::SeqCst),
        };
        assert!(s.requests >= 10, "{method}: {s:?}");
        if retried {
            // Each second request was sent twice: once on the closing connection, once
            // on a fresh one; all succeed, and the retries are counted.
            assert_eq!(s.errors.count, 0, "{method}: {:?}", s.errors);
            assert!(s.retries >= 5, "{method}: retries {}", s.retries);
            assert_eq!(seen, s.requests + s.retries, "{method}");
        } else {
            // Never sent twice: the server saw exactly one write per request.
            assert_eq!(s.retries, 0, "{method}");
            assert_eq!(seen, s.requests, "{method}: the target saw duplicates");
            assert!(kind(&s, "reset") >= 5, "{method}: {:?}", s.errors);
        }
    }
}

#[test]
fn a_target_restarted_mid_run_shows_as_errors_for_that_span_and_recovers() {
    let mut nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    let url = nginx.url();
    let mut child = spawn_run(
        &[
            "--url",
            &url,
            "--rate",
            "50",
            "--duration",
            "6s",
            "--timeout",
            "1s",
        ],
        &out,
    );
    thread::sleep(Duration::from_millis(2000));
    nginx.stop();
    thread::sleep(Duration::from_millis(1500));
    nginx.resume();
    let (status, err) = wait_with_stderr(&mut child);
    assert!(matches!(status.code(), Some(0 | 99)), "{err}");
    let s = read_summary(&out);
    assert_eq!(s.scheduled, 300, "{s:?}");
    let refused = kind(&s, "connect") + kind(&s, "reset");
    assert!(
        refused >= 20,
        "the outage shows as connect/reset errors: {:?}",
        s.errors
    );
    assert!(
        s.completed >= 150,
        "the run went on around the outage: {s:?}"
    );
    // The timeline shows the gap: errors in the middle, clean seconds on both sides.
    let errors: Vec<u64> = s.timeline.iter().map(|t| t.errors).collect();
    assert_eq!(errors[0], 0, "{errors:?}");
    assert!(errors[2..4].iter().sum::<u64>() >= 20, "{errors:?}");
    assert_eq!(errors[5], 0, "recovered by the last second: {errors:?}");
}

#[test]
fn the_warm_up_keeps_its_connections_and_leaves_nothing_in_the_measured_window() {
    use headroom::engine::{Control, Live, Observer};
    use headroom::scenario::{self, Overrides};
    use headroom::search::step::run_step;
    use headroom::search::StepTiming;

    struct Count {
        seconds: usize,
        measuring: usize,
        measuring_before_a_second: bool,
    }
    impl Observer for Count {
        fn second(&mut self, _: &Live) {
            self.seconds += 1;
        }
        fn measuring(&mut self) {
            self.measuring += 1;
            self.measuring_before_a_second = self.seconds == 0;
        }
    }

    let (addr, accepted) = keep_alive_server(|_| b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    let overrides = Overrides {
        url: Some(format!("http://{addr}/")),
        rate: Some(1.0),
        connections: Some(2),
        threads: Some(2),
        ..Overrides::default()
    };
    let plan = scenario::load(None, &overrides).unwrap();
    let timing = StepTiming {
        warmup: Duration::from_secs(1),
        measured: Duration::from_secs(2),
    };
    let mut seen = Count {
        seconds: 0,
        measuring: 0,
        measuring_before_a_second: false,
    };
    let (step, _) = run_step(
        &mut headroom::engine::Local,
        &plan,
        40.0,
        timing,
        &Control::default(),
        &mut seen,
    )
    .unwrap();
    let s = &step.summary;
    // Only the measured window's 80 arrivals, none of the warm-up's 40.
    assert_eq!(s.scheduled, 80, "{s:?}");
    assert_eq!(s.requests, 80);
    assert_eq!(s.timeline.len(), 2, "{:?}", s.timeline);
    assert!((s.rate.offered - 40.0).abs() < 0.5, "{:?}", s.rate);
    assert_eq!((seen.measuring, seen.measuring_before_a_second), (1, true));
    assert!(seen.seconds >= 2);
    // The pool of two opened during the warm-up served the measured window too.
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}
