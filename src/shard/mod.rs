//! Sharded runs: one run's load split over N processes (on this machine, or pods on
//! Kubernetes), started together and merged exactly.
//!
//! - [`worker`]: `headroom shard`, one part of the load ([`crate::plan::Slice`]).
//! - [`coordinator`]: admits the shards, holds the start barrier, names one absolute
//!   start, merges their streamed seconds live and their shares at the end; it is an
//!   [`crate::engine::Runner`], so `run` and `find` drive it as they drive a single
//!   process.
//! - [`local`]: places shards as processes on this machine, each optionally in a
//!   network namespace of its own ([`netns`]).
//! - [`wire`], [`auth`] and [`channel`]: the control channel's frames, its per-run
//!   secret, and the TLS 1.3 it travels in, keyed from that secret.

mod admit;
pub mod auth;
pub mod channel;
mod coord_error;
pub mod coordinator;
pub mod kube;
pub mod local;
pub mod netns;
mod summary;
pub mod wire;
pub mod worker;

pub use coordinator::{CoordError, Coordinator};
pub use summary::KEEP_SHARES_ENV;

/// Where a run's shards run, and how to tell that one of them ended: local processes,
/// or a Kubernetes Job's pods.
pub trait Placement: Send {
    /// How many shards.
    fn count(&self) -> u64;
    /// How shard `index` was placed, for messages: `pid 1234`, `pod run-2`.
    fn name(&self, index: u64) -> String;
    /// A shard whose process or pod ended abnormally, with why (each reported once).
    fn lost(&mut self) -> Option<(u64, String)>;
    /// Lets the shards go: waits briefly for them to exit after their goodbye, then
    /// ends what is left and cleans up. Called once.
    fn finish(&mut self);
}
