//! [`NodeAgent`]: `examples/kube_node_agent` serving a [`KubeCluster`]'s node, and the
//! bridge its pods' network namespaces hang off.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::kube::KubeCluster;

/// The node agent, running. Dropping it stops it (SIGTERM, then SIGKILL after 5 s),
/// then kills whatever still runs in its namespaces and removes them.
pub(crate) struct NodeAgent {
    child: Child,
    prefix: String,
    log_dir: PathBuf,
    own_log: PathBuf,
}

/// `examples/kube_node_agent` as Cargo built it beside this test binary. `cargo test`
/// builds the examples; when it is missing (`cargo test --test tests` builds only
/// the test target), it is built here with the same profile.
pub(crate) fn agent_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/<profile>/deps/tests-<hash> → target/<profile>/examples/kube_node_agent
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let bin = profile_dir.join("examples/kube_node_agent");
    if bin.is_file() {
        return bin;
    }
    let target_dir = profile_dir.parent().expect("target/");
    let mut cargo = Command::new(env!("CARGO"));
    cargo.args([
        "build",
        "--quiet",
        "--example",
        "kube_node_agent",
        "--manifest-path",
    ]);
    cargo.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"));
    match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => {}
        Some("release") => {
            cargo.arg("--release");
        }
        Some(other) => {
            cargo.args(["--profile", other]);
        }
        None => {}
    }
    let status = cargo.env("CARGO_TARGET_DIR", target_dir).status();
    assert!(
        matches!(status, Ok(s) if s.success()) && bin.is_file(),
        "cannot build {} ({status:?}): run `cargo build --example kube_node_agent`",
        bin.display()
    );
    bin
}

impl NodeAgent {
    /// Starts the agent for `cluster`'s node; containers' `headroom` runs `headroom_bin`.
    /// Pod output goes to `<cluster dir>/pods/<pod>.log` ([`NodeAgent::logs`]).
    pub(crate) fn start(cluster: &KubeCluster, headroom_bin: &Path) -> NodeAgent {
        let log_dir = cluster.dir().join("pods");
        fs::create_dir_all(&log_dir).unwrap();
        let own_log = cluster.dir().join("node-agent.log");
        let out = fs::File::create(&own_log).unwrap();
        // Unique per bridge, so agents of concurrent tests never touch each other's.
        let prefix = format!("{}-", cluster.bridge());
        let child = Command::new(agent_bin())
            .arg("--kubeconfig")
            .arg(cluster.kubeconfig())
            .args(["--node", cluster.node(), "--bridge", cluster.bridge()])
            .args(["--subnet", cluster.subnet(), "--prefix", &prefix])
            .arg("--headroom-bin")
            .arg(headroom_bin)
            .arg("--log-dir")
            .arg(&log_dir)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("start examples/kube_node_agent");
        NodeAgent {
            child,
            prefix,
            log_dir,
            own_log,
        }
    }

    /// The agent's own log and every pod's output so far, for a failure message.
    pub(crate) fn logs(&self) -> String {
        let mut out = format!(
            "--- node agent ---\n{}",
            fs::read_to_string(&self.own_log).unwrap_or_default()
        );
        let mut pods: Vec<PathBuf> = fs::read_dir(&self.log_dir)
            .map(|d| {
                d.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "log"))
                    .collect()
            })
            .unwrap_or_default();
        pods.sort();
        for p in pods {
            let name = p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            out.push_str(&format!(
                "--- pod {name} ---\n{}\n",
                fs::read_to_string(&p).unwrap_or_default()
            ));
        }
        out
    }
}

impl Drop for NodeAgent {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let start = Instant::now();
        while matches!(self.child.try_wait(), Ok(None)) && start.elapsed() < Duration::from_secs(5)
        {
            thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Whatever the agent could not tidy up (it was killed, or a process ignored it).
        let list = Command::new("ip").args(["netns", "list"]).output();
        let list = list
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        for ns in list.lines().filter_map(|l| l.split_whitespace().next()) {
            if !ns.starts_with(&self.prefix) {
                continue;
            }
            let pids = Command::new("ip").args(["netns", "pids", ns]).output();
            let pids = pids
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            for pid in pids.lines().filter_map(|p| p.trim().parse::<i32>().ok()) {
                let pid = nix::unistd::Pid::from_raw(pid);
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            }
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}
