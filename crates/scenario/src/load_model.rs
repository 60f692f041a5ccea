//! The `load` section and the command-line values that override it (`--rate`,
//! `--users`, `--duration`, `--max-in-flight`) into a [`Load`].
//!
//! Rules: `model: arrival-rate` takes `rate` + `duration` or `stages`, and optionally
//! `max_in_flight`; `model: users` takes `users` + `duration` or `stages`, and
//! optionally `think` and `iterations` (`{per_user: K}` or `{shared: K}`: the run ends
//! when they are done, its `duration` then an upper bound defaulting to
//! [`ITERATIONS_BOUND`]). With no `model`, `users`, `think` or `iterations` imply the
//! users model.
//! `--rate`/`--users` force their model with a constant schedule; `--duration` sets the
//! length of a constant schedule and is refused for a staged one.

use std::time::Duration;

use serde_saphyr::Spanned;

use super::duration::MAX_DURATION;
use super::errors::{found, ScenarioError, Source};
use super::format::LoadSpec;
use super::values::{
    at_most, duration, non_negative_int, number, positive_int, think, MAX_CONCURRENCY, MAX_RATE,
};
use super::Overrides;
use headroom_plan::{Iterations, Load, Schedule, Stage, Think};

/// In-flight limit of the arrival-rate model when neither file nor flag sets one.
pub(crate) const DEFAULT_MAX_IN_FLIGHT: usize = 10_000;
/// Run length of a constant load when nothing sets one.
pub(crate) const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// The longest a load counted in `iterations` runs when nothing sets its `duration`:
/// users that have not finished their iterations by then stop.
pub const ITERATIONS_BOUND: Duration = Duration::from_secs(600);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Model {
    ArrivalRate,
    Users,
}

/// The load's shape: a constant value (its duration possibly left to the flags) or
/// explicit stages.
enum Shape {
    Constant {
        value: f64,
        duration: Option<Duration>,
    },
    Staged(Schedule),
}

/// The `load` section as read from the file, checked but before overrides.
struct FileLoad {
    model: Model,
    shape: Shape,
    max_in_flight: Option<usize>,
    connections: Option<usize>,
    think: Think,
    iterations: Option<Iterations>,
}

/// Builds the load from the file's section (if any) and the flags. `src` is `None`
/// for a run with no scenario file.
pub(crate) fn build(
    src: Option<Source<'_>>,
    spec: Option<&Spanned<LoadSpec>>,
    overrides: &Overrides,
) -> Result<(Load, Option<usize>), ScenarioError> {
    build_at(src, spec, overrides, "load")
}

/// [`build`] for the load section at `at` (`load`, or `workloads[i].load`), which
/// errors name.
pub(crate) fn build_at(
    src: Option<Source<'_>>,
    spec: Option<&Spanned<LoadSpec>>,
    overrides: &Overrides,
    at: &str,
) -> Result<(Load, Option<usize>), ScenarioError> {
    let file = match (src, spec) {
        (Some(src), Some(spec)) => Some(read(src, spec, at)?),
        _ => None,
    };
    // A counted load runs until its iterations are done, within a long bound.
    let default_duration = match file.as_ref().and_then(|f| f.iterations) {
        Some(_) => ITERATIONS_BOUND,
        None => DEFAULT_DURATION,
    };
    flag_limits(overrides)?;
    let (model, value) = match (overrides.rate, overrides.users) {
        (Some(_), Some(_)) => return Err(ScenarioError::command_line("give --rate or --users, not both")),
        (Some(rate), None) if !(rate.is_finite() && rate > 0.0) => {
            return Err(ScenarioError::command_line(format!("--rate: expected a number > 0, found {rate}")))
        }
        (Some(rate), None) => (Model::ArrivalRate, Some(rate)),
        (None, Some(0)) => return Err(ScenarioError::command_line("--users: expected a positive integer, found 0")),
        (None, Some(users)) => (Model::Users, Some(users as f64)),
        (None, None) => match &file {
            Some(f) => (f.model, None),
            None if overrides.fallback_rate.is_some() => {
                (Model::ArrivalRate, overrides.fallback_rate)
            }
            None => match src {
                Some(src) => {
                    return Err(src.at(
                        src.root,
                        at,
                        "missing: add a `load` section (rate or users) or pass --rate/--users",
                    ))
                }
                None => {
                return Err(ScenarioError::command_line(
                    "give --rate N (arrivals per second) or --users N (concurrent users): --rate/--users is required",
                ))
                }
            },
        },
    };
    let schedule = match (value, file.as_ref().map(|f| &f.shape)) {
        (Some(v), Some(Shape::Staged(s))) => {
            Schedule::constant(v, overrides.duration.unwrap_or(s.duration()))
        }
        (Some(v), Some(Shape::Constant { duration, .. })) => Schedule::constant(
            v,
            overrides.duration.or(*duration).unwrap_or(default_duration),
        ),
        (Some(v), None) => Schedule::constant(v, overrides.duration.unwrap_or(DEFAULT_DURATION)),
        (None, None) => return Err(ScenarioError::command_line("--rate/--users is required")),
        (None, Some(Shape::Staged(s))) => {
            if overrides.duration.is_some() {
                return Err(ScenarioError::command_line(
                    "--duration cannot change a staged load (its stages set the length); edit the stages, or give --rate/--users for a constant load",
                ));
            }
            s.clone()
        }
        (None, Some(Shape::Constant { value, duration })) => Schedule::constant(
            *value,
            overrides.duration.or(*duration).unwrap_or(default_duration),
        ),
    };
    if schedule.duration().is_zero() {
        return Err(ScenarioError::command_line(
            "the load lasts 0s: expected a duration > 0",
        ));
    }
    let file_model = file.as_ref().map(|f| f.model);
    match model {
        Model::ArrivalRate => {
            let from_file = file.as_ref().and_then(|f| f.max_in_flight);
            let max_in_flight = overrides
                .max_in_flight
                .or(from_file)
                .unwrap_or(DEFAULT_MAX_IN_FLIGHT);
            if max_in_flight == 0 {
                return Err(ScenarioError::command_line(
                    "--max-in-flight: expected a positive integer, found 0",
                ));
            }
            let connections = overrides
                .connections
                .or(file.as_ref().and_then(|f| f.connections));
            if connections == Some(0) {
                return Err(ScenarioError::command_line(
                    "--connections: expected a positive integer, found 0",
                ));
            }
            Ok((
                Load::ArrivalRate {
                    schedule,
                    max_in_flight,
                },
                connections,
            ))
        }
        Model::Users => {
            if overrides.connections == Some(0) {
                return Err(ScenarioError::command_line(
                    "--connections: expected a positive integer, found 0",
                ));
            }
            if overrides.max_in_flight.is_some() {
                return Err(ScenarioError::command_line(
                    "--max-in-flight applies to the arrival-rate model; the users model is limited by its user count",
                ));
            }
            let (think, iterations) = match (&file, file_model) {
                (Some(f), Some(Model::Users)) => (f.think, f.iterations),
                _ => (Think::None, None),
            };
            let load = Load::Users {
                schedule,
                think,
                iterations,
            };
            // `--connections N` sizes a shared pool for the users too.
            Ok((load, overrides.connections))
        }
    }
}

/// Reads and checks the file's `load` section.
/// The load flags within [`MAX_RATE`] and [`MAX_CONCURRENCY`].
fn flag_limits(o: &Overrides) -> Result<(), ScenarioError> {
    let concurrency = MAX_CONCURRENCY as f64;
    let checks = [
        ("--rate", o.rate, MAX_RATE, "per second"),
        ("--users", o.users.map(|u| u as f64), concurrency, "users"),
        (
            "--max-in-flight",
            o.max_in_flight.map(|n| n as f64),
            concurrency,
            "in flight",
        ),
        (
            "--connections",
            o.connections.map(|n| n as f64),
            concurrency,
            "connections",
        ),
    ];
    for (flag, value, max, what) in checks {
        if let Some(v) = value {
            at_most(v, max, what)
                .map_err(|e| ScenarioError::command_line(format!("{flag}: {e}")))?;
        }
    }
    Ok(())
}

/// A count at most [`MAX_CONCURRENCY`] (users, in-flight limit, connections).
fn concurrency(
    src: Source<'_>,
    node: &super::format::Node,
    path: &str,
    what: &str,
) -> Result<u64, ScenarioError> {
    let n = positive_int(src, node, path)?;
    at_most(n as f64, MAX_CONCURRENCY as f64, what).map_err(|e| src.of(node, path, e))?;
    Ok(n)
}

fn read(src: Source<'_>, spec: &Spanned<LoadSpec>, at: &str) -> Result<FileLoad, ScenarioError> {
    let load = &spec.value;
    let model = match &load.model {
        Some(m) => match m.value.as_str() {
            "arrival-rate" => Model::ArrivalRate,
            "users" => Model::Users,
            other => {
                return Err(src.of(
                    m,
                    &format!("{at}.model"),
                    format!("expected `arrival-rate` or `users`, found {other:?}"),
                ))
            }
        },
        None if load.users.is_some() || load.think.is_some() || load.iterations.is_some() => {
            Model::Users
        }
        None => Model::ArrivalRate,
    };
    let (value_key, value_node, misplaced) = match model {
        Model::ArrivalRate => (
            "rate",
            &load.rate,
            vec![
                ("users", &load.users),
                ("think", &load.think),
                ("iterations", &load.iterations),
            ],
        ),
        Model::Users => (
            "users",
            &load.users,
            vec![
                ("rate", &load.rate),
                ("max_in_flight", &load.max_in_flight),
                ("connections", &load.connections),
            ],
        ),
    };
    let model_name = if model == Model::Users {
        "users"
    } else {
        "arrival-rate"
    };
    for (key, node) in misplaced {
        if let Some(node) = node {
            return Err(src.of(
                node,
                &format!("{at}.{key}"),
                format!(
                    "not allowed with `model: {model_name}`, which takes `{value_key}` or `stages`"
                ),
            ));
        }
    }
    let shape = match (value_node, &load.stages) {
        (Some(_), Some(stages)) => {
            return Err(src.of(
                stages,
                &format!("{at}.stages"),
                format!("give either `{value_key}` (with `duration`) or `stages`, not both"),
            ))
        }
        (Some(node), None) => {
            let path = format!("{at}.{value_key}");
            let value = match model {
                Model::ArrivalRate => {
                    let rate = number(src, node, &path, true)?;
                    at_most(rate, MAX_RATE, "per second").map_err(|e| src.of(node, &path, e))?;
                    rate
                }
                Model::Users => concurrency(src, node, &path, "users")? as f64,
            };
            let duration = load
                .duration
                .as_ref()
                .map(|d| duration(src, d, &format!("{at}.duration")))
                .transpose()?;
            if let Some(start) = &load.start {
                return Err(src.of(
                    start,
                    &format!("{at}.start"),
                    "`start` only applies to `stages`",
                ));
            }
            Shape::Constant { value, duration }
        }
        (None, Some(stages)) => {
            if let Some(d) = &load.duration {
                return Err(src.of(
                    d,
                    &format!("{at}.duration"),
                    "not allowed with `stages`, which set their own durations",
                ));
            }
            if let Some(n) = &load.iterations {
                return Err(src.of(
                    n,
                    &format!("{at}.iterations"),
                    "`iterations` take a constant `users` count (with an optional \
                     `duration` bound), not `stages`",
                ));
            }
            Shape::Staged(read_stages(src, model, load, stages, at)?)
        }
        (None, None) => {
            return Err(src.of(
                spec,
                at,
                format!("expected `{value_key}` (with `duration`) or `stages`"),
            ));
        }
    };
    let max_in_flight = match &load.max_in_flight {
        Some(node) => {
            let path = format!("{at}.max_in_flight");
            Some(concurrency(src, node, &path, "in flight")? as usize)
        }
        None => None,
    };
    let connections = match &load.connections {
        Some(node) => {
            let path = format!("{at}.connections");
            Some(concurrency(src, node, &path, "connections")? as usize)
        }
        None => None,
    };
    let think = match &load.think {
        Some(node) => think(src, node, &format!("{at}.think"))?,
        None => Think::None,
    };
    let iterations = match &load.iterations {
        Some(node) => Some(iterations(src, node, &format!("{at}.iterations"))?),
        None => None,
    };
    Ok(FileLoad {
        model,
        shape,
        max_in_flight,
        connections,
        think,
        iterations,
    })
}

/// `iterations: {per_user: K}` or `{shared: K}`, K a positive integer.
fn iterations(
    src: Source<'_>,
    node: &super::format::Node,
    path: &str,
) -> Result<Iterations, ScenarioError> {
    let fail = |what: String| Err(src.of(node, path, what));
    let serde_json::Value::Object(map) = &node.value else {
        return fail(format!(
            "expected {{per_user: K}} or {{shared: K}}, found {}",
            found(&node.value)
        ));
    };
    if let Some(k) = map.keys().find(|k| *k != "per_user" && *k != "shared") {
        return fail(format!(
            "unknown key `{k}`: expected `per_user` or `shared`"
        ));
    }
    if map.len() > 1 {
        return fail(
            "give `per_user` (each user's count) or `shared` (the users' total), not both".into(),
        );
    }
    let Some((key, value)) = map.iter().next() else {
        return fail("expected {per_user: K} or {shared: K}, found an empty map".into());
    };
    let count = match value.as_u64() {
        Some(n) if n > 0 => n,
        _ => {
            return Err(src.of(
                node,
                &format!("{path}.{key}"),
                format!("expected a positive integer, found {}", found(value)),
            ))
        }
    };
    Ok(match key.as_str() {
        "per_user" => Iterations::PerUser(count),
        _ => Iterations::Shared(count),
    })
}

fn read_stages(
    src: Source<'_>,
    model: Model,
    load: &LoadSpec,
    stages: &Spanned<Vec<Spanned<super::format::StageSpec>>>,
    at: &str,
) -> Result<Schedule, ScenarioError> {
    if stages.value.is_empty() {
        return Err(src.of(
            stages,
            &format!("{at}.stages"),
            "expected at least one stage {duration, target}",
        ));
    }
    let value = |node, path: &str| {
        let (v, max, what) = match model {
            Model::ArrivalRate => (number(src, node, path, false)?, MAX_RATE, "per second"),
            Model::Users => (
                non_negative_int(src, node, path)? as f64,
                MAX_CONCURRENCY as f64,
                "users",
            ),
        };
        at_most(v, max, what).map_err(|e| src.of(node, path, e))?;
        Ok(v)
    };
    let start = match &load.start {
        Some(node) => value(node, &format!("{at}.start"))?,
        None => 0.0,
    };
    let mut out = Vec::with_capacity(stages.value.len());
    let mut total = Duration::ZERO;
    for (i, stage) in stages.value.iter().enumerate() {
        let path = format!("{at}.stages[{i}]");
        let duration = duration(src, &stage.value.duration, &format!("{path}.duration"))?;
        let target = value(&stage.value.target, &format!("{path}.target"))?;
        total = total.saturating_add(duration);
        if total > MAX_DURATION {
            return Err(src.of(
                stage,
                &path,
                "the stages last more than 365 days (8760h) in all",
            ));
        }
        out.push(Stage { duration, target });
    }
    let schedule = Schedule::new(start, out);
    if schedule.duration().is_zero() {
        return Err(src.of(
            stages,
            &format!("{at}.stages"),
            "expected stages lasting more than 0s in all",
        ));
    }
    if schedule.peak() <= 0.0 {
        let what = found(&serde_json::json!(schedule.peak()));
        return Err(src.of(
            stages,
            &format!("{at}.stages"),
            format!("expected some stage target > 0, found a peak of {what}"),
        ));
    }
    Ok(schedule)
}
