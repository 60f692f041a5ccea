//! Sharded runs through the CLI (issue 13): `--shards N` starts N `headroom shard`
//! processes, each (with `--shard-netns`) in a network namespace of its own, so the
//! target sees N hosts. Checked against nginx's own access log: the exact schedule,
//! the start skew, each shard's requests; against the shards' raw shares: the merged
//! percentiles; and what happens when a shard is killed or a stranger tries to join.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use headroom::engine::Share;
use headroom::metrics::summary::Summary;
use headroom::shard::wire::{self, FromShard, ToShard};

use crate::support::{
    free_port, headroom_bin, read_summary, require, run_command, stderr, Nginx, TestBridge,
};

const LIMIT: Duration = Duration::from_secs(90);

/// `headroom ARGS` with `env`, its output captured, at most [`LIMIT`] long.
fn headroom(args: &[&str], env: &[(&str, &Path)]) -> std::process::Output {
    let mut cmd = Command::new(headroom_bin());
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_command(cmd, LIMIT)
}

/// The shares the coordinator kept (`HEADROOM_KEEP_SHARES`) for job 0, by index.
fn kept_shares(dir: &Path, count: usize) -> Vec<Share> {
    (0..count)
        .map(|i| {
            let path = dir.join(format!("share-0-{i}.json"));
            let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            serde_json::from_slice(&text).expect("a share")
        })
        .collect()
}

#[test]
fn shards_in_their_own_namespaces_offer_the_exact_schedule_start_together_and_merge_exactly() {
    let Some(bridge) = require(
        "a bridge for the shards' network namespaces (root, iproute2)",
        TestBridge::create(),
    ) else {
        return;
    };
    let nginx = Nginx::start_logged(bridge.gateway.into());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    let url = format!("http://{}/", nginx.addr());
    let (rate, count) = (400.0, 4);
    let run = headroom(
        &[
            "run",
            "--url",
            &url,
            "--rate",
            "400",
            "--duration",
            "3s",
            "--shards",
            "4",
            "--shard-netns",
            &bridge.name,
            "--out",
            out.to_str().unwrap(),
        ],
        &[("HEADROOM_KEEP_SHARES", dir.path())],
    );
    assert!(run.status.success(), "{}", stderr(&run));
    let s: Summary = read_summary(&out);
    // Exactly the single-process schedule: 3 s at 400/s, every arrival once.
    assert_eq!(
        (s.scheduled, s.requests, s.errors.count),
        (1200, 1200, 0),
        "{s:?}"
    );
    assert_eq!(s.shards.len(), count);

    // nginx saw four hosts, each sending exactly what its shard says it sent.
    let log = nginx.access_log();
    let mut by_host: BTreeMap<String, (usize, u64)> = BTreeMap::new();
    for (addr, ms, status) in &log {
        assert_eq!(*status, 200);
        let e = by_host.entry(addr.clone()).or_insert((0, u64::MAX));
        e.0 += 1;
        e.1 = e.1.min(*ms);
    }
    let mut firsts = Vec::new();
    for (i, shard) in s.shards.iter().enumerate() {
        let addr = bridge.host(100 + i as u8).to_string();
        assert_eq!((shard.index, shard.status.as_str()), (i as u64, "done"));
        assert_eq!(shard.address, addr, "{shard:?}");
        assert_eq!(shard.scheduled, 300, "every 4th arrival: {shard:?}");
        let (seen, first) = by_host
            .get(&addr)
            .copied()
            .unwrap_or_else(|| panic!("nginx never heard from shard {i} at {addr}: {by_host:?}"));
        assert_eq!(seen as u64, shard.requests, "shard {i}");
        assert!(!shard.generator.bound, "{shard:?}");
        // Arrival i (shard i's first) is due i / rate after the common start.
        firsts.push(first as f64 - i as f64 * 1000.0 / rate);
    }
    let from_shards: usize = (0..count)
        .map(|i| by_host[&bridge.host(100 + i as u8).to_string()].0)
        .sum();
    assert_eq!(from_shards, 1200);
    let skew = firsts.iter().cloned().fold(f64::MIN, f64::max)
        - firsts.iter().cloned().fold(f64::MAX, f64::min);
    // The shards' clocks agree (one machine), so the skew is the scheduler's delay
    // of each shard's first send: a few ms on a quiet machine, more with four shards
    // and nginx on two busy cores. Well under the 50 ms the start is named ahead,
    // which a shard started on hearing it (one round trip after another) would miss.
    assert!(
        skew < 20.0,
        "start skew {skew} ms as nginx saw it: {firsts:?}"
    );

    // The merged percentiles are those of all shards' raw histograms added up.
    let shares = kept_shares(dir.path(), count);
    let mut all = Histogram::<u64>::new(3).unwrap();
    all.auto(true);
    for share in &shares {
        all.add(&share.recorder.overall.latency).unwrap();
    }
    assert_eq!(all.len(), s.requests);
    let ms = |q: f64| all.value_at_quantile(q) as f64 / 1000.0;
    let l = &s.latency_ms;
    assert_eq!((l.p50, l.p95, l.p99), (ms(0.5), ms(0.95), ms(0.99)));
    assert_eq!(l.max, all.max() as f64 / 1000.0);
}

/// Starts `headroom ARGS`, returning the child and a channel of its stderr lines.
pub(crate) fn spawn_headroom(args: &[&str]) -> (std::process::Child, mpsc::Receiver<String>) {
    let mut child = Command::new(headroom_bin())
        .args(args)
        .env("HEADROOM_STORE", crate::support::test_store())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start headroom");
    let (tx, rx) = mpsc::channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (child, rx)
}

/// Waits for `child` at most [`LIMIT`]; kills it and panics after.
pub(crate) fn wait(child: &mut std::process::Child) -> i32 {
    let deadline = Instant::now() + LIMIT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().unwrap_or(-1);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("headroom did not end within {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The stderr lines received until one contains `needle` (which is returned last).
pub(crate) fn lines_until(rx: &mpsc::Receiver<String>, needle: &str) -> Vec<String> {
    let mut seen = Vec::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(30)) {
        let found = line.contains(needle);
        seen.push(line);
        if found {
            return seen;
        }
    }
    panic!("no line with {needle:?} in:\n{}", seen.join("\n"));
}

#[test]
fn a_killed_shard_ends_the_run_named_with_exit_1_and_the_others_shares_kept() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    let url = format!("{}/", nginx.url());
    let (mut child, rx) = spawn_headroom(&[
        "run",
        "--url",
        &url,
        "--rate",
        "150",
        "--duration",
        "10s",
        "--shards",
        "3",
        "--out",
        out.to_str().unwrap(),
    ]);
    let placed = lines_until(&rx, "coordinating 3 shards").pop().unwrap();
    let pid: u32 = placed
        .split("shard 1: pid ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no pid for shard 1 in {placed:?}"));
    // Mid-run: after a few of its seconds have been streamed.
    lines_until(&rx, " 3s/10s]");
    let killed = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let code = wait(&mut child);
    let said: Vec<String> = rx.try_iter().collect();
    let said = said.join("\n");
    assert_eq!(code, 1, "{said}");
    assert!(
        said.contains(&format!("error: shard 1 (pid {pid})")),
        "{said}"
    );
    assert!(said.contains("killed by signal 9"), "{said}");

    // The partial result: the other two shards' figures, stopped early, adding up.
    let s = read_summary(&out);
    assert!(s.interrupted);
    assert_eq!(s.shards.len(), 3);
    assert_eq!(s.shards[1].status, "lost", "{:?}", s.shards[1]);
    assert!(s.shards[1]
        .error
        .as_deref()
        .unwrap_or("")
        .contains(&format!("pid {pid}")));
    for i in [0, 2] {
        let shard = &s.shards[i];
        assert_eq!(shard.status, "interrupted", "{shard:?}");
        assert!(shard.requests > 100 && shard.scheduled < 500, "{shard:?}");
    }
    assert_eq!(s.scheduled, s.shards[0].scheduled + s.shards[2].scheduled);
    assert_eq!(s.requests, s.shards[0].requests + s.shards[2].requests);
}

/// A handshake by hand: hello as shard 0 of 2, then a proof made without the secret.
fn forged_proof(addr: &str) -> String {
    forged_proof_over(&mut crate::shards_channel::tls_without_the_secret(addr), 2)
}

/// A hello (shard 0 of `count`) and a proof made without the run's secret, over
/// `stream` (a TLS channel that trusted whatever key the coordinator showed); returns the coordinator's reason
/// for refusing it.
pub(crate) fn forged_proof_over(
    stream: &mut (impl std::io::Read + std::io::Write),
    count: u64,
) -> String {
    let hello = FromShard::Hello {
        version: wire::VERSION.into(),
        index: 0,
        count,
        nonce: "ab".repeat(32),
    };
    wire::send(stream, &hello).unwrap();
    match wire::recv(stream, wire::MAX_HANDSHAKE).unwrap() {
        ToShard::Challenge { .. } => {}
        other => panic!("expected a challenge, got {other:?}"),
    }
    let forged = FromShard::Proof {
        mac: "00".repeat(32),
    };
    wire::send(stream, &forged).unwrap();
    match wire::recv(stream, wire::MAX_HANDSHAKE) {
        Ok(ToShard::Refused { reason }) => reason,
        other => panic!("a forged proof was not refused: {other:?}"),
    }
}

#[test]
fn a_connection_without_the_runs_secret_cannot_join() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    let url = format!("{}/", nginx.url());
    let coordinator = format!("127.0.0.1:{}", free_port());
    let (mut child, rx) = spawn_headroom(&[
        "run",
        "--url",
        &url,
        "--rate",
        "100",
        "--duration",
        "4s",
        "--shards",
        "2",
        "--coordinator",
        &coordinator,
        "--out",
        out.to_str().unwrap(),
    ]);
    lines_until(&rx, "coordinating 2 shards");

    // A shard process with the wrong secret: it finds the coordinator's proof wrong
    // and sends nothing.
    let mut impostor = Command::new(headroom_bin());
    impostor
        .args(["shard", "--coordinator", &coordinator])
        .env("HEADROOM_SHARD_SECRET", "0".repeat(64))
        .env("HEADROOM_SHARD_INDEX", "0")
        .env("HEADROOM_SHARD_COUNT", "2");
    let refused = run_command(impostor, Duration::from_secs(30));
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr(&refused).contains("did not prove it knows the run's secret"),
        "{}",
        stderr(&refused)
    );
    // A peer that answers the challenge without the secret is refused by the coordinator.
    let reason = forged_proof(&coordinator);
    assert!(
        reason.contains("does not know the run's secret"),
        "{reason}"
    );
    // And one that sends a frame far over the handshake limit is cut off.
    let mut hostile = TcpStream::connect(&coordinator).unwrap();
    std::io::Write::write_all(&mut hostile, &u32::MAX.to_be_bytes()).unwrap();
    let _ = hostile.set_read_timeout(Some(Duration::from_secs(10)));
    let mut rest = Vec::new();
    let _ = std::io::Read::read_to_end(&mut hostile, &mut rest);

    assert_eq!(wait(&mut child), 0);
    let said: Vec<String> = rx.try_iter().collect();
    let refusals = said
        .iter()
        .filter(|l| l.contains("refused a shard connection from 127.0.0.1"))
        .count();
    assert!(refusals >= 3, "{said:?}");
    // The run itself is untouched: both real shards, the exact schedule.
    let s = read_summary(&out);
    assert_eq!(s.scheduled, 400, "{s:?}");
    assert!(
        s.shards
            .iter()
            .all(|x| x.status == "done" && x.scheduled == 200),
        "{:?}",
        s.shards
    );
}

#[test]
fn a_search_drives_every_shard_step_by_step() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.json");
    let url = format!("{}/", nginx.url());
    let run = headroom(
        &[
            "find",
            "--url",
            &url,
            "--shards",
            "2",
            "--from",
            "40",
            "--to",
            "80",
            "--step-duration",
            "1s",
            "--warmup",
            "1s",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert!(run.status.success(), "{}", stderr(&run));
    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let steps = result["steps"].as_array().expect("steps");
    assert!(steps.len() >= 2, "{result}");
    for step in steps {
        let s: Summary = serde_json::from_value(step["summary"].clone()).unwrap();
        crate::support::assert_adds_up(&s);
        let rate = step["rate"].as_f64().unwrap();
        // Each step's measured second, exactly, split over both shards.
        assert_eq!(s.scheduled as f64, rate, "{s:?}");
        assert_eq!(s.shards.len(), 2);
        let split: Vec<u64> = s.shards.iter().map(|x| x.scheduled).collect();
        assert_eq!(split.iter().sum::<u64>(), s.scheduled);
        assert!(split[0].abs_diff(split[1]) <= 1, "{split:?}");
    }
}

#[test]
fn bad_shard_flags_are_bad_input_before_any_load() {
    let url = "http://127.0.0.1:9/";
    for (args, says) in [
        (vec!["--shards", "0"], "--shards"),
        (
            vec!["--shards", "2", "--shard-netns", "no-such-bridge"],
            "--shard-netns",
        ),
        (vec!["--coordinator", "127.0.0.1:1"], "--shards"),
    ] {
        let mut all = vec!["run", "--url", url, "--rate", "10", "--duration", "1s"];
        all.extend(args);
        let out = headroom(&all, &[]);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{all:?}: {}", stderr(&out));
    }
    // A shard without its environment says which variable is missing.
    let out = headroom(&["shard", "--coordinator", "127.0.0.1:1"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("HEADROOM_SHARD_INDEX"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_scenarios_cluster_block_shards_the_run() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("s.yaml");
    let yaml = format!(
        "target: {}\nload: {{rate: 60, duration: 1s}}\nrequests: [{{path: /}}]\ncluster: {{shards: 3}}\n",
        nginx.url()
    );
    std::fs::write(&scenario, yaml).unwrap();
    let out = dir.path().join("s.json");
    let run = headroom(
        &[
            "run",
            scenario.to_str().unwrap(),
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert!(run.status.success(), "{}", stderr(&run));
    let s = read_summary(&out);
    assert_eq!(s.scheduled, 60);
    let split: Vec<u64> = s.shards.iter().map(|x| x.scheduled).collect();
    assert_eq!(split, [20, 20, 20]);
    // --shards wins over the file.
    let run = headroom(
        &[
            "run",
            scenario.to_str().unwrap(),
            "--shards",
            "2",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(read_summary(&out).shards.len(), 2);
}

#[test]
fn shards_started_elsewhere_join_a_coordinator_that_waits_for_them() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    let url = format!("{}/", nginx.url());
    let coordinator = format!("127.0.0.1:{}", free_port());
    let secret = headroom::shard::auth::new_secret();
    let args = [
        "run",
        "--url",
        &url,
        "--rate",
        "50",
        "--duration",
        "2s",
        "--shards",
        "2",
        "--cluster",
        "external",
        "--coordinator",
        &coordinator,
        "--out",
        out.to_str().unwrap(),
    ];
    // Without the run's secret there is nothing to wait for.
    let refused = headroom(&args, &[]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("HEADROOM_SHARD_SECRET"),
        "{}",
        stderr(&refused)
    );

    let mut cmd = Command::new(headroom_bin());
    cmd.args(args).env("HEADROOM_SHARD_SECRET", &secret);
    let coordinator_run = std::thread::spawn(move || run_command(cmd, LIMIT));
    let shards = external_shards(&coordinator, &secret, 2, &[]);
    let run = coordinator_run.join().unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    all_exit_0(shards);
    let s = read_summary(&out);
    assert_eq!(s.scheduled, 100);
    assert!(
        s.shards
            .iter()
            .all(|x| x.status == "done" && x.placed.contains("started elsewhere")),
        "{:?}",
        s.shards
    );
}

/// `count` shards of the run whose coordinator listens at `coordinator`, started as a
/// manifest's pods would be (same secret, their own index), each with `env` too.
pub(crate) fn external_shards(
    coordinator: &str,
    secret: &str,
    count: u64,
    env: &[(&str, &str)],
) -> Vec<std::thread::JoinHandle<std::process::Output>> {
    (0..count)
        .map(|i| {
            let mut shard = Command::new(headroom_bin());
            shard
                .args(["shard", "--coordinator", coordinator])
                .env("HEADROOM_SHARD_SECRET", secret)
                .env("HEADROOM_SHARD_INDEX", i.to_string())
                .env("HEADROOM_SHARD_COUNT", count.to_string())
                .envs(env.iter().copied());
            std::thread::spawn(move || run_command(shard, LIMIT))
        })
        .collect()
}

/// Waits for every shard of [`external_shards`]; each must have exited 0.
pub(crate) fn all_exit_0(shards: Vec<std::thread::JoinHandle<std::process::Output>>) {
    for shard in shards {
        let shard = shard.join().unwrap();
        assert!(shard.status.success(), "{}", stderr(&shard));
    }
}
