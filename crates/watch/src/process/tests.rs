//! The process sampler against real processes: our own, a spawned tree, fd limits.

use super::*;

fn busy(ms: u64) {
    let start = std::time::Instant::now();
    let mut x = 1u64;
    while start.elapsed() < std::time::Duration::from_millis(ms) {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
    }
    std::hint::black_box(x);
}

#[test]
fn own_process_shows_cpu_memory_threads_and_fds() {
    let me = std::process::id();
    let mut s = Box::new(ProcessSampler::start(Which::Pid(me)).unwrap());
    let start = std::time::Instant::now();
    busy(300);
    s.sample(start.elapsed().as_secs_f64()).unwrap();
    let sample = s.samples.newest().unwrap().clone();
    assert!(sample.cpu_cores.unwrap() > 0.2, "{sample:?}");
    assert!(sample.rss_mb > 1.0 && sample.threads >= 1 && sample.fds >= 3);
    assert!(sample.fd_limit.is_some_and(|l| l >= sample.fds));
    let f = s.finish(None);
    let Detail::Process(p) = f.detail else {
        panic!("not a process summary")
    };
    // Tests running beside this one may have children of their own.
    assert!(p.processes >= 1);
    assert!(p.cpu_cores.max > 0.2);
    assert!(p.command.is_some_and(|c| !c.is_empty()));
}

/// Kills and reaps a child on drop, so a failed assertion leaves nothing running.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// CPU ticks of `pid` and every child it reaped so far, from `/proc`.
fn own_and_reaped(pid: u32) -> u64 {
    let st = Process::new(pid as i32).unwrap().stat().unwrap();
    st.utime + st.stime + (st.cutime + st.cstime) as u64
}

#[test]
fn a_pid_covers_its_children_and_grandchildren_as_they_come_and_go() {
    // A parent with an idle child, a child that spins 0.6 s and a grandchild (in a
    // subshell) that spins 0.6 s; each exits between samples and is reaped by its
    // parent. The shell then execs `sleep`, so the root outlives its descendants and
    // its collected CPU is the whole tree's. All of it is bounded in time.
    let spin = "timeout 0.6 sh -c 'while :; do :; done'";
    let script = format!("sleep 1.5 & {spin}; sh -c \"({spin}); sleep 0.3\"; wait; exec sleep 5");
    let tree = Reaped(
        std::process::Command::new("sh")
            .args(["-c", &script])
            .spawn()
            .unwrap(),
    );
    let root = tree.0.id();
    let before = own_and_reaped(root);
    let mut s = Box::new(ProcessSampler::start(Which::Pid(root)).unwrap());
    let start = std::time::Instant::now();
    let (mut most, mut prev_t, mut cpu_s) = (0, 0.0, 0.0);
    // Until the shell has become `sleep` with no descendants left (at most 6 s).
    loop {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let t = start.elapsed().as_secs_f64();
        let x = s.sample_one(t).unwrap();
        cpu_s += x.cpu_cores.unwrap() * (t - prev_t);
        (most, prev_t) = (most.max(x.processes), t);
        let comm = Process::new(root as i32).unwrap().stat().unwrap().comm;
        if (comm == "sleep" && x.processes == 1) || t > 6.0 {
            break;
        }
    }
    let collected = (own_and_reaped(root) - before) as f64 / s.ticks_per_s;
    drop(tree);
    let f = s.finish(None);
    let Detail::Process(p) = f.detail else {
        panic!("not a process summary")
    };
    // sh, sleep, timeout and a spinning sh at least, at some sample.
    assert!(most >= 4 && p.processes == most, "{p:?}");
    // sh, sleep, 2 × (timeout + spinner), the middle sh, its subshell, its sleep.
    assert!(p.processes_seen >= 7, "{p:?}");
    assert_eq!(p.command.as_deref(), Some("sh"));
    // Every tick of the tree, once: exits between samples neither lose CPU nor
    // count it twice (the sum of rounded per-sample figures is within a few ms).
    assert!(cpu_s > 0.1, "the spinners were not seen: {cpu_s} CPU-s");
    assert!(
        (cpu_s - collected).abs() < 0.03,
        "watched {cpu_s} CPU-s, the tree used {collected}: {p:?}"
    );
    assert!(f.notices.is_empty(), "{:?}", f.notices);
}

#[test]
fn a_missing_pid_fails_at_start_and_an_unknown_name_too() {
    // Pid numbers stop well below this on Linux (pid_max is at most 2^22).
    assert!(ProcessSampler::start(Which::Pid(u32::MAX - 1))
        .err()
        .unwrap()
        .to_string()
        .contains("is gone"));
    assert!(
        ProcessSampler::start(Which::Name("no-such-proc-xyz".into()))
            .err()
            .unwrap()
            .to_string()
            .contains("no process named")
    );
}

#[test]
fn fd_warning_at_80_percent_of_the_limit() {
    let sample = |fds| ProcessSample {
        t: 1.0,
        cpu_cores: Some(0.0),
        rss_mb: 1.0,
        threads: 1,
        fds,
        fd_limit: Some(64),
        processes: 1,
        busiest: None,
    };
    let mut s = ProcessSampler::start(Which::Pid(std::process::id())).unwrap();
    for fds in [10, 52, 20] {
        s.keep(sample(fds));
    }
    let f = Box::new(s).finish(None);
    assert_eq!(f.warnings.len(), 1, "{:?}", f.warnings);
    assert!(
        f.warnings[0].contains("52 of the soft limit 64"),
        "{}",
        f.warnings[0]
    );
    let mut s = ProcessSampler::start(Which::Pid(std::process::id())).unwrap();
    s.keep(sample(51));
    assert!(Box::new(s).finish(None).warnings.is_empty());
}
