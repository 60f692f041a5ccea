//! The compiled plan: everything the engine needs to drive one run, built once from a
//! scenario file and command-line overrides (see `headroom::scenario`).
//!
//! A [`Plan`] is plain data. The engine reads it; nothing in it changes during a run.
//! Requests are [`RequestTemplate`]s whose templates were compiled at load time, so the
//! hot path only renders (or, for a request with no template, copies prebuilt bytes).

pub mod connection;
pub mod data;
mod hooks;
pub mod journey;
pub mod proto;
mod schedule;
mod secrets;
mod slice;
mod stream;
mod workload;

pub use hooks::{Hooks, WaitUntil};
pub use schedule::{Schedule, Stage};
pub use secrets::Secrets;
pub use slice::{BadSlice, Slice};
pub use stream::{GrpcCall, MessageExpect, Protocol, StreamStep};
pub use workload::{ids_of, WorkloadPlan};

use std::sync::Arc;
use std::time::Duration;

use headroom_metrics::threshold::Threshold;
use headroom_template::Template;

/// One complete, validated description of a run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Scenario name, for reports (`"quick"` for a `--url` run with no file).
    pub name: String,
    /// Where requests go.
    pub target: Target,
    /// The weighted iterations: each scheduled iteration runs exactly one of these.
    pub items: Vec<Item>,
    /// Weight of each entry of `items` (same length, every weight > 0).
    pub weights: Vec<u32>,
    /// Request names; a request's `name_id` indexes this list. Used for per-name stats.
    pub names: Vec<String>,
    /// The load model and its shape over time. With `workloads`, the load of the
    /// workload whose own `load` is `None` (the one `find --workload` searches), else
    /// a copy of the first workload's: read [`Plan::loads`] for every load of a run.
    pub load: Load,
    /// Per-request timeout; a request exceeding it is an error of kind `timeout`.
    pub timeout: Duration,
    /// Pass/fail rules evaluated on the summary.
    pub thresholds: Vec<Threshold>,
    /// Engine threads (one single-threaded runtime each).
    pub threads: usize,
    /// Watch specs from the scenario's `watch` list (see `headroom_watch::Spec`); empty
    /// by default. The engine ignores them; the command that runs the plan starts them.
    pub watches: Vec<String>,
    /// Shell commands run around each step of a ceiling search (ignored by a single run).
    pub hooks: Hooks,
    /// The first part of the load's schedule that warms up and is not measured (zero
    /// for none): the engine discards its record at the boundary and keeps its
    /// connections. Part of [`Plan::duration`].
    pub warmup: Duration,
    /// How connections are opened: `--resolve` entries and, for `https://`, the TLS
    /// configuration built once for the whole run.
    pub client: ClientPlan,
    /// The scenario's `sink:`, if any.
    pub sink: Option<headroom_sink::SinkPlan>,
    /// The streams flows open (`name:` of `ws:`/`sse:`/`grpc:` steps), each with its
    /// protocol; a [`StreamStep::stream_id`] indexes it. Empty without stream steps.
    pub streams: Vec<StreamName>,
    /// The scenario's `cluster:` block (empty without one): shard settings that
    /// `--shards` and the cluster flags override.
    pub cluster: ClusterPlan,
    /// Names of the non-fatal checks; a check's id (what the engine passes to
    /// `Recorder::check`) indexes it. Empty without checks.
    pub checks: Vec<String>,
    /// Names of the flows' `group:` steps; a group's id (what the engine passes to
    /// `Recorder::group`) indexes it. Empty without groups.
    pub groups: Vec<String>,
    /// The scenario's `workloads:`, each with its own items and load, run at once;
    /// empty for a plan of one load (`load` with `items`), which the engine runs as
    /// it always has. See [`WorkloadPlan`].
    pub workloads: Vec<WorkloadPlan>,
    /// Data files, `setup:` and `teardown:` steps, and the values `setup:` captured.
    pub journey: journey::JourneyPlan,
}

/// A scenario's `cluster:` block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterPlan {
    /// `shards:`.
    pub shards: Option<u64>,
    /// `coordinator:`, where the coordinator listens.
    pub coordinator: Option<std::net::SocketAddr>,
    /// `advertise:`, the HOST:PORT shards dial.
    pub advertise: Option<String>,
    /// `kubernetes:`: the shards are an Indexed Job's pods.
    pub kubernetes: Option<KubernetesPlan>,
}

/// A scenario's `cluster.kubernetes:` block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KubernetesPlan {
    /// Namespace of the run's objects.
    pub namespace: Option<String>,
    /// The shards' container image.
    pub image: Option<String>,
    /// CPU request (and limit) per shard, a Kubernetes quantity.
    pub cpu: Option<String>,
    /// Memory request (and limit) per shard, a Kubernetes quantity.
    pub memory: Option<String>,
}

/// A stream named in the plan: its `name:` and protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamName {
    /// The stream's name (`name:` in its steps): the key of `streams` in the summary.
    pub name: String,
    /// Its protocol.
    pub protocol: Protocol,
}

/// How the run's connections are opened.
#[derive(Debug, Clone)]
pub struct ClientPlan {
    /// `--resolve HOST:PORT:ADDR` entries (the target's is used to connect).
    pub resolve: Vec<connection::Resolve>,
    /// The TLS client configuration, shared by every connection (`https://` only).
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// The TLS configuration of streams to other origins (`wss://`, `https://` URLs
    /// in stream steps): `tls` when the target is `https://`; built from the TLS flags
    /// when they were given for a plain target; else `None` (Mozilla's roots).
    pub other_origins: Option<Arc<rustls::ClientConfig>>,
    /// The CA file `tls` verifies servers against (`--cacert`, or `client.cacert`
    /// resolved against the scenario's directory), for the messages of a refused
    /// certificate; `None` with the built-in roots.
    pub cacert: Option<std::path::PathBuf>,
    /// What connections speak (`--http2`).
    pub protocol: connection::Protocol,
    /// Most requests in flight at once on one HTTP/2 connection (`--streams`); the
    /// server's `MAX_CONCURRENT_STREAMS` may lower it.
    pub streams: u32,
    /// How requests share connections (`--connection`).
    pub connection: connection::ConnectionModel,
    /// Whether each user keeps a cookie jar (`client.cookies`, on by default).
    pub cookies: bool,
    /// Redirects a request follows (`client.redirects`; 0: none), unless it says.
    pub redirects: u32,
}

impl Default for ClientPlan {
    fn default() -> Self {
        ClientPlan {
            resolve: Vec::new(),
            tls: None,
            other_origins: None,
            cacert: None,
            protocol: connection::Protocol::Http1,
            streams: ClientPlan::DEFAULT_STREAMS,
            connection: connection::ConnectionModel::default(),
            cookies: true,
            redirects: journey::DEFAULT_REDIRECTS,
        }
    }
}

impl ClientPlan {
    /// `--streams` when not given: as many streams as servers commonly allow (nginx's
    /// and h2o's default is 128, Go's 250).
    pub const DEFAULT_STREAMS: u32 = 100;
}

impl Default for connection::ConnectionModel {
    fn default() -> Self {
        connection::ConnectionModel::Shared(None)
    }
}

impl Plan {
    /// The longest timeout any request of the plan may run into: how long an
    /// in-flight request may still need after the schedule ends.
    pub fn longest_timeout(&self) -> Duration {
        let mut longest = self.timeout;
        for item in &self.items {
            match item {
                Item::Request(r) => longest = longest.max(r.timeout_in(self)),
                Item::Flow(f) => {
                    longest = longest.max(self.longest_of(&f.steps));
                    longest = longest.max(self.longest_of(&f.once));
                }
            }
        }
        longest
    }

    /// The longest timeout of any request or stream among `steps`.
    fn longest_of(&self, steps: &[Step]) -> Duration {
        let mut longest = Duration::ZERO;
        for step in steps {
            let t = match step {
                Step::Request { request, .. } => request.timeout_in(self),
                Step::Stream(s) => s.timeout_in(self),
                Step::Think(_) => Duration::ZERO,
                Step::Block(b) => self.longest_of(&b.steps),
                Step::Parallel(p) => p
                    .requests
                    .iter()
                    .map(|(r, _)| r.timeout_in(self))
                    .max()
                    .unwrap_or_default(),
            };
            longest = longest.max(t);
        }
        longest
    }

    /// The measured part of the schedule: [`Plan::duration`] less the warm-up.
    pub fn measured(&self) -> Duration {
        self.duration().saturating_sub(self.warmup)
    }

    /// Total scheduled duration of the run, warm-up included: with `workloads`, the
    /// latest end (start offset plus length) of any of them.
    pub fn duration(&self) -> Duration {
        if self.workloads.is_empty() {
            return self.load.duration();
        }
        self.loads()
            .map(|(load, start)| start.saturating_add(load.duration()))
            .max()
            .unwrap_or_default()
    }
}

/// The base address every request path is joined to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `http` or `https`.
    pub scheme: String,
    /// Host name or address literal, without brackets.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Value of the `Host` header (`host[:port]`).
    pub authority: String,
    /// Path prefix from the target URL, without a trailing slash (may be empty).
    pub base_path: String,
}

/// One weighted unit of work: a single request, or a flow of steps run in order.
#[derive(Debug, Clone)]
pub enum Item {
    /// A single request.
    Request(Arc<RequestTemplate>),
    /// Steps sharing captured variables, run in order by one user or one arrival.
    Flow(Arc<Flow>),
}

/// A named sequence of steps; captured variables live for one execution of the flow.
#[derive(Debug, Clone)]
pub struct Flow {
    /// Flow name (for reports).
    pub name: String,
    /// Steps in order.
    pub steps: Vec<Step>,
    /// `once:` steps, run once per user before its first iteration of the flow; what
    /// they capture lives as long as the user.
    pub once: Vec<Step>,
}

/// One step of a flow.
#[derive(Debug, Clone)]
pub enum Step {
    /// Send a request, then store captures from its response.
    Request {
        /// The request to send.
        request: Arc<RequestTemplate>,
        /// Variables to extract from the response.
        captures: Vec<journey::ResponseCapture>,
    },
    /// Pause before the next step.
    Think(Think),
    /// A stream step (`ws:`, `sse:`, `grpc:`): one operation on a named stream.
    Stream(Arc<StreamStep>),
    /// Steps under `if:`, `repeat:` or `group:`.
    Block(Arc<journey::Block>),
    /// Requests sent at once (`parallel:`).
    Parallel(Arc<journey::Parallel>),
}

/// A variable taken from a response's JSON body by a JSONPath query.
#[derive(Debug, Clone)]
pub struct Capture {
    /// Variable name, usable as `{{ name }}` in later steps.
    pub var: String,
    /// Query whose first match becomes the variable's value.
    pub path: serde_json_path::JsonPath,
    /// The query as written, for messages.
    pub source: String,
}

/// A request with its parts compiled.
#[derive(Debug, Clone)]
pub struct RequestTemplate {
    /// Index into [`Plan::names`].
    pub name_id: usize,
    /// HTTP method, upper case.
    pub method: String,
    /// Path and query, joined to the target's base path; may hold templates.
    pub path: Template,
    /// Extra headers (name, value template). `Host`, `Content-Length` are added by the client.
    pub headers: Vec<(String, Template)>,
    /// Body template (JSON bodies are pre-serialized with JSON-escaping templates;
    /// `form:` bodies are urlencoded at load).
    pub body: Option<Template>,
    /// A `multipart:` body (then `body` is `None`).
    pub multipart: Option<Arc<journey::Multipart>>,
    /// What a response must satisfy; a failure is an error of kind `check`.
    pub expect: Expect,
    /// Non-fatal checks, counted and never failing the request.
    pub checks: Vec<journey::Check>,
    /// The request's own `redirects:`; `None` follows [`ClientPlan::redirects`].
    pub redirects: Option<u32>,
    /// The request's own `timeout:`; `None` uses the run's [`Plan::timeout`].
    pub timeout: Option<Duration>,
    /// `correlate:`: rendered once per request into the variable `correlation_id`
    /// (before the path, headers and body, which may use it) and registered with the
    /// sink at the send time.
    pub correlate: Option<Template>,
}

impl RequestTemplate {
    /// How long this request may take before it counts as a `timeout`.
    pub fn timeout_in(&self, plan: &Plan) -> Duration {
        self.timeout.unwrap_or(plan.timeout)
    }

    /// Whether the response body must be kept (for checks or captures).
    pub fn needs_body(&self, captures: &[journey::ResponseCapture]) -> bool {
        captures.iter().any(|c| c.from.reads_body())
            || self.expect.body_contains.is_some()
            || !self.expect.json.is_empty()
            || self.expect.graphql
            || self.checks.iter().any(|c| {
                matches!(
                    c.rule,
                    journey::CheckRule::BodyContains(_) | journey::CheckRule::Json { .. }
                )
            })
    }
}

/// Expectations on a response.
#[derive(Debug, Clone, Default)]
pub struct Expect {
    /// Accepted status codes; empty means "any status below 400".
    pub status: Vec<StatusRange>,
    /// Text the body must contain (rendered per response).
    pub body_contains: Option<Template>,
    /// JSONPath queries that must match; with a value, the first match must equal it.
    pub json: Vec<JsonExpect>,
    /// A GraphQL request: the body must be JSON without a non-empty `errors` array,
    /// else the response is a failure of kind `graphql`.
    pub graphql: bool,
}

/// An inclusive range of status codes (`201` is `201..=201`, `2xx` is `200..=299`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusRange {
    /// Lowest accepted status.
    pub lo: u16,
    /// Highest accepted status.
    pub hi: u16,
}

/// One JSONPath expectation.
#[derive(Debug, Clone)]
pub struct JsonExpect {
    /// Compiled query.
    pub path: serde_json_path::JsonPath,
    /// The query as written, for messages.
    pub source: String,
    /// When set, the first match must equal this value.
    pub equals: Option<journey::Expected>,
}

/// The load model.
#[derive(Debug, Clone)]
pub enum Load {
    /// Open model: iterations start on a schedule whatever the target does.
    ArrivalRate {
        /// Iterations per second over time.
        schedule: Schedule,
        /// Most iterations in flight at once (over all threads); beyond it a
        /// scheduled iteration is dropped and counted.
        max_in_flight: usize,
    },
    /// Closed model: a number of users, each looping iteration → think.
    Users {
        /// User count over time.
        schedule: Schedule,
        /// Pause after each iteration.
        think: Think,
        /// `iterations:`: the users stop after so many iterations (the schedule's
        /// length is then only an upper bound); `None` loops until the schedule ends.
        iterations: Option<Iterations>,
    },
}

/// How many iterations a counted users load runs (`load.iterations`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Iterations {
    /// `{per_user: K}`: each user runs K iterations, then stops.
    PerUser(u64),
    /// `{shared: K}`: the users together run K iterations (split over shards as users
    /// are; the threads of one process take them from one counter).
    Shared(u64),
}

impl Load {
    /// The length of the load's schedule.
    pub fn duration(&self) -> Duration {
        match self {
            Load::ArrivalRate { schedule, .. } | Load::Users { schedule, .. } => {
                schedule.duration()
            }
        }
    }

    /// The load's schedule (a rate, or a user count).
    pub fn schedule(&self) -> &Schedule {
        match self {
            Load::ArrivalRate { schedule, .. } | Load::Users { schedule, .. } => schedule,
        }
    }

    /// Whether this is the open model (arrival rate).
    pub fn is_open(&self) -> bool {
        matches!(self, Load::ArrivalRate { .. })
    }

    /// The iteration count of a counted users load; `None` for the others.
    pub fn iterations(&self) -> Option<Iterations> {
        match self {
            Load::Users { iterations, .. } => *iterations,
            Load::ArrivalRate { .. } => None,
        }
    }
}

/// A pause: none, fixed, or uniform in a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Think {
    /// No pause.
    #[default]
    None,
    /// Always this long.
    Fixed(Duration),
    /// Uniformly distributed between the two bounds (inclusive).
    Uniform(Duration, Duration),
}
