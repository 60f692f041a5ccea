//! Ceiling search (`headroom find`).
pub mod strategy;
