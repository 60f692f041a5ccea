//! Integration tests: the built `headroom` binary and its helpers against real servers
//! on 127.0.0.1.
//!
//! `scripts/test.sh` runs the modules in its `PAIRED` list four at a time and every
//! other test alone: a module with a search or a timing assertion stays off that list.

mod accounting;
mod check_cli;
mod connections;
mod convert_cli;
mod convert_fronts;
mod convert_k6;
mod dashboard;
mod delivery;
mod demo_tls;
mod docs_examples;
mod fast_failures;
mod find_cli;
mod graphql;
mod graphql_peer;
mod grpc_client;
mod grpc_held;
mod grpc_steps;
mod har_browser;
mod hostile;
mod http2;
mod http2_client;
mod http3;
mod iterations;
mod journey_peers;
mod journeys;
mod journeys_login;
mod killed_runs;
mod kube;
mod kube_run;
mod otlp;
mod quick_flags;
mod report_cli;
mod rounds_cli;
mod rounds_page;
mod run_cli;
mod run_errors;
mod run_faults;
mod run_shapes;
mod run_tls;
mod run_tls_pinned;
mod schema;
mod secrets;
mod shards_channel;
mod shards_cli;
mod shards_stall;
mod shares;
mod sse;
mod store_cli;
mod stream_connections;
mod support;
mod target_tls;
mod thresholds_window;
mod timing;
mod watch_cli;
mod workloads;
mod ws_steps;
