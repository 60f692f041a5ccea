//! Integration tests: the built `headroom` binary and its helpers against real servers
//! on 127.0.0.1.

mod accounting;
mod connections;
mod convert_cli;
mod dashboard;
mod delivery;
mod demo_tls;
mod fast_failures;
mod find_cli;
mod graphql;
mod graphql_peer;
mod grpc_client;
mod grpc_steps;
mod har_browser;
mod hostile;
mod http2;
mod http2_client;
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
mod schema;
mod shares;
mod sse;
mod store_cli;
mod support;
mod target_tls;
mod timing;
mod watch_cli;
mod ws_steps;
