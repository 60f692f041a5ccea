//! A test-only stand-in for the kubelet, for testing headroom's Kubernetes path on
//! one machine without container images (tests/support/kube.rs starts it).
//!
//! It polls the pods bound to its node and, for each new one, makes a network
//! namespace on the test's bridge ([`netns`]), resolves the container's environment
//! ([`pod::env`]), runs the container's command there as a local process (`headroom`
//! is the binary given by `--headroom-bin`; its output goes to `<log-dir>/<pod>.log`,
//! its working directory is `<log-dir>/<pod>.work`),
//! and reports the pod `Running` with its address, then `Succeeded` or `Failed` with
//! the exit code. A pod being deleted has its process killed and is then removed for
//! good (grace period 0), as a kubelet does. On SIGTERM or Ctrl-C it kills every
//! process it started and removes every namespace. Volumes are not mounted (a shard
//! reads nothing from its Secret's files). Needs root (`ip netns`).

mod netns;
mod pod;

use std::collections::HashMap;
use std::fs::{self, File};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use clap::Parser;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use netns::PodNet;

/// How often the agent lists its pods. A real kubelet watches; a short poll is as
/// good for a test and has no watch to resume.
const POLL: Duration = Duration::from_millis(200);

/// Flags of the agent.
#[derive(Debug, Parser)]
struct Flags {
    /// The cluster's kubeconfig.
    #[arg(long)]
    kubeconfig: PathBuf,
    /// This node's name (the Node object exists already).
    #[arg(long)]
    node: String,
    /// The Linux bridge pods are attached to (it has `<subnet>.1/24`).
    #[arg(long)]
    bridge: String,
    /// The bridge's /24 as its first three numbers, e.g. `10.200.7`.
    #[arg(long)]
    subnet: String,
    /// Prefix of the namespaces and veth names (at most 8 characters, unique per agent).
    #[arg(long)]
    prefix: String,
    /// What a container's `headroom` command runs.
    #[arg(long)]
    headroom_bin: PathBuf,
    /// Where each pod's output goes, `<pod>.log`.
    #[arg(long)]
    log_dir: PathBuf,
}

/// A pod the agent has taken on: its process, once started, and whether it ended.
#[derive(Default)]
struct Taken {
    pid: Option<u32>,
    ended: bool,
    net: Option<PodNet>,
}

/// What the pod threads and the poll loop share.
struct Agent {
    flags: Flags,
    rt: tokio::runtime::Handle,
    pods: Api<Pod>,
    client: Client,
    taken: Mutex<HashMap<String, Taken>>,
    next_net: Mutex<u32>,
}

fn main() {
    let flags = Flags::parse();
    if flags.prefix.len() > 8 {
        eprintln!("kube_node_agent: --prefix is longer than 8 characters");
        std::process::exit(2);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let client = runtime.block_on(async {
        let kubeconfig = Kubeconfig::read_from(&flags.kubeconfig).expect("read the kubeconfig");
        let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .expect("a configuration from the kubeconfig");
        Client::try_from(config).expect("a client")
    });
    let agent = Arc::new(Agent {
        pods: Api::all(client.clone()),
        client,
        rt: runtime.handle().clone(),
        flags,
        taken: Mutex::default(),
        next_net: Mutex::new(0),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let on_signal = stop.clone();
    ctrlc::set_handler(move || on_signal.store(true, Ordering::SeqCst)).expect("a signal handler");
    eprintln!("kube_node_agent: node {} ready", agent.flags.node);
    while !stop.load(Ordering::SeqCst) {
        if let Err(e) = poll_once(&agent) {
            eprintln!("kube_node_agent: {e}");
        }
        thread::sleep(POLL);
    }
    shut_down(&agent);
}

/// One look at the node's pods: start the new ones, end the ones being deleted.
fn poll_once(agent: &Arc<Agent>) -> Result<(), String> {
    let lp = ListParams::default().fields(&format!("spec.nodeName={}", agent.flags.node));
    let list = agent
        .rt
        .block_on(agent.pods.list(&lp))
        .map_err(|e| format!("list pods: {e}"))?;
    for p in list.items {
        let uid = p.metadata.uid.clone().unwrap_or_default();
        let deleting = p.metadata.deletion_timestamp.is_some();
        let mut taken = agent.taken.lock().unwrap();
        match taken.get(&uid) {
            None if deleting => {
                drop(taken);
                remove(agent, &p);
            }
            None => {
                let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
                if matches!(phase, None | Some("Pending")) {
                    taken.insert(uid, Taken::default());
                    let agent = agent.clone();
                    thread::spawn(move || run_pod(&agent, p));
                }
            }
            Some(t) if deleting => {
                if let (Some(pid), false) = (t.pid, t.ended) {
                    let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
                } else if t.ended {
                    drop(taken);
                    remove(agent, &p);
                }
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Deletes a pod for good (its process has ended or never started).
fn remove(agent: &Agent, p: &Pod) {
    let (Some(name), Some(ns)) = (&p.metadata.name, &p.metadata.namespace) else {
        return;
    };
    let api: Api<Pod> = Api::namespaced(agent.client.clone(), ns);
    let _ = agent
        .rt
        .block_on(api.delete(name, &DeleteParams::default().grace_period(0)));
}

/// Runs one pod to its end, reporting its status as it goes.
fn run_pod(agent: &Agent, p: Pod) {
    let name = p.metadata.name.clone().unwrap_or_default();
    let namespace = p.metadata.namespace.clone().unwrap_or_default();
    let uid = p.metadata.uid.clone().unwrap_or_default();
    let api: Api<Pod> = Api::namespaced(agent.client.clone(), &namespace);
    let patch = |status: serde_json::Value| {
        let r = agent.rt.block_on(api.patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Strategic(status),
        ));
        if let Err(e) = r {
            eprintln!("kube_node_agent: status of {name}: {e}");
        }
    };
    let Ok(c) = pod::container(&p) else {
        eprintln!("kube_node_agent: {name}: not one container; left pending");
        return;
    };
    let n = {
        let mut next = agent.next_net.lock().unwrap();
        *next += 1;
        *next - 1
    };
    let f = &agent.flags;
    let net = match PodNet::create(&f.prefix, n, &f.bridge, &f.subnet) {
        Ok(net) => net,
        Err(e) => return patch(pod::cannot_start(c, "CreatePodSandboxError", &e)),
    };
    agent
        .taken
        .lock()
        .unwrap()
        .entry(uid.clone())
        .or_default()
        .net = Some(net.clone());
    let secrets: Api<Secret> = Api::namespaced(agent.client.clone(), &namespace);
    let prepared = pod::argv(c, &f.headroom_bin).and_then(|argv| {
        let env = agent.rt.block_on(pod::env(&p, c, &net.ip, &secrets))?;
        Ok((argv, env))
    });
    let (argv, env) = match prepared {
        Ok(x) => x,
        Err(e) => {
            net.remove();
            end(agent, &uid);
            return patch(pod::cannot_start(c, "CreateContainerConfigError", &e));
        }
    };
    let log = f.log_dir.join(format!("{name}.log"));
    // Its own working directory, as a container has its own file system: whatever
    // the process writes (a store, a report) stays out of the test's directory.
    let workdir = f.log_dir.join(format!("{name}.work"));
    let spawned = fs::create_dir_all(&workdir)
        .and_then(|()| File::create(&log))
        .and_then(|out| {
            let err = out.try_clone()?;
            let hostname = p
                .spec
                .as_ref()
                .and_then(|s| s.hostname.clone())
                .unwrap_or(name.clone());
            Command::new("ip")
                .args(["netns", "exec", &net.ns])
                .args(&argv)
                .env_clear()
                .env(
                    "PATH",
                    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                )
                .env("HOSTNAME", hostname)
                .env("HOME", &workdir)
                .current_dir(&workdir)
                .envs(&env)
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err)
                .spawn()
        });
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            net.remove();
            end(agent, &uid);
            return patch(pod::cannot_start(c, "CreateContainerError", &e.to_string()));
        }
    };
    agent
        .taken
        .lock()
        .unwrap()
        .entry(uid.clone())
        .or_default()
        .pid = Some(child.id());
    let host_ip = format!("{}.1", f.subnet);
    let (status, started) = pod::running(c, &net.ip, &host_ip);
    patch(status);
    eprintln!(
        "kube_node_agent: {name} running at {} as pid {}",
        net.ip,
        child.id()
    );
    let code = match child.wait() {
        Ok(s) => {
            use std::os::unix::process::ExitStatusExt as _;
            s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
        }
        Err(_) => 255,
    };
    eprintln!("kube_node_agent: {name} exited with {code}");
    net.remove();
    end(agent, &uid);
    patch(pod::terminated(c, code, &started, &log));
}

/// Marks a pod's process as ended (so a deletion no longer signals its pid).
fn end(agent: &Agent, uid: &str) {
    let mut taken = agent.taken.lock().unwrap();
    let t = taken.entry(uid.to_owned()).or_default();
    t.ended = true;
    t.net = None;
}

/// Kills every process still running, waits a little for their threads to report,
/// and removes every namespace left.
fn shut_down(agent: &Agent) {
    for t in agent.taken.lock().unwrap().values() {
        if let (Some(pid), false) = (t.pid, t.ended) {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
    }
    // The pod threads remove their namespaces once their process is reaped.
    for _ in 0..50 {
        if agent
            .taken
            .lock()
            .unwrap()
            .values()
            .all(|t| t.net.is_none())
        {
            break;
        }
        thread::sleep(Duration::from_millis(100));
    }
    for t in agent.taken.lock().unwrap().values() {
        if let Some(net) = &t.net {
            net.remove();
        }
    }
}
