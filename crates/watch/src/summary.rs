//! What a watch reports in the summary JSON (`"watches": [...]`): a [`WatchSummary`]
//! per spec, whose `kind` selects the fields of its [`Detail`], with the samples taken
//! every interval and the gaps where a sample could not be taken. Each kind's summary
//! (`CgroupSummary`, `ProcessSummary`, …) is plain data here, in a leaf: the samplers
//! build it and re-export it under their own module, and this module imports none of
//! them.

use super::samples::{CgroupSample, PostgresSample, ProcessSample, PrometheusSample, TopQuery};
use serde::{Deserialize, Serialize};

/// One watch over a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WatchSummary {
    /// The spec as given (`pid:123`, `postgres:postgresql://...`), or `self` for the generator.
    pub spec: String,
    /// The kind's figures and samples, tagged by `"kind"`.
    #[serde(flatten)]
    pub detail: Detail,
    /// Stretches with no sample: the watched thing was gone or did not answer.
    #[serde(default)]
    pub gaps: Vec<Gap>,
    /// Findings that deserve attention (fds near their limit, generator bound).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// What could not be measured and why (a missing extension, a capped series list).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
}

/// The per-kind part of a [`WatchSummary`], serialized with its kind as `"kind"`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Detail {
    /// The headroom process itself.
    Generator(GeneratorSummary),
    /// `pid:N` or `process:NAME`.
    Process(ProcessSummary),
    /// `cgroup:PATH` or `docker:NAME`.
    Cgroup(CgroupSummary),
    /// `postgres:URL`.
    Postgres(PostgresSummary),
    /// `prometheus:URL`.
    Prometheus(PrometheusSummary),
}

/// A stretch of the run with no sample, in seconds since the watch started.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Gap {
    /// Time of the first sample that failed.
    pub from_t: f64,
    /// Time of the next sample that succeeded, or the end of the watch.
    pub to_t: f64,
    /// Why the sample failed (the first failure's message).
    pub reason: String,
}

/// Average and largest of a per-sample figure.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Default)]
pub struct AvgMax {
    /// Mean over the samples (0 with no samples).
    pub avg: f64,
    /// Largest sample (0 with no samples).
    pub max: f64,
}

impl AvgMax {
    /// The mean and maximum of `values`.
    pub fn of(values: impl IntoIterator<Item = f64>) -> AvgMax {
        let (mut sum, mut n, mut max) = (0.0, 0usize, 0.0f64);
        for v in values {
            sum += v;
            n += 1;
            max = max.max(v);
        }
        AvgMax {
            avg: if n == 0 { 0.0 } else { round3(sum / n as f64) },
            max: round3(max),
        }
    }
}

/// The largest of a per-sample figure.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Default)]
pub struct Max {
    /// Largest sample (0 with no samples).
    pub max: f64,
}

impl Max {
    /// The maximum of `values`.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Max {
        Max {
            max: round3(values.into_iter().fold(0.0, f64::max)),
        }
    }
}

/// One line of the resource profile: use beside its cap, as `docker stats` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileRow {
    /// What was watched.
    pub what: String,
    /// CPU in cores: mean and largest sample.
    pub cpu: AvgMax,
    /// CPU cap in cores, when one is set.
    pub cpu_cap: Option<f64>,
    /// Largest memory use in MiB, when measured.
    pub mem_max_mb: Option<f64>,
    /// Memory cap in MiB, when one is set.
    pub mem_cap_mb: Option<f64>,
}

impl WatchSummary {
    /// The kind, as written in the JSON.
    pub fn kind(&self) -> &'static str {
        match self.detail {
            Detail::Generator(_) => "generator",
            Detail::Process(_) => "process",
            Detail::Cgroup(_) => "cgroup",
            Detail::Postgres(_) => "postgres",
            Detail::Prometheus(_) => "prometheus",
        }
    }

    /// The resource-profile line of a watch that measures CPU and memory (generator,
    /// process, cgroup); `None` for the others.
    pub fn profile(&self) -> Option<ProfileRow> {
        let row = |what: String, cpu, cpu_cap, mem_max_mb, mem_cap_mb| ProfileRow {
            what,
            cpu,
            cpu_cap,
            mem_max_mb,
            mem_cap_mb,
        };
        match &self.detail {
            Detail::Generator(g) => Some(row(
                "generator (headroom)".into(),
                g.cpu_cores,
                None,
                Some(g.rss_mb.max),
                None,
            )),
            Detail::Process(p) => Some(row(
                format!("{} ({})", self.spec, p.members()),
                p.cpu_cores,
                None,
                Some(p.rss_mb.max),
                None,
            )),
            Detail::Cgroup(c) => Some(row(
                self.spec.clone(),
                c.cpu_cores,
                c.cpu_cap_cores,
                c.memory_mb.map(|m| m.max),
                c.memory_cap_mb,
            )),
            Detail::Postgres(_) | Detail::Prometheus(_) => None,
        }
    }
}

/// Rounds to three decimals, so the JSON carries figures rather than float noise.
pub(crate) fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// Bytes to MiB, rounded.
pub(crate) fn mib(bytes: u64) -> f64 {
    round3(bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn avg_and_max_of_samples() {
        assert_eq!(AvgMax::of([1.0, 2.0, 4.5]), AvgMax { avg: 2.5, max: 4.5 });
        assert_eq!(AvgMax::of([]), AvgMax::default());
        assert_eq!(Max::of([3.0, 7.25, 1.0]).max, 7.25);
        assert_eq!(mib(3 * 1024 * 1024 + 512 * 1024), 3.5);
    }
}

/// Figures of a `cgroup` watch.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct CgroupSummary {
    /// The cgroup directory read.
    pub path: String,
    /// CPU in cores, per sample.
    pub cpu_cores: AvgMax,
    /// CPU cap in cores from `cpu.max` (`None`: no cap).
    pub cpu_cap_cores: Option<f64>,
    /// `memory.current`, MiB (`None`: not offered by this hierarchy).
    pub memory_mb: Option<Max>,
    /// `memory.max`, MiB (`None`: no cap, or not offered).
    pub memory_cap_mb: Option<f64>,
    /// One entry per successful sample.
    pub samples: Vec<CgroupSample>,
}

/// Figures of the `generator` watch.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct GeneratorSummary {
    /// CPU of the whole headroom process, cores.
    pub cpu_cores: AvgMax,
    /// Resident memory, MiB.
    pub rss_mb: Max,
    /// Largest per-second schedule lag, ms (from the engine's timeline).
    pub max_lag_ms: f64,
    /// The engine's verdict: the generator limited the result (`summary.generator.bound`).
    pub bound: bool,
    /// Why, in words (empty when not bound).
    pub reason: String,
    /// CPU seconds the watches themselves used (opening, sampling, closing): what
    /// watching cost the generator.
    #[serde(default)]
    pub watch_cpu_s: f64,
    /// One entry per sample.
    pub samples: Vec<GeneratorSample>,
}

/// One sample of the generator.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GeneratorSample {
    /// Seconds since the watches started.
    pub t: f64,
    /// CPU over the last interval, cores.
    pub cpu_cores: f64,
    /// Resident memory, MiB.
    pub rss_mb: f64,
    /// Largest schedule lag in the engine second that ended nearest this sample, ms.
    pub max_lag_ms: f64,
}

/// Figures of a `postgres` watch.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct PostgresSummary {
    /// Client connections at most, and `max_connections`.
    pub connections: Connections,
    /// Transactions (commits + rollbacks) per second, the watch's own left out.
    pub tps: AvgMax,
    /// Share of block reads served from shared buffers during the run (`None`: no reads).
    pub cache_hit_ratio: Option<f64>,
    /// Deadlocks detected during the run.
    pub deadlocks: i64,
    /// Lock requests waiting, per sample.
    pub waiting_locks: Max,
    /// Live and dead tuples of the busiest tables at the end.
    pub tables: Vec<TableTuples>,
    /// The statements with the most execution time during the run.
    pub top_queries: Vec<TopQuery>,
    /// One entry per successful sample.
    pub samples: Vec<PostgresSample>,
}

/// Connections against their limit.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Default)]
pub struct Connections {
    /// Most client connections seen (the watch's own left out).
    pub max: u64,
    /// `max_connections`.
    pub limit: u64,
    /// Of them, kept for superusers (`superuser_reserved_connections`, plus
    /// `reserved_connections` from PostgreSQL 16): other roles get `limit - reserved`.
    /// The watch's own connection is one of the `limit` and is not in `max`.
    #[serde(default)]
    pub reserved: u64,
}

/// One table's tuples.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TableTuples {
    /// `schema.table`.
    pub name: String,
    /// `n_live_tup`.
    pub live: i64,
    /// `n_dead_tup`: rows deleted or updated and not yet vacuumed.
    pub dead: i64,
}

/// Figures of a `process` watch.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ProcessSummary {
    /// Command name (`comm`) of the watched pid; `None` for a name watch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// CPU in cores (1.0 = one core busy), per sample.
    pub cpu_cores: AvgMax,
    /// Resident memory, MiB.
    pub rss_mb: Max,
    /// Threads.
    pub threads: Max,
    /// Open file descriptors at most, and the soft limit of that process.
    pub fds: FdUse,
    /// Most processes alive at once (for a pid: the process and its descendants).
    pub processes: usize,
    /// Distinct processes seen over the watch, those that exited included.
    #[serde(default)]
    pub processes_seen: usize,
    /// One entry per successful sample.
    pub samples: Vec<ProcessSample>,
}

/// Open file descriptors and their soft limit (`None`: unlimited or unreadable).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Default)]
pub struct FdUse {
    /// Largest count seen.
    pub max: u64,
    /// `RLIMIT_NOFILE` soft limit of the process that had it.
    pub limit: Option<u64>,
}

/// Figures of a `prometheus` watch.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct PrometheusSummary {
    /// The endpoint scraped.
    pub url: String,
    /// Per series, in name order.
    pub series: Vec<SeriesSummary>,
    /// One entry per successful scrape, the first taken at the start.
    pub samples: Vec<PrometheusSample>,
}

/// One series over the run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SeriesSummary {
    /// Name with labels, e.g. `requests_total{endpoint="work",status="200"}`.
    pub series: String,
    /// `counter` or `gauge`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Value at the first scrape it appeared in.
    pub first: f64,
    /// Value at the last scrape.
    pub last: f64,
    /// Largest value.
    pub max: f64,
    /// Counters: increase per second between the first and last scrape.
    pub rate_per_s: Option<f64>,
}
