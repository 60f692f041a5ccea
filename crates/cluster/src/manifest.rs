//! A run's Kubernetes objects, built from a [`ClusterSpec`]: [`objects`] gives them
//! as API types (what [`super::Launched`] creates), [`manifest_yaml`] as the YAML
//! `headroom cluster manifest` prints. Both come from the same builder, so what people
//! apply by hand is what headroom creates.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Affinity, Container, EnvVar, EnvVarSource, ObjectFieldSelector, PodAffinityTerm,
    PodAntiAffinity, PodSpec, PodTemplateSpec, ResourceRequirements, Secret, SecretKeySelector,
    SecretVolumeSource, Service, ServiceSpec, Volume, VolumeMount, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::{ClusterSpec, CONTAINER, LABEL_RUN, MOUNT_PATH, SCENARIO_KEY, SECRET_KEY};

/// The annotation an Indexed Job sets on each pod to its completion index; the shard
/// reads its index from it (`HEADROOM_SHARD_INDEX`).
pub const INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// How long a finished Job (and, through their owner, its Secret and Service) stays
/// for inspection before the TTL controller deletes it.
pub const TTL_AFTER_FINISHED_SECONDS: i32 = 600;

/// A run's objects, in the order they are created.
#[derive(Debug, Clone, PartialEq)]
pub struct Objects {
    /// Secret `<run>`: the run's secret and the scenario text, as `stringData`.
    pub secret: Secret,
    /// Service `<run>`: headless, so each shard pod has a stable name `<run>-<i>.<run>`.
    pub service: Service,
    /// Job `<run>`: Indexed, one pod per shard, no retries.
    pub job: Job,
}

/// The run's labels: the app name, the instance and [`LABEL_RUN`].
pub fn labels(run: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_owned(), "headroom".to_owned()),
        ("app.kubernetes.io/instance".to_owned(), run.to_owned()),
        (LABEL_RUN.to_owned(), run.to_owned()),
    ])
}

/// Builds the Secret, the headless Service and the Indexed Job of `spec` (which
/// should have passed [`ClusterSpec::validate`]).
pub fn objects(spec: &ClusterSpec) -> Objects {
    let meta = ObjectMeta {
        name: Some(spec.run.clone()),
        namespace: Some(spec.namespace.clone()),
        labels: Some(labels(&spec.run)),
        ..ObjectMeta::default()
    };
    let mut data = BTreeMap::from([(SECRET_KEY.to_owned(), spec.secret.clone())]);
    if let Some((_, text)) = &spec.scenario {
        data.insert(SCENARIO_KEY.to_owned(), text.clone());
    }
    let secret = Secret {
        metadata: meta.clone(),
        string_data: Some(data),
        type_: Some("Opaque".into()),
        ..Secret::default()
    };
    let selector = BTreeMap::from([(LABEL_RUN.to_owned(), spec.run.clone())]);
    let service = Service {
        metadata: meta.clone(),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            selector: Some(selector.clone()),
            // Shards are never "ready" (no probe); their names must resolve anyway.
            publish_not_ready_addresses: Some(true),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    };
    let shards = i32::try_from(spec.shards).unwrap_or(i32::MAX);
    let job = Job {
        metadata: meta,
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".into()),
            completions: Some(shards),
            parallelism: Some(shards),
            // A failed shard is not retried (its share of the schedule cannot be
            // replayed mid-run) and fails the whole Job.
            backoff_limit_per_index: Some(0),
            max_failed_indexes: Some(0),
            active_deadline_seconds: Some(deadline_seconds(spec)),
            ttl_seconds_after_finished: Some(TTL_AFTER_FINISHED_SECONDS),
            template: pod_template(spec, selector),
            ..JobSpec::default()
        }),
        ..Job::default()
    };
    Objects {
        secret,
        service,
        job,
    }
}

/// The deadline in whole seconds, rounded up, at least 1, at most `i64::MAX`.
fn deadline_seconds(spec: &ClusterSpec) -> i64 {
    let secs = spec.deadline.as_secs() + u64::from(spec.deadline.subsec_nanos() > 0);
    i64::try_from(secs.max(1)).unwrap_or(i64::MAX)
}

/// The shard pods' template: one container running `headroom shard`.
fn pod_template(spec: &ClusterSpec, selector: BTreeMap<String, String>) -> PodTemplateSpec {
    let env = |name: &str, value: Option<String>, from: Option<EnvVarSource>| EnvVar {
        name: name.into(),
        value,
        value_from: from,
    };
    let env = vec![
        env("HEADROOM_SHARD_COUNT", Some(spec.shards.to_string()), None),
        env(
            "HEADROOM_SHARD_SECRET",
            None,
            Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: spec.run.clone(),
                    key: SECRET_KEY.into(),
                    optional: Some(false),
                }),
                ..EnvVarSource::default()
            }),
        ),
        env(
            "HEADROOM_SHARD_INDEX",
            None,
            Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: format!("metadata.annotations['{INDEX_ANNOTATION}']"),
                    api_version: None,
                }),
                ..EnvVarSource::default()
            }),
        ),
    ];
    let mut amounts = BTreeMap::new();
    for (name, qty) in [("cpu", &spec.cpu), ("memory", &spec.memory)] {
        if let Some(q) = qty {
            amounts.insert(name.to_owned(), Quantity(q.clone()));
        }
    }
    let resources = (!amounts.is_empty()).then(|| ResourceRequirements {
        limits: Some(amounts.clone()),
        requests: Some(amounts),
        ..ResourceRequirements::default()
    });
    let container = Container {
        name: CONTAINER.into(),
        image: Some(spec.image.clone()),
        command: Some(vec![
            "headroom".into(),
            "shard".into(),
            "--coordinator".into(),
            spec.advertise.clone(),
        ]),
        env: Some(env),
        resources,
        // A shard that fails says why on stderr; this puts the end of that in the
        // pod's status, where `failed_pods` reads it.
        termination_message_policy: Some("FallbackToLogsOnError".into()),
        volume_mounts: Some(vec![VolumeMount {
            name: "run".into(),
            mount_path: MOUNT_PATH.into(),
            read_only: Some(true),
            ..VolumeMount::default()
        }]),
        ..Container::default()
    };
    let spread = WeightedPodAffinityTerm {
        weight: 100,
        pod_affinity_term: PodAffinityTerm {
            label_selector: Some(LabelSelector {
                match_labels: Some(selector),
                ..LabelSelector::default()
            }),
            topology_key: "kubernetes.io/hostname".into(),
            ..PodAffinityTerm::default()
        },
    };
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels(&spec.run)),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            subdomain: Some(spec.run.clone()),
            // Shards never call the Kubernetes API.
            automount_service_account_token: Some(false),
            containers: vec![container],
            volumes: Some(vec![Volume {
                name: "run".into(),
                secret: Some(SecretVolumeSource {
                    secret_name: Some(spec.run.clone()),
                    ..SecretVolumeSource::default()
                }),
                ..Volume::default()
            }]),
            affinity: Some(Affinity {
                pod_anti_affinity: Some(PodAntiAffinity {
                    preferred_during_scheduling_ignored_during_execution: Some(vec![spread]),
                    ..PodAntiAffinity::default()
                }),
                ..Affinity::default()
            }),
            ..PodSpec::default()
        }),
    }
}

/// The objects of `spec` as one multi-document YAML text (Secret, Service, Job), each
/// with its `apiVersion` and `kind`, for `kubectl apply -f -`. The Secret's values are
/// in `stringData`, readable.
pub fn manifest_yaml(spec: &ClusterSpec) -> String {
    let o = objects(spec);
    let yaml = |doc: Result<String, serde_saphyr::SerializeError>| {
        doc.expect("Kubernetes API types serialize as YAML")
    };
    let mut out = format!("# headroom run {}: {} shard(s)\n", spec.run, spec.shards);
    for doc in [
        yaml(serde_saphyr::to_string(&o.secret)),
        yaml(serde_saphyr::to_string(&o.service)),
        yaml(serde_saphyr::to_string(&o.job)),
    ] {
        out.push_str("---\n");
        out.push_str(&doc);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::spec;
    use super::*;

    #[test]
    fn the_job_is_indexed_one_pod_per_shard_never_retried() {
        let o = objects(&spec());
        let job = o.job.spec.unwrap();
        assert_eq!(job.completion_mode.as_deref(), Some("Indexed"));
        assert_eq!((job.completions, job.parallelism), (Some(4), Some(4)));
        assert_eq!(
            (job.backoff_limit_per_index, job.max_failed_indexes),
            (Some(0), Some(0))
        );
        assert_eq!(job.active_deadline_seconds, Some(330));
        assert!(job.pod_failure_policy.is_none());
        let pod = job.template.spec.unwrap();
        assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
        assert_eq!(pod.subdomain.as_deref(), Some("headroom-3f9a1c2b"));
        let c = &pod.containers[0];
        assert_eq!(c.name, "shard");
        assert_eq!(
            c.command.as_deref().unwrap(),
            ["headroom", "shard", "--coordinator", "10.200.0.5:7700"]
        );
        let r = c.resources.as_ref().unwrap();
        assert_eq!(r.requests, r.limits);
        assert_eq!(r.requests.as_ref().unwrap()["cpu"], Quantity("500m".into()));
        let env: Vec<&str> = c
            .env
            .as_ref()
            .unwrap()
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(
            env,
            [
                "HEADROOM_SHARD_COUNT",
                "HEADROOM_SHARD_SECRET",
                "HEADROOM_SHARD_INDEX"
            ]
        );
    }

    #[test]
    fn the_secret_and_service_belong_to_the_run() {
        let o = objects(&spec());
        let data = o.secret.string_data.unwrap();
        assert_eq!(data["secret"], "ab".repeat(32));
        assert_eq!(data["scenario.yaml"], "target: http://x\n");
        let svc = o.service.spec.unwrap();
        assert_eq!(svc.cluster_ip.as_deref(), Some("None"));
        assert_eq!(svc.publish_not_ready_addresses, Some(true));
        assert_eq!(svc.selector.unwrap()[LABEL_RUN], "headroom-3f9a1c2b");
        let url_run = ClusterSpec {
            scenario: None,
            cpu: None,
            memory: None,
            ..spec()
        };
        let o = objects(&url_run);
        assert!(!o.secret.string_data.unwrap().contains_key("scenario.yaml"));
        let job = o.job.spec.unwrap().template.spec.unwrap();
        assert!(job.containers[0].resources.is_none());
    }

    #[test]
    fn the_manifest_reads_back_as_the_same_objects() {
        let text = manifest_yaml(&spec());
        let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text).unwrap();
        let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["Secret", "Service", "Job"]);
        assert_eq!(docs[2]["apiVersion"], "batch/v1");
        let job: Job = serde_json::from_value(docs[2].clone()).unwrap();
        assert_eq!(job, objects(&spec()).job);
        assert_eq!(docs[0]["stringData"]["secret"], "ab".repeat(32));
    }
}
