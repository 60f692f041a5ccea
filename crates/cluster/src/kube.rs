//! [`Launched`]: a run's objects created on a Kubernetes cluster through its API
//! server, and what the shard pods are doing.
//!
//! The API is blocking: a [`Launched`] owns a current-thread tokio runtime and the
//! `kube` client that lives on it, and each method blocks on one request or a few.
//! Callers must not be inside an async runtime themselves.

use std::fmt;
use std::path::Path;

use ::kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use ::kube::config::{KubeConfigOptions, Kubeconfig};
use ::kube::{Client, Config};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use super::manifest::objects;
use super::pods::{failure, state, PodFailure, PodState};
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
        Launched::launch_with(spec, None)
    }

    /// As [`Launched::launch`], with the configuration read from the kubeconfig file
    /// `kubeconfig` (its current context) when given, instead of inferred.
    pub fn launch_with(
        spec: &ClusterSpec,
        kubeconfig: Option<&Path>,
    ) -> Result<Launched, ClusterError> {
        spec.validate()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ClusterError::Client(e.to_string()))?;
        let client = runtime.block_on(async {
            let config = match kubeconfig {
                None => Config::infer().await.map_err(|e| e.to_string()),
                Some(path) => match Kubeconfig::read_from(path) {
                    Ok(k) => Config::from_custom_kubeconfig(k, &KubeConfigOptions::default())
                        .await
                        .map_err(|e| format!("{}: {e}", path.display())),
                    Err(e) => Err(format!("{}: {e}", path.display())),
                },
            };
            let config = config.map_err(ClusterError::Config)?;
            // The client spawns its connection tasks, so it is made on the runtime.
            Client::try_from(config).map_err(|e| ClusterError::Client(e.to_string()))
        })?;
        let launched = Launched {
            runtime,
            client,
            namespace: spec.namespace.clone(),
            run: spec.run.clone(),
        };
        let mut created = Vec::new();
        match launched.create(spec, &mut created) {
            Ok(()) => Ok(launched),
            Err(e) => {
                // Only what this launch created (a clash with an existing object of
                // the same name must not delete that object). Best effort: the
                // creation error is the one worth reporting.
                let _ = launched.delete(&created);
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

    /// Creates the objects, pushing each kind created onto `created`.
    fn create(&self, spec: &ClusterSpec, created: &mut Vec<Kind>) -> Result<(), ClusterError> {
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
            created.push(Kind::Secret);
            services
                .create(&pp, &o.service)
                .await
                .map_err(|e| self.fail("create", "Service", e))?;
            created.push(Kind::Service);
            let job = jobs
                .create(&pp, &o.job)
                .await
                .map_err(|e| self.fail("create", "Job", e))?;
            created.push(Kind::Job);
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
        let mut pods: Vec<PodState> = self.list_pods()?.iter().map(state).collect();
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
        self.delete(&[Kind::Job, Kind::Service, Kind::Secret])
    }

    /// Deletes the run's objects of `kinds`, in that order, all of them even if one
    /// fails; gone already is fine.
    fn delete(&self, kinds: &[Kind]) -> Result<(), ClusterError> {
        let background = DeleteParams::background();
        let run = self.run.as_str();
        let mut first_error = None;
        for kind in kinds {
            let result = self.runtime.block_on(async {
                match kind {
                    Kind::Job => self.api::<Job>().delete(run, &background).await.map(|_| ()),
                    Kind::Service => self
                        .api::<Service>()
                        .delete(run, &background)
                        .await
                        .map(|_| ()),
                    Kind::Secret => self
                        .api::<Secret>()
                        .delete(run, &background)
                        .await
                        .map(|_| ()),
                }
            });
            match result {
                Ok(()) => {}
                Err(::kube::Error::Api(s)) if s.is_not_found() => {}
                Err(e) => {
                    first_error.get_or_insert(self.fail("delete", kind.name(), e));
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// The kinds of object a run has.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Secret,
    Service,
    Job,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Secret => "Secret",
            Kind::Service => "Service",
            Kind::Job => "Job",
        }
    }
}
