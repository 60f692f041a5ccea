//! Per-workload figures of a run with several workloads (`workloads:`): the summary's
//! `by_workload`, each entry the sum of its own request names' tallies (names are
//! unique across workloads, so the entries add up to the run's figures), with its own
//! thresholds judged on them.

use serde::{Deserialize, Serialize};

use super::{ChecksSummary, Errors, Latency, Rates, ThresholdResult};

/// One workload's figures.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct WorkloadSummary {
    /// Its load model: `arrival-rate` or `users`.
    pub model: String,
    /// When it started, seconds from the start of the run (its `start:`).
    #[serde(default)]
    pub start_s: f64,
    /// Requests completed (successful or not).
    pub requests: u64,
    /// Of those, the ones that succeeded.
    pub completed: u64,
    /// Its offered rate (iterations per second its schedule asked for; the achieved
    /// rate for users) and achieved rate (requests per second), over the part of the
    /// run it was scheduled in.
    pub rate: Rates,
    /// Latency of its requests, ms.
    pub latency_ms: Latency,
    /// Latency of its successful requests, ms.
    #[serde(default)]
    pub latency_success_ms: Latency,
    /// Its errors.
    pub errors: Errors,
    /// Its non-fatal checks; absent when none ran.
    #[serde(default, skip_serializing_if = "ChecksSummary::is_empty")]
    pub checks: ChecksSummary,
    /// Its own thresholds' verdicts, in the order given (they also appear in the run's
    /// `thresholds`, prefixed `NAME: `, so they fail the run as the run's own do).
    #[serde(default)]
    pub thresholds: Vec<ThresholdResult>,
}

impl WorkloadSummary {
    /// The prefix a workload's rule carries among the run's thresholds: `NAME: `.
    pub fn rule_prefix(name: &str) -> String {
        format!("{name}: ")
    }
}
