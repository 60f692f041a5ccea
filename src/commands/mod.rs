//! The commands behind the CLI: each takes validated flags, builds what it needs
//! (plan, engine, target), runs, prints, and returns an exit code.

pub mod demo;
pub mod find;
pub mod run;
pub mod target;
