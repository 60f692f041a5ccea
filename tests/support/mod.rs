//! Helpers shared by the integration tests in `tests/tests.rs`.
//!
//! - [`Nginx`]: a real nginx on a free loopback port, stopped when dropped.
//! - [`headroom_bin`] and [`run_headroom`]: the built `headroom` binary, run with a
//!   time limit.
//! - [`free_port`]: a loopback port that was free a moment ago.
//!
//! Every address used here is on 127.0.0.1; no helper opens a fixed port.

// Each test module uses a different subset of these helpers.
#![allow(dead_code)]

mod headroom;
mod nginx;
mod ports;
#[cfg(test)]
mod self_test;

pub(crate) use headroom::{headroom_bin, run_headroom, test_store};
pub(crate) use nginx::{Nginx, JSON_BODY};
pub(crate) use ports::free_port;
