//! [`CoordError`]: why the coordinator of a sharded run could not set it up.

use std::time::Duration;

/// Why a sharded run could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum CoordError {
    /// Not every shard joined in time.
    #[error("{joined} of {count} shards joined within {waited:?}; missing: {missing}")]
    JoinTimeout {
        /// How many joined.
        joined: usize,
        /// How many were expected.
        count: usize,
        /// How long the coordinator waited.
        waited: Duration,
        /// The missing shards, named.
        missing: String,
    },
    /// A shard's process or pod ended before it joined.
    #[error("shard {index} ({name}) ended before it joined: {reason}")]
    EndedEarly {
        /// Shard index.
        index: u64,
        /// Where it was placed.
        name: String,
        /// Why.
        reason: String,
    },
    /// The encrypted channel's key could not be made from the run's secret.
    #[error("{0}")]
    Channel(#[source] super::channel::ChannelError),
    /// The setup could not be sent.
    #[error("cannot set up shard {index}: {reason}")]
    Setup {
        /// Shard index.
        index: u64,
        /// Why.
        reason: String,
    },
}
