//! Scenario files: the YAML format, its validation (errors name file, line, column and
//! field), and compilation with command-line overrides into a [`Plan`].
//!
//! [`load`] is the entry point. The file is deserialized into the types of `format`
//! (unknown keys are errors), then `compile` checks and builds each section: the target
//! (`target`), the load (`load_model`), requests and flows (`requests`, `flows`, with
//! templates compiled and variable use checked), and thresholds. Every failure is a
//! [`ScenarioError`] located at `file:line:column` and naming the field by path.
//!
//! `run`, `find` and shards compile their plan from a [`Setup`] (the scenario's text,
//! read once, and the overrides; serializable, so a coordinator sends it to its shards).

mod captures;
mod client;
mod cluster;
mod compile;
mod data;
mod duration;
mod errors;
mod field_errors;
mod fields;
mod flows;
mod format;
mod graphql;
mod grpc;
mod journey;
mod load_model;
mod quick;
mod requests;
mod rules;
mod schema;
mod secrets;
mod setup;
mod sink;
mod streams;
mod target;
mod values;
mod workloads;

use std::path::Path;
use std::time::Duration;

pub use duration::MAX_DURATION;
pub use errors::ScenarioError;
pub use field_errors::{
    DurationError, HeaderError, LimitError, QuickError, ReadError, ScopeError, SinkFieldError,
    TargetError,
};
pub use load_model::ITERATIONS_BOUND;
pub use quick::{QuickBody, QuickRequest};
pub use schema::scenario_schema;
pub use setup::{Purpose, ScenarioText, Setup, SetupError, DEFAULT_ERROR_RULE, DEFAULT_THRESHOLDS};
pub use values::{MAX_CONCURRENCY, MAX_RATE};

use headroom_plan::Plan;

/// Command-line values that override (or, with no file, make up) a scenario. They
/// travel to shards inside a [`Setup`], so they serialize.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Overrides {
    /// `--url`: target base URL.
    pub url: Option<String>,
    /// `--rate`: constant arrival rate per second (open model).
    pub rate: Option<f64>,
    /// `--users`: constant user count (closed model).
    pub users: Option<u64>,
    /// `--duration`.
    pub duration: Option<Duration>,
    /// `--threads` (default: number of cores).
    pub threads: Option<usize>,
    /// `--threshold`, added to the scenario's.
    pub thresholds: Vec<String>,
    /// `--max-in-flight`.
    pub max_in_flight: Option<usize>,
    /// `--connections` (the shared pool's size).
    pub connections: Option<usize>,
    /// `--timeout`.
    pub timeout: Option<Duration>,
    /// The arrival rate to use when neither the flags nor the file give a load (a
    /// search sets each step's value itself). Never used to replace a load that is
    /// there: a file's model stands, and flags that do not fit it are errors.
    pub fallback_rate: Option<f64>,
    /// `--insecure`, `--cacert`, `--cert`, `--key`, `--resolve`; merged with the
    /// scenario's `client:` block (flags win).
    pub client: ClientFlags,
    /// `--proto-path DIR` (repeatable): import paths of every `grpc:` step's `.proto`
    /// files, searched after the step's own (as given: relative to where headroom runs).
    #[serde(default)]
    pub proto_paths: Vec<std::path::PathBuf>,
    /// `-X`, `-H`, `--body`, `--json`, `--body-file`: quick mode's request (an error
    /// with a scenario file, whose requests say all that themselves).
    pub request: QuickRequest,
    /// `find --workload NAME`: the workload of a scenario with `workloads:` whose load
    /// a search varies (the others run as written in every step).
    #[serde(default)]
    pub workload: Option<String>,
}

/// The connection flags (`run` and `find`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClientFlags {
    /// `--insecure`.
    pub insecure: bool,
    /// `--cacert FILE`.
    pub cacert: Option<std::path::PathBuf>,
    /// `--cert FILE`.
    pub cert: Option<std::path::PathBuf>,
    /// `--key FILE`.
    pub key: Option<std::path::PathBuf>,
    /// `--resolve HOST:PORT:ADDR` (repeatable).
    pub resolve: Vec<headroom_client::connect::Resolve>,
    /// `--http2`.
    pub http2: bool,
    /// `--http3`.
    pub http3: bool,
    /// `--h3-resume`.
    pub h3_resume: bool,
    /// `--h3-0rtt`.
    pub h3_0rtt: bool,
    /// `--streams N`.
    pub streams: Option<u32>,
    /// `--connection per-user|shared|shared:N|per-request`.
    pub connection: Option<headroom_client::ConnectionModel>,
}

/// Loads `path` (if any) and applies `overrides`; flags win over the file.
///
/// With no file, `overrides.url` is required and the plan is one GET of its path and
/// query, named `GET /path`, with `--rate` or `--users` required and a 10 s default
/// duration. `--rate` forces the arrival-rate model and `--users` the users model, each
/// with a constant schedule; `--duration` sets the length of a constant schedule and is
/// an error for a staged one. Defaults: timeout 30 s, max in flight 10 000, threads =
/// available parallelism.
///
/// Request paths in the plan are as written; the client adds the target's base path.
pub fn load(path: Option<&Path>, overrides: &Overrides) -> Result<Plan, ScenarioError> {
    let Some(path) = path else {
        return compile::quick(overrides);
    };
    let scenario = ScenarioText::read(path)?;
    compile::from_text(&scenario.file, &scenario.text, overrides)
}

/// Compiles scenario `text` as [`load`] compiles a file's; `file` names it in errors.
pub fn load_text(file: &str, text: &str, overrides: &Overrides) -> Result<Plan, ScenarioError> {
    compile::from_text(file, text, overrides)
}

/// The text of a scenario file, read up to [`compile::MAX_FILE_BYTES`] (a path to a
/// device or a huge file is refused, not read into memory whole).
fn read_scenario(path: &Path) -> Result<String, ReadError> {
    use std::io::Read;
    let limit = compile::MAX_FILE_BYTES;
    let mut text = String::new();
    std::fs::File::open(path)
        .map_err(ReadError::Io)?
        .take(limit + 1)
        .read_to_string(&mut text)
        .map_err(ReadError::Io)?;
    if text.len() as u64 > limit {
        return Err(ReadError::TooLarge { mib: limit >> 20 });
    }
    Ok(text)
}

/// Parses a duration as scenarios write them (`500us`, `100ms`, `1.5s`, `2m`, `1m30s`),
/// for flags that take one. A bare number is an error asking for a unit.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    duration::parse_duration(text)
}

// Test builds only: the counting global allocator the property tests bound their
// allocations with, shared with the other crates' tests rather than copied.
#[cfg(test)]
mod proptests;
#[cfg(test)]
#[path = "../../../tests/support/alloc.rs"]
mod test_alloc;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_connections;
#[cfg(test)]
mod tests_errors;
#[cfg(test)]
mod tests_flows;
#[cfg(test)]
mod tests_graphql;
#[cfg(test)]
mod tests_journeys;
#[cfg(test)]
mod tests_overrides;
#[cfg(test)]
mod tests_sse;
#[cfg(test)]
mod tests_streams;
#[cfg(test)]
mod tests_workloads;
