//! `headroom run`: load the plan, drive it, print progress and the summary, write the
//! JSON, and turn the verdict into an exit code.

use std::path::Path;
use std::sync::Arc;

use crate::cli::{RunArgs, EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, EXIT_THRESHOLD};
use crate::engine::{self, Control, Live};
use crate::metrics::summary::Summary;
use crate::scenario::{self, Overrides};

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
    let control = Control::default();
    let handler_control = control.clone();
    if let Err(e) = ctrlc::set_handler(move || handler_control.stop()) {
        eprintln!("warning: cannot catch Ctrl-C ({e}); an interrupted run will leave no summary");
    }
    let quiet = args.quiet;
    let mut on_second = |live: &Live| {
        if !quiet {
            eprintln!(
                "[{:>4}s/{}s] {:>8} req/s  p95 {:>8.2}ms  errors {}  dropped {}",
                live.elapsed.as_secs(),
                live.total.as_secs(),
                live.last.requests,
                live.last.p95_ms,
                live.errors,
                live.dropped
            );
        }
    };
    let outcome = match engine::run(plan.clone(), &control, &mut on_second) {
        Ok(outcome) => outcome,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_FAILURE;
        }
    };
    let summary = &outcome.summary;
    println!("{}", crate::report::text::render(summary));
    if let Some(failure) = &outcome.connect_failure {
        eprintln!("warning: could not connect to {failure}");
    }
    if let Some(path) = &args.out {
        if let Err(e) = write_json(path, summary) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return EXIT_FAILURE;
        }
    }
    verdict(summary, outcome.connect_failure.is_some())
}

fn overrides(args: &RunArgs) -> Overrides {
    Overrides {
        url: args.url.clone(),
        rate: args.rate,
        users: args.users,
        duration: args.duration,
        threads: args.threads,
        thresholds: args.thresholds.clone(),
        max_in_flight: args.max_in_flight,
        connections: args.connections,
        timeout: args.timeout,
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
