//! Kubernetes as the engine that places shards (issue 13): what one sharded run needs
//! on a cluster, built from one [`ClusterSpec`].
//!
//! - [`manifest`]: [`objects`] builds the run's Secret, headless Service and Indexed
//!   Job as Kubernetes API types; [`manifest_yaml`] prints them as the multi-document
//!   YAML of `headroom cluster manifest`.
//! - [`kube`]: [`Launched`] creates those objects through the API server
//!   (`kube::Config::infer`: `KUBECONFIG`, `~/.kube/config` or in-cluster), reads back
//!   the pods' states and failures, and deletes what it created.
//! - [`pods`]: [`PodState`] and [`PodFailure`], read from the shard pods' status.
//! - [`args`]: [`ClusterArgs`], the `--cluster`, `--image`, `--namespace`,
//!   `--advertise`, `--shard-cpu` and `--shard-memory` flags `run`, `find` and
//!   `cluster manifest` share, and the checks of their values.
//!
//! The coordinator (src/shard) drives this module: it makes a spec with a fresh run
//! name ([`new_run_name`]) and secret ([`new_secret`]), launches, follows the pods
//! while the shards dial it at `advertise`, and cleans up. Every object is named after
//! the run and carries [`LABEL_RUN`], so a run's objects are found, and deleted,
//! together; the Secret and Service are owned by the Job once it exists, so the
//! garbage collector removes them with it even if the CLI dies before cleaning up
//! (the Job itself ends at its deadline and is deleted 600 s later).

pub mod args;
pub mod kube;
pub mod manifest;
pub mod pods;

use std::time::Duration;

pub use args::{
    ClusterArgs, ClusterDefaults, ClusterKind, ValueError, DEFAULT_IMAGE, DEFAULT_NAMESPACE,
};
pub use kube::{ClusterError, Launched};
pub use manifest::{manifest_yaml, objects, Objects};
pub use pods::{PodFailure, PodState};

/// Label every object of a run carries, with the run name as its value; the Service
/// selects the shard pods by it and [`Launched`] lists them by it.
pub const LABEL_RUN: &str = "headroom.dev/run";
/// The Secret's key holding the run's secret (64 hex characters).
pub const SECRET_KEY: &str = "secret";
/// The Secret's key holding the scenario text (absent for a `--url` run).
pub const SCENARIO_KEY: &str = "scenario.yaml";
/// Where the shard container mounts the Secret, read-only.
pub const MOUNT_PATH: &str = "/etc/headroom";
/// The shard container's name.
pub const CONTAINER: &str = "shard";
/// Added to the run's length for the Job's `activeDeadlineSeconds`: time for pods to
/// be scheduled, images pulled and every shard to reach the start barrier. Generous
/// because an image pull on a cold node can take a minute; the deadline only bounds
/// what a lost run leaves running.
pub const STARTUP_ALLOWANCE: Duration = Duration::from_secs(300);
/// Longest run name accepted: the pods' hostnames are `<run>-<index>` and the Job
/// controller's pod names `<run>-<index>-<5 characters>`, all within 63 characters.
pub const MAX_RUN_NAME: usize = 50;

/// Everything that decides a run's cluster objects. Built by the caller (the
/// coordinator, or `headroom cluster manifest`); [`ClusterSpec::validate`] checks it
/// and [`objects`] assumes it was checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSpec {
    /// The run name: a DNS-1123 label (lowercase letters, digits, `-`) of at most
    /// [`MAX_RUN_NAME`] characters, e.g. `headroom-3f9a1c2b`. Names every object.
    pub run: String,
    /// Namespace the objects are created in.
    pub namespace: String,
    /// Number of shards: the Job's completions and parallelism (at least 1).
    pub shards: u32,
    /// Container image that holds `headroom` on its PATH.
    pub image: String,
    /// `HOST:PORT` the shards dial (the coordinator's address as the pods see it).
    pub advertise: String,
    /// The run's secret, 64 hex characters; stored in the Secret, never on a command line.
    pub secret: String,
    /// The scenario file's name and text, stored in the Secret (absent for `--url`).
    pub scenario: Option<(String, String)>,
    /// CPU request (and equal limit) of each shard, a Kubernetes quantity.
    pub cpu: Option<String>,
    /// Memory request (and equal limit) of each shard, a Kubernetes quantity.
    pub memory: Option<String>,
    /// The Job's `activeDeadlineSeconds` (rounded up to whole seconds): the run's
    /// length plus [`STARTUP_ALLOWANCE`], see [`deadline_for`].
    pub deadline: Duration,
}

/// A [`ClusterSpec`] value that cannot make valid objects: which field, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct SpecError {
    /// The flag or field at fault, e.g. `--shard-cpu`.
    pub field: &'static str,
    /// What is wrong with it and what was expected.
    pub problem: SpecProblem,
}

/// What is wrong with a [`ClusterSpec`] field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecProblem {
    /// A value that does not parse.
    #[error(transparent)]
    Value(#[from] args::ValueError),
    /// No address for the shards to dial.
    #[error("give the HOST:PORT the shards dial to reach the coordinator")]
    NoAdvertise,
    /// No shard at all.
    #[error("at least 1 shard is needed")]
    NoShards,
    /// The secret is not 64 hex characters.
    #[error("expected 64 hex characters")]
    Secret,
}

impl ClusterSpec {
    /// Checks every field as the API server would (names, quantities, the image) plus
    /// headroom's own rules (the secret's form, at least one shard), so that bad input
    /// is refused before anything is created.
    pub fn validate(&self) -> Result<(), SpecError> {
        let err = |field, problem: SpecProblem| Err(SpecError { field, problem });
        if let Err(m) = args::check_run_name(&self.run) {
            return err("run name", m.into());
        }
        if let Err(m) = args::check_dns_label(&self.namespace) {
            return err("--namespace", m.into());
        }
        if self.shards == 0 {
            return err("--shards", SpecProblem::NoShards);
        }
        if let Err(m) = args::parse_image(&self.image) {
            return err("--image", m.into());
        }
        if let Err(m) = args::parse_advertise(&self.advertise) {
            return err("--advertise", m.into());
        }
        if self.secret.len() != 64 || !self.secret.bytes().all(|b| b.is_ascii_hexdigit()) {
            return err("secret", SpecProblem::Secret);
        }
        for (field, q) in [("--shard-cpu", &self.cpu), ("--shard-memory", &self.memory)] {
            if let Some(Err(m)) = q.as_deref().map(args::parse_quantity) {
                return err(field, m.into());
            }
        }
        Ok(())
    }
}

/// The Job deadline for a run that lasts `run_length`: that plus [`STARTUP_ALLOWANCE`].
pub fn deadline_for(run_length: Duration) -> Duration {
    run_length.saturating_add(STARTUP_ALLOWANCE)
}

/// A fresh run name, `headroom-` and 8 random hex digits.
pub fn new_run_name() -> String {
    format!("headroom-{}", random_hex::<4>())
}

/// A fresh run secret: 32 bytes from the operating system's random source, as 64 hex
/// characters.
pub fn new_secret() -> String {
    random_hex::<32>()
}

/// `N` bytes from the OS's random source as lowercase hex. Panics only if the OS has
/// no random source, which nothing here can work around.
fn random_hex<const N: usize>() -> String {
    use rand::TryRngCore as _;
    let mut bytes = [0u8; N];
    rand::rngs::OsRng
        .try_fill_bytes(&mut bytes)
        .expect("the operating system's random source works");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn spec() -> ClusterSpec {
        ClusterSpec {
            run: "headroom-3f9a1c2b".into(),
            namespace: "default".into(),
            shards: 4,
            image: "headroom:0.1.0".into(),
            advertise: "10.200.0.5:7700".into(),
            secret: "ab".repeat(32),
            scenario: Some(("s.yaml".into(), "target: http://x\n".into())),
            cpu: Some("500m".into()),
            memory: Some("256Mi".into()),
            deadline: Duration::from_secs(330),
        }
    }

    #[test]
    fn fresh_names_and_secrets_are_well_formed_and_differ() {
        let (a, b) = (new_run_name(), new_run_name());
        assert_ne!(a, b);
        assert!(args::check_run_name(&a).is_ok(), "{a}");
        let s = new_secret();
        assert_ne!(s, new_secret());
        assert!(ClusterSpec {
            secret: s,
            ..spec()
        }
        .validate()
        .is_ok());
    }

    #[test]
    fn validate_names_the_field_at_fault() {
        assert_eq!(spec().validate(), Ok(()));
        let field = |s: ClusterSpec| s.validate().unwrap_err().field;
        assert_eq!(
            field(ClusterSpec {
                shards: 0,
                ..spec()
            }),
            "--shards"
        );
        assert_eq!(
            field(ClusterSpec {
                run: "Bad_Name".into(),
                ..spec()
            }),
            "run name"
        );
        assert_eq!(
            field(ClusterSpec {
                run: "a".repeat(51),
                ..spec()
            }),
            "run name"
        );
        assert_eq!(
            field(ClusterSpec {
                namespace: "-x".into(),
                ..spec()
            }),
            "--namespace"
        );
        assert_eq!(
            field(ClusterSpec {
                image: "a b".into(),
                ..spec()
            }),
            "--image"
        );
        assert_eq!(
            field(ClusterSpec {
                advertise: "nohost".into(),
                ..spec()
            }),
            "--advertise"
        );
        assert_eq!(
            field(ClusterSpec {
                secret: "abc".into(),
                ..spec()
            }),
            "secret"
        );
        assert_eq!(
            field(ClusterSpec {
                cpu: Some("lots".into()),
                ..spec()
            }),
            "--shard-cpu"
        );
        assert_eq!(
            field(ClusterSpec {
                memory: Some("-1Gi".into()),
                ..spec()
            }),
            "--shard-memory"
        );
    }

    #[test]
    fn the_deadline_adds_the_startup_allowance() {
        assert_eq!(
            deadline_for(Duration::from_secs(30)),
            Duration::from_secs(330)
        );
        assert_eq!(deadline_for(Duration::MAX), Duration::MAX);
    }
}
