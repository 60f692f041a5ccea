//! [`Board`]: everything the dashboard knows about the command it watches, fed by the
//! command's thread (the engine's per-second [`Live`] figures, a search's steps, the
//! end) and read by the server's connections, which turn it into the JSON messages of
//! the page's event stream ([`Board::message`]) and the `/metrics` exposition.
//!
//! The board only copies what the engine, the search and the watches already
//! measured: each second's row is the [`Live`] figures the terminal progress prints,
//! with percentiles read from the same merged histogram of that second.

use std::collections::BTreeMap;
use std::time::Instant;

use hdrhistogram::Histogram;
use serde::Serialize;
use serde_json::{json, Value};

use super::verdict::{generator_words, live_verdict};
use crate::engine::Live;
use crate::metrics::recorder::{add_by_name, new_histogram, NameCounts};
use crate::metrics::summary::Summary;
use crate::metrics::ErrorKind;
use crate::search::{SearchResult, StepRecord};
use crate::watch::{Detail, LiveWatches};

/// What the page is told once per connection: which command, against what.
#[derive(Debug, Clone, Serialize)]
pub struct Meta {
    /// `run` or `find`.
    pub command: &'static str,
    /// Scenario name.
    pub name: String,
    /// Where the requests go (`scheme://authority`).
    pub target: String,
    /// `req/s` (arrival rate) or `users`.
    pub unit: &'static str,
    /// The thresholds, as written.
    pub thresholds: Vec<String>,
    /// Engine threads (the verdict compares their CPU to one core each).
    pub threads: usize,
    /// Request names, as the plan numbers them.
    pub names: Vec<String>,
    /// The plan's `workloads:` (empty for one load): each with its request names'
    /// indexes into `names`, so the page shows each workload's figures.
    pub workloads: Vec<WorkloadMeta>,
}

/// One workload of the plan, as the page groups request names by it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WorkloadMeta {
    /// Its name.
    pub name: String,
    /// Its request names' indexes into [`Meta::names`].
    pub names: Vec<usize>,
}

/// One second of the measured load, as the page charts it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    /// Chart position, seconds: a run's elapsed time at the end of the second; for a
    /// search, the time since the search started (steps restart their own clock).
    pub x: f64,
    /// Search step (from 1), 0 in a run.
    pub step: usize,
    /// The engine's second index within its run (the summary timeline's `t`).
    pub t: u64,
    /// Offered rate (open model) or active users (closed model).
    pub offered: f64,
    /// Requests completed in the second.
    pub achieved: u64,
    /// Of which errors.
    pub errors: u64,
    /// Iterations dropped in the second.
    pub dropped: u64,
    /// Iterations in flight at its end.
    pub in_flight: u64,
    /// Latency percentiles of the second's requests, ms (`p50`, `p90`, `p95`, `p99`,
    /// `p99.9`, `max`), all 0 when it completed none.
    pub latency_ms: BTreeMap<&'static str, f64>,
    /// Largest schedule lag of an arrival in the second, ms.
    pub max_lag_ms: f64,
    /// CPU the engine threads used, percent of one core.
    pub generator_cpu_percent: f64,
    /// Errors by kind in the second (kinds with none left out).
    pub error_kinds: BTreeMap<&'static str, u64>,
}

/// The percentiles each row carries, with their quantiles.
const PERCENTILES: [(&str, f64); 6] = [
    ("p50", 0.50),
    ("p90", 0.90),
    ("p95", 0.95),
    ("p99", 0.99),
    ("p99.9", 0.999),
    ("max", 1.0),
];

/// One finished search step: a point of the capacity curve.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StepPoint {
    /// Step number, from 1.
    pub index: usize,
    /// Offered rate or user count.
    pub value: f64,
    /// Achieved rate over the measured window.
    pub achieved: f64,
    /// p50, p95 and p99 over the window, ms.
    pub p50_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Errors, percent of requests.
    pub errors_percent: f64,
    /// Iterations dropped.
    pub dropped: u64,
    /// Every threshold held.
    pub passed: bool,
    /// The step re-ran the best pass.
    pub confirmation: bool,
    /// The generator, not the target, limited the step.
    pub generator_bound: bool,
    /// The step was stopped early.
    pub interrupted: bool,
    /// The generator's verdict on the step, in words.
    pub verdict: String,
}

/// The step running now.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CurrentStep {
    /// Step number, from 1.
    pub index: usize,
    /// Offered rate or user count.
    pub value: f64,
    /// The step re-runs the best pass.
    pub confirmation: bool,
    /// Past its warm-up.
    pub measuring: bool,
}

/// Run-wide counters behind `/metrics`, added up from every second (and every step).
#[derive(Debug, Clone)]
pub struct Totals {
    /// Requests and errors by name, indexed as [`Meta::names`].
    pub by_name: Vec<NameCounts>,
    /// Latency of every request, µs (the seconds' histograms merged).
    pub latency: Histogram<u64>,
    /// Iterations dropped.
    pub dropped: u64,
    /// Iterations in flight at the end of the last second.
    pub in_flight: u64,
    /// Active users at the end of the last second (closed model).
    pub users: Option<u64>,
    /// Offered rate (or users) of the last second.
    pub offered: f64,
    /// Seconds of load reported so far.
    pub seconds: u64,
}

/// How the command ended, for the page's last message.
#[derive(Debug, Clone, Serialize)]
pub struct Finished {
    /// The exit code the command returns.
    pub exit_code: i32,
    /// The outcome in words.
    pub outcome: String,
    /// A run's summary (`None` for a search).
    pub summary: Option<Value>,
    /// A search's result without its steps (they are in `steps`).
    pub search: Option<Value>,
}

/// What the dashboard knows. Not shared by itself: the dashboard keeps it behind a mutex.
#[derive(Debug)]
pub struct Board {
    meta: Meta,
    started: Instant,
    rows: Vec<Row>,
    now: Value,
    error_kinds: [u64; ErrorKind::COUNT],
    steps: Vec<StepPoint>,
    current: Option<CurrentStep>,
    verdict: String,
    watches: Option<LiveWatches>,
    postgres: Option<Value>,
    stopping: bool,
    finished: Option<Finished>,
    totals: Totals,
    /// How many times [`compact::compact`] thinned the rows: a page that read them
    /// before must read them again whole.
    generation: u64,
}

impl Board {
    /// An empty board for the command `meta` describes.
    pub fn new(meta: Meta) -> Board {
        let names = meta.names.len();
        Board {
            meta,
            started: Instant::now(),
            // Once, for the whole run: `compact` never makes it grow.
            rows: Vec::with_capacity(compact::MAX_ROWS + 1),
            now: Value::Null,
            error_kinds: [0; ErrorKind::COUNT],
            steps: Vec::new(),
            current: None,
            verdict: "Waiting for the first second of load.".into(),
            watches: None,
            postgres: None,
            stopping: false,
            finished: None,
            totals: Totals {
                by_name: vec![NameCounts::default(); names],
                latency: new_histogram(2),
                dropped: 0,
                in_flight: 0,
                users: None,
                offered: 0.0,
                seconds: 0,
            },
            generation: 0,
        }
    }

    /// Adds one completed second of load.
    pub fn second(&mut self, live: &Live) {
        let bucket = &live.last_bucket;
        let h = &bucket.latency;
        let latency_ms = PERCENTILES
            .iter()
            .map(|&(name, q)| {
                let v = if h.is_empty() {
                    0.0
                } else {
                    h.value_at_quantile(q) as f64 / 1000.0
                };
                (name, v)
            })
            .collect();
        let error_kinds = ErrorKind::ALL
            .iter()
            .zip(bucket.error_kinds)
            .filter(|&(_, n)| n > 0)
            .map(|(k, n)| (k.as_str(), n))
            .collect();
        let (step, x) = match &self.current {
            Some(c) => (c.index, self.started.elapsed().as_secs_f64()),
            None => (0, live.elapsed.as_secs_f64()),
        };
        let last = &live.last;
        self.rows.push(Row {
            x,
            step,
            t: last.t,
            offered: last.offered,
            achieved: last.requests,
            errors: last.errors,
            dropped: last.dropped,
            in_flight: live.in_flight,
            latency_ms,
            max_lag_ms: last.max_lag_ms,
            generator_cpu_percent: last.generator_cpu_percent,
            error_kinds,
        });
        if self.rows.len() > compact::MAX_ROWS {
            compact::compact(&mut self.rows);
            self.generation += 1;
        }
        for (a, b) in self.error_kinds.iter_mut().zip(bucket.error_kinds) {
            *a += b;
        }
        let t = &mut self.totals;
        add_by_name(&mut t.by_name, &bucket.by_name);
        t.latency
            .add(h)
            .expect("auto-resizing histograms always merge");
        t.dropped += last.dropped;
        t.in_flight = live.in_flight;
        t.users = live.users;
        t.offered = last.offered;
        t.seconds += 1;
        self.now = json!({
            "elapsed_s": live.elapsed.as_secs_f64(),
            "total_s": live.total.as_secs_f64(),
            "requests": live.requests,
            "errors": live.errors,
            "dropped": live.dropped,
            "in_flight": live.in_flight,
            "users": live.users,
            "rate": last.requests,
            "offered": last.offered,
        });
        self.verdict = live_verdict(live, self.meta.threads);
    }

    /// A search step starts (its warm-up, if any, first).
    pub fn step_starting(&mut self, index: usize, value: f64, confirmation: bool) {
        self.current = Some(CurrentStep {
            index,
            value,
            confirmation,
            measuring: false,
        });
    }

    /// The current step's measured window starts.
    pub fn step_measuring(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.measuring = true;
        }
    }

    /// A search step finished: a new point of the capacity curve.
    pub fn step_finished(&mut self, index: usize, step: &StepRecord) {
        let s = &step.summary;
        self.steps.push(StepPoint {
            index,
            value: step.rate,
            achieved: s.rate.achieved,
            p50_ms: s.latency_ms.p50,
            p95_ms: s.latency_ms.p95,
            p99_ms: s.latency_ms.p99,
            errors_percent: s.errors.rate * 100.0,
            dropped: s.dropped,
            passed: step.passed,
            confirmation: step.confirmation,
            generator_bound: s.generator.bound,
            interrupted: s.interrupted,
            verdict: generator_words(s),
        });
        // Nothing runs until the next step starts (the cooldown and hooks between).
        self.current = None;
        self.note_postgres(s);
    }

    /// Where the watches running now put their newest samples.
    pub fn set_watches(&mut self, watches: LiveWatches) {
        self.watches = Some(watches);
    }

    /// The user asked the page to stop the command.
    pub fn stopping(&mut self) {
        self.stopping = true;
    }

    /// The run ended with `summary` and `exit_code`.
    pub fn run_finished(&mut self, summary: &Summary, exit_code: i32) {
        self.note_postgres(summary);
        self.verdict = generator_words(summary);
        let outcome = if summary.interrupted {
            "The run was stopped before its end; the figures cover what ran.".to_string()
        } else {
            let failed = summary.thresholds.iter().filter(|t| !t.ok).count();
            match (summary.thresholds.len(), failed) {
                (0, _) => "The run finished.".to_string(),
                (n, 0) => format!("The run finished and passed its {n} threshold(s)."),
                (n, f) => format!("The run finished and failed {f} of its {n} threshold(s)."),
            }
        };
        self.finished = Some(Finished {
            exit_code,
            outcome,
            summary: serde_json::to_value(summary).ok(),
            search: None,
        });
        self.current = None;
    }

    /// The search ended with `result` and `exit_code`.
    pub fn search_finished(&mut self, result: &SearchResult, exit_code: i32) {
        let search = json!({
            "ceiling": result.ceiling,
            "ceiling_is_lower_bound": result.ceiling_is_lower_bound,
            "knee": result.knee,
            "limited_by": result.limited_by.as_str(),
            "failed_at": result.failed_at,
            "duration_s": result.duration_s,
        });
        self.finished = Some(Finished {
            exit_code,
            outcome: result.conclusion.clone(),
            summary: None,
            search: Some(search),
        });
        self.current = None;
    }

    /// The command ended in an error before it had anything to show.
    pub fn failed(&mut self, message: &str, exit_code: i32) {
        self.finished = Some(Finished {
            exit_code,
            outcome: format!("error: {message}"),
            summary: None,
            search: None,
        });
    }

    /// Whether the end was reported.
    pub fn is_finished(&self) -> bool {
        self.finished.is_some()
    }

    /// The counters behind `/metrics`, and the request names.
    pub fn totals(&self) -> (&Totals, &[String]) {
        (&self.totals, &self.meta.names)
    }

    /// Rows held so far.
    pub fn rows(&self) -> usize {
        self.rows.len()
    }

    /// Changes each time the rows were thinned (bounded, see [`compact`]): a reader
    /// that saw another generation reads them again from the start.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The page's next message: the rows from `from_row` on and everything current.
    /// `reset` (a new connection) adds the meta and tells the page to start over.
    ///
    /// Borrowed and serialized as it is written: building a `serde_json::Value` tree of
    /// 900 rows first made some fifteen thousand small allocations per `/state`, which
    /// over an hour's soak left the allocator new high-water marks to find.
    pub fn message(&self, from_row: usize, reset: bool) -> Message<'_> {
        let error_kinds: BTreeMap<&str, u64> = ErrorKind::ALL
            .iter()
            .zip(self.error_kinds)
            .filter(|&(_, n)| n > 0)
            .map(|(k, n)| (k.as_str(), n))
            .collect();
        Message {
            reset,
            meta: reset.then_some(&self.meta),
            rows: &self.rows[from_row.min(self.rows.len())..],
            now: &self.now,
            error_kinds,
            steps: &self.steps,
            current: &self.current,
            verdict: &self.verdict,
            watches: self
                .watches
                .as_ref()
                .map(LiveWatches::latest)
                .unwrap_or_default(),
            postgres: &self.postgres,
            stopping: self.stopping,
            finished: &self.finished,
            workloads: self.workloads(),
        }
    }

    /// Each workload's requests and errors so far, from the seconds' per-name counts.
    fn workloads(&self) -> Vec<Value> {
        self.meta
            .workloads
            .iter()
            .map(|w| {
                let (mut requests, mut errors) = (0u64, 0u64);
                for &i in &w.names {
                    if let Some(c) = self.totals.by_name.get(i) {
                        requests += c.requests;
                        errors += c.errors.iter().sum::<u64>();
                    }
                }
                json!({"name": w.name, "requests": requests, "errors": errors})
            })
            .collect()
    }

    /// Keeps the top statements and tables of the newest summary that watched
    /// PostgreSQL (they are counted over a whole run or step, so they come at its end).
    fn note_postgres(&mut self, summary: &Summary) {
        for w in &summary.watches {
            if let Detail::Postgres(p) = &w.detail {
                self.postgres = Some(json!({
                    "spec": w.spec,
                    "connections": p.connections,
                    "top_queries": p.top_queries,
                    "tables": p.tables,
                }));
            }
        }
    }
}

mod compact;
mod message;

pub use message::Message;
#[cfg(test)]
pub(in crate::dashboard) mod tests;
