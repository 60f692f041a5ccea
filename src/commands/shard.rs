//! `headroom shard`: one shard of a sharded run ([`crate::shard::worker`]), its
//! identity from the environment a coordinator (or a Kubernetes Indexed Job) gives it.

use clap::Args;

use crate::cli::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK};
use crate::plan::Slice;
use crate::shard::auth::SECRET_ENV;
use crate::shard::worker::{self, Identity};

/// Flags of `headroom shard`.
#[derive(Debug, Args, Clone)]
pub struct ShardArgs {
    /// The coordinator's address, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub coordinator: String,
}

/// Runs the shard; 0 once its work is delivered, 1 when it failed, 2 when its
/// environment is not a shard's.
pub fn run(args: &ShardArgs) -> i32 {
    let me = match identity() {
        Ok(me) => me,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    match worker::serve(&args.coordinator, &me) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("error: shard {}: {e}", me.slice.index());
            EXIT_FAILURE
        }
    }
}

/// The shard's identity: `HEADROOM_SHARD_INDEX` (else an Indexed Job's
/// `JOB_COMPLETION_INDEX`) of `HEADROOM_SHARD_COUNT`, and the run's secret.
fn identity() -> Result<Identity, String> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let number = |name: &str, text: String| {
        text.trim()
            .parse::<u64>()
            .map_err(|_| format!("{name}={text:?} is not a number"))
    };
    let index = match (var("HEADROOM_SHARD_INDEX"), var("JOB_COMPLETION_INDEX")) {
        (Some(i), _) => number("HEADROOM_SHARD_INDEX", i)?,
        (None, Some(i)) => number("JOB_COMPLETION_INDEX", i)?,
        (None, None) => {
            return Err("HEADROOM_SHARD_INDEX (or JOB_COMPLETION_INDEX) is not set".into())
        }
    };
    let count = var("HEADROOM_SHARD_COUNT").ok_or("HEADROOM_SHARD_COUNT is not set")?;
    let count = number("HEADROOM_SHARD_COUNT", count)?;
    let slice = Slice::new(index, count).map_err(|e| format!("shard index: {e}"))?;
    let secret = var(SECRET_ENV).ok_or_else(|| format!("{SECRET_ENV} is not set"))?;
    crate::shard::auth::check_secret(&secret).map_err(|e| e.to_string())?;
    Ok(Identity { slice, secret })
}
