//! The flags of the commands the command line ([`crate::cli`]) parses and the
//! commands take: `run`, `find` (and what they share), `demo` and `target`. The other
//! commands keep their flags beside them.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::scenario::parse_duration;

use super::quick;
use super::values::{self, ValueError};
/// Flags of `headroom find`.
///
/// The flags it shares with `run` ([`CommonArgs`]) keep the help texts that say what
/// they mean for a search.
#[derive(Debug, Args, Clone)]
#[command(
    mut_arg("thresholds", |a| a.help(
        "Pass/fail rule for every step (repeatable; added to the scenario's). Default when \
         none is given anywhere: `p95 < 500ms` and `errors < 1%`"
    )),
    mut_arg("max_in_flight", |a| a.help("Most iterations in flight at once (arrival-rate model)")),
    mut_arg("connections", |a| a.help("Size of the shared connection pool; each step waits for free connections")),
    mut_arg("out", |a| a.help("Write the search result JSON here")),
    mut_arg("watches", |a| a.help(
        "Watch something during each measured window (repeatable; added to the \
         scenario's `watch`): same specs as `run --watch`"
    )),
    mut_arg("quiet", |a| a.help("Print no per-step lines")),
    mut_arg("labels", |a| a.help(
        "Label stored with the search, `key=value` (repeatable), e.g. `round=6`"
    )),
)]
pub struct FindArgs {
    /// Scenario file (YAML), or a k6 script (`.js`, `.ts`) converted as it is read;
    /// its load section only picks the model (rate or users).
    pub scenario: Option<PathBuf>,
    /// Target base URL (replaces the scenario's `target`).
    #[arg(long)]
    pub url: Option<String>,
    /// Search user counts (closed model) instead of arrival rates.
    #[arg(long)]
    pub users: bool,
    /// With a scenario of several `workloads:`, the one whose load is searched (its
    /// rate or users); the others run as written in every step.
    #[arg(long, value_name = "NAME")]
    pub workload: Option<String>,
    /// First value tried (default 10 req/s, or 1 user).
    #[arg(long)]
    pub from: Option<f64>,
    /// Highest value tried (default 1 000 000 req/s, or 100 000 users).
    #[arg(long)]
    pub to: Option<f64>,
    /// Stop bisecting when the gap between pass and fail is within this share of the pass.
    #[arg(long, default_value = "5%", value_parser = values::parse_percent)]
    pub precision: f64,
    /// Runs of each boundary load: the best pass and the lowest fail are run until
    /// their trials decide them (2: the best pass is confirmed once).
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub trials: u32,
    /// Failed trials a boundary load may have and still pass (less than --trials).
    #[arg(long, default_value_t = 0, value_name = "K")]
    pub allow_failed_trials: u32,
    /// How the search closes in on the boundary: `estimate` jumps to where an
    /// overloaded step says the capacity is; `bisect` halves the gap.
    #[arg(long, value_enum, default_value_t = crate::search::Order::Estimate)]
    pub strategy: crate::search::Order,
    /// Measured window of each step.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub step_duration: Duration,
    /// Load before each measured window, not counted (0s for none).
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// Minimum rest between steps.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub cooldown: Duration,
    /// After the cooldown, wait for this many free local ports toward the target: `auto`
    /// (twice the connections the next step may open, plus 100), a number, or `off`.
    /// No wait when enough are free.
    #[arg(long, default_value = "auto", value_name = "auto|N|off")]
    pub wait_ports: crate::search::PortRule,
    /// Also wait until at most this many sockets toward the target's port are in
    /// TIME_WAIT (no such wait unless given)...
    #[arg(long)]
    pub time_wait_limit: Option<usize>,
    /// ...but no longer than this (the wait also gives up when the count stops moving
    /// for 5 s).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub drain_timeout: Duration,
    /// Once the ceiling is found, run it for this long (e.g. `10m`, at least 3s) and
    /// report whether it held: errors, drops, thresholds and the p95 trend.
    #[arg(long, value_name = "D", value_parser = values::parse_hold)]
    pub hold: Option<Duration>,
    /// Engine, watch, output and store flags, as for `run`.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Flags of `headroom demo`.
#[derive(Debug, Args, Clone)]
pub struct DemoArgs {
    /// Directory for `headroom-demo-report.md`.
    #[arg(long, default_value = ".")]
    pub out_dir: PathBuf,
    /// Then search the same target served over HTTPS (self-signed certificate made at
    /// start) and compare: the cost of TLS on the ceiling, latency and CPU per request.
    /// Doubles the demo's time.
    #[arg(long)]
    pub tls: bool,
    /// After the cleartext search, search the same target served over HTTPS twice,
    /// over HTTP/2 and over HTTP/3 (QUIC), and compare their ceilings, latency,
    /// handshakes and CPU per request.
    #[arg(long)]
    pub http3: bool,
}

/// Flags of `headroom target`.
#[derive(Debug, Args, Clone)]
pub struct TargetArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: std::net::SocketAddr,
    /// Workers serving `/work` at once.
    #[arg(long, default_value_t = 4)]
    pub workers: usize,
    /// Mean time a `/work` request holds a worker.
    #[arg(long, default_value = "5ms", value_parser = parse_duration)]
    pub service_time: Duration,
    /// Service-time distribution: `fixed` or `exp` (exponential with that mean).
    #[arg(long, default_value = "fixed")]
    pub service_dist: crate::target::ServiceDist,
    /// Requests that may wait for a worker; beyond it `/work` answers 503.
    #[arg(long, default_value_t = 10_000)]
    pub queue: usize,
    /// Contention mode: after its service time, each `/work` request reconciles with
    /// every other one in flight, n − 1 exchanges of this long × n with n in flight
    /// (`0ms` off), so throughput peaks near √(service time / this) users and then falls
    /// (the USL's κ). `POST /admin/contention?ms=N` changes it while the target runs.
    #[arg(long, default_value = "0ms", value_parser = parse_duration)]
    pub contention: Duration,
    /// Keep `/tasks` in this PostgreSQL database instead of memory.
    #[arg(long)]
    pub postgres: Option<String>,
    /// Runtime threads of the server.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Most concurrent streams per HTTP/2 connection (h2c, or h2 with `--tls`).
    #[arg(long, default_value_t = crate::target::DEFAULT_H2_MAX_STREAMS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub h2_max_streams: u32,
    /// Serve HTTPS (HTTP/1.1 and h2 by ALPN) with a self-signed certificate made at
    /// start for localhost, 127.0.0.1, ::1 and the listen address. Without it the
    /// port serves cleartext HTTP/1.1 and h2c (prior knowledge).
    #[arg(long)]
    pub tls: bool,
    /// Write the self-signed certificate (PEM) to this file, for a client's `--cacert`.
    #[arg(long, requires = "tls")]
    pub tls_cert_out: Option<PathBuf>,
    /// Answer this share (0 to 1) of `POST /graphql` requests with HTTP 200 and an
    /// `errors` array, deterministically (any N requests hold ⌊N·share⌋ or one more).
    #[arg(long, default_value_t = 0.0, value_parser = share)]
    pub graphql_error_share: f64,
}

/// A share between 0 and 1.
fn share(s: &str) -> Result<f64, ValueError> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(ValueError::new("a share between 0 and 1", s)),
    }
}

/// Flags of `headroom run`.
#[derive(Debug, Args, Clone, Default)]
pub struct RunArgs {
    /// Scenario file (YAML), or a k6 script (`.js`, `.ts`) converted as it is read.
    /// Flags override its values.
    pub scenario: Option<PathBuf>,
    /// Target base URL (replaces the scenario's `target`).
    #[arg(long)]
    pub url: Option<String>,
    /// Constant arrival rate, iterations per second (open model).
    #[arg(long, conflicts_with = "users")]
    pub rate: Option<f64>,
    /// Constant number of users, each looping request → think (closed model).
    #[arg(long)]
    pub users: Option<u64>,
    /// How long to run, e.g. `30s`, `2m`.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Write the summary and the per-second timeline as CSV, as Locust:
    /// `PREFIX_stats.csv` and `PREFIX_stats_history.csv`.
    #[arg(long, value_name = "PREFIX")]
    pub csv: Option<PathBuf>,
    /// Stop the run as soon as a threshold fails, judged each second on what was
    /// recorded so far (from the 5th second on), and exit 99 with the summary so far
    /// marked `aborted`.
    #[arg(long)]
    pub abort_on_fail: bool,
    /// Run the same load over each protocol in turn (h1, h2, h3), cold (a new
    /// connection per request) then warm (kept connections), and print one table:
    /// latency, handshake, the generator's CPU per request, errors. Each run is stored.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "P,P",
        conflicts_with_all = ["http2", "http3", "connection", "shards", "out", "csv"]
    )]
    pub compare_protocols: Vec<ComparedProtocol>,
    /// Engine, watch, output and store flags, shared with `find`.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// A protocol of `--compare-protocols`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ComparedProtocol {
    /// HTTP/1.1.
    H1,
    /// HTTP/2 (h2 by ALPN over TLS, h2c over cleartext).
    H2,
    /// HTTP/3 over QUIC (https:// only).
    H3,
}

impl ComparedProtocol {
    /// As the table names it.
    pub fn name(self) -> &'static str {
        match self {
            ComparedProtocol::H1 => "http/1.1",
            ComparedProtocol::H2 => "h2",
            ComparedProtocol::H3 => "h3",
        }
    }
}

/// Flags `run` and `find` share: engine limits, thresholds, watches, the JSON output,
/// progress and the run store. The help texts are `run`'s; [`FindArgs`] rewords some.
#[derive(Debug, Args, Clone, Default)]
pub struct CommonArgs {
    /// With a k6 script (`.js`, `.ts`) instead of a scenario: exit 2 when the
    /// conversion had to leave a construct out (`headroom convert k6 SCRIPT` lists them).
    #[arg(long)]
    pub strict: bool,
    /// Engine threads (default: number of cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Pass/fail rule, e.g. `p95 < 500ms` (repeatable; added to the scenario's).
    #[arg(long = "threshold")]
    pub thresholds: Vec<String>,
    /// Most iterations in flight at once (open model); beyond it arrivals are dropped.
    #[arg(long)]
    pub max_in_flight: Option<usize>,
    /// Size of the shared connection pool (implies --connection shared); requests
    /// wait for a free connection (HTTP/2: a free stream), timed from their schedule.
    #[arg(long)]
    pub connections: Option<usize>,
    /// Per-request timeout (default 30s).
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Write the summary JSON here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// HTTPS: accept any server certificate (no verification).
    #[arg(long)]
    pub insecure: bool,
    /// HTTPS: trust the CA certificates of this PEM file instead of the built-in roots.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// HTTPS: client certificate chain, PEM (with --key).
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// HTTPS: the client certificate's private key, PEM (with --cert).
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// Connect to ADDR for HOST:PORT; TLS names and Host stay HOST (repeatable).
    #[arg(long, value_name = "HOST:PORT:ADDR")]
    pub resolve: Vec<crate::client::connect::Resolve>,
    /// Speak HTTP/2: h2 by ALPN on https:// (an error if the server does not agree),
    /// h2c with prior knowledge on http://.
    #[arg(long, conflicts_with = "http3")]
    pub http2: bool,
    /// Speak HTTP/3: QUIC with ALPN h3 (https:// only; an error if the server does not
    /// agree). The QUIC handshake is timed as the TLS phase.
    #[arg(long)]
    pub http3: bool,
    /// HTTP/3: keep session tickets, so new QUIC connections resume their sessions
    /// (counted in the summary's `quic.resumed`); without it each handshakes in full.
    #[arg(long)]
    pub h3_resume: bool,
    /// HTTP/3: send the request that opens a connection as 0-RTT early data when a
    /// resumed session allows (idempotent requests only; implies --h3-resume); the
    /// summary's `quic.zero_rtt` counts them, accepted and rejected.
    #[arg(long = "h3-0rtt")]
    pub h3_0rtt: bool,
    /// Most concurrent streams per HTTP/2 or HTTP/3 connection (default 100; the
    /// server's limit may lower it). Requests beyond wait, timed from their schedule.
    #[arg(long, value_name = "N")]
    pub streams: Option<u32>,
    /// gRPC: a directory searched for the imports of every `grpc:` step's .proto files,
    /// after the step's own (repeatable, as protoc's -I).
    #[arg(long = "proto-path", value_name = "DIR")]
    pub proto_paths: Vec<PathBuf>,
    /// How requests share connections: per-user (each user owns its connections; the
    /// users model's default), shared or shared:N (a pool; the arrival-rate model's
    /// default, --connections sizes it), per-request (a new connection and handshake
    /// for every request).
    #[arg(long, value_name = "MODEL")]
    pub connection: Option<crate::client::ConnectionModel>,
    /// Watch something during the run (repeatable; added to the scenario's `watch`):
    /// `pid:N` (the process and all its descendants), `process:NAME`, `cgroup:PATH`,
    /// `docker:NAME`, `postgres:URL`, `prometheus:URL[#metric,...]` (http:// or
    /// https://, trusted as the target is: `--cacert`, `--insecure`). The generator
    /// itself is always watched.
    #[arg(long = "watch", value_name = "SPEC")]
    pub watches: Vec<String>,
    /// How often watches take a sample.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub watch_interval: Duration,
    /// Print no progress lines.
    #[arg(long, short)]
    pub quiet: bool,
    /// Run history database (default `.headroom/history.db`).
    #[arg(long, env = crate::store::STORE_ENV)]
    pub store: Option<PathBuf>,
    /// Label stored with the run, `key=value` (repeatable), e.g. `round=6`.
    #[arg(long = "label", value_parser = values::parse_label)]
    pub labels: Vec<(String, String)>,
    /// What changed in this round, stored with the run and shown by `report --rounds`,
    /// e.g. `--note "synchronous_commit=off"`.
    #[arg(long)]
    pub note: Option<String>,
    /// Quick mode's request: -X/--method, -H/--header, --body, --json, --body-file.
    #[command(flatten)]
    pub request: quick::RequestFlags,
    /// Serve a live dashboard (and Prometheus `/metrics`) while it runs, on
    /// 127.0.0.1:5665 or the ADDR given as `--dashboard=ADDR` (`IP:PORT` or a port;
    /// port 0 picks a free one). Its address is printed on stderr; it stops at the end.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, require_equals = true,
          default_missing_value = crate::dashboard::DEFAULT_ADDR,
          value_parser = crate::dashboard::parse_addr)]
    pub dashboard: Option<std::net::SocketAddr>,
    /// The dashboard answers only requests carrying TOKEN (`Authorization: Bearer`,
    /// or its URL opened once with `?token=`), `/metrics` too. Without it, a dashboard
    /// beyond loopback makes one up and prints it in its address (and leaves
    /// `/metrics` open to scrapers); one on loopback is open.
    #[arg(long, value_name = "TOKEN", env = "HEADROOM_DASHBOARD_TOKEN",
          hide_env_values = true, requires = "dashboard",
          value_parser = crate::dashboard::access::parse_token)]
    pub dashboard_token: Option<String>,
    /// Push the run's metrics over OTLP/HTTP while it runs, to URL: a collector's base
    /// URL (`http://127.0.0.1:4318`) or Prometheus' OTLP receiver
    /// (`http://127.0.0.1:9090/api/v1/otlp`); `/v1/metrics` is added. Every
    /// `OTEL_METRIC_EXPORT_INTERVAL` ms (5000 by default) and once at the end.
    #[arg(long, value_name = "URL", value_parser = crate::otlp::parse_endpoint)]
    pub otlp: Option<String>,
    /// Split the load over N shard processes started together and merged exactly
    /// (every N-th arrival, or users split evenly, each): on this machine, or as pods
    /// with --cluster.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub shards: Option<u64>,
    /// Where the coordinator of --shards listens for its shards (default: loopback,
    /// or the --shard-netns bridge's address, on a free port).
    #[arg(long, value_name = "ADDR")]
    pub coordinator: Option<std::net::SocketAddr>,
    /// Test mode of --shards: each local shard in a network namespace of its own, with
    /// its own address on this Linux bridge (made beforehand, with an IPv4 address).
    /// Needs root.
    #[arg(long, value_name = "BRIDGE")]
    pub shard_netns: Option<String>,
    /// Where shards run when not on this machine (`--cluster kubernetes`), and how.
    #[command(flatten)]
    pub cluster: crate::cluster::ClusterArgs,
}
