//! What `run` and `find` drive their load through: this process, or — with
//! `--shards N` — a coordinator and its N shards ([`crate::shard`]).

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use crate::cluster::{new_run_name, ClusterError, ClusterKind, ClusterSpec, SpecError};
use crate::engine::{Control, EngineError, Local, Observer, Outcome, Runner, Step};
use crate::plan::Plan;
use crate::shard::auth::WeakSecret;
use crate::shard::kube::KubeShards;
use crate::shard::local::{ExternalShards, LocalError, LocalShards};
use crate::shard::netns::{Bridge, NetnsError};
use crate::shard::wire::Setup;
use crate::shard::{auth, CoordError, Coordinator, Placement};

use super::args::CommonArgs;
use super::exit::ExitCode;

/// How long local shards have to start and join.
const LOCAL_JOIN: Duration = Duration::from_secs(30);
/// How long pods have to be scheduled, pull their image, start and join (a pod that
/// fails meanwhile ends the wait at once, named).
const KUBE_JOIN: Duration = Duration::from_secs(300);

/// The Kubernetes objects of a run of `count` shards: the cluster flags, then the
/// scenario's `cluster:` block, then the defaults.
fn kube_spec(
    common: &CommonArgs,
    plan: &Plan,
    count: u64,
    secret: &str,
    scenario: Option<(String, String)>,
) -> Result<ClusterSpec, SetupError> {
    // The flags win over the scenario's block (`ClusterArgs::spec` picks).
    let defaults = crate::shard::kube::cluster_defaults(&plan.cluster);
    let count = u32::try_from(count).unwrap_or(u32::MAX);
    let length = plan.duration();
    common
        .cluster
        .spec(
            new_run_name(),
            count,
            secret.into(),
            scenario,
            length,
            &defaults,
        )
        .map_err(SetupError::Spec)
}

/// The port of an advertised `HOST:PORT` (0 when there is none).
fn advertised_port(advertise: Option<&str>) -> u16 {
    advertise
        .and_then(|a| a.rsplit_once(':'))
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or(0)
}

/// This process, or a coordinator of shards.
pub enum Engine {
    /// The load runs here.
    Local,
    /// The load runs on shards.
    Sharded(Box<Coordinator>),
}

/// Why the shards could not be set up: bad input (exit 2) or a failure (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// `--coordinator` or `--shard-netns` without a number of shards.
    #[error("--coordinator and --shard-netns need --shards N (or `cluster: {{shards: N}}` in the scenario)")]
    NotSharded,
    /// The scenario has a `sink:`, which runs in one process.
    #[error("--shards: a scenario's `sink:` (delivery timing) runs in one process; run it without --shards")]
    Sink,
    /// `--shard-netns`'s bridge cannot be used.
    #[error("--shard-netns: {0}")]
    Netns(NetnsError),
    /// `--shard-netns` with shards on Kubernetes.
    #[error(
        "--shard-netns places shards on this machine; it does not go with --cluster kubernetes"
    )]
    NetnsOnCluster,
    /// The coordinator cannot listen where it was asked to.
    #[error("--coordinator: cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// `--cluster external` without the run's secret in the environment.
    #[error("--cluster external: set {env} to the run's secret (the `secret` key of the manifest's Secret)", env = auth::SECRET_ENV)]
    NoSecret,
    /// The run's secret given is too weak.
    #[error("{0}")]
    WeakSecret(WeakSecret),
    /// The cluster flags (or the scenario's `cluster:` block) do not make a spec.
    #[error("{0}")]
    Spec(SpecError),
    /// The coordinator's listening address cannot be read (a failure).
    #[error("{0}")]
    Address(std::io::Error),
    /// The shards' Job cannot be created (a failure).
    #[error("{0}")]
    Launch(ClusterError),
    /// The local shard processes cannot be started (a failure).
    #[error("{0}")]
    Spawn(LocalError),
    /// The shards did not join (a failure).
    #[error("{0}")]
    Join(CoordError),
}

impl SetupError {
    /// 2 for bad input, 1 for a failure.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            SetupError::Address(_)
            | SetupError::Launch(_)
            | SetupError::Spawn(_)
            | SetupError::Join(_) => ExitCode::FAILURE,
            _ => ExitCode::BAD_INPUT,
        }
    }
}

impl Engine {
    /// The engine `common`'s flags ask for: with `--shards N`, N shards started and
    /// joined, each sent `setup` (the one `plan` was compiled from) to compile its own.
    pub fn start(
        common: &CommonArgs,
        setup: &crate::scenario::Setup,
        plan: &Plan,
    ) -> Result<Engine, SetupError> {
        let Some(count) = common.shards.or(plan.cluster.shards) else {
            if common.coordinator.is_some() || common.shard_netns.is_some() {
                return Err(SetupError::NotSharded);
            }
            return Ok(Engine::Local);
        };
        if plan.sink.is_some() {
            return Err(SetupError::Sink);
        }
        let scenario = setup.scenario.clone().map(|s| (s.file, s.text));
        let bridge = match &common.shard_netns {
            Some(name) => Some(Bridge::open(name).map_err(SetupError::Netns)?),
            None => None,
        };
        let external = common.cluster.cluster == Some(ClusterKind::External);
        let kubernetes =
            !external && (common.cluster.cluster.is_some() || plan.cluster.kubernetes.is_some());
        if kubernetes && bridge.is_some() {
            return Err(SetupError::NetnsOnCluster);
        }
        let advertise = common
            .cluster
            .advertise
            .clone()
            .or(plan.cluster.advertise.clone());
        let listen = common.coordinator.or(plan.cluster.coordinator);
        let listen = listen.unwrap_or_else(|| match (&bridge, kubernetes) {
            (Some(b), _) => SocketAddr::from((b.gateway, 0)),
            // Pods dial the advertised address; listen on its port, everywhere.
            (None, true) => SocketAddr::from(([0, 0, 0, 0], advertised_port(advertise.as_deref()))),
            (None, false) if external => {
                SocketAddr::from(([0, 0, 0, 0], advertised_port(advertise.as_deref())))
            }
            (None, false) => SocketAddr::from(([127, 0, 0, 1], 0)),
        });
        let listener = TcpListener::bind(listen).map_err(|source| SetupError::Listen {
            addr: listen,
            source,
        })?;
        let addr = listener.local_addr().map_err(SetupError::Address)?;
        let secret = match external {
            // Shards started elsewhere were given their secret there.
            true => {
                let secret = std::env::var(auth::SECRET_ENV).map_err(|_| SetupError::NoSecret)?;
                auth::check_secret(&secret).map_err(SetupError::WeakSecret)?;
                secret
            }
            false => auth::new_secret(),
        };
        let (shards, join_for, threads) = if external {
            (
                Box::new(ExternalShards { count }) as Box<dyn Placement>,
                KUBE_JOIN,
                None,
            )
        } else if kubernetes {
            let spec = kube_spec(common, plan, count, &secret, scenario.clone())?;
            let shards = KubeShards::launch(&spec).map_err(SetupError::Launch)?;
            if !common.quiet {
                eprintln!(
                    "created Job {}/{} ({count} shards, image {}); they dial {}",
                    spec.namespace, spec.run, spec.image, spec.advertise
                );
            }
            // Each pod's engine takes the cores its node gives it.
            (Box::new(shards) as Box<dyn Placement>, KUBE_JOIN, None)
        } else {
            let shards = LocalShards::spawn(count, addr, &secret, bridge.as_ref(), common.quiet)
                .map_err(SetupError::Spawn)?;
            // Local shards share this machine's cores rather than each taking all of them.
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let threads = (cores / count as usize).max(1);
            (
                Box::new(shards) as Box<dyn Placement>,
                LOCAL_JOIN,
                Some(threads),
            )
        };
        if !common.quiet {
            let placed: Vec<String> = (0..count)
                .map(|i| format!("shard {i}: {}", shards.name(i)))
                .collect();
            eprintln!(
                "coordinating {count} shards on {addr} ({})",
                placed.join(", ")
            );
        }
        let setup = Setup {
            setup: setup.clone(),
            threads,
        };
        let coordinator = Coordinator::join(listener, &secret, &setup, shards, join_for)
            .map_err(SetupError::Join)?;
        Ok(Engine::Sharded(Box::new(coordinator)))
    }

    /// Ends the shards (after the last job).
    pub fn finish(self) {
        if let Engine::Sharded(c) = self {
            c.finish();
        }
    }
}

impl Runner for Engine {
    fn run(
        &mut self,
        plan: Arc<Plan>,
        step: Option<Step>,
        control: &Control,
        observer: &mut dyn Observer,
    ) -> Result<Outcome, EngineError> {
        match self {
            Engine::Local => Local.run(plan, step, control, observer),
            Engine::Sharded(c) => c.run(plan, step, control, observer),
        }
    }
}
