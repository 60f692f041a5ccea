//! The samples every watch kind takes, as plain data: what the live dashboard shows
//! (`live`), what each kind's summary keeps, and what its sampler fills. A leaf of the
//! watch module, so the samplers and the live board import it and not each other.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One sample of a `process` watch.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProcessSample {
    /// Seconds since the watches started.
    pub t: f64,
    /// CPU over the last interval, cores (absent on the first sample of a process).
    pub cpu_cores: Option<f64>,
    /// Resident memory, MiB.
    pub rss_mb: f64,
    /// Threads.
    pub threads: u64,
    /// Open fds of the process nearest its limit.
    pub fds: u64,
    /// That process's soft fd limit.
    pub fd_limit: Option<u64>,
    /// Processes alive at this sample.
    #[serde(default)]
    pub processes: usize,
    /// The busiest member over the last interval: one process's CPU beside the cores
    /// it can use (absent on the first sample).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busiest: Option<BusiestProcess>,
}

/// The member of a `process` watch that used the most CPU over one interval.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BusiestProcess {
    /// Its pid.
    pub pid: u32,
    /// Its command name (`comm`).
    pub command: String,
    /// CPU over the interval, cores.
    pub cpu_cores: f64,
    /// Time it was ready to run but waited for a CPU, per second of the interval
    /// (`/proc/PID/schedstat` run delay), for a single-threaded process that was also
    /// the busiest at the previous sample: with `cpu_cores`, how much of a core it
    /// wanted when the core is shared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_cores: Option<f64>,
    /// Its threads at the sample.
    pub threads: u64,
    /// The most cores it can use: its threads or the CPUs its affinity allows,
    /// whichever is fewer (one for a single-threaded process).
    pub cpu_cap_cores: f64,
}

/// One sample of a `cgroup` watch.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CgroupSample {
    /// Seconds since the watches started.
    pub t: f64,
    /// CPU over the last interval, cores.
    pub cpu_cores: f64,
    /// `memory.current`, MiB.
    pub memory_mb: Option<f64>,
    /// Share of the CPU periods of the interval in which the cgroup was throttled
    /// (`cpu.stat` `nr_throttled` / `nr_periods` deltas; absent with no quota or no period).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_share: Option<f64>,
    /// Time throttled per second of the interval, ms (`throttled_usec` delta).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_ms_per_s: Option<f64>,
}

/// One sample of a `postgres` watch.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PostgresSample {
    /// Seconds since the watches started.
    pub t: f64,
    /// Client connections.
    pub connections: u64,
    /// Of which running a statement.
    pub active: u64,
    /// Of which idle.
    pub idle: u64,
    /// Of which idle inside a transaction.
    pub idle_in_transaction: u64,
    /// Transactions per second over the last interval.
    pub tps: Option<f64>,
    /// Lock requests waiting.
    pub waiting_locks: u64,
}

/// One scrape's values of the kept series.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PrometheusSample {
    /// Seconds since the watches started.
    pub t: f64,
    /// Series → value.
    pub values: BTreeMap<String, f64>,
}

/// One statement's work during the run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TopQuery {
    /// Normalized text as `pg_stat_statements` keeps it (`$1` for constants).
    pub query: String,
    /// Executions during the run.
    pub calls: u64,
    /// Mean execution time, ms.
    pub mean_ms: f64,
    /// Total execution time, ms.
    pub total_ms: f64,
}
