//! Compiling `data:` (files of rows for users: `{{ data.NAME.COLUMN }}`), `setup:` and
//! `teardown:` (steps run once outside the load: `{{ setup.NAME }}`), and the check
//! that a `unique` file has a row for every user the load starts.
//!
//! A file is read once per process: a search compiles its plan for every step, and a
//! million-row file must not be read again each time (the cache is keyed by the file's
//! path, size and modification time, so an edited file is read again).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde_saphyr::Spanned;

use super::errors::{ScenarioError, Source};
use super::flows::{self, Where};
use super::format::{DataSpec, StepSpec};
use super::requests::Context;
use super::streams::FlowStreams;
use headroom_plan::data::{DataError, DataLimits, DataPlan, DataSet, DataSource, Pick, Problem};
use headroom_plan::{Item, Load, Plan, Step};

/// Files read by this process: (path, size, modified) → the table.
type Cache = Vec<((PathBuf, u64, Option<SystemTime>), DataSet)>;
static CACHE: Mutex<Cache> = Mutex::new(Vec::new());
/// Most files the cache keeps (the oldest is let go).
const CACHED: usize = 16;

/// Compiles `data:`: every file loaded (or taken from the cache) with its pick, and,
/// for each, the names `data.NAME.COLUMN` templates may read.
pub(crate) fn build(
    src: Source<'_>,
    specs: &BTreeMap<String, Spanned<DataSpec>>,
) -> Result<(DataPlan, Vec<Vec<String>>), ScenarioError> {
    let mut plan = DataPlan::default();
    let mut vars = Vec::new();
    let dir = Path::new(src.file).parent().unwrap_or(Path::new(""));
    for (name, spec) in specs {
        let path = format!("data.{name}");
        let word =
            |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !word(name) {
            return Err(src.of(
                spec,
                &path,
                format!("expected a name of letters, digits and `_`, found {name:?}"),
            ));
        }
        let pick = match &spec.value.pick {
            None => Pick::Sequential,
            Some(p) => p.value.parse::<Pick>().map_err(|_| {
                src.of(
                    p,
                    &format!("{path}.pick"),
                    format!("expected unique, sequential or random, found {:?}", p.value),
                )
            })?,
        };
        let file = &spec.value.file;
        let set = load(name, &dir.join(&file.value))
            .map_err(|e| src.of(file, &format!("{path}.file"), e))?;
        vars.push(
            set.columns()
                .iter()
                .map(|column| format!("data.{name}.{column}"))
                .collect(),
        );
        plan.sets.push(DataSource::new(set, pick));
    }
    Ok((plan, vars))
}

/// Loads `path`, or takes it from the cache when it has not changed.
fn load(name: &str, path: &Path) -> Result<DataSet, DataError> {
    let meta = std::fs::metadata(path).map_err(|e| DataError::new(path, None, Problem::Io(e)))?;
    let key = (path.to_path_buf(), meta.len(), meta.modified().ok());
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, set)) = cache
        .iter()
        .find(|(k, set)| *k == key && set.name() == name)
    {
        return Ok(set.clone());
    }
    let set = DataSet::load(name, path, &DataLimits::default())?;
    if cache.len() >= CACHED {
        cache.remove(0);
    }
    cache.push((key, set.clone()));
    Ok(set)
}

/// Checks that every `unique` file has a row for each user the load starts: the
/// most users at once (closed model) or every arrival of the schedule (open model), of
/// every workload whose requests read the file.
pub(crate) fn check_unique(
    src: Source<'_>,
    specs: &BTreeMap<String, Spanned<DataSpec>>,
    plan: &Plan,
) -> Result<(), ScenarioError> {
    let data = &plan.journey.data;
    let parts: Vec<(&[Item], &Load)> = if plan.workloads.is_empty() {
        vec![(&plan.items, &plan.load)]
    } else {
        plan.workloads
            .iter()
            .map(|w| (w.items.as_slice(), plan.load_of(w)))
            .collect()
    };
    for (index, source) in data.sets.iter().enumerate() {
        if source.pick() != Pick::Unique {
            continue;
        }
        let (mut users, mut arrivals) = (0u64, 0u64);
        for (items, load) in &parts {
            let reads = items
                .iter()
                .any(|item| plan.journey.data_sets_of(item).contains(&index));
            if !reads {
                continue;
            }
            match load {
                Load::Users { schedule, .. } => users += schedule.peak().ceil() as u64,
                Load::ArrivalRate { schedule, .. } => {
                    arrivals += schedule.arrivals_by(schedule.duration()).ceil() as u64
                }
            }
        }
        let (needed, what) = match (users, arrivals) {
            (0, 0) => continue,
            (u, 0) => (u, "users"),
            (0, a) => (a, "arrivals"),
            (u, a) => (u + a, "users and arrivals"),
        };
        if let Err(e) = source.set().require_rows(needed, what) {
            let spec = &specs[source.name()];
            return Err(src.of(spec, &format!("data.{}", source.name()), e));
        }
    }
    Ok(())
}

/// Compiles `setup:` or `teardown:` (`key`) steps; returns them and what they capture.
pub(crate) fn once_steps(
    cx: &mut Context<'_>,
    specs: &[Spanned<StepSpec>],
    key: &str,
) -> Result<(Vec<Step>, Vec<String>), ScenarioError> {
    if specs.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut captured = cx.user_vars.clone();
    let before = captured.len();
    let mut streams = FlowStreams::default();
    let mut at = Where {
        flow: key,
        captured: &mut captured,
        streams: &mut streams,
        depth: 0,
        streams_allowed: false,
    };
    let steps = flows::steps(cx, specs, key, &mut at)?;
    Ok((steps, captured.split_off(before)))
}
