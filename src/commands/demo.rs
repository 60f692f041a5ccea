//! `headroom demo`: start the built-in target on loopback with a known capacity,
//! search its ceiling with short steps, print the step table with the ceiling next to
//! the true capacity, and write the same as a Markdown report, plus an HTML report
//! with the capacity chart, rendered from the search as recorded in a store kept
//! under the output directory (never the user's default store). A short delivery
//! phase ([`delivery`]) then times tasks through the target's scheduler to a sink.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::commands::{common, find};
use crate::engine::Control;
use crate::plan::Plan;
use crate::report::units::{latency, seconds};
use crate::scenario::{self, ClientFlags, Overrides};
use crate::search::result::value;
use crate::search::{
    text, IsolationOptions, Order, Range, SearchOptions, SearchResult, StepTiming, Trials,
};
use crate::store::{RunKind, RunMeta};
use crate::target::{self, TargetOptions};

use super::args::DemoArgs;
use super::error::{Chain, CommandError};
use super::exit::ExitCode;

pub mod delivery;
pub mod http3;
pub mod tls;

/// Name of the report file written in `--out-dir`.
pub const REPORT_FILE: &str = "headroom-demo-report.md";
/// Name of the HTML report written next to [`REPORT_FILE`].
pub const HTML_FILE: &str = "headroom-demo-report.html";
/// The demo's run store, relative to `--out-dir`.
pub const STORE_FILE: &str = ".headroom/history.db";

/// The files a demo wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoReports {
    /// The Markdown report.
    pub markdown: PathBuf,
    /// The HTML report, when the search could be recorded and read back.
    pub html: Option<PathBuf>,
}

/// The demo target: 8 workers × 10 ms = 800 requests/s, well within what the generator
/// drives from one core.
pub fn demo_target() -> TargetOptions {
    TargetOptions {
        workers: 8,
        service_time: Duration::from_millis(10),
        ..TargetOptions::loopback()
    }
}

/// The demo's thresholds: p95 within five service times, and no errors to speak of.
pub const THRESHOLDS: [&str; 2] = ["p95 < 50ms", "errors < 1%"];
/// Most requests in flight. Past capacity the backlog (and so each overloaded step's
/// drain after its window) stays under a second; the latency of a full window already
/// fails `p95 < 50ms` many times over.
pub const MAX_IN_FLIGHT: usize = 512;
/// Connections the generator may open: plenty for 800 req/s × 10 ms, and few enough
/// that overloaded steps do not leave thousands of TIME_WAIT sockets to wait out.
pub const CONNECTIONS: usize = 64;

/// The demo search: from 100 req/s, steps of 2 s after a 1 s warm-up, 1 s cooldown.
pub fn demo_search() -> SearchOptions {
    SearchOptions {
        range: Range {
            from: 100.0,
            to: 100_000.0,
            precision: 0.05,
        },
        timing: StepTiming {
            warmup: Duration::from_secs(1),
            measured: Duration::from_secs(2),
        },
        isolation: IsolationOptions {
            cooldown: Duration::from_secs(1),
            ..IsolationOptions::default()
        },
        hold: None,
        trials: Trials::default(),
        order: Order::Estimate,
    }
}

/// Why the demo stopped. Its message, as [`CommandError::Demo`] shows it, is followed
/// by its causes ([`Chain`]).
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// The built-in target cannot start.
    #[error(transparent)]
    Target(Chain),
    /// A file or directory under `--out-dir` cannot be made or written.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A demo scenario does not load.
    #[error(transparent)]
    Scenario(#[from] crate::scenario::ScenarioError),
    /// The delivery phase's sink cannot start.
    #[error(transparent)]
    Sink(Chain),
    /// The delivery phase's scenario has no `sink:` (a bug of the demo).
    #[error("no sink")]
    NoSink,
    /// The delivery phase's summary has no `delivery` object (a bug of the demo).
    #[error("no delivery summary")]
    NoDeliverySummary,
    /// The engine could not run the delivery phase.
    #[error(transparent)]
    Engine(#[from] crate::engine::EngineError),
    /// The recorded search cannot be read back for the HTML report.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// Runs the demo and returns the exit code (0 when a ceiling was found).
pub fn run(args: &DemoArgs) -> Result<ExitCode, CommandError> {
    let (result, reports) = demo_with(&args.out_dir, args.tls, args.http3)
        .map_err(|e| CommandError::Demo(Chain::new(e)))?;
    println!("Report:     {}", reports.markdown.display());
    if let Some(html) = &reports.html {
        println!("HTML:       {}", html.display());
    }
    Ok(find::exit_code(&result))
}

/// Starts the target, searches (recording into `out_dir`'s own store), prints, and
/// writes the reports in `out_dir`; returns the search result and the reports' paths.
pub fn demo(out_dir: &Path) -> Result<(SearchResult, DemoReports), DemoError> {
    demo_with(out_dir, false, false)
}

/// [`demo`], and with `tls` a second search of the same target served over HTTPS
/// (see [`tls`]), compared with the first in the terminal and the Markdown report; with
/// `http3`, searches of the HTTPS target over HTTP/2 and HTTP/3, compared (see
/// [`http3`]).
pub fn demo_with(
    out_dir: &Path,
    tls: bool,
    http3: bool,
) -> Result<(SearchResult, DemoReports), DemoError> {
    let options = demo_target();
    let target = target::spawn(options.clone()).map_err(|e| DemoError::Target(Chain::new(e)))?;
    let capacity = target.capacity();
    println!(
        "headroom demo: built-in target at {} — {} workers × {} per request = capacity {} req/s",
        target.url(),
        options.workers,
        latency(options.service_time.as_secs_f64() * 1000.0),
        value(capacity)
    );
    let control = Control::default();
    common::stop_on_ctrl_c(&control, "");
    std::fs::create_dir_all(out_dir)?;
    let store = common::open_store(&out_dir.join(STORE_FILE))
        .map_err(|e| eprintln!("warning: {e}; no HTML report"))
        .ok();
    // With --tls the two searches compare the target's CPU per request, which the
    // scrapes of its /metrics would add to one side only: then neither watches it.
    let watch = (!tls && !http3).then(|| own_metrics(&target));
    let searched = search(
        &target,
        ClientFlags::default(),
        &control,
        store.as_ref(),
        watch,
    )?;
    let (plan, search, result) = (&searched.plan, &searched.options, &searched.result);
    // Each step was printed (on stderr) as it ended: the answer alone, not the table again.
    println!("{}", text::answer(result));
    println!(
        "Capacity:   {} req/s — {}",
        value(capacity),
        accuracy(result, capacity)
    );
    // The same target, now idle: its scheduler delivers to a sink (end-to-end timing).
    let delivered = if control.is_stopped() {
        String::new()
    } else {
        delivery::phase(out_dir, &target.url(), &control)?
    };
    let mut md = markdown(plan, &options, search, result);
    md.push_str(&delivered);
    if tls && !control.is_stopped() {
        let section = tls::compare(out_dir, &searched, &target, &control, store.as_ref())?;
        md.push_str(&section);
    }
    if http3 && !control.is_stopped() {
        md.push_str(&http3::compare(out_dir, &control, store.as_ref())?);
    }
    target.shutdown();
    let path = out_dir.join(REPORT_FILE);
    std::fs::write(&path, md)?;
    let html = match (store, searched.run_id) {
        (Some(store), Some(id)) => {
            let html = out_dir.join(HTML_FILE);
            std::fs::write(&html, crate::report::html::render(&store.load(id)?))?;
            Some(html)
        }
        _ => None,
    };
    Ok((
        searched.result,
        DemoReports {
            markdown: path,
            html,
        },
    ))
}

/// One demo search of a running target and what it cost the target.
pub struct Searched {
    /// The plan searched with (the target's `/work`, the demo's limits and thresholds).
    pub plan: Plan,
    /// The search's range and timing.
    pub options: SearchOptions,
    /// Its result.
    pub result: SearchResult,
    /// Its id in the demo's store, when recorded.
    pub run_id: Option<i64>,
    /// The target's CPU time per request it answered during the search, in µs.
    pub target_cpu_us: Option<f64>,
}

/// Searches the ceiling of `target`'s `/work` with the demo's settings, connecting as
/// `client` says, watching what `watch` says (besides the generator), and records the
/// search in `store` when there is one.
fn search(
    target: &target::RunningTarget,
    client: ClientFlags,
    control: &Control,
    store: Option<&crate::store::Store>,
    watch: Option<find::WatchPlan>,
) -> Result<Searched, DemoError> {
    let overrides = Overrides {
        url: Some(format!("{}/work", target.url())),
        rate: Some(1.0),
        thresholds: THRESHOLDS.iter().map(|t| t.to_string()).collect(),
        max_in_flight: Some(MAX_IN_FLIGHT),
        connections: Some(CONNECTIONS),
        client,
        ..Overrides::default()
    };
    let plan = scenario::load(None, &overrides)?;
    let options = demo_search();
    let writer = store.and_then(|s| {
        s.begin_run(&RunMeta {
            kind: RunKind::Find,
            args: std::env::args().collect(),
            scenario_name: plan.name.clone(),
            scenario_hash: None,
            git_commit: None,
            labels: Vec::new(),
            note: None,
            secret_headers: Vec::new(),
        })
        .map_err(|e| eprintln!("warning: {e}; no HTML report"))
        .ok()
    });
    let (cpu_before, answered_before) = (target.cpu_time(), target.requests_answered());
    let mut keeper = find::StepKeeper::new(watch.unwrap_or_default(), writer);
    let result = find::execute(
        &mut crate::engine::Local,
        &plan,
        &options,
        control,
        false,
        &mut keeper,
        None,
        None,
    );
    let run_id = keeper.finish(&result, &plan.names);
    let answered = target.requests_answered() - answered_before;
    let target_cpu_us = cpu_before
        .zip(target.cpu_time())
        .and_then(|(before, after)| cpu_us_per(after.saturating_sub(before), answered));
    Ok(Searched {
        plan,
        options,
        result,
        run_id,
        target_cpu_us,
    })
}

/// `cpu` spread over `n` units of work, in µs each; `None` for no work.
fn cpu_us_per(cpu: Duration, n: u64) -> Option<f64> {
    (n > 0).then(|| cpu.as_secs_f64() * 1e6 / n as f64)
}

/// The demo watches its target's worker pool through the target's own `/metrics`, so
/// its search names the pool as the bottleneck (`8 of 8 busy`) with evidence. Sampled
/// every 250 ms: a step's window of 2 s then has enough scrapes for a mean. Called for
/// the plain HTTP search only (the `--tls` comparison watches neither search).
fn own_metrics(target: &target::RunningTarget) -> find::WatchPlan {
    find::WatchPlan {
        specs: vec![format!(
            "prometheus:{}/metrics#headroom_target_workers_busy,headroom_target_workers",
            target.url()
        )],
        interval: Duration::from_millis(250),
        tls: None,
    }
}

/// `found 800 req/s, -0.0% from capacity` or why nothing can be compared.
fn accuracy(result: &SearchResult, capacity: f64) -> String {
    match result.ceiling {
        Some(c) => format!(
            "found {} req/s, {:+.1}% from capacity",
            value(c),
            (c - capacity) / capacity * 100.0
        ),
        None => "no ceiling found to compare".into(),
    }
}

/// The Markdown trip report of a demo.
pub fn markdown(
    plan: &Plan,
    target: &TargetOptions,
    search: &SearchOptions,
    result: &SearchResult,
) -> String {
    let capacity = target.capacity();
    let unit = result.unit.as_str();
    let mut md = String::new();
    let headline = match result.ceiling {
        Some(c) if result.ceiling_is_lower_bound => format!("at least {} {unit}", value(c)),
        Some(c) => format!("{} {unit}", value(c)),
        None => "not found".into(),
    };
    // The answer first: the ceiling, what limited it, the knee, the model, the generator.
    let _ = writeln!(
        md,
        "# Ceiling: {headline} — headroom demo of the built-in target\n"
    );
    let ceiling = result.ceiling.map_or("not found".into(), |c| {
        let bound = if result.ceiling_is_lower_bound {
            " (a lower bound)"
        } else {
            ""
        };
        format!("**{} {unit}**{bound}", value(c))
    });
    let _ = writeln!(
        md,
        "- Ceiling: {ceiling}; capacity {} req/s ({}).",
        value(capacity),
        accuracy(result, capacity)
    );
    let knee = result.knee.map_or("none that matters".into(), |k| {
        format!("{} {unit}", value(k))
    });
    let _ = writeln!(md, "- Knee: {knee}.");
    let limit = crate::report::view::SearchView::result(result).limited_by();
    let _ = writeln!(
        md,
        "- Limited by: `{}` ({limit}).",
        result.limited_by.as_str()
    );
    let model = crate::search::model::line(result.model.as_ref(), result.unit);
    let _ = writeln!(md, "- Model (USL): {model}.");
    let _ = writeln!(md, "- Generator: {}.", generator_verdict(result));
    let _ = writeln!(
        md,
        "- Search time: {} for {} steps.\n",
        seconds(result.duration_s),
        result.steps.len()
    );
    let _ = writeln!(md, "{}\n", result.conclusion);
    let _ = writeln!(md, "## Scenario\n");
    let _ = writeln!(
        md,
        "- Target: built-in service, `/work` held by one of {} workers for {} each: capacity **{} req/s**.",
        target.workers,
        latency(target.service_time.as_secs_f64() * 1000.0),
        value(capacity)
    );
    let _ = writeln!(
        md,
        "- Load: `GET /work`, open model (requests start on schedule, latency from the scheduled start), at most {MAX_IN_FLIGHT} in flight over {CONNECTIONS} connections, {} engine thread(s).",
        plan.threads
    );
    let thresholds: Vec<String> = plan
        .thresholds
        .iter()
        .map(|t| format!("`{}`", t.expr))
        .collect();
    let _ = writeln!(md, "- Thresholds: {}.", thresholds.join(", "));
    let _ = writeln!(
        md,
        "- Search: from {} {unit}, doubling until a step fails, then bisecting to {}% and confirming the boundary; each step {} measured after a {} warm-up, {} cooldown between steps.\n",
        value(search.range.from),
        value(search.range.precision * 100.0),
        seconds(search.timing.measured.as_secs_f64()),
        seconds(search.timing.warmup.as_secs_f64()),
        seconds(search.isolation.cooldown.as_secs_f64()),
    );
    let _ = writeln!(md, "## Steps\n");
    let _ = writeln!(
        md,
        "| Rate | Achieved | Success | p50 | p95 | p99 | Dropped | Wait | Verdict |"
    );
    let _ = writeln!(md, "|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for step in &result.steps {
        let cells = text::row(step, result.unit);
        let _ = writeln!(md, "| {} |", cells.join(" | ").replace('\n', " "));
    }

    md
}

/// Whether any step was generator-bound: the report's verdict, worded for the demo
/// when a step was bound (the demo says what it did about it).
fn generator_verdict(result: &SearchResult) -> String {
    let view = crate::report::view::SearchView::result(result);
    let bound = view.bound_steps().count();
    let first = view.bound_steps().next();
    let verdict = match first {
        None => view.generator(),
        Some(step) if result.limited_by == crate::search::LimitedBy::Generator => format!(
            "bound at {} req/s ({}); figures from that step are not the target's",
            value(step.value),
            step.summary.generator.reason
        ),
        Some(step) => format!(
            "bound in {bound} step(s), first at {} req/s ({}); each was re-run, and bound steps are not judged",
            value(step.value),
            step.summary.generator.reason
        ),
    };
    verdict
}
