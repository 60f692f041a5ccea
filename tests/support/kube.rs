//! A throwaway Kubernetes control plane on loopback, for testing headroom's Kubernetes
//! path with no images and no network ([`KubeCluster`]), and the node that runs its
//! pods ([`super::kube_agent::NodeAgent`]).
//!
//! The binaries (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) are
//! built once per machine by `scripts/peers.sh` (`peer_kube`) into the peers cache.
//! Everything listens on 127.0.0.1 (free ports); the pods' network is a Linux bridge
//! with `10.200.X.1/24` that the cluster creates and removes. Dropping the cluster
//! kills every process and removes the bridge and the temporary directory.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use ::kube::api::{Api, Patch, PatchParams, PostParams};
use ::kube::config::{KubeConfigOptions, Kubeconfig};
use ::kube::{Client, Config};
use k8s_openapi::api::core::v1::{Node, ServiceAccount};

use super::peers::peers_dir;
use super::ports::free_port;

/// The control plane's version, as `scripts/kube-control-plane.sh` builds it.
pub(crate) const KUBE_VERSION: &str = "v1.36.3";
/// Set (to anything) to make a missing control plane a failure instead of a skip.
pub(crate) const REQUIRE_ENV: &str = "HEADROOM_REQUIRE_KUBE";
/// How long the control plane may take to answer and be ready to run pods.
const READY_TIMEOUT: Duration = Duration::from_secs(90);

/// A running control plane, its kubeconfig, one Node for a [`super::NodeAgent`] and
/// the bridge that node's pods are attached to.
pub(crate) struct KubeCluster {
    dir: tempfile::TempDir,
    children: Vec<(&'static str, Child)>,
    kubeconfig: PathBuf,
    node: String,
    bridge: super::TestBridge,
    subnet: String,
    rt: tokio::runtime::Runtime,
    client: Client,
}

/// The directory of the control plane's binaries.
pub(crate) fn kube_bin_dir() -> PathBuf {
    peers_dir().join(format!("kube-{KUBE_VERSION}"))
}

impl KubeCluster {
    /// Starts etcd, kube-apiserver, kube-controller-manager (Job, ServiceAccount,
    /// garbage collector, namespace, pod GC, EndpointSlice and TTL controllers) and
    /// kube-scheduler, writes a kubeconfig, makes a bridge and registers a Node, and
    /// waits until pods can be created. `None`, saying why, only when the binaries are
    /// missing and neither [`REQUIRE_ENV`] nor `HEADROOM_REQUIRE_ALL` is set (see
    /// [`super::require`]); any other failure panics with the logs.
    pub(crate) fn start() -> Option<KubeCluster> {
        let bin = kube_bin_dir();
        let missing: Vec<&str> = [
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
        ]
        .into_iter()
        .filter(|b| !bin.join(b).is_file())
        .collect();
        if !missing.is_empty() {
            let why = format!(
                "{} missing from {} (run `bash scripts/peers.sh`)",
                missing.join(", "),
                bin.display()
            );
            assert!(
                std::env::var_os(REQUIRE_ENV).is_none(),
                "{REQUIRE_ENV} is set but {why}"
            );
            return super::require::<KubeCluster, _>("a Kubernetes control plane", Err(why));
        }
        let dir = tempfile::tempdir().expect("a temporary directory");
        let bridge =
            super::TestBridge::create().expect("a bridge for the pods (tests run as root)");
        let [a, b, c, _] = bridge.gateway.octets();
        let subnet = format!("{a}.{b}.{c}");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        // Half-built, the cluster is already owned, so a panic below tears it down.
        let mut cluster = KubeCluster {
            kubeconfig: dir.path().join("kubeconfig"),
            node: format!("agent-{}", subnet.rsplit('.').next().unwrap_or("0")),
            children: Vec::new(),
            bridge,
            subnet,
            client: rt
                .block_on(async { Client::try_from(placeholder_config()) })
                .expect("a client"),
            rt,
            dir,
        };
        cluster.boot(&bin);
        Some(cluster)
    }

    fn boot(&mut self, bin: &Path) {
        let d = self.dir.path().to_owned();
        let path = |name: &str| d.join(name).display().to_string();
        let key = rcgen::KeyPair::generate().expect("an ECDSA key for service-account tokens");
        fs::write(d.join("sa.key"), key.serialize_pem()).unwrap();
        fs::write(d.join("sa.pub"), key.public_key_pem()).unwrap();
        let token = format!("{:032x}", rand::random::<u128>());
        fs::write(
            d.join("tokens.csv"),
            format!("{token},admin,admin,system:masters\n"),
        )
        .unwrap();
        let (etcd_port, peer_port, api_port) = (free_port(), free_port(), free_port());
        let etcd_url = format!("http://127.0.0.1:{etcd_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        self.spawn(
            bin,
            "etcd",
            &[
                "--name=default".into(),
                format!("--data-dir={}", path("etcd")),
                format!("--listen-client-urls={etcd_url}"),
                format!("--advertise-client-urls={etcd_url}"),
                format!("--listen-peer-urls={peer_url}"),
                format!("--initial-advertise-peer-urls={peer_url}"),
                format!("--initial-cluster=default={peer_url}"),
                "--unsafe-no-fsync".into(),
            ],
        );
        self.spawn(
            bin,
            "kube-apiserver",
            &[
                format!("--etcd-servers={etcd_url}"),
                "--bind-address=127.0.0.1".into(),
                // No Endpoints for the `kubernetes` Service (a loopback address may not be
                // one), and its cluster IP is a number nothing routes.
                "--advertise-address=127.0.0.1".into(),
                "--endpoint-reconciler-type=none".into(),
                "--service-cluster-ip-range=10.200.254.0/24".into(),
                format!("--secure-port={api_port}"),
                format!("--cert-dir={}", path("certs")),
                format!("--token-auth-file={}", path("tokens.csv")),
                "--authorization-mode=AlwaysAllow".into(),
                "--anonymous-auth=false".into(),
                "--service-account-issuer=https://kubernetes.default.svc".into(),
                format!("--service-account-key-file={}", path("sa.pub")),
                format!("--service-account-signing-key-file={}", path("sa.key")),
            ],
        );
        // The API server writes its self-signed certificate (and its CA) first thing.
        let ca = d.join("certs/apiserver.crt");
        self.wait("the API server's certificate", || ca.is_file());
        fs::write(&self.kubeconfig, kubeconfig_text(api_port, &ca, &token)).unwrap();
        let kubeconfig = Kubeconfig::read_from(&self.kubeconfig).expect("the kubeconfig reads");
        self.client = self.rt.block_on(async {
            let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .expect("a configuration from the kubeconfig");
            Client::try_from(config).expect("a client")
        });
        let client = self.client.clone();
        let rt = self.rt.handle().clone();
        self.wait("the API server to be ready", || {
            let req = http::Request::get("/readyz").body(Vec::new()).unwrap();
            rt.block_on(client.request_text(req))
                .map(|t| t == "ok")
                .unwrap_or(false)
        });
        let kc = format!("--kubeconfig={}", self.kubeconfig.display());
        self.spawn(bin, "kube-controller-manager", &[
            kc.clone(),
            "--controllers=job-controller,serviceaccount-controller,serviceaccount-token-controller,\
             garbage-collector-controller,namespace-controller,pod-garbage-collector-controller,\
             endpointslice-controller,ttl-after-finished-controller"
                .into(),
            format!("--service-account-private-key-file={}", path("sa.key")),
            format!("--root-ca-file={}", ca.display()),
            "--leader-elect=false".into(),
            "--bind-address=127.0.0.1".into(),
            "--secure-port=0".into(),
        ]);
        self.spawn(
            bin,
            "kube-scheduler",
            &[
                kc,
                "--leader-elect=false".into(),
                "--bind-address=127.0.0.1".into(),
                "--secure-port=0".into(),
            ],
        );
        self.register_node();
        // Pods cannot be created before the ServiceAccount controller made `default`.
        let accounts: Api<ServiceAccount> = Api::namespaced(self.client.clone(), "default");
        let rt = self.rt.handle().clone();
        self.wait("the default ServiceAccount", || {
            rt.block_on(accounts.get_opt("default"))
                .ok()
                .flatten()
                .is_some()
        });
    }

    /// Creates the agent's Node, ready, with room for many pods and no taints (no
    /// node-lifecycle controller runs to lift the `not-ready` one).
    fn register_node(&self) {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let node: Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": self.node, "labels": {"kubernetes.io/hostname": self.node}},
        }))
        .unwrap();
        let amounts = serde_json::json!({"cpu": "64", "memory": "256Gi", "pods": "250"});
        let status = serde_json::json!({"status": {
            "capacity": amounts, "allocatable": amounts,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "headroom's test node agent"}],
            "addresses": [{"type": "InternalIP", "address": self.gateway()}],
        }});
        let untaint = serde_json::json!({"spec": {"taints": null}});
        self.rt.block_on(async {
            nodes
                .create(&PostParams::default(), &node)
                .await
                .expect("create the Node");
            let pp = PatchParams::default();
            nodes
                .patch(&self.node, &pp, &Patch::Merge(&untaint))
                .await
                .expect("untaint the Node");
            nodes
                .patch_status(&self.node, &pp, &Patch::Merge(&status))
                .await
                .expect("Node status");
        });
    }

    /// Starts `bin/name args`, its output into `<dir>/<name>.log`.
    fn spawn(&mut self, bin: &Path, name: &'static str, args: &[String]) {
        let log = fs::File::create(self.dir.path().join(format!("{name}.log"))).unwrap();
        let child = Command::new(bin.join(name))
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        self.children.push((name, child));
    }

    /// Polls `ready` every 100 ms; panics with the logs when a component exits or
    /// [`READY_TIMEOUT`] passes.
    fn wait(&mut self, what: &str, mut ready: impl FnMut() -> bool) {
        let start = Instant::now();
        while !ready() {
            let exited = self.children.iter_mut().find_map(|(name, child)| {
                let status = child.try_wait().ok().flatten()?;
                Some(format!("{name} exited ({status})"))
            });
            if let Some(exited) = exited {
                panic!("{exited} while waiting for {what}\n{}", self.logs());
            }
            assert!(
                start.elapsed() < READY_TIMEOUT,
                "no {what} after {READY_TIMEOUT:?}\n{}",
                self.logs()
            );
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// The kubeconfig of the cluster's admin (set `KUBECONFIG` to it for headroom).
    pub(crate) fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The Node a [`super::NodeAgent`] serves.
    pub(crate) fn node(&self) -> &str {
        &self.node
    }

    /// The pods' bridge.
    pub(crate) fn bridge(&self) -> &str {
        &self.bridge.name
    }

    /// The bridge's /24 as its first three numbers, e.g. `10.200.123`.
    pub(crate) fn subnet(&self) -> &str {
        &self.subnet
    }

    /// The bridge's own address, `10.200.X.1`: where pods reach this machine (a
    /// coordinator listening there is reachable from every shard pod).
    pub(crate) fn gateway(&self) -> String {
        format!("{}.1", self.subnet)
    }

    /// The cluster's temporary directory (logs, keys, the kubeconfig).
    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A client of the cluster's API, as its admin.
    pub(crate) fn client(&self) -> Client {
        self.client.clone()
    }

    /// Runs `f` on the cluster's runtime (for calls through [`KubeCluster::client`]).
    pub(crate) fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// The last lines of each component's log, for a failure message.
    pub(crate) fn logs(&self) -> String {
        let mut out = String::new();
        for (name, _) in &self.children {
            let text =
                fs::read_to_string(self.dir.path().join(format!("{name}.log"))).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            out.push_str(&format!("--- {name} (last 15 lines) ---\n"));
            out.push_str(&lines[lines.len().saturating_sub(15)..].join("\n"));
            out.push('\n');
        }
        out
    }
}

impl Drop for KubeCluster {
    fn drop(&mut self) {
        // Killed outright: the state dies with the temporary directory, and the API
        // server's graceful shutdown alone takes many seconds.
        for (_, child) in self.children.iter_mut().rev() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A configuration for the client before the API server has a port and certificate;
/// replaced before any request.
fn placeholder_config() -> Config {
    Config::new("https://127.0.0.1:1".parse().unwrap())
}

/// A kubeconfig for `https://127.0.0.1:port`, trusting `ca`, authenticating with `token`.
fn kubeconfig_text(port: u16, ca: &Path, token: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\n\
         clusters:\n- name: test\n  cluster:\n    server: https://127.0.0.1:{port}\n    certificate-authority: {}\n\
         users:\n- name: admin\n  user:\n    token: {token}\n\
         contexts:\n- name: test\n  context:\n    cluster: test\n    user: admin\n    namespace: default\n\
         current-context: test\n",
        ca.display()
    )
}
