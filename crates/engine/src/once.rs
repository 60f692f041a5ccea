//! The run's `setup:` and `teardown:` steps (k6's `setup()` and `teardown()`): run
//! once, outside the load, by one user on a connection of its own, before any load
//! is sent and after all of it ended. Their requests count in none of the load's
//! figures; a failed one stops the run, naming the step. What `setup:` captures is
//! returned for every user to read as `{{ setup.NAME }}`.

use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use headroom_client::connect::{resolved, Connector};
use headroom_metrics::ErrorKind;
use headroom_plan::journey::SetupValues;
use headroom_plan::Plan;

use crate::flow::run_steps;
use crate::thread::{Pending, Seed};
use crate::user::{Flowed, Intended, Run, Scratch};
use crate::EngineError;

/// Which steps run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// `setup:`, before the load.
    Setup,
    /// `teardown:`, after it.
    Teardown,
}

impl Phase {
    /// The scenario key.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Setup => "setup",
            Phase::Teardown => "teardown",
        }
    }
}

/// Why `setup:` or `teardown:` failed.
#[derive(Debug, thiserror::Error)]
pub enum OnceError {
    /// A request failed: the step's name and the error kind.
    #[error("`{phase}` failed at its request {name:?}: {kind}")]
    Step {
        /// `setup` or `teardown`.
        phase: &'static str,
        /// The failed request's name.
        name: String,
        /// How it failed.
        kind: ErrorKind,
    },
    /// The steps could not run at all.
    #[error("`{phase}` could not run: {source}")]
    Engine {
        /// `setup` or `teardown`.
        phase: &'static str,
        /// Why.
        #[source]
        source: EngineError,
    },
}

/// Runs `phase`'s steps of `plan` once and returns what they captured (`setup:`) as
/// `setup.NAME` values. No steps: nothing runs, nothing is returned.
pub fn run_once(plan: &Arc<Plan>, phase: Phase) -> Result<SetupValues, OnceError> {
    let steps = match phase {
        Phase::Setup => &plan.journey.setup,
        Phase::Teardown => &plan.journey.teardown,
    };
    if steps.is_empty() {
        return Ok(Vec::new());
    }
    let engine = |source| OnceError::Engine {
        phase: phase.as_str(),
        source,
    };
    let prepared =
        crate::work::prepare_steps(plan, steps).map_err(|e| engine(EngineError::Request(e)))?;
    let connector = connector(plan).map_err(engine)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| engine(EngineError::Thread(e)))?;
    let workload =
        Arc::new(crate::work::Workload::new(plan).map_err(|e| engine(EngineError::Request(e)))?);
    let seed = Seed {
        plan: plan.clone(),
        workload,
        connector,
        stop: Arc::new(AtomicBool::new(false)),
        connect_failure: Arc::new(Mutex::new(None)),
        tls_failure: Arc::new(Mutex::new(None)),
        graphql_failure: Arc::new(Mutex::new(None)),
    };
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        // Its own schedule, which never ends before the steps do.
        let state = Rc::new(seed.grow(Instant::now(), None));
        let mut session = state.client.session();
        let mut scratch = Scratch::for_user();
        scratch.user = 1;
        scratch.vars.clone_from(&scratch.kept);
        let mut run = Run {
            state: &state,
            session: &mut session,
            scratch: &mut scratch,
            first: Some(Pending::begin(&state)),
            intended: Intended::Now(Instant::now()),
            idle: false,
        };
        let outcome = run_steps(&mut run, &prepared).await;
        if let Some(unused) = run.first.take() {
            unused.cancel();
        }
        let recorder = state.recorder.borrow();
        if outcome != Flowed::Ok {
            // The failed request is the one with an error: name it and its kind.
            let failed = recorder
                .by_name
                .iter()
                .enumerate()
                .find_map(|(i, t)| {
                    let kind = ErrorKind::ALL.iter().find(|k| t.errors[**k as usize] > 0)?;
                    Some((plan.names[i].clone(), *kind))
                })
                .unwrap_or_else(|| (phase.as_str().to_string(), ErrorKind::Connect));
            return Err(OnceError::Step {
                phase: phase.as_str(),
                name: failed.0,
                kind: failed.1,
            });
        }
        let mut values = Vec::new();
        for name in &plan.journey.setup_captures {
            if let Some(v) = scratch.vars.get(name) {
                let json = scratch.vars.is_json(name);
                values.push((format!("setup.{name}"), v.to_string(), json));
            }
        }
        Ok(values)
    })
}

/// The connector of the target, as the load's.
fn connector(plan: &Plan) -> Result<Arc<Connector>, EngineError> {
    let t = &plan.target;
    let addr = match resolved(&plan.client.resolve, &t.host, t.port) {
        Some(addr) => addr,
        None => std::net::ToSocketAddrs::to_socket_addrs(&(t.host.as_str(), t.port))
            .map_err(|e| EngineError::Resolve {
                host: t.host.clone(),
                port: t.port,
                source: e,
            })?
            .next()
            .ok_or_else(|| EngineError::Resolve {
                host: t.host.clone(),
                port: t.port,
                source: std::io::Error::other("no address"),
            })?,
    };
    let connector = match &plan.client.tls {
        None => Connector::tcp(addr),
        Some(config) => {
            Connector::tls(addr, &t.host, config.clone()).map_err(EngineError::ServerName)?
        }
    };
    Ok(Arc::new(match plan.client.protocol {
        headroom_client::Protocol::Http2 => connector.require_h2(),
        headroom_client::Protocol::Http3 => connector
            .require_h3()
            .map_err(|e| EngineError::Quic(e.to_string()))?,
        headroom_client::Protocol::Http1 => connector,
    }))
}
