//! What the watches saw last, for the live dashboard: after every sampling round the
//! sampling thread puts each watch's newest sample (with the caps it is read against)
//! on a [`LiveWatches`] board, which [`crate::Watches::live`] hands out. It is
//! the same sample the watch keeps for its summary: no second measurement.

use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::samples::{CgroupSample, PostgresSample, ProcessSample, PrometheusSample, TopQuery};

/// One watch's newest sample.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LiveWatch {
    /// The spec as given, or `self` for the generator.
    pub spec: String,
    /// The sample, tagged by `"kind"` as in the summary.
    #[serde(flatten)]
    pub sample: LiveSample,
}

/// The newest sample of one watch kind, with its caps.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum LiveSample {
    /// The headroom process: CPU (cores) and resident memory.
    Generator {
        /// Seconds since the watches started.
        t: f64,
        /// CPU over the last interval, cores.
        cpu_cores: f64,
        /// Resident memory, MiB.
        rss_mb: f64,
    },
    /// `pid:N` or `process:NAME`.
    Process(ProcessSample),
    /// `cgroup:PATH` or `docker:NAME`, beside its caps.
    Cgroup {
        /// The sample.
        #[serde(flatten)]
        sample: CgroupSample,
        /// CPU cap in cores (`None`: no cap).
        cpu_cap_cores: Option<f64>,
        /// Memory cap in MiB (`None`: no cap).
        memory_cap_mb: Option<f64>,
    },
    /// `postgres:URL`: connections by state beside `max_connections`, and the top
    /// statements so far (recounted every few seconds; empty without
    /// `pg_stat_statements`).
    Postgres {
        /// The sample.
        #[serde(flatten)]
        sample: PostgresSample,
        /// `max_connections`.
        max_connections: u64,
        /// The statements with the most execution time since the watch started.
        top_queries: Vec<TopQuery>,
    },
    /// `prometheus:URL`: the kept series' values.
    Prometheus(PrometheusSample),
}

/// The newest sample of every watch, shared between the sampling thread (which
/// replaces it after each round) and readers such as the dashboard. Cheap to clone;
/// safe to share.
#[derive(Debug, Clone, Default)]
pub struct LiveWatches(Arc<Mutex<Vec<LiveWatch>>>);

impl LiveWatches {
    /// The newest sample of each watch that has one, the generator first.
    pub fn latest(&self) -> Vec<LiveWatch> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Replaces the samples (the sampling thread, after a round).
    pub(crate) fn set(&self, samples: Vec<LiveWatch>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = samples;
    }
}
