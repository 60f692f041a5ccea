//! Integration tests: the built `headroom` binary and its helpers against real servers
//! on 127.0.0.1.

mod find_cli;
mod run_cli;
mod support;
