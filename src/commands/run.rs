//! `headroom run`: load the plan, start the watches, drive the load, print progress and
//! the summary (with the resource profile), write the JSON, record the run in the store
//! as it goes, and turn the verdict into an exit code.

use std::path::Path;
use std::sync::Arc;

use crate::cli::{RunArgs, EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, EXIT_THRESHOLD};
use crate::engine::{self, Control, Live};
use crate::metrics::summary::Summary;
use crate::plan::Plan;
use crate::report::progress::{Progress, Snapshot};
use crate::scenario::{self, Overrides};
use crate::store::{self, RunKind, RunMeta, RunWriter, Store};
use crate::watch::Watches;

/// Runs `headroom run` and returns the exit code.
pub fn run(args: &RunArgs) -> i32 {
    let overrides = overrides(args);
    let plan = match scenario::load(args.scenario.as_deref(), &overrides) {
        Ok(plan) => Arc::new(plan),
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let specs: Vec<String> = plan
        .watches
        .iter()
        .chain(&args.common.watches)
        .cloned()
        .collect();
    // Watches start before any load is sent, so one that cannot start is bad input
    // with nothing sent yet.
    let watches = match Watches::start(&specs, args.common.watch_interval) {
        Ok(watches) => watches,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let control = Control::default();
    let handler_control = control.clone();
    if let Err(e) = ctrlc::set_handler(move || handler_control.stop()) {
        eprintln!("warning: cannot catch Ctrl-C ({e}); an interrupted run will leave no summary");
    }
    let store = open_store(args);
    let mut writer = store.as_ref().and_then(|s| begin_record(s, args, &plan));
    let mut progress = (!args.common.quiet).then(|| Progress::new(&plan.name));
    let mut store_warned = false;
    let mut on_second = |live: &Live| {
        if let Some(p) = progress.as_mut() {
            p.update(&snapshot(live));
        }
        if let Some(Err(e)) = writer.as_mut().map(|w| w.second(&live.last)) {
            if !std::mem::replace(&mut store_warned, true) {
                eprintln!("warning: {e}");
            }
        }
    };
    let result = engine::run(plan.clone(), &control, &mut on_second);
    if let Some(p) = progress.as_mut() {
        p.finish();
    }
    let mut outcome = match result {
        Ok(outcome) => outcome,
        Err(e) => {
            watches.finish(None);
            eprintln!("error: {e}");
            if let Some(Err(e)) = writer.map(|w| w.fail(&e.to_string())) {
                eprintln!("warning: {e}");
            }
            return EXIT_FAILURE;
        }
    };
    outcome.summary.watches = watches.finish(Some(&outcome.summary));
    let summary = &outcome.summary;
    if let Some(w) = writer {
        let id = w.id();
        match w.finish(summary, &outcome.recorder, &plan.names) {
            Ok(()) if !args.common.quiet => eprintln!("saved as run {id}"),
            Ok(()) => {}
            Err(e) => eprintln!("warning: {e}"),
        }
    }
    println!("{}", crate::report::text::render(summary));
    if let Some(failure) = &outcome.connect_failure {
        eprintln!("warning: could not connect to {failure}");
    }
    if let Some(path) = &args.common.out {
        if let Err(e) = write_json(path, summary) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return EXIT_FAILURE;
        }
    }
    verdict(summary, outcome.connect_failure.is_some())
}

/// Opens the run history; a store that cannot be opened costs a warning, not the run.
fn open_store(args: &RunArgs) -> Option<Store> {
    let path = store::resolve_path(args.common.store.as_deref());
    Store::open(&path)
        .map_err(|e| eprintln!("warning: {e}; this run will not be kept"))
        .ok()
}

/// Records the start of the run in `store` (status `running`).
fn begin_record<'s>(store: &'s Store, args: &RunArgs, plan: &Plan) -> Option<RunWriter<'s>> {
    let meta = RunMeta::of_this_process(
        RunKind::Run,
        args.scenario.as_deref(),
        &plan.name,
        &args.common.labels,
    );
    store
        .begin_run(&meta)
        .map_err(|e| eprintln!("warning: {e}; this run will not be kept"))
        .ok()
}

/// The progress line's view of the engine's live figures.
pub fn snapshot(live: &Live) -> Snapshot {
    Snapshot {
        elapsed: live.elapsed,
        total: live.total,
        requests: live.requests,
        errors: live.errors,
        dropped: live.dropped,
        in_flight: live.in_flight,
        rate_last_s: live.last.requests as f64,
        p95_last_s_ms: live.last.p95_ms,
        users: live.users,
    }
}

fn overrides(args: &RunArgs) -> Overrides {
    Overrides {
        url: args.url.clone(),
        rate: args.rate,
        users: args.users,
        duration: args.duration,
        threads: args.common.threads,
        thresholds: args.common.thresholds.clone(),
        max_in_flight: args.common.max_in_flight,
        connections: args.common.connections,
        timeout: args.common.timeout,
    }
}

/// Writes the summary JSON atomically (temp file + rename), so a reader never sees half a file.
pub fn write_json(path: &Path, summary: &Summary) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(summary).map_err(std::io::Error::other)?;
    let tmp = path.with_extension("json.partial");
    std::fs::write(&tmp, text + "\n")?;
    std::fs::rename(&tmp, path)
}

/// 99 when a threshold failed; 1 when nothing got through because no connection
/// could be opened; 0 otherwise.
fn verdict(summary: &Summary, connect_failed: bool) -> i32 {
    if summary.thresholds.iter().any(|t| !t.ok) {
        EXIT_THRESHOLD
    } else if connect_failed && summary.errors.count == summary.requests {
        EXIT_FAILURE
    } else {
        EXIT_OK
    }
}
