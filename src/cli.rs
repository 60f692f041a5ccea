//! Command-line parsing and dispatch.

/// Runs the command line; returns the process exit code.
pub fn main() -> i32 {
    0
}
