//! The commands behind the CLI: each takes validated flags, builds what it needs
//! (plan, engine, target), runs, prints, and returns an exit code ([`exit::ExitCode`])
//! or why it stopped ([`error::CommandError`]), which [`crate::cli`] prints once.
//! Nothing here imports [`crate::cli`]: the flags are in [`args`] (or beside their
//! command) and the exit codes in [`exit`].

pub mod args;
pub mod check;
pub mod cluster;
pub mod common;
pub mod compare;
pub mod compare_protocols;
pub mod completions;
pub mod convert;
pub mod delivery;
pub mod demo;
pub mod error;
pub mod exit;
pub mod find;
pub mod find_record;
pub mod man;
pub mod once;
pub mod quick;
pub mod report;
pub mod run;
pub mod runs;
pub mod schema;
pub mod setup;
pub mod shard;
pub mod sharded;
pub mod sink;
pub mod target;
pub mod values;
