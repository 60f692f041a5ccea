//! Human-readable output: progress line and end-of-run summary.
