//! The run summary: the v1 JSON contract of ARCHITECTURE.md (`--out`), built from the merged
//! recorders. Fields may be added; none of the contract's may be renamed or removed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

mod flows;
mod workloads;

pub use super::figures::{Errors, Latency};
pub use super::recorder::{ByProtocol, CheckCounts, CookieCounts};
pub use flows::{ChecksSummary, GroupSummary};
use headroom_watch::{GeneratorVerdict, RunView};
pub use workloads::WorkloadSummary;

/// Everything a run measured, ready to print, judge and store.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    /// Format version, always 1.
    pub version: u32,
    /// Scenario name.
    pub name: String,
    /// `arrival-rate` or `users`.
    pub model: String,
    /// Requests completed (successful or not), not counting dropped iterations.
    pub requests: u64,
    /// Measured wall time in seconds.
    pub duration_s: f64,
    /// Offered and achieved request rates.
    pub rate: Rates,
    /// Scheduled iterations that could not start because the in-flight cap was reached.
    pub dropped: u64,
    /// Requests the run set out to send: every request begun (including one still
    /// waiting for a connection) plus every dropped iteration. The accounting identity
    /// (ARCHITECTURE.md rule 6) always holds:
    /// `scheduled = completed + errors.count + dropped + abandoned`.
    #[serde(default)]
    pub scheduled: u64,
    /// Requests that succeeded (`requests - errors.count`).
    #[serde(default)]
    pub completed: u64,
    /// Requests still in flight when the run ended (the drain after the schedule gave
    /// up, or the run was interrupted): begun, never finished, counted nowhere else.
    #[serde(default)]
    pub abandoned: u64,
    /// Requests sent a second time on a fresh connection because a reused keep-alive
    /// connection turned out to be closed (only requests safe to repeat are retried).
    #[serde(default)]
    pub retries: u64,
    /// Latency over all requests, in milliseconds. In the open model it is measured
    /// from each request's scheduled start (no coordinated omission).
    pub latency_ms: Latency,
    /// Latency measured from the actual send, kept beside the corrected one for
    /// comparison (equal to `latency_ms` in the closed model).
    pub latency_uncorrected_ms: Latency,
    /// Latency of successful requests only (corrected as `latency_ms`): fast failures,
    /// such as a rate limiter's 503s, cannot make it look good. Thresholds name it
    /// `success_p95` and the like.
    #[serde(default)]
    pub latency_success_ms: Latency,
    /// Errors over all requests.
    pub errors: Errors,
    /// Where the time went, over all requests: DNS, connect, TLS, time to first byte,
    /// receive (see [`TimingMs`]).
    #[serde(default)]
    pub timing_ms: TimingMs,
    /// Connections opened, requests on reused ones, TLS handshakes.
    #[serde(default)]
    pub connections: Connections,
    /// What QUIC measured on an HTTP/3 run's connections (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic: Option<crate::quic::QuicSummary>,
    /// Per request name.
    pub by_name: BTreeMap<String, NameSummary>,
    /// Threshold verdicts, in the order given.
    pub thresholds: Vec<ThresholdResult>,
    /// The generator's self-check.
    pub generator: Generator,
    /// Per-second series.
    pub timeline: Vec<Second>,
    /// True when the run was stopped early (Ctrl-C); the figures cover what ran.
    pub interrupted: bool,
    /// Set when `run --abort-on-fail` stopped the run on a failed threshold (the run
    /// is then also `interrupted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted: Option<Aborted>,
    /// What was watched during the run (`--watch`), the generator first; absent when
    /// nothing was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub watches: Vec<headroom_watch::WatchSummary>,
    /// End-to-end delivery through the scenario's `sink:` (absent without one), counted
    /// after the grace period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<headroom_sink::DeliverySummary>,
    /// Per stream name (`ws:`/`sse:`/`grpc:` steps' `name:`); absent without streams.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub streams: BTreeMap<String, crate::streams::StreamSummary>,
    /// All streams of each protocol (`ws`, `sse`, `grpc`) and of the run (`all`), for
    /// thresholds such as `ws.message_p95`; absent without streams.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stream_totals: BTreeMap<String, crate::streams::StreamSummary>,
    /// Each shard of a sharded run (`--shards`), in index order: what it sent, where it
    /// ran, and its own generator verdict; absent for a single process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardSummary>,
    /// The coordinator of a sharded run; absent for a single process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordinator: Option<CoordinatorSummary>,
    /// Non-fatal checks: passed and failed, overall and per check name; absent when
    /// no check ran.
    #[serde(default, skip_serializing_if = "ChecksSummary::is_empty")]
    pub checks: ChecksSummary,
    /// Redirect hops followed; absent when none was.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub redirects: u64,
    /// What the cookie jars stored, sent and refused; absent when all are 0.
    #[serde(default, skip_serializing_if = "CookieCounts::is_empty")]
    pub cookies: CookieCounts,
    /// Per `group:` step name: runs, failed runs and their duration; absent without
    /// groups.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_group: BTreeMap<String, GroupSummary>,
    /// Per workload (`workloads:`): figures, checks and its own thresholds; absent
    /// for a run of one load.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_workload: BTreeMap<String, WorkloadSummary>,
    /// Set on a summary of the seconds a run had recorded when it stopped without
    /// writing its own (killed, its pod lost, its machine gone): what it covers.
    /// Absent on a summary the run wrote itself, finished or interrupted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<Partial>,
}

/// What a partial summary covers: the measured window's first `seconds` seconds,
/// through second `last_second` (0-based, as the timeline counts).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Partial {
    /// Seconds of the measured window covered.
    pub seconds: u64,
    /// The last second covered (`seconds - 1`), as the timeline's `t`.
    pub last_second: u64,
    /// In a search (`find`), the step these seconds belong to: the steps before it
    /// are stored whole beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<PartialStep>,
}

/// The step of a search a partial summary is of.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct PartialStep {
    /// Its position in the search, from 0.
    pub index: u32,
    /// The load it ran at (req/s, or users).
    pub value: f64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What coordinating a sharded run cost, in the coordinator's own process.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct CoordinatorSummary {
    /// Where it listened for its shards.
    pub address: String,
    /// CPU seconds its process used from the start barrier to the merged result
    /// (everything it did meanwhile: merging seconds and shares, progress, watches).
    pub cpu_s: f64,
    /// That CPU as a share of one core per shard over the run, percent.
    pub cpu_percent_per_shard: f64,
}

/// One shard of a sharded run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ShardSummary {
    /// Shard index, `0..N`.
    pub index: u64,
    /// `done`, `interrupted` (stopped early, its figures kept) or `lost` (died, went
    /// silent or failed: nothing of it is in the run's figures).
    pub status: String,
    /// Where it was placed: `pid 1234`, or `pod NAME`.
    pub placed: String,
    /// The address the coordinator saw it connect from.
    pub address: String,
    /// Its host name.
    pub host: String,
    /// Requests its share set out to send (same identity as the run's).
    pub scheduled: u64,
    /// Requests completed.
    pub requests: u64,
    /// Of those, errors.
    pub errors: u64,
    /// Iterations dropped.
    pub dropped: u64,
    /// Requests begun and never finished.
    pub abandoned: u64,
    /// Its own latency percentiles, ms (the run's are from the merged histograms).
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// How long before the start instant it heard it, ms (negative: it started late).
    pub heard_start_ahead_ms: f64,
    /// Its own generator self-check: the generator-bound verdict is per shard.
    pub generator: Generator,
    /// Why it was lost (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Summary {
    /// An open-model summary called `name`, `duration_s` long, with nothing measured:
    /// the base that tests (here and in the crates above) fill in.
    pub fn empty(name: &str, duration_s: f64) -> Summary {
        Summary {
            version: 1,
            name: name.into(),
            model: "arrival-rate".into(),
            requests: 0,
            duration_s,
            rate: Rates::default(),
            dropped: 0,
            scheduled: 0,
            completed: 0,
            abandoned: 0,
            retries: 0,
            latency_ms: Latency::default(),
            latency_uncorrected_ms: Latency::default(),
            latency_success_ms: Latency::default(),
            errors: Errors::default(),
            timing_ms: TimingMs::default(),
            connections: Connections::default(),
            quic: None,
            by_name: BTreeMap::new(),
            thresholds: Vec::new(),
            generator: Generator::default(),
            timeline: Vec::new(),
            interrupted: false,
            aborted: None,
            watches: Vec::new(),
            delivery: None,
            streams: BTreeMap::new(),
            stream_totals: BTreeMap::new(),
            shards: Vec::new(),
            coordinator: None,
            checks: ChecksSummary::default(),
            redirects: 0,
            cookies: CookieCounts::default(),
            by_group: BTreeMap::new(),
            by_workload: BTreeMap::new(),
            partial: None,
        }
    }
}

/// Offered versus achieved rate, requests per second.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Default)]
pub struct Rates {
    /// The rate the schedule asked for (open model), or the achieved rate (closed model).
    pub offered: f64,
    /// Completed requests divided by the measured duration.
    pub achieved: f64,
}

/// Figures for one request name.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct NameSummary {
    /// Requests completed under this name.
    pub requests: u64,
    /// Latency percentiles in milliseconds.
    pub latency_ms: Latency,
    /// Latency of this name's successful requests only, in milliseconds.
    #[serde(default)]
    pub latency_success_ms: Latency,
    /// Errors under this name.
    pub errors: Errors,
    /// Where this name's time went (`dns` stays empty: resolution belongs to the run).
    #[serde(default)]
    pub timing_ms: TimingMs,
}

/// Where requests' time went, phase by phase, in milliseconds. Each phase counts only
/// the requests it happened in, so the phases of one request need not add up to its
/// latency (which also holds the wait for a connection and the schedule's delay).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct TimingMs {
    /// Resolving the target's name. The engine resolves it once per run (every
    /// connection goes to that address), so this holds that one resolution, overall
    /// only; it is not a per-request figure.
    pub dns: Phase,
    /// TCP connect, one sample per new connection: a request on a reused connection
    /// adds nothing here.
    pub connect: Phase,
    /// TLS handshake, one sample per new TLS connection (empty over plain TCP).
    pub tls: Phase,
    /// Time to first byte: from the start of the request's write to the first byte of
    /// the response head (interim 1xx heads included), one sample per response read to
    /// its end (any status; a request that timed out or was reset has none).
    pub ttfb: Phase,
    /// Receive: from the first byte of the response to the end of its body, one
    /// sample per response read to its end.
    pub receive: Phase,
}

/// One phase's samples and their percentiles in milliseconds (all 0 when `count` is).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Default)]
pub struct Phase {
    /// How many times the phase happened.
    #[serde(default)]
    pub count: u64,
    /// Percentiles, the same fields as every latency.
    #[serde(flatten)]
    pub ms: Latency,
}

/// What the run did with connections.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct Connections {
    /// What they spoke: `http/1.1`, `h2` (HTTP/2 over TLS), `h2c` (cleartext) or `h3`;
    /// empty in a summary stored before it was recorded.
    pub protocol: String,
    /// How requests shared them: `per-user`, `shared`, `shared:N` or `per-request`.
    pub model: String,
    /// Most concurrent streams asked per HTTP/2 connection (absent for HTTP/1.1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streams: Option<u32>,
    /// New connections opened (successful connects), whatever opened them: requests,
    /// WebSocket, SSE and gRPC steps. The sum of `by_protocol`.
    pub opened: u64,
    /// Requests sent on a connection that was already open (kept alive).
    pub reused: u64,
    /// TLS handshakes completed (0 over plain TCP), every protocol's.
    pub handshakes: u64,
    /// `opened` by what each connection was opened to speak: `http1`, `http2` (the
    /// client's HTTP/2 connections, with the gRPC calls and SSE streams that share
    /// them), `websocket`, `sse` and `grpc` (streams on connections of their own), and
    /// `h3` (the client's HTTP/3 connections).
    /// All 0 in a summary stored before they were counted.
    pub by_protocol: ByProtocol,
    /// The requests that opened a connection with a handshake, and the handshake's
    /// share of their latency.
    pub first_request: crate::first_request::FirstRequest,
}

/// One threshold's verdict.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ThresholdResult {
    /// The rule as written.
    pub expr: String,
    /// Whether it held.
    pub ok: bool,
    /// The measured value, in the rule's unit (ms for latency, % for errors, /s for rate).
    /// For a rule with `over D`: the first failing window's value, or the worst
    /// window's when every window held.
    pub value: f64,
    /// For a rule with `over D` only: the first window that failed, or the worst one
    /// when all held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<ThresholdWindow>,
}

/// The window a windowed rule (`p95 < 500ms over 10s`) is reported by: seconds from
/// the start of the measured window, `start_s` included, `end_s` excluded.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct ThresholdWindow {
    /// First second of the window.
    pub start_s: u64,
    /// The second after its last.
    pub end_s: u64,
    /// The rule's figure over this window, in the rule's unit.
    pub value: f64,
    /// True when the window was longer than the run, so the whole run was judged as
    /// one window.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole_run: bool,
}

/// Why and when `run --abort-on-fail` stopped a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Aborted {
    /// The rule that failed and what it measured.
    pub reason: String,
    /// Seconds into the measured window when it was judged failed.
    pub at_s: u64,
}

/// The generator's view of itself.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Generator {
    /// CPU used by the whole process over the run, percent of one core.
    pub cpu_percent: f64,
    /// Engine threads.
    pub threads: usize,
    /// Largest delay between a scheduled send and the actual send, ms.
    pub max_lag_ms: f64,
    /// 99th percentile of that delay, ms.
    pub p99_lag_ms: f64,
    /// True when the generator, not the target, limited the result.
    pub bound: bool,
    /// Why `bound` is true, in words (empty otherwise).
    pub reason: String,
    /// Busy share of the whole host's CPU (all cores; not idle, not waiting for I/O)
    /// over the run, percent (0 when unknown).
    #[serde(default)]
    pub host_cpu_percent: f64,
    /// True when the generator was bound because other processes on a saturated host
    /// starved it of CPU: more `--threads` will not help, another machine will.
    #[serde(default)]
    pub starved: bool,
}

/// One second of the run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Second {
    /// Seconds since the start (0-based).
    pub t: u64,
    /// Requests completed in this second.
    pub requests: u64,
    /// Of which errors.
    pub errors: u64,
    /// Dropped iterations in this second.
    pub dropped: u64,
    /// Offered rate at this second (open model) or active users (closed model).
    pub offered: f64,
    /// Median latency of the requests completed in this second, ms.
    pub p50_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Largest delay between a scheduled and an actual start in this second, ms
    /// (open model; 0 in the closed model).
    #[serde(default)]
    pub max_lag_ms: f64,
    /// CPU the engine threads used in this second, percent of one core.
    #[serde(default)]
    pub generator_cpu_percent: f64,
}

/// What the watches read of a finished run.
impl RunView for Summary {
    fn lag_in_second(&self, t: u64) -> Option<f64> {
        self.timeline
            .iter()
            .find(|s| s.t == t)
            .map(|s| s.max_lag_ms)
    }

    fn timeline_max_lag_ms(&self) -> f64 {
        self.timeline
            .iter()
            .map(|s| s.max_lag_ms)
            .fold(0.0, f64::max)
    }

    fn generator_verdict(&self) -> GeneratorVerdict {
        GeneratorVerdict {
            bound: self.generator.bound,
            reason: self.generator.reason.clone(),
            max_lag_ms: self.generator.max_lag_ms,
        }
    }
}

#[cfg(test)]
mod tests;
