//! `headroom run`: load the plan, start the watches, drive the load, print progress and
//! the summary (with the resource profile), write the JSON, record the run in the store
//! as it goes, and turn the verdict into an exit code.

use std::sync::Arc;

use crate::cli::{
    RunArgs, EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_THRESHOLD,
};
use crate::engine::{self, Control, Live, Runner};
use crate::metrics::summary::Summary;
use crate::plan::Plan;
use crate::report::progress::Progress;
use crate::scenario::Overrides;
use crate::store::{self, RunKind};
use crate::watch::Watches;

use super::common;
use super::sharded::Engine;

/// Runs `headroom run` and returns the exit code.
pub fn run(args: &RunArgs) -> i32 {
    let plan = load(args, None);
    let mut plan = match plan {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    // The sink listens before any request is sent, so `{{ sink_url }}` is known and no
    // delivery can arrive before it.
    let sink = match super::delivery::start(&mut plan) {
        Ok(sink) => sink,
        Err(e) => {
            eprintln!("error: {e:#}");
            return EXIT_BAD_INPUT;
        }
    };
    let plan = Arc::new(plan);
    let store = match common::open_store(&store::resolve_path(args.common.store.as_deref())) {
        Ok(store) => store,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let mut engine = match Engine::start(&args.common, args.scenario.as_deref(), &plan) {
        Ok(engine) => engine,
        Err(e) => {
            eprintln!("error: {e}");
            return e.exit_code();
        }
    };
    let specs = common::watch_specs(&plan, &args.common);
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
    common::stop_on_ctrl_c(&control, "; an interrupted run will leave no summary");
    let otlp = match common::start_otlp(&args.common, "run", &plan) {
        Ok(otlp) => otlp,
        Err(e) => {
            watches.finish(None);
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let dashboard = match common::start_dashboard(&args.common, "run", &plan, &control) {
        Ok(dashboard) => dashboard,
        Err(e) => {
            watches.finish(None);
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    if let Some(d) = &dashboard {
        d.set_watches(watches.live());
    }
    let mut writer = common::begin_record(
        &store,
        RunKind::Run,
        args.scenario.as_deref(),
        &plan,
        &args.common,
    );
    let mut progress = (!args.common.quiet).then(|| Progress::new(&plan.name));
    let mut store_warned = false;
    let mut on_second = |live: &Live| {
        if let Some(p) = progress.as_mut() {
            p.update(live);
        }
        if let Some(d) = &dashboard {
            d.second(live);
        }
        if let Some(o) = &otlp {
            o.second(live);
        }
        if let Some(Err(e)) = writer.as_mut().map(|w| w.second(&live.last)) {
            if !std::mem::replace(&mut store_warned, true) {
                eprintln!("warning: {e}");
            }
        }
    };
    let result = engine.run(plan.clone(), None, &control, &mut on_second);
    engine.finish();
    if let Some(p) = progress.as_mut() {
        p.finish();
    }
    common::finish_otlp(otlp);
    let mut outcome = match result {
        Ok(outcome) => outcome,
        Err(e) => {
            watches.finish(None);
            eprintln!("error: {e}");
            if let Some(Err(e)) = writer.map(|w| w.fail(&e.to_string())) {
                eprintln!("warning: {e}");
            }
            let code = match e {
                // The plan asks for a request its protocol cannot carry.
                engine::EngineError::Request(_) => EXIT_BAD_INPUT,
                _ => EXIT_FAILURE,
            };
            if let Some(d) = dashboard {
                d.failed(&e.to_string(), code);
            }
            return code;
        }
    };
    if let Some(sink) = sink {
        super::delivery::finish(sink, &plan, &mut outcome.summary, args.common.quiet);
    }
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
    if let Some(failure) = &outcome.tls_failure {
        eprintln!("warning: {}", tls_warning(failure));
    }
    let mut written = common::write_out(args.common.out.as_deref(), summary);
    if let Some(prefix) = &args.csv {
        if let Err(e) = crate::report::csv::write(prefix, summary, &summary.timeline, &[]) {
            eprintln!("error: {e}");
            written = false;
        }
    }
    if let Some(lost) = &outcome.lost {
        eprintln!("error: {lost}; the figures above are the other shards' alone");
    }
    let code = if !written || outcome.lost.is_some() {
        EXIT_FAILURE
    } else {
        verdict(summary, outcome.connect_failure.is_some())
    };
    // The page hears the end last, once the summary is printed and written: then the
    // server stops, so an open tab never holds the process.
    if let Some(d) = dashboard {
        d.run_finished(summary, code);
    }
    code
}

/// The end-of-run line for the first failed TLS handshake (`address: reason`), with
/// the way out when the server's certificate was not trusted.
fn tls_warning(failure: &str) -> String {
    let (addr, reason) = failure.split_once(": ").unwrap_or(("the target", failure));
    let hint = if reason.contains("not valid for name") {
        " (use --resolve HOST:PORT:ADDR with a name it is valid for, or --insecure)"
    } else if reason.contains("invalid peer certificate") {
        " (use --cacert FILE or --insecure)"
    } else {
        ""
    };
    format!("TLS handshake with {addr} failed: {reason}{hint}")
}

/// The plan `args` describe, from the scenario's `text` when given (a shard's, from
/// its coordinator) instead of its file.
pub fn load(args: &RunArgs, text: Option<&(String, String)>) -> Result<Plan, String> {
    let overrides = overrides(args)?;
    common::load_plan(args.scenario.as_deref(), text, &overrides).map_err(|e| e.to_string())
}

fn overrides(args: &RunArgs) -> Result<Overrides, String> {
    Ok(Overrides {
        rate: args.rate,
        users: args.users,
        duration: args.duration,
        ..common::overrides(args.url.as_deref(), &args.common)?
    })
}

/// 105 when the run was interrupted (partial data decides nothing); 99 when a
/// threshold failed; 1 when nothing got through because no connection could ever be
/// opened; 0 otherwise.
fn verdict(summary: &Summary, connect_failed: bool) -> i32 {
    let kind = |k: &str| summary.errors.by_kind.get(k).copied().unwrap_or(0);
    if summary.interrupted {
        EXIT_INTERRUPTED
    } else if summary.thresholds.iter().any(|t| !t.ok) {
        EXIT_THRESHOLD
    } else if connect_failed && kind("connect") + kind("generator") == summary.requests {
        EXIT_FAILURE
    } else {
        EXIT_OK
    }
}
