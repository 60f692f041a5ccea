//! `headroom shard`: one shard of a sharded run ([`crate::shard::worker`]), its
//! identity from the environment a coordinator (or a Kubernetes Indexed Job) gives it.

use clap::Args;

use crate::plan::Slice;
use crate::shard::auth::SECRET_ENV;
use crate::shard::worker::{self, Identity};

use super::error::{CommandError, ShardEnvError};
use super::exit::ExitCode;

/// Flags of `headroom shard`.
#[derive(Debug, Args, Clone)]
pub struct ShardArgs {
    /// The coordinator's address, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub coordinator: String,
}

/// Runs the shard: 0 once its work is delivered; an error when it failed (1) or its
/// environment is not a shard's (2).
pub fn run(args: &ShardArgs) -> Result<ExitCode, CommandError> {
    let me = identity()?;
    worker::serve(&args.coordinator, &me).map_err(|source| CommandError::Shard {
        index: me.slice.index(),
        source,
    })?;
    Ok(ExitCode::OK)
}

/// The shard's identity: `HEADROOM_SHARD_INDEX` (else an Indexed Job's
/// `JOB_COMPLETION_INDEX`) of `HEADROOM_SHARD_COUNT`, and the run's secret.
fn identity() -> Result<Identity, ShardEnvError> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let number = |name: &'static str, text: String| {
        text.trim()
            .parse::<u64>()
            .map_err(|_| ShardEnvError::NotANumber { name, text })
    };
    let index = match (var("HEADROOM_SHARD_INDEX"), var("JOB_COMPLETION_INDEX")) {
        (Some(i), _) => number("HEADROOM_SHARD_INDEX", i)?,
        (None, Some(i)) => number("JOB_COMPLETION_INDEX", i)?,
        (None, None) => return Err(ShardEnvError::NoIndex),
    };
    let count = var("HEADROOM_SHARD_COUNT").ok_or(ShardEnvError::Unset("HEADROOM_SHARD_COUNT"))?;
    let count = number("HEADROOM_SHARD_COUNT", count)?;
    let slice = Slice::new(index, count)?;
    let secret = var(SECRET_ENV).ok_or(ShardEnvError::Unset(SECRET_ENV))?;
    crate::shard::auth::check_secret(&secret)?;
    Ok(Identity { slice, secret })
}
