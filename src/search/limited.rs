//! [`LimitedBy`]: why a search stopped where it did, in a leaf of its own so that the
//! result and what completes it (the bottleneck) can both name it without importing
//! each other.

use serde::{Deserialize, Serialize};

/// Why the search stopped where it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LimitedBy {
    /// A step failed its thresholds: the ceiling is the target's (or no step passed).
    Thresholds,
    /// The generator could not keep up: the ceiling is only a lower bound.
    Generator,
    /// Every step up to `--to` passed: the ceiling is at least `--to`.
    Range,
    /// Stopped by Ctrl-C: the ceiling, if any, is the best pass so far (a lower bound).
    Interrupted,
    /// A hook failed or a step could not run at all: see `conclusion`.
    Error,
}

impl LimitedBy {
    /// The JSON spelling: `thresholds`, `generator`, `range`, `interrupted`, `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitedBy::Thresholds => "thresholds",
            LimitedBy::Generator => "generator",
            LimitedBy::Range => "range",
            LimitedBy::Interrupted => "interrupted",
            LimitedBy::Error => "error",
        }
    }
}
