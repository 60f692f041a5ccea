//! What `run` and `find` drive their load through: this process, or — with
//! `--shards N` — a coordinator and its N shards ([`crate::shard`]).

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::cli::CommonArgs;
use crate::engine::{Control, EngineError, Local, Observer, Outcome, Runner, Step};
use crate::plan::Plan;
use crate::shard::local::LocalShards;
use crate::shard::netns::Bridge;
use crate::shard::wire::Setup;
use crate::shard::{auth, Coordinator};

/// How long local shards have to start and join.
const LOCAL_JOIN: Duration = Duration::from_secs(30);

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
    /// The flags or the scenario do not allow a sharded run.
    #[error("{0}")]
    BadInput(String),
    /// The shards could not be started or did not join.
    #[error("{0}")]
    Failed(String),
}

impl Engine {
    /// The engine `common`'s flags ask for: with `--shards N`, N shards started and
    /// joined, set up with this command's own arguments and `scenario`'s text.
    pub fn start(
        common: &CommonArgs,
        scenario: Option<&Path>,
        plan: &Plan,
    ) -> Result<Engine, SetupError> {
        let Some(count) = common.shards.or(plan.cluster.shards) else {
            if common.coordinator.is_some() || common.shard_netns.is_some() {
                return Err(SetupError::BadInput(
                    "--coordinator and --shard-netns need --shards N (or `cluster: {shards: N}` in the scenario)".into(),
                ));
            }
            return Ok(Engine::Local);
        };
        if plan.sink.is_some() {
            return Err(SetupError::BadInput(
                "--shards: a scenario's `sink:` (delivery timing) runs in one process; run it without --shards".into(),
            ));
        }
        let scenario = match scenario {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    SetupError::BadInput(format!("cannot read {}: {e}", path.display()))
                })?;
                Some((path.display().to_string(), text))
            }
            None => None,
        };
        let bridge = match &common.shard_netns {
            Some(name) => Some(
                Bridge::open(name)
                    .map_err(|e| SetupError::BadInput(format!("--shard-netns: {e}")))?,
            ),
            None => None,
        };
        let listen = common.coordinator.or(plan.cluster.coordinator);
        let listen = listen.unwrap_or_else(|| match &bridge {
            Some(b) => SocketAddr::from((b.gateway, 0)),
            None => SocketAddr::from(([127, 0, 0, 1], 0)),
        });
        let listener = TcpListener::bind(listen).map_err(|e| {
            SetupError::BadInput(format!("--coordinator: cannot listen on {listen}: {e}"))
        })?;
        let addr = listener
            .local_addr()
            .map_err(|e| SetupError::Failed(e.to_string()))?;
        // Local shards share this machine's cores rather than each taking all of them.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let setup = Setup {
            args: std::env::args().skip(1).collect(),
            scenario,
            threads: Some((cores / count as usize).max(1)),
        };
        let secret = auth::new_secret();
        let shards = LocalShards::spawn(count, addr, &secret, bridge.as_ref(), common.quiet)
            .map_err(|e| SetupError::Failed(e.to_string()))?;
        if !common.quiet {
            use crate::shard::Placement;
            let placed: Vec<String> = (0..count)
                .map(|i| format!("shard {i}: {}", shards.name(i)))
                .collect();
            eprintln!(
                "coordinating {count} shards on {addr} ({})",
                placed.join(", ")
            );
        }
        let coordinator =
            Coordinator::join(listener, &secret, &setup, Box::new(shards), LOCAL_JOIN)
                .map_err(|e| SetupError::Failed(e.to_string()))?;
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
