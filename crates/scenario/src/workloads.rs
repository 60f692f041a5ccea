//! The `workloads:` section: several workloads run at once, each with its own `load`,
//! `requests`/`flows`, `thresholds` and `start` offset, compiled into
//! [`WorkloadPlan`]s.
//!
//! Rules: `workloads:` replaces the top-level `load`, `requests` and `flows`; workload
//! names are unique and not empty; request names are unique across workloads (a
//! workload's figures are the sum of its names'); a workload's thresholds judge its
//! requests alone, so they take no `over D` and no run-wide figure (`dropped`,
//! `abandoned`, delivery, streams). `--duration` sets the length of every workload's
//! constant load (a staged one is refused, as for `load`); the other flags that shape
//! a load (`--rate`, `--users`, `--max-in-flight`, `--connections`) are refused by
//! `run`; `find` applies them to the workload it searches (`--workload NAME`, needed
//! when there are several), whose load becomes the plan's
//! [`Plan::load`](headroom_plan::Plan) and whose own `load` is left `None`.

use std::sync::Arc;
use std::time::Duration;

use super::errors::{ScenarioError, Source};
use super::format::{ScenarioFile, WorkloadSpec};
use super::requests::{self, Context};
use super::rules::{threshold, weight};
use super::values::duration;
use super::{flows, load_model, Overrides};
use headroom_metrics::threshold::{Metric, Threshold};
use headroom_plan::{ids_of, Item, Load, WorkloadPlan};

/// The workloads of a scenario, compiled.
pub(crate) struct Built {
    /// Every workload's items, in order (the plan's `items`).
    pub(crate) items: Vec<Item>,
    /// Their weights.
    pub(crate) weights: Vec<u32>,
    /// The workloads.
    pub(crate) workloads: Vec<WorkloadPlan>,
    /// The plan's `load`: the searched workload's, else the first's.
    pub(crate) load: Load,
    /// The shared pool's size: `--connections`, else the sum of the workloads'
    /// `load.connections`.
    pub(crate) pool: Option<usize>,
    /// The load whose model decides the connection model's default: the first
    /// arrival-rate workload's (arrivals share a pool), else the first's.
    pub(crate) client_load: Load,
}

/// The flags that shape one load, with whether each was given.
fn load_flags(o: &Overrides) -> [(&'static str, bool); 4] {
    [
        ("--rate", o.rate.is_some()),
        ("--users", o.users.is_some()),
        ("--max-in-flight", o.max_in_flight.is_some()),
        ("--connections", o.connections.is_some()),
    ]
}

/// Compiles `doc.workloads` (not empty). `search` is true for `find`, which varies the
/// load of one workload (`overrides.workload`, or the only one).
pub(crate) fn compile(
    cx: &mut Context<'_>,
    doc: &ScenarioFile,
    overrides: &Overrides,
    search: bool,
) -> Result<Built, ScenarioError> {
    let src = cx.src;
    if let Some(load) = &doc.load {
        let message = "not allowed with `workloads`: each workload has its own `load`";
        return Err(src.of(load, "load", message));
    }
    for (key, first) in [
        ("requests", doc.requests.first().map(|r| r.referenced)),
        ("flows", doc.flows.first().map(|f| f.referenced)),
    ] {
        if let Some(at) = first {
            let message =
                format!("not allowed with `workloads`: each workload has its own `{key}`");
            return Err(src.at(at, key, message));
        }
    }
    let searched = searched(src, doc, overrides, search)?;
    let (mut items, mut weights) = (Vec::new(), Vec::new());
    let mut workloads: Vec<WorkloadPlan> = Vec::new();
    let (mut loads, mut pools) = (Vec::new(), Vec::new());
    for (i, spec) in doc.workloads.iter().enumerate() {
        let at = format!("workloads[{i}]");
        let (plan, load, pool) = one(cx, spec, &at, overrides, searched == Some(i))?;
        if let Some(before) = workloads.iter().find(|w| w.name == plan.name) {
            let message = format!("workload {:?} is named twice", before.name);
            return Err(src.of(&spec.value.name, &format!("{at}.name"), message));
        }
        for other in &workloads {
            if let Some(id) = plan.names.iter().find(|id| other.names.contains(id)) {
                let message = format!(
                    "request name {:?} is in workloads {:?} and {:?}: request names must be \
                     unique across workloads (each workload's figures are its names'); \
                     give one of them another `name`",
                    cx.names[*id], other.name, plan.name
                );
                return Err(src.of(spec, &at, message));
            }
        }
        items.extend(plan.items.iter().cloned());
        weights.extend(&plan.weights);
        workloads.push(plan);
        loads.push(load);
        pools.push(pool);
    }
    let pool = overrides
        .connections
        .or_else(|| pools.iter().flatten().copied().reduce(|a, b| a + b));
    let open = loads.iter().find(|l| l.is_open());
    let client_load = open.unwrap_or(&loads[0]).clone();
    let load = loads[searched.unwrap_or(0)].clone();
    for (i, (w, own)) in workloads.iter_mut().zip(loads).enumerate() {
        // The searched workload runs the plan's load, which each step replaces.
        w.load = (searched != Some(i)).then_some(own);
    }
    Ok(Built {
        items,
        weights,
        workloads,
        load,
        pool,
        client_load,
    })
}

/// Which workload a search varies: `--workload NAME`, or the only one. `None` for a run,
/// which refuses the flags that shape one load.
fn searched(
    src: Source<'_>,
    doc: &ScenarioFile,
    overrides: &Overrides,
    search: bool,
) -> Result<Option<usize>, ScenarioError> {
    let names: Vec<&str> = doc
        .workloads
        .iter()
        .map(|w| w.value.name.value.as_str())
        .collect();
    let listed = names.join(", ");
    if !search {
        if overrides.workload.is_some() {
            return Err(ScenarioError::command_line(
                "--workload picks the workload `find` searches; a run runs them all",
            ));
        }
        if let Some((flag, _)) = load_flags(overrides).into_iter().find(|(_, given)| *given) {
            return Err(src.at(
                src.root,
                "workloads",
                format!(
                    "{flag} shapes the scenario's one `load`, and this scenario has \
                     `workloads:` ({listed}), each with its own `load`: edit them instead"
                ),
            ));
        }
        return Ok(None);
    }
    match &overrides.workload {
        Some(name) => match names.iter().position(|n| n == name) {
            Some(i) => Ok(Some(i)),
            None => Err(ScenarioError::command_line(format!(
                "--workload {name:?}: the scenario has no such workload (its workloads: {listed})"
            ))),
        },
        None if names.len() == 1 => Ok(Some(0)),
        None => Err(ScenarioError::command_line(format!(
            "the scenario has several workloads ({listed}): give --workload NAME to say \
             whose load `find` searches (the others run as written in every step)"
        ))),
    }
}

/// Compiles one workload at `at`; `searched` applies the load flags to it (`find`).
fn one(
    cx: &mut Context<'_>,
    spec: &serde_saphyr::Spanned<WorkloadSpec>,
    at: &str,
    overrides: &Overrides,
    searched: bool,
) -> Result<(WorkloadPlan, Load, Option<usize>), ScenarioError> {
    let src = cx.src;
    let w = &spec.value;
    let name = w.name.value.trim();
    if name.is_empty() {
        return Err(src.of(
            &w.name,
            &format!("{at}.name"),
            "expected a name, found an empty string",
        ));
    }
    let mut items = Vec::new();
    let mut weights = Vec::new();
    for (i, r) in w.requests.iter().enumerate() {
        let path = format!("{at}.requests[{i}]");
        weights.push(weight(src, r.value.weight.as_ref(), &path)?);
        items.push(Item::Request(Arc::new(requests::compile(
            cx, r, &path, None, None,
        )?)));
    }
    for (i, f) in w.flows.iter().enumerate() {
        let path = format!("{at}.flows[{i}]");
        weights.push(weight(src, f.value.weight.as_ref(), &path)?);
        items.push(Item::Flow(Arc::new(flows::compile(cx, f, &path)?)));
    }
    if items.is_empty() {
        return Err(src.of(
            spec,
            &format!("{at}.requests"),
            "expected at least one entry in the workload's `requests` or `flows`",
        ));
    }
    let (names, checks) = ids_of(&items);
    let own: Vec<String> = names.iter().map(|&id| cx.names[id].clone()).collect();
    let mut thresholds = Vec::new();
    for (i, node) in w.thresholds.iter().enumerate() {
        let path = format!("{at}.thresholds[{i}]");
        let rule = threshold(&node.value, &own, &cx.streams).map_err(|e| src.of(node, &path, e))?;
        if let Some(why) = not_per_workload(&rule) {
            return Err(src.of(node, &path, why));
        }
        thresholds.push(rule);
    }
    let start = match &w.start {
        Some(node) => duration(src, node, &format!("{at}.start"))?,
        None => Duration::ZERO,
    };
    // The others keep their loads; `--duration` sets every constant one's length.
    let neutral = Overrides {
        duration: overrides.duration,
        ..Overrides::default()
    };
    let flags = if searched { overrides } else { &neutral };
    let (load, pool) =
        load_model::build_at(Some(src), Some(&w.load), flags, &format!("{at}.load"))?;
    let plan = WorkloadPlan {
        name: name.to_string(),
        items,
        weights,
        load: None,
        start,
        thresholds,
        names,
        checks,
    };
    Ok((plan, load, pool))
}

/// Why a rule cannot judge one workload's requests alone, if it cannot.
fn not_per_workload(rule: &Threshold) -> Option<String> {
    if rule.window_s.is_some() {
        return Some(
            "a workload's rules are judged on its whole figures and take no `over D`: \
             put windowed rules in the run's `thresholds`"
                .into(),
        );
    }
    let run_wide = match rule.metric {
        Metric::Dropped => "dropped",
        Metric::Abandoned => "abandoned",
        Metric::DeliveryLatency(_) | Metric::DeliveryLost | Metric::DeliveryDuplicated => {
            "delivery"
        }
        Metric::Stream(_) => "stream",
        _ => return None,
    };
    Some(format!(
        "{run_wide} figures are the run's, not a workload's: put this rule in the run's \
         `thresholds`"
    ))
}
