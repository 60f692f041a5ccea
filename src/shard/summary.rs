//! A shard's line of the run summary ([`ShardSummary`]).

use crate::engine::{self, Share};
use crate::metrics::summary::{Generator, ShardSummary};
use crate::plan::Plan;

/// The summary of one shard's `share` (its own figures, judged alone; the run's are
/// from the merged histograms). `at` is where it ran: placement, address, host.
pub(super) fn of_share(
    plan: &Plan,
    share: &Share,
    generator: Generator,
    heard_ahead_us: i64,
    at: (&str, &str, &str),
) -> ShardSummary {
    let own = engine::merge(plan, std::slice::from_ref(share)).summary;
    ShardSummary {
        index: share.shard.index(),
        status: match share.interrupted {
            true => "interrupted".into(),
            false => "done".into(),
        },
        placed: at.0.into(),
        address: at.1.into(),
        host: at.2.into(),
        scheduled: own.scheduled,
        requests: own.requests,
        errors: own.errors.count,
        dropped: own.dropped,
        abandoned: own.abandoned,
        p50_ms: own.latency_ms.p50,
        p99_ms: own.latency_ms.p99,
        heard_start_ahead_ms: heard_ahead_us as f64 / 1000.0,
        generator,
        error: None,
    }
}

impl ShardSummary {
    /// A shard that was lost, with why.
    pub fn lost(index: u64, at: (&str, &str, &str), error: Option<String>) -> ShardSummary {
        ShardSummary {
            index,
            status: "lost".into(),
            placed: at.0.into(),
            address: at.1.into(),
            host: at.2.into(),
            error,
            ..ShardSummary::default()
        }
    }
}
