//! The load engine: one OS thread per core, each with its own single-threaded tokio
//! runtime, connections and [`Recorder`]. Running a plan and judging it are two steps:
//!
//! - [`run_share`] runs one [`Slice`] of the plan's load (the whole of it in a single
//!   process, shard i of N in a sharded run): it starts the threads, merges their
//!   finished seconds into a [`Timeline`] as they arrive (calling back for live
//!   progress) and their recorders at the end, into a raw, serialisable [`Share`].
//! - [`merge`] turns any number of shares into one [`Summary`]: histograms merged
//!   exactly, counts summed, seconds aligned, thresholds judged once.
//!
//! [`run`] is the two for a single process. Who drives whom: [`run_share`] →
//! `attack::run_thread` per thread → a driver (pacer or users) →
//! `iteration::run_iteration` → the HTTP client; results flow back only through each
//! thread's recorder.

mod attack;
mod capture;
mod chain;
pub(crate) mod check;
mod checkpoint;
mod cookies;
mod cpu;
mod deadline;
mod error;
mod flow;
mod handover;
mod heap;
pub(crate) mod iteration;
mod lanes;
mod merge;
mod once;
pub mod pacer;
mod parallel;
mod request;
mod selfcheck;
mod share;
mod spill;
mod start;
pub(crate) mod stream;
pub(crate) mod summarize;
mod summarize_streams;
pub(crate) mod thread;
mod timeline;
mod timer;
mod user;
pub(crate) mod work;
mod workloads;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub use error::{EngineError, Misfit, ShareMismatch, UnsendableRequest};
pub use merge::merge;
pub use once::{run_once, OnceError, Phase};
pub use selfcheck::{
    generator_bound, starved, Evidence, BUSY_BOUND, HOST_SATURATED, LAG_BOUND, LATE_SHARE,
    MIN_LATE, OTHERS_SHARE, STARVED_WAIT,
};
pub use share::{fits, run_share, run_share_at, Failures, Share, Starter};
pub use timeline::Timeline;

use headroom_metrics::recorder::{Recorder, SecondBucket};
use headroom_metrics::summary::{Generator, Second, Summary};
use headroom_plan::{Plan, Slice};

/// Lets another thread (a Ctrl-C handler) stop a run early. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Control {
    stop: Arc<AtomicBool>,
}

impl Control {
    /// Asks the run to stop: no new iterations start; in-flight ones get a short grace.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Whether [`Control::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

/// Live figures after each completed second: what the progress line shows
/// (`headroom::report::progress`) and what the run store records as the run goes.
/// Plain data, built by the engine.
#[derive(Debug, Clone, Default)]
pub struct Live {
    /// Time since the run started.
    pub elapsed: Duration,
    /// Planned duration.
    pub total: Duration,
    /// Requests completed since the start, successful or not.
    pub requests: u64,
    /// Of those, requests that ended in an error of any kind.
    pub errors: u64,
    /// Scheduled iterations dropped since the start (in-flight limit reached).
    pub dropped: u64,
    /// Iterations in flight at the end of the second.
    pub in_flight: u64,
    /// Active users (closed model); `None` in the open model.
    pub users: Option<u64>,
    /// The last second's timeline entry (its request count and p95 are the progress
    /// line's rate and latency).
    pub last: Second,
    /// The merged counts `last` was made from: its latency histogram (corrected, µs),
    /// errors by kind and requests by name. The live dashboard reads its percentiles,
    /// error kinds and `/metrics` counters from it.
    pub last_bucket: SecondBucket,
    /// What the run recorded during that second (merged over its parts, finished):
    /// what a shard forwards to its coordinator beside `last_bucket`. `None` when no
    /// part handed one over with it.
    pub delta: Option<Box<Recorder>>,
    /// Everything the run recorded through that second, when the parts handed their
    /// recorders over (see [`Timeline`]); set only while the observer is called.
    pub so_far: Option<Arc<Recorder>>,
    /// The summary of `so_far`: the run's figures through that second, marked
    /// [`partial`](Summary::partial), without its timeline (the seconds are `last`,
    /// one by one). Requests still in flight count as abandoned, as they would be if
    /// the process died now, so it adds up.
    pub checkpoint: Option<Arc<Summary>>,
}

/// What the engine tells the command that runs it, as the run goes. A closure
/// `FnMut(&Live)` is an observer that only listens for seconds.
pub trait Observer {
    /// A second of the measured window completed on every thread.
    fn second(&mut self, live: &Live);
    /// The warm-up ended and the measured window began (only for a plan with a
    /// warm-up; called once, before its first second).
    fn measuring(&mut self) {}
}

impl<F: FnMut(&Live)> Observer for F {
    fn second(&mut self, live: &Live) {
        self(live)
    }
}

/// The result of a run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Everything measured.
    pub summary: Summary,
    /// The first connection failure, when some connections could not be opened.
    pub connect_failure: Option<String>,
    /// The first failed TLS handshake (`address: reason`), when some failed.
    pub tls_failure: Option<String>,
    /// The merged recorder (exact histograms), for stores and shard merges.
    pub recorder: Recorder,
    /// Each share's generator self-check, in shard order (one for a single process):
    /// the generator-bound verdict is per shard.
    pub shards: Vec<Generator>,
    /// A sharded run that lost a shard (died, went silent, failed): the shards named,
    /// with why. The figures are then the other shards' (a valid partial result).
    pub lost: Option<String>,
}

/// Runs `plan` to completion (or until `control` stops it), telling `observer` of each
/// completed second of the measured window (and of the window's start, after a
/// warm-up) from this thread. Everything measured covers the measured window alone.
///
/// This is the whole load run as one share and merged: the case N = 1 of a sharded run.
pub fn run(
    plan: Arc<Plan>,
    control: &Control,
    observer: &mut dyn Observer,
) -> Result<Outcome, EngineError> {
    let share = run_share(plan.clone(), Slice::WHOLE, control, observer)?;
    Ok(merge(&plan, &[share]))
}

/// A ceiling search's step: the base plan at one constant `value` (a rate, or a user
/// count), warmed up, then measured. A shard given a step builds the same step plan
/// from its own base plan as the coordinator does.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Step {
    /// The step's rate (req/s) or user count.
    pub value: f64,
    /// The warm-up before the measured window.
    pub warmup: Duration,
    /// The measured window.
    pub measured: Duration,
}

/// What runs a plan's load and hands back its merged outcome: this process
/// ([`Local`]), or shards under a coordinator. Commands and the search drive load
/// through it and never know which.
pub trait Runner {
    /// Runs `plan` to completion (or until `control` stops it), telling `observer` of
    /// each second. `step` says how `plan` was made from the set-up base plan (a
    /// search step), `None` when it is that plan itself.
    fn run(
        &mut self,
        plan: Arc<Plan>,
        step: Option<Step>,
        control: &Control,
        observer: &mut dyn Observer,
    ) -> Result<Outcome, EngineError>;
}

/// Runs the load in this process: [`run`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Local;

impl Runner for Local {
    fn run(
        &mut self,
        plan: Arc<Plan>,
        _step: Option<Step>,
        control: &Control,
        observer: &mut dyn Observer,
    ) -> Result<Outcome, EngineError> {
        run(plan, control, observer)
    }
}

/// Raises this process's soft limit on open files to its hard limit; returns the
/// limit now in force.
pub fn raise_fd_limit() -> nix::Result<u64> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
    }
    Ok(hard)
}
