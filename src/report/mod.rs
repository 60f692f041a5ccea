//! Human-readable output: the end-of-run text summary.

pub mod text;
