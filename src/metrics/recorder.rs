//! Per-thread recording.
