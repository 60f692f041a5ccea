//! `headroom run --shards N --cluster kubernetes` end to end on this machine: a real
//! control plane ([`KubeCluster`]), the test node agent running each shard pod as a
//! local process in its own network namespace ([`NodeAgent`]), nginx on the pods'
//! bridge. The run creates the Job, Service and Secret, its shards join and run,
//! the coordinator merges and reports, and everything is deleted after; a shard pod
//! that dies is named by its pod.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ::kube::api::{Api, ListParams};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Secret, Service};

use crate::support::{
    free_port, headroom_bin, read_summary, run_command, stderr, KubeCluster, Nginx, NodeAgent,
};

const LIMIT: Duration = Duration::from_secs(150);

/// The run's arguments: `shards` shards on the cluster at `rate` for `secs`, the
/// coordinator on the bridge, the summary to `out`.
fn args(
    cluster: &KubeCluster,
    nginx: &Nginx,
    shards: &str,
    rate: &str,
    secs: &str,
    out: &str,
) -> Vec<String> {
    let coordinator = format!("{}:{}", cluster.gateway(), free_port());
    [
        "run",
        "--url",
        &format!("http://{}/", nginx.addr()),
        "--rate",
        rate,
        "--duration",
        secs,
        "--shards",
        shards,
        "--cluster",
        "kubernetes",
        "--image",
        "headroom:test",
        "--shard-cpu",
        "100m",
        "--shard-memory",
        "64Mi",
        "--coordinator",
        &coordinator,
        "--advertise",
        &coordinator,
        "--out",
        out,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// How many of the run's objects of each kind are left.
fn left(cluster: &KubeCluster) -> (usize, usize, usize, usize) {
    let lp = ListParams::default().labels("app.kubernetes.io/name=headroom");
    let c = cluster.client();
    let jobs: Api<Job> = Api::namespaced(c.clone(), "default");
    let svcs: Api<Service> = Api::namespaced(c.clone(), "default");
    let secrets: Api<Secret> = Api::namespaced(c.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(c, "default");
    let live_pods = |l: Vec<Pod>| {
        l.into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .count()
    };
    cluster.block_on(async {
        (
            jobs.list(&lp).await.unwrap().items.len(),
            svcs.list(&lp).await.unwrap().items.len(),
            secrets.list(&lp).await.unwrap().items.len(),
            live_pods(pods.list(&ListParams::default()).await.unwrap().items),
        )
    })
}

#[test]
fn a_run_on_kubernetes_creates_the_job_runs_its_shards_merges_and_cleans_up() {
    let Some(cluster) = KubeCluster::start() else {
        return;
    };
    let agent = NodeAgent::start(&cluster, &headroom_bin());
    let nginx = Nginx::start_logged(cluster.gateway().parse().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    let mut cmd = Command::new(headroom_bin());
    cmd.args(args(
        &cluster,
        &nginx,
        "4",
        "200",
        "3s",
        out.to_str().unwrap(),
    ))
    .env("KUBECONFIG", cluster.kubeconfig());
    let run = run_command(cmd, LIMIT);
    let context = || format!("{}\n{}\n{}", stderr(&run), agent.logs(), cluster.logs());
    assert!(run.status.success(), "{}", context());
    let said = stderr(&run);
    assert!(said.contains("created Job default/"), "{said}");

    // The same output as a local run: one merged summary of the exact schedule.
    let s = read_summary(&out);
    assert_eq!(
        (s.scheduled, s.requests, s.errors.count),
        (600, 600, 0),
        "{s:?}"
    );
    assert_eq!(s.shards.len(), 4);
    let subnet = format!("{}.", cluster.subnet());
    let log = nginx.access_log();
    let mut by_host: BTreeMap<&str, u64> = BTreeMap::new();
    for (addr, _, status) in &log {
        assert_eq!(*status, 200);
        *by_host.entry(addr.as_str()).or_default() += 1;
    }
    for (i, shard) in s.shards.iter().enumerate() {
        assert_eq!(
            (shard.index, shard.status.as_str(), shard.scheduled),
            (i as u64, "done", 150)
        );
        assert!(shard.placed.starts_with("pod headroom-"), "{shard:?}");
        assert!(shard.placed.contains(&format!("-{i}-")), "{shard:?}");
        // Each pod is a host of its own as nginx sees it, and sent what it says.
        assert!(shard.address.starts_with(&subnet), "{shard:?}");
        assert_eq!(
            by_host.get(shard.address.as_str()),
            Some(&shard.requests),
            "{by_host:?}"
        );
    }
    // Cleaned up: no Job, Service, Secret or pod of the run is left.
    let deadline = Instant::now() + Duration::from_secs(60);
    while left(&cluster) != (0, 0, 0, 0) {
        assert!(
            Instant::now() < deadline,
            "left behind: {:?}\n{}",
            left(&cluster),
            context()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The pid of the `headroom shard` process whose environment says it is shard `index`.
fn shard_pid(index: u64) -> Option<u32> {
    let want = format!("HEADROOM_SHARD_INDEX={index}");
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let is_shard = cmdline.split(|b| *b == 0).any(|a| a == b"shard");
        let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
        let ours = environ.split(|b| *b == 0).any(|v| v == want.as_bytes());
        (is_shard && ours).then_some(pid)
    })
}

#[test]
fn a_shard_pod_that_dies_is_named_by_its_pod_and_the_run_exits_1() {
    let Some(cluster) = KubeCluster::start() else {
        return;
    };
    let agent = NodeAgent::start(&cluster, &headroom_bin());
    let nginx = Nginx::start_logged(cluster.gateway().parse().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    let mut child = Command::new(headroom_bin())
        .args(args(
            &cluster,
            &nginx,
            "2",
            "100",
            "20s",
            out.to_str().unwrap(),
        ))
        .env("KUBECONFIG", cluster.kubeconfig())
        .env("HEADROOM_STORE", crate::support::test_store())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // Once the run is going, shard 1's process dies.
    let mut said = Vec::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(90)) {
        let going = line.contains(" 2s/20s]");
        said.push(line);
        if going {
            break;
        }
    }
    let pid = shard_pid(1).unwrap_or_else(|| {
        panic!(
            "no shard 1 process; said:\n{}\n{}",
            said.join("\n"),
            agent.logs()
        )
    });
    assert!(Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap()
        .success());
    let deadline = Instant::now() + LIMIT;
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        assert!(Instant::now() < deadline, "the run did not end");
        std::thread::sleep(Duration::from_millis(100));
    };
    said.extend(rx.try_iter());
    let said = said.join("\n");
    assert_eq!(code, Some(1), "{said}\n{}", agent.logs());
    let s = read_summary(&out);
    let lost = &s.shards[1];
    assert_eq!(lost.status, "lost", "{lost:?}");
    // Named by its pod, in the summary and in the error.
    assert!(
        lost.placed.starts_with("pod headroom-") && lost.placed.contains("-1-"),
        "{lost:?}"
    );
    assert!(
        said.contains(&format!("error: shard 1 ({})", lost.placed)),
        "{said}"
    );
    assert_eq!(s.shards[0].status, "interrupted");
    assert!(s.interrupted && s.requests > 0);
    let deadline = Instant::now() + Duration::from_secs(60);
    while left(&cluster).0 != 0 {
        assert!(
            Instant::now() < deadline,
            "the Job was left behind: {:?}",
            left(&cluster)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
