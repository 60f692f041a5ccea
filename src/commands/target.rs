//! `headroom target`: serve the built-in target until interrupted.

use crate::target::{self, TargetOptions};

use super::args::TargetArgs;
use super::error::{Chain, CommandError};
use super::exit::ExitCode;

/// Runs `headroom target` until it is stopped; an error says why it could not serve.
pub fn run(args: &TargetArgs) -> Result<ExitCode, CommandError> {
    let opts = TargetOptions {
        listen: args.listen,
        workers: args.workers,
        service_time: args.service_time,
        service_dist: args.service_dist,
        queue: args.queue,
        contention: args.contention,
        postgres: args.postgres.clone(),
        threads: args.threads,
        h2_max_streams: args.h2_max_streams,
        tls: args.tls,
        tls_cert_out: args.tls_cert_out.clone(),
        graphql_error_ppm: 0,
    }
    .with_graphql_error_share(args.graphql_error_share);
    opts.validate()
        .map_err(|e| CommandError::TargetFlags(e.into()))?;
    target::serve_forever(opts).map_err(|e| CommandError::Target(Chain::new(e)))?;
    Ok(ExitCode::OK)
}
