//! The commands behind the CLI: each takes validated flags, builds what it needs
//! (plan, engine, target), runs, prints, and returns an exit code.

pub mod common;
pub mod compare;
pub mod delivery;
pub mod demo;
pub mod find;
pub mod find_record;
pub mod report;
pub mod run;
pub mod runs;
pub mod sink;
pub mod target;
