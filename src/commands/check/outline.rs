//! What `headroom check` shows of a compiled [`Plan`]: an [`Outline`], plain data built
//! once from the plan (never from the YAML), which `--format json` serializes and
//! [`super::text`] lays out for a terminal. Durations are seconds (`_s`), as in the
//! summary JSON; shares are percentages of the iterations.

use std::time::Duration;

use serde::Serialize;

use crate::plan::{
    Item, Iterations, Load, Plan, RequestTemplate, Schedule, Step, StreamStep, Think,
};

/// A compiled plan, as `headroom check` prints it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outline {
    /// The scenario file as given on the command line.
    pub file: String,
    /// The scenario's `name:` (the file's stem when it has none).
    pub name: String,
    /// The base URL every request path is joined to.
    pub target: String,
    /// What an iteration runs, one of these picked by weight: requests and flows, in the
    /// scenario's order (empty with `workloads`, whose items are their own).
    pub items: Vec<ItemOutline>,
    /// The load model and its shape over time (absent with `workloads`, whose loads
    /// are their own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadOutline>,
    /// The scenario's `workloads:`, run at once; absent without.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub workloads: Vec<WorkloadOutline>,
    /// The run's request timeout (a request's own `timeout:` is not shown).
    pub timeout_s: f64,
    /// Engine threads.
    pub threads: usize,
    /// Pass/fail rules, as written.
    pub thresholds: Vec<String>,
    /// How many `watch:` specs the run starts (their URLs may hold credentials, so
    /// they are not repeated).
    pub watches: usize,
    /// Whether the scenario has `hooks:` (run by `find` around each step).
    pub hooks: bool,
    /// Whether the scenario has a delivery `sink:`.
    pub sink: bool,
    /// The `cluster.shards:` the load is split over, if set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shards: Option<u64>,
    /// The scenario's `data:` files, read and counted; absent without.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub data: Vec<DataOutline>,
    /// `setup:` steps, run once before the load; absent without.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub setup: Vec<StepOutline>,
    /// `teardown:` steps, run once after it; absent without.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub teardown: Vec<StepOutline>,
}

/// One data file of `data:`, as loaded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataOutline {
    /// Its name (`{{ data.NAME.COLUMN }}`).
    pub name: String,
    /// The file read.
    pub file: String,
    /// Its rows.
    pub rows: usize,
    /// Its columns.
    pub columns: Vec<String>,
    /// `unique`, `sequential` or `random`.
    pub pick: String,
}

/// One workload of `workloads:`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkloadOutline {
    /// Its name.
    pub name: String,
    /// When it starts, from the start of the run.
    pub start_s: f64,
    /// Its load.
    pub load: LoadOutline,
    /// Its requests and flows, with shares of its own iterations.
    pub items: Vec<ItemOutline>,
    /// Its own pass/fail rules, as written.
    pub thresholds: Vec<String>,
}

/// One weighted entry of the plan: a request or a flow.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ItemOutline {
    /// `request` or `flow`.
    pub kind: &'static str,
    /// The request's name (`METHOD /path` when it has none) or the flow's.
    pub name: String,
    /// Its weight.
    pub weight: u32,
    /// Percentage of iterations that run it: its weight over the sum of all weights.
    pub share_pct: f64,
    /// A request: its method and path (absent for a flow).
    #[serde(flatten)]
    pub request: Option<RequestOutline>,
    /// A flow: its steps in order (empty for a request).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepOutline>,
    /// A flow's `once:` steps, run once per user before its first iteration.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub once: Vec<StepOutline>,
}

/// What a request sends.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestOutline {
    /// HTTP method, upper case.
    pub method: String,
    /// Path and query as written, placeholders included (`/tasks/{{ id }}`); the
    /// target's base path goes in front of it.
    pub path: String,
}

/// One step of a flow.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StepOutline {
    /// A request, then its captures.
    Request {
        /// The step's metric name.
        name: String,
        /// What it sends.
        #[serde(flatten)]
        request: RequestOutline,
        /// The variables it captures from the response, in order.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        captures: Vec<String>,
    },
    /// A pause.
    Think(ThinkOutline),
    /// A WebSocket, SSE or gRPC step on a named stream.
    Stream {
        /// `ws`, `sse` or `grpc`.
        protocol: &'static str,
        /// The step's metric name.
        name: String,
        /// The stream it acts on (its `name:`).
        stream: String,
        /// What it opens: the `url:` template, or the gRPC method's path.
        #[serde(skip_serializing_if = "Option::is_none")]
        opens: Option<String>,
        /// What it does after opening, in order: `send`, `expect`, `close`.
        does: Vec<&'static str>,
        /// The variables it captures from the matched message, in order.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        captures: Vec<String>,
    },
    /// Steps under `if:`, `repeat:` or `group:`.
    Block {
        /// Its rule in words: `if …`, `repeat …`, `group NAME`.
        rule: String,
        /// Its steps.
        steps: Vec<StepOutline>,
    },
    /// Requests sent at once.
    Parallel {
        /// Each request's metric name and what it sends.
        requests: Vec<(String, RequestOutline)>,
    },
}

/// A pause, uniform between two bounds (equal for a fixed one).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ThinkOutline {
    /// The shortest pause.
    pub min_s: f64,
    /// The longest pause.
    pub max_s: f64,
}

/// The load model and its schedule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadOutline {
    /// `arrival-rate` (open model: iterations per second) or `users` (closed model).
    pub model: LoadModel,
    /// The value at the start: a rate per second or a user count.
    pub start: f64,
    /// Linear stages in order, each from the previous value to its target.
    pub stages: Vec<StageOutline>,
    /// The whole schedule's length.
    pub duration_s: f64,
    /// The highest value reached.
    pub peak: f64,
    /// Open model: most iterations in flight at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<usize>,
    /// Closed model: each user's pause after an iteration (absent for none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub think: Option<ThinkOutline>,
    /// Closed model: the iterations after which the users stop (`{"per_user": K}` or
    /// `{"shared": K}`; absent when they loop until the schedule ends, which is
    /// otherwise an upper bound).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iterations: Option<IterationsOutline>,
}

/// A load counted in iterations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IterationsOutline {
    /// Each user runs this many.
    PerUser(u64),
    /// The users together run this many.
    Shared(u64),
}

/// Which load model a plan runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadModel {
    /// The open model: iterations per second.
    ArrivalRate,
    /// The closed model: concurrent users.
    Users,
}

/// One linear stage of the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StageOutline {
    /// How long the stage lasts.
    pub duration_s: f64,
    /// The value at its end.
    pub target: f64,
}

impl Outline {
    /// The outline of `plan`, compiled from the scenario file `file`.
    pub fn of(file: &str, plan: &Plan) -> Outline {
        let workloads: Vec<WorkloadOutline> = (plan.workloads.iter())
            .map(|w| WorkloadOutline {
                name: w.name.clone(),
                start_s: w.start.as_secs_f64(),
                load: load(plan.load_of(w)),
                items: items(plan, &w.items, &w.weights),
                thresholds: w.thresholds.iter().map(|t| t.expr.clone()).collect(),
            })
            .collect();
        let single = workloads.is_empty();
        let t = &plan.target;
        Outline {
            file: file.to_string(),
            name: plan.name.clone(),
            target: format!("{}://{}{}", t.scheme, t.authority, t.base_path),
            items: match single {
                true => items(plan, &plan.items, &plan.weights),
                false => Vec::new(),
            },
            load: single.then(|| load(&plan.load)),
            workloads,
            timeout_s: plan.timeout.as_secs_f64(),
            threads: plan.threads,
            thresholds: plan.thresholds.iter().map(|t| t.expr.clone()).collect(),
            watches: plan.watches.len(),
            hooks: !plan.hooks.is_empty(),
            sink: plan.sink.is_some(),
            shards: plan.cluster.shards,
            data: plan
                .journey
                .data
                .sets
                .iter()
                .map(|s| DataOutline {
                    name: s.name().to_string(),
                    file: s.set().file().display().to_string(),
                    rows: s.set().len(),
                    columns: s.set().columns().to_vec(),
                    pick: s.pick().as_str().to_string(),
                })
                .collect(),
            setup: plan.journey.setup.iter().map(|s| step(plan, s)).collect(),
            teardown: plan
                .journey
                .teardown
                .iter()
                .map(|s| step(plan, s))
                .collect(),
        }
    }
}

/// `items` weighted by `weights`, each with its share of their iterations.
fn items(plan: &Plan, items: &[Item], weights: &[u32]) -> Vec<ItemOutline> {
    let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    items
        .iter()
        .zip(weights)
        .map(|(item, &weight)| {
            let share_pct = crate::report::units::share(u64::from(weight), total);
            match item {
                Item::Request(r) => ItemOutline {
                    kind: "request",
                    name: plan.names[r.name_id].clone(),
                    weight,
                    share_pct,
                    request: Some(request(r)),
                    steps: Vec::new(),
                    once: Vec::new(),
                },
                Item::Flow(f) => ItemOutline {
                    kind: "flow",
                    name: f.name.clone(),
                    weight,
                    share_pct,
                    request: None,
                    steps: f.steps.iter().map(|s| step(plan, s)).collect(),
                    once: f.once.iter().map(|s| step(plan, s)).collect(),
                },
            }
        })
        .collect()
}

/// A request's method and path.
fn request(r: &RequestTemplate) -> RequestOutline {
    RequestOutline {
        method: r.method.clone(),
        path: r.path.to_string(),
    }
}

/// One step of a flow.
fn step(plan: &Plan, step: &Step) -> StepOutline {
    match step {
        Step::Request {
            request: r,
            captures,
        } => StepOutline::Request {
            name: plan.names[r.name_id].clone(),
            request: request(r),
            captures: captures.iter().map(|c| c.var.clone()).collect(),
        },
        Step::Think(t) => StepOutline::Think(think(*t).unwrap_or(ThinkOutline {
            min_s: 0.0,
            max_s: 0.0,
        })),
        Step::Stream(s) => stream(plan, s),
        Step::Block(b) => {
            let mut rule = Vec::new();
            if let Some(c) = &b.when {
                rule.push(format!("if {c}"));
            }
            if let Some(r) = &b.repeat {
                rule.push(format!("repeat {r}"));
            }
            if let Some(g) = b.group {
                rule.push(format!("group {}", plan.groups[g]));
            }
            StepOutline::Block {
                rule: rule.join(", "),
                steps: b.steps.iter().map(|s| self::step(plan, s)).collect(),
            }
        }
        Step::Parallel(p) => StepOutline::Parallel {
            requests: p
                .requests
                .iter()
                .map(|(r, _)| (plan.names[r.name_id].clone(), request(r)))
                .collect(),
        },
    }
}

/// A stream step: what it opens and what it does then.
fn stream(plan: &Plan, s: &StreamStep) -> StepOutline {
    let opens = match (&s.grpc, &s.url) {
        (Some(call), _) => Some(call.method.path.clone()),
        (None, Some(url)) => Some(url.to_string()),
        (None, None) => None,
    };
    let does = [
        (s.send.is_some(), "send"),
        (s.expect.is_some(), "expect"),
        (s.close.is_some(), "close"),
    ];
    StepOutline::Stream {
        protocol: s.protocol.as_str(),
        name: plan.names[s.name_id].clone(),
        stream: plan.streams[s.stream_id].name.clone(),
        opens,
        does: does
            .iter()
            .filter(|(yes, _)| *yes)
            .map(|(_, w)| *w)
            .collect(),
        captures: s.captures.iter().map(|c| c.var.clone()).collect(),
    }
}

/// A pause's bounds; `None` for no pause.
fn think(t: Think) -> Option<ThinkOutline> {
    let (min, max) = match t {
        Think::None => return None,
        Think::Fixed(d) => (d, d),
        Think::Uniform(lo, hi) => (lo, hi),
    };
    Some(ThinkOutline {
        min_s: min.as_secs_f64(),
        max_s: max.as_secs_f64(),
    })
}

/// The load model, its schedule and its model's own setting.
fn load(load: &Load) -> LoadOutline {
    let (model, schedule, max_in_flight, pause) = match load {
        Load::ArrivalRate {
            schedule,
            max_in_flight,
        } => (LoadModel::ArrivalRate, schedule, Some(*max_in_flight), None),
        Load::Users {
            schedule, think: t, ..
        } => (LoadModel::Users, schedule, None, think(*t)),
    };
    let iterations = load.iterations().map(|n| match n {
        Iterations::PerUser(k) => IterationsOutline::PerUser(k),
        Iterations::Shared(k) => IterationsOutline::Shared(k),
    });
    LoadOutline {
        model,
        start: schedule.start(),
        stages: stages(schedule),
        duration_s: schedule.duration().as_secs_f64(),
        peak: schedule.peak(),
        max_in_flight,
        think: pause,
        iterations,
    }
}

/// The schedule's stages.
fn stages(schedule: &Schedule) -> Vec<StageOutline> {
    schedule
        .stages()
        .iter()
        .map(|s| StageOutline {
            duration_s: s.duration.as_secs_f64(),
            target: s.target,
        })
        .collect()
}

/// `seconds` for people to read (`1m 30s`, `250ms`), to the microsecond: rounded, so
/// the float's last bits never show as `99ms 999us 999ns`.
pub(super) fn human(seconds: f64) -> String {
    let micros = (seconds.max(0.0) * 1e6).round() as u64;
    humantime::format_duration(Duration::from_micros(micros)).to_string()
}
