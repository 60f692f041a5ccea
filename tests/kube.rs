//! headroom's Kubernetes side against a real control plane on this machine
//! ([`KubeCluster`]: etcd, kube-apiserver, kube-controller-manager, kube-scheduler)
//! and a test-only node agent that runs pods as local processes in network
//! namespaces ([`NodeAgent`]): the printed manifest passes the API server's own
//! validation, and a launched run's failed shards are named and its objects removed.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use headroom::cluster::{self, ClusterError, ClusterSpec, Launched, PodFailure};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use serde_json::Value;

use crate::support::{assert_exit, headroom_bin, run_headroom, stdout, KubeCluster, NodeAgent};

/// The longest any one wait on the cluster may take before the test fails.
const WAIT: Duration = Duration::from_secs(60);

/// Server-side apply of one manifest document, dry run, unknown fields an error:
/// what `kubectl apply --server-side --dry-run=server --validate=strict` does.
fn dry_run_apply(cluster: &KubeCluster, doc: &Value) -> Result<(), ::kube::Error> {
    let ar = match doc["kind"].as_str() {
        Some("Secret") => ApiResource::erase::<Secret>(&()),
        Some("Service") => ApiResource::erase::<Service>(&()),
        Some("Job") => ApiResource::erase::<Job>(&()),
        other => panic!("unexpected kind {other:?} in the manifest"),
    };
    let api: Api<DynamicObject> = Api::namespaced_with(cluster.client(), "default", &ar);
    let name = doc["metadata"]["name"].as_str().expect("a name");
    let params = PatchParams::apply("headroom-test")
        .dry_run()
        .validation_strict();
    cluster
        .block_on(api.patch(name, &params, &Patch::Apply(doc)))
        .map(|_| ())
}

#[test]
fn cluster_manifest_passes_the_api_servers_own_validation() {
    let Some(cluster) = KubeCluster::start() else {
        return;
    };
    let scenario = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/seed-001-graphql.yaml");
    let advertise = format!("{}:7000", cluster.gateway());
    let out = run_headroom(
        [
            "cluster",
            "manifest",
            scenario.to_str().unwrap(),
            "--shards",
            "3",
            "--advertise",
            &advertise,
            "--shard-cpu",
            "250m",
            "--shard-memory",
            "64Mi",
            "--name",
            "headroom-manifest",
        ],
        Duration::from_secs(20),
    );
    assert_exit(&out, 0);
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(&stdout(&out)).expect("the manifest is YAML");
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["Secret", "Service", "Job"]);
    for doc in &docs {
        if let Err(e) = dry_run_apply(&cluster, doc) {
            panic!("the API server refused the {}: {e}\n{doc:#}", doc["kind"]);
        }
    }
    // A dry run stores nothing.
    let jobs: Api<Job> = Api::namespaced(cluster.client(), "default");
    assert!(cluster
        .block_on(jobs.get_opt("headroom-manifest"))
        .unwrap()
        .is_none());

    // The same validation refuses what is wrong: an invalid container name, and a
    // field the API does not have.
    let mut bad = docs[2].clone();
    bad["spec"]["template"]["spec"]["containers"][0]["name"] = "Shard_0".into();
    match dry_run_apply(&cluster, &bad) {
        Err(::kube::Error::Api(s)) => {
            assert_eq!(s.code, 422, "{s:?}");
            assert!(s.message.contains("containers[0].name"), "{}", s.message);
        }
        other => panic!("an invalid container name passed: {other:?}"),
    }
    let mut unknown = docs[2].clone();
    unknown["spec"]["completionz"] = 3.into();
    match dry_run_apply(&cluster, &unknown) {
        Err(::kube::Error::Api(s)) => assert!(s.message.contains("completionz"), "{}", s.message),
        other => panic!("an unknown field passed: {other:?}"),
    }
}

/// A run of `shards` shards that dial `advertise`, with a fresh name and secret.
fn spec(shards: u32, advertise: String) -> ClusterSpec {
    ClusterSpec {
        run: cluster::new_run_name(),
        namespace: "default".into(),
        shards,
        image: "headroom:test".into(),
        advertise,
        secret: cluster::new_secret(),
        scenario: None,
        cpu: Some("100m".into()),
        memory: Some("64Mi".into()),
        deadline: cluster::deadline_for(Duration::from_secs(10)),
    }
}

/// Polls `f` every 200 ms until it gives `Some`; panics with `context()` after [`WAIT`].
fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>, context: impl Fn() -> String) -> T {
    let start = Instant::now();
    loop {
        if let Some(t) = f() {
            return t;
        }
        assert!(
            start.elapsed() < WAIT,
            "no {what} after {WAIT:?}\n{}",
            context()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A listener on the bridge's address that closes every connection it accepts.
struct HangUp {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HangUp {
    fn start(ip: &str) -> HangUp {
        let listener = TcpListener::bind((ip, 0)).expect("listen on the bridge's address");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => drop(conn),
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        HangUp {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for HangUp {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_launched_run_names_each_failed_shard_and_cleans_up() {
    let Some(cluster) = KubeCluster::start() else {
        return;
    };
    let agent = NodeAgent::start(&cluster, &headroom_bin());
    // Not a coordinator: it hangs up on every shard at once, so each fails at its
    // first read instead of retrying to connect for a minute as a shard whose
    // coordinator is not up yet does.
    let impostor = HangUp::start(&cluster.gateway());
    let spec = spec(2, impostor.addr.to_string());
    let launched = Launched::launch_with(&spec, Some(cluster.kubeconfig())).expect("launch");
    let context = || format!("{}\n{}", agent.logs(), cluster.logs());
    // Gathered over several looks: once one shard has failed, the Job controller
    // deletes the other pods, so both may not be listed at the same moment.
    let mut failed: BTreeMap<String, PodFailure> = BTreeMap::new();
    let mut ips: BTreeMap<String, String> = BTreeMap::new();
    wait_for(
        "two failed shards",
        || {
            // Failed pods first: a pod seen failed is then listed with its address.
            for f in launched.failed_pods().expect("failed pods") {
                failed.insert(f.pod.clone(), f);
            }
            for p in launched.pods().expect("pods") {
                if let Some(ip) = p.ip {
                    ips.insert(p.name, ip);
                }
            }
            (failed.len() >= 2).then_some(())
        },
        context,
    );
    let mut failures: Vec<PodFailure> = failed.into_values().collect();
    failures.sort_by_key(|f| f.index);
    println!("failed shards: {failures:#?}");
    for (i, f) in failures.iter().enumerate() {
        assert_eq!(f.index, Some(i as u32), "{failures:?}");
        assert!(
            f.pod.starts_with(&format!("{}-{i}-", spec.run)),
            "{failures:?}"
        );
        assert!(f.reason.starts_with("exit code "), "{f}");
        assert!(!f.reason.starts_with("exit code 0"), "{f}");
        assert!(f.to_string().contains(&f.pod), "{f}");
    }
    // The agent ran each pod in its own namespace on the bridge.
    let ips: Vec<&String> = failures.iter().filter_map(|f| ips.get(&f.pod)).collect();
    assert_eq!(ips.len(), 2, "{ips:?}");
    let subnet = format!("{}.", cluster.subnet());
    assert!(ips.iter().all(|ip| ip.starts_with(&subnet)), "{ips:?}");
    assert_ne!(ips[0], ips[1]);

    // The Secret and Service belong to the Job, so they go with it whoever deletes it.
    let secrets: Api<Secret> = Api::namespaced(cluster.client(), "default");
    let secret = cluster.block_on(secrets.get(&spec.run)).unwrap();
    let owners = secret.metadata.owner_references.unwrap_or_default();
    assert_eq!(
        (owners[0].kind.as_str(), owners[0].name.as_str()),
        ("Job", spec.run.as_str())
    );

    launched.cleanup().expect("cleanup");
    let services: Api<Service> = Api::namespaced(cluster.client(), "default");
    let jobs: Api<Job> = Api::namespaced(cluster.client(), "default");
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let selector =
        ::kube::api::ListParams::default().labels(&format!("headroom.dev/run={}", spec.run));
    wait_for(
        "Job, Service, Secret and pods gone",
        || {
            let gone = cluster.block_on(jobs.get_opt(&spec.run)).unwrap().is_none()
                && cluster
                    .block_on(services.get_opt(&spec.run))
                    .unwrap()
                    .is_none()
                && cluster
                    .block_on(secrets.get_opt(&spec.run))
                    .unwrap()
                    .is_none()
                && cluster
                    .block_on(pods.list(&selector))
                    .unwrap()
                    .items
                    .is_empty();
            gone.then_some(())
        },
        context,
    );
}

#[test]
fn a_failed_launch_removes_only_its_own_objects_and_a_waiting_pod_says_why() {
    let Some(cluster) = KubeCluster::start() else {
        return;
    };
    let spec = spec(1, format!("{}:1", cluster.gateway()));
    // Someone else's Service already has the run's name.
    let services: Api<Service> = Api::namespaced(cluster.client(), "default");
    let theirs = cluster::objects(&spec).service;
    cluster
        .block_on(services.create(&PostParams::default(), &theirs))
        .unwrap();

    match Launched::launch_with(&spec, Some(cluster.kubeconfig())) {
        Err(
            e @ ClusterError::Api {
                action: "create",
                kind: "Service",
                ..
            },
        ) => {
            assert!(e.to_string().contains("already exists"), "{e}");
            assert!(
                e.to_string().contains(&format!("default/{}", spec.run)),
                "{e}"
            );
        }
        other => panic!("expected the Service to clash: {other:?}"),
    }
    let secrets: Api<Secret> = Api::namespaced(cluster.client(), "default");
    let jobs: Api<Job> = Api::namespaced(cluster.client(), "default");
    assert!(
        cluster
            .block_on(secrets.get_opt(&spec.run))
            .unwrap()
            .is_none(),
        "the Secret it made stays"
    );
    assert!(cluster.block_on(jobs.get_opt(&spec.run)).unwrap().is_none());
    assert!(
        cluster
            .block_on(services.get_opt(&spec.run))
            .unwrap()
            .is_some(),
        "their Service was deleted"
    );

    // A shard that asks for more CPU than any node has waits, and says why.
    let greedy = ClusterSpec {
        cpu: Some("1000".into()),
        ..spec.clone()
    };
    cluster
        .block_on(services.delete(&spec.run, &Default::default()))
        .unwrap();
    let launched = Launched::launch_with(&greedy, Some(cluster.kubeconfig())).expect("launch");
    let why = wait_for(
        "an unschedulable pod",
        || launched.pods().unwrap().into_iter().find_map(|p| p.waiting),
        || cluster.logs(),
    );
    assert!(why.contains("Insufficient cpu"), "{why}");
    assert!(
        launched.failed_pods().unwrap().is_empty(),
        "waiting is not failing"
    );
    launched.cleanup().unwrap();

    // And with no configuration at all, launching says so before creating anything.
    let missing = cluster.dir().join("no-such-kubeconfig");
    match Launched::launch_with(&spec, Some(&missing)) {
        Err(e @ ClusterError::Config(_)) => {
            assert!(e.to_string().contains("no-such-kubeconfig"), "{e}")
        }
        other => panic!("expected a configuration error: {other:?}"),
    }
}

#[test]
fn cluster_manifest_refuses_bad_input_naming_the_flag() {
    let url = ["cluster", "manifest", "--url", "http://127.0.0.1:9/"];
    let cases: [(&[&str], &str); 6] = [
        (&["--advertise", "10.200.0.5:7700"], "--shards"),
        (&["--shards", "2"], "--advertise"),
        (
            &["--shards", "2", "--advertise", "10.200.0.5"],
            "--advertise",
        ),
        (
            &["--shards", "2", "--advertise", "a:1", "--shard-cpu", "lots"],
            "--shard-cpu",
        ),
        (
            &[
                "--shards",
                "2",
                "--advertise",
                "a:1",
                "--shard-memory",
                "1GB",
            ],
            "--shard-memory",
        ),
        (
            &[
                "--shards",
                "2",
                "--advertise",
                "a:1",
                "--image",
                "two words",
            ],
            "--image",
        ),
    ];
    for (args, flag) in cases {
        let out = run_headroom(url.iter().chain(args), Duration::from_secs(20));
        assert_exit(&out, 2);
        let err = crate::support::stderr(&out);
        assert!(err.contains(flag), "{args:?}: {err}");
        assert!(stdout(&out).is_empty(), "{args:?} printed a manifest");
    }
    let out = run_headroom(
        ["cluster", "manifest", "--shards", "1", "--advertise", "a:1"],
        Duration::from_secs(20),
    );
    assert_exit(&out, 2);
    assert!(crate::support::stderr(&out).contains("--url"));
}
