//! `headroom target`: serve the built-in target until interrupted.

use crate::cli::{TargetArgs, EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK};
use crate::target::{self, TargetOptions};

/// Runs `headroom target` and returns the exit code.
pub fn run(args: &TargetArgs) -> i32 {
    let opts = TargetOptions {
        listen: args.listen,
        workers: args.workers,
        service_time: args.service_time,
        service_dist: args.service_dist,
        queue: args.queue,
        postgres: args.postgres.clone(),
        threads: args.threads,
        h2_max_streams: args.h2_max_streams,
        tls: args.tls,
        tls_cert_out: args.tls_cert_out.clone(),
        graphql_error_ppm: 0,
    }
    .with_graphql_error_share(args.graphql_error_share);
    if let Err(e) = opts.validate() {
        eprintln!("error: {e}");
        return EXIT_BAD_INPUT;
    }
    match target::serve_forever(opts) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("error: {e:#}");
            EXIT_FAILURE
        }
    }
}
