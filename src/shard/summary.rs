//! What a sharded run reports beyond the merged figures: each shard's line of the
//! summary ([`ShardSummary`]), the coordinator's own CPU, and the raw shares kept for an
//! audit ([`KEEP_SHARES_ENV`]).

use std::sync::atomic::Ordering;
use std::time::Duration;

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

/// A shard that was lost, with why.
pub(super) fn lost(index: u64, at: (&str, &str, &str), error: Option<String>) -> ShardSummary {
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

/// The environment variable naming a directory where the coordinator keeps each
/// shard's raw share as it arrived (`share-<job>-<index>.json`), to audit a merge.
pub const KEEP_SHARES_ENV: &str = "HEADROOM_KEEP_SHARES";

/// Writes the shares to [`KEEP_SHARES_ENV`]'s directory, when it is set; a share that
/// cannot be written costs a warning.
pub(super) fn keep_shares(shares: &[Option<(Share, i64)>]) {
    let Some(dir) = std::env::var_os(KEEP_SHARES_ENV) else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    static JOB: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let job = JOB.fetch_add(1, Ordering::SeqCst);
    for (i, (share, _)) in shares
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some((i, s.as_ref()?)))
    {
        let path = dir.join(format!("share-{job}-{i}.json"));
        if let Err(e) = crate::report::json::write_json(&path, share) {
            eprintln!(
                "warning: cannot keep shard {i}'s share in {}: {e}",
                path.display()
            );
        }
    }
}

/// CPU time this whole process has used (every thread, not its children: the local
/// shards are processes of their own).
pub(super) fn own_cpu() -> Duration {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_SELF).map_or(Duration::ZERO, |u| {
        let t = |tv: nix::sys::time::TimeVal| {
            Duration::new(tv.tv_sec().max(0) as u64, tv.tv_usec().max(0) as u32 * 1000)
        };
        t(u.user_time()) + t(u.system_time())
    })
}
