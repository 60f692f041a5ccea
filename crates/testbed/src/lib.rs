//! The built-in target service: an HTTP server with a known capacity.
//!
//! `headroom target` serves it from the command line, `headroom demo` and the tests
//! run it in-process. [`spawn`] starts one from [`TargetOptions`] on its own threads
//! and returns a [`RunningTarget`]; [`serve_forever`] does the same and waits for
//! Ctrl-C. Its `/work` endpoint is a queue of `workers` servers with a fixed or
//! exponential service time, so its ceiling is exactly [`TargetOptions::capacity`] —
//! what a load test against it should find. It also serves a tasks API (memory or
//! PostgreSQL), `/metrics`, and fault helpers; `routes` lists every endpoint.
//!
//! Parts: `options` (configuration), `server` (threads, accept loop, per-request
//! bookkeeping), `routes` (router and handlers), `work` (the worker pool),
//! `contention` (its optional cost that grows with the requests in flight),
//! `conn` (HTTP/1.1 and h2c on one port, TLS with ALPN), `tls` (the self-signed
//! certificate), `timer` (sub-millisecond sleeps), `tasks` and `postgres` (task stores),
//! `metrics` (Prometheus exposition), `admin` (stall, echo, status), `scheduler`
//! (tasks posted with a `url` are delivered there when due), `ws` (the WebSocket
//! echo and broadcast rooms), `sse` (the `/sse/ticker` event stream), `grpc_ticker`
//! (`/headroom.Ticker/Ticks`, a gRPC server stream).

mod admin;
mod conn;
mod contention;
mod dispatch;
mod error;
mod graphql;
mod grpc_ticker;
mod h3;
mod metrics;
mod options;
mod postgres;
mod protocols;
mod reply;
mod rooms;
mod routes;
mod scheduler;
mod server;
mod setting;
mod sse;
mod state;
mod task;
mod tasks;
mod timer;
mod tls;
mod work;
mod ws;

#[cfg(test)]
mod pg_cluster;
#[cfg(test)]
mod test_client;
// The workspace's one helper for tests that need something of the machine (here a
// PostgreSQL server), shared with the main crate's tests rather than copied.
#[cfg(test)]
#[path = "../../../tests/support/require.rs"]
mod test_require;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_postgres;
#[cfg(test)]
mod tests_protocols;

pub use error::{OptionsError, TargetError};
pub use options::{ServiceDist, TargetOptions, DEFAULT_H2_MAX_STREAMS};
pub use server::{spawn, RunningTarget};
pub use tls::TargetTlsError;

/// Runs a target until Ctrl-C or SIGTERM, after printing one line with its URL and
/// capacity to stdout. Errors as [`spawn`], or if the signal handler cannot be set.
pub fn serve_forever(opts: TargetOptions) -> Result<(), TargetError> {
    let (workers, service_time, dist) = (opts.workers, opts.service_time, opts.service_dist);
    let contention = if opts.contention.is_zero() {
        String::new()
    } else {
        format!(
            " without contention; with it, each request reconciles with the others in flight, {:?} × in flight per exchange",
            opts.contention
        )
    };
    let store = if opts.postgres.is_some() {
        "postgres"
    } else {
        "memory"
    };
    let cert_out = opts.tls_cert_out.clone();
    let target = spawn(opts)?;
    let (tx, rx) = std::sync::mpsc::channel();
    ctrlc::set_handler(move || {
        let _ = tx.send(());
    })
    .map_err(TargetError::Signal)?;
    // The certificate line first: the `listening` line is the last one at start, what
    // scripts wait for.
    if let Some(path) = cert_out {
        println!("certificate (PEM) written to {}", path.display());
    }
    println!(
        "headroom target listening on {} — capacity {:.1} req/s ({} workers × {:?} {}){}, tasks in {}",
        target.url(),
        target.capacity(),
        workers,
        service_time,
        match dist {
            ServiceDist::Fixed => "fixed",
            ServiceDist::Exp => "exp",
        },
        contention,
        store,
    );
    let _ = rx.recv();
    target.shutdown();
    Ok(())
}
#[cfg(test)]
mod tests_graphql;
