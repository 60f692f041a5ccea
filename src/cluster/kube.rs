//! [`Launched`]: a run's objects created on a Kubernetes cluster through its API
//! server, and what the shard pods are doing.
//!
//! The API is blocking: a [`Launched`] owns a current-thread tokio runtime and the
//! `kube` client that lives on it, and each method blocks on one request or a few.
//! Callers must not be inside an async runtime themselves.

use std::fmt;

use ::kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use ::kube::{Client, Config};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod, Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use super::manifest::{objects, INDEX_ANNOTATION};
use super::{ClusterSpec, SpecError, LABEL_RUN};

/// Name under which headroom's changes are recorded (`managedFields`).
const FIELD_MANAGER: &str = "headroom";

/// What went wrong talking to the cluster.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The spec cannot make valid objects (nothing was created).
    #[error("{0}")]
    Spec(#[from] SpecError),
    /// No usable cluster configuration (KUBECONFIG, ~/.kube/config, in-cluster).
    #[error("cannot read the Kubernetes configuration (KUBECONFIG, ~/.kube/config or the in-cluster service account): {0}")]
    Config(String),
    /// The client or its runtime could not be made.
    #[error("cannot start the Kubernetes client: {0}")]
    Client(String),
    /// The API server refused or did not answer a request.
    #[error("cannot {action} {kind} {namespace}/{name}: {cause}")]
    Api {
        /// `create`, `list`, `delete`...
        action: &'static str,
        /// `Job`, `Service`, `Secret`, `pods of run`.
        kind: &'static str,
        /// The namespace.
        namespace: String,
        /// The object's name (or the run's, for a list).
        name: String,
        /// The API server's answer, or the transport's error.
        cause: ApiCause,
    },
}

/// Why an API request failed: the server's status (code and message) or the
/// transport's error, shown without the client's internal detail.
#[derive(Debug)]
pub struct ApiCause(pub Box<::kube::Error>);

impl fmt::Display for ApiCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.0 {
            ::kube::Error::Api(status) => {
                write!(
                    f,
                    "{} (HTTP {}, {})",
                    status.message, status.code, status.reason
                )
            }
            other => write!(f, "{other}"),
        }
    }
}

/// One shard pod as the API server reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodState {
    /// The pod's name, `<run>-<index>-<suffix>`.
    pub name: String,
    /// Its completion index (the shard index), when the Job controller set it.
    pub index: Option<u32>,
    /// `Pending`, `Running`, `Succeeded`, `Failed` or `Unknown`.
    pub phase: String,
    /// Its address, once the node gave it one.
    pub ip: Option<String>,
}

/// A shard pod that failed or can never start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodFailure {
    /// The pod's name.
    pub pod: String,
    /// Its completion index (the shard index), when known.
    pub index: Option<u32>,
    /// Why: the container's exit code, reason and last message (the end of its
    /// stderr), or the pod's own reason (e.g. `DeadlineExceeded`), or why its
    /// container cannot start (e.g. `ImagePullBackOff: ...`).
    pub reason: String,
}

impl fmt::Display for PodFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(i) => write!(f, "shard {i} (pod {}): {}", self.pod, self.reason),
            None => write!(f, "pod {}: {}", self.pod, self.reason),
        }
    }
}

/// Waiting reasons after which a container never starts without someone's help.
const STUCK: [&str; 6] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "CreateContainerConfigError",
    "CreateContainerError",
];

/// A run's objects, created on the cluster. Dropping it leaves them (the Job ends at
/// its deadline and its TTL removes everything); call [`Launched::cleanup`].
pub struct Launched {
    runtime: tokio::runtime::Runtime,
    client: Client,
    namespace: String,
    run: String,
}

impl fmt::Debug for Launched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Launched({}/{})", self.namespace, self.run)
    }
}

impl Launched {
    /// Validates `spec`, then creates its Secret, Service and Job in that order
    /// (configuration from `kube::Config::infer`) and makes the Job the owner of the
    /// other two. If any step fails, whatever was created is deleted again before the
    /// error is returned.
    pub fn launch(spec: &ClusterSpec) -> Result<Launched, ClusterError> {
        spec.validate()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ClusterError::Client(e.to_string()))?;
        let client = runtime.block_on(async {
            let config = Config::infer()
                .await
                .map_err(|e| ClusterError::Config(e.to_string()))?;
            // The client spawns its connection tasks, so it is made on the runtime.
            Client::try_from(config).map_err(|e| ClusterError::Client(e.to_string()))
        })?;
        let launched = Launched {
            runtime,
            client,
            namespace: spec.namespace.clone(),
            run: spec.run.clone(),
        };
        match launched.create(spec) {
            Ok(()) => Ok(launched),
            Err(e) => {
                // Best effort: the creation error is the one worth reporting.
                let _ = launched.delete_all();
                Err(e)
            }
        }
    }

    /// The run's name.
    pub fn run(&self) -> &str {
        &self.run
    }

    /// The run's namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    fn api<K>(&self) -> Api<K>
    where
        K: ::kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as ::kube::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    fn fail(&self, action: &'static str, kind: &'static str, e: ::kube::Error) -> ClusterError {
        ClusterError::Api {
            action,
            kind,
            namespace: self.namespace.clone(),
            name: self.run.clone(),
            cause: ApiCause(Box::new(e)),
        }
    }

    fn create(&self, spec: &ClusterSpec) -> Result<(), ClusterError> {
        let o = objects(spec);
        let pp = PostParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..PostParams::default()
        };
        let (secrets, services, jobs) = (
            self.api::<Secret>(),
            self.api::<Service>(),
            self.api::<Job>(),
        );
        self.runtime.block_on(async {
            secrets
                .create(&pp, &o.secret)
                .await
                .map_err(|e| self.fail("create", "Secret", e))?;
            services
                .create(&pp, &o.service)
                .await
                .map_err(|e| self.fail("create", "Service", e))?;
            let job = jobs
                .create(&pp, &o.job)
                .await
                .map_err(|e| self.fail("create", "Job", e))?;
            // Owned by the Job, the Secret and Service go with it, whoever deletes it
            // (cleanup, the TTL controller, a person).
            let owner = OwnerReference {
                api_version: "batch/v1".into(),
                kind: "Job".into(),
                name: self.run.clone(),
                uid: job.metadata.uid.unwrap_or_default(),
                ..OwnerReference::default()
            };
            let patch = serde_json::json!({"metadata": {"ownerReferences": [owner]}});
            let params = PatchParams {
                field_manager: Some(FIELD_MANAGER.into()),
                ..PatchParams::default()
            };
            let patch = Patch::Merge(&patch);
            secrets
                .patch(&self.run, &params, &patch)
                .await
                .map_err(|e| self.fail("patch", "Secret", e))?;
            services
                .patch(&self.run, &params, &patch)
                .await
                .map_err(|e| self.fail("patch", "Service", e))?;
            Ok(())
        })
    }

    /// Every pod of the run, in index order (pods without an index last).
    pub fn pods(&self) -> Result<Vec<PodState>, ClusterError> {
        let mut pods: Vec<PodState> = self
            .list_pods()?
            .iter()
            .map(|p| {
                let status = p.status.as_ref();
                PodState {
                    name: p.metadata.name.clone().unwrap_or_default(),
                    index: index_of(p),
                    phase: status
                        .and_then(|s| s.phase.clone())
                        .unwrap_or_else(|| "Unknown".into()),
                    ip: status.and_then(|s| s.pod_ip.clone()),
                }
            })
            .collect();
        pods.sort_by_key(|p| (p.index.is_none(), p.index, p.name.clone()));
        Ok(pods)
    }

    /// The pods that failed, or whose container cannot start (image pull, bad
    /// configuration), each with its reason; in index order.
    pub fn failed_pods(&self) -> Result<Vec<PodFailure>, ClusterError> {
        let mut failed: Vec<PodFailure> = self.list_pods()?.iter().filter_map(failure).collect();
        failed.sort_by_key(|f| (f.index.is_none(), f.index, f.pod.clone()));
        Ok(failed)
    }

    fn list_pods(&self) -> Result<Vec<Pod>, ClusterError> {
        let lp = ListParams::default().labels(&format!("{LABEL_RUN}={}", self.run));
        let pods = self.api::<Pod>();
        self.runtime
            .block_on(pods.list(&lp))
            .map(|list| list.items)
            .map_err(|e| self.fail("list", "pods of run", e))
    }

    /// Deletes the Job (its pods in the background), the Service and the Secret.
    /// Objects already gone are fine; the first other error is returned after all
    /// three were tried.
    pub fn cleanup(self) -> Result<(), ClusterError> {
        self.delete_all()
    }

    fn delete_all(&self) -> Result<(), ClusterError> {
        let background = DeleteParams::background();
        let gone = |r: Result<_, ::kube::Error>, kind| match r {
            Ok(_) => Ok(()),
            Err(::kube::Error::Api(s)) if s.is_not_found() => Ok(()),
            Err(e) => Err(self.fail("delete", kind, e)),
        };
        let (jobs, services, secrets) = (
            self.api::<Job>(),
            self.api::<Service>(),
            self.api::<Secret>(),
        );
        self.runtime.block_on(async {
            let results = [
                gone(jobs.delete(&self.run, &background).await.map(|_| ()), "Job"),
                gone(
                    services.delete(&self.run, &background).await.map(|_| ()),
                    "Service",
                ),
                gone(
                    secrets.delete(&self.run, &background).await.map(|_| ()),
                    "Secret",
                ),
            ];
            results
                .into_iter()
                .collect::<Result<Vec<()>, _>>()
                .map(|_| ())
        })
    }
}

/// The completion index of a Job's pod, from its annotation.
fn index_of(pod: &Pod) -> Option<u32> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(INDEX_ANNOTATION)?
        .parse()
        .ok()
}

/// Why `pod` failed or cannot start, if it did or cannot.
fn failure(pod: &Pod) -> Option<PodFailure> {
    let status = pod.status.as_ref()?;
    let containers = status.container_statuses.as_deref().unwrap_or_default();
    let reason = if status.phase.as_deref() == Some("Failed") {
        let terminated = containers.iter().find_map(terminated_reason);
        let own = [status.reason.as_deref(), status.message.as_deref()]
            .into_iter()
            .flatten()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(": ");
        match (terminated, own.is_empty()) {
            (Some(t), true) => t,
            (Some(t), false) => format!("{own}; {t}"),
            (None, false) => own,
            (None, true) => "failed (no reason given)".into(),
        }
    } else {
        let waiting = containers
            .iter()
            .find_map(|c| c.state.as_ref()?.waiting.as_ref())?;
        let why = waiting.reason.as_deref()?;
        if !STUCK.contains(&why) {
            return None;
        }
        match waiting.message.as_deref() {
            Some(m) if !m.is_empty() => format!("{why}: {m}"),
            _ => why.to_owned(),
        }
    };
    Some(PodFailure {
        pod: pod.metadata.name.clone().unwrap_or_default(),
        index: index_of(pod),
        reason,
    })
}

/// `exit code N (Reason): message` of a terminated container.
fn terminated_reason(c: &ContainerStatus) -> Option<String> {
    let t = c.state.as_ref()?.terminated.as_ref()?;
    let mut s = format!("exit code {}", t.exit_code);
    if let Some(r) = t.reason.as_deref().filter(|r| !r.is_empty()) {
        s.push_str(&format!(" ({r})"));
    }
    if let Some(m) = t
        .message
        .as_deref()
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        s.push_str(": ");
        s.push_str(m);
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateTerminated, ContainerStateWaiting, PodStatus,
    };

    use super::*;

    fn pod(phase: &str, state: ContainerState) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = Some("headroom-1-1-abcde".into());
        p.metadata.annotations = Some([(INDEX_ANNOTATION.to_owned(), "1".to_owned())].into());
        p.status = Some(PodStatus {
            phase: Some(phase.into()),
            container_statuses: Some(vec![ContainerStatus {
                name: "shard".into(),
                state: Some(state),
                ..ContainerStatus::default()
            }]),
            ..PodStatus::default()
        });
        p
    }

    #[test]
    fn a_failed_pod_says_its_exit_code_and_message() {
        let state = ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: 1,
                reason: Some("Error".into()),
                message: Some("error: cannot reach the coordinator\n".into()),
                ..ContainerStateTerminated::default()
            }),
            ..ContainerState::default()
        };
        let f = failure(&pod("Failed", state.clone())).unwrap();
        assert_eq!(f.index, Some(1));
        assert_eq!(
            f.reason,
            "exit code 1 (Error): error: cannot reach the coordinator"
        );
        assert_eq!(
            f.to_string(),
            "shard 1 (pod headroom-1-1-abcde): exit code 1 (Error): error: cannot reach the coordinator"
        );
        assert!(failure(&pod("Running", ContainerState::default())).is_none());
        assert!(failure(&pod("Succeeded", state)).is_none());
    }

    #[test]
    fn a_pod_that_cannot_pull_its_image_is_a_failure_a_slow_one_is_not() {
        let waiting = |reason: &str| ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some(reason.into()),
                message: Some("no such image".into()),
            }),
            ..ContainerState::default()
        };
        let f = failure(&pod("Pending", waiting("ImagePullBackOff"))).unwrap();
        assert_eq!(f.reason, "ImagePullBackOff: no such image");
        assert!(failure(&pod("Pending", waiting("ContainerCreating"))).is_none());
    }
}
