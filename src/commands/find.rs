//! `headroom find`: load the scenario, search for its ceiling step by step (watching
//! each measured window and recording every step in the run store), print a line per
//! step and the step table — with what limited the ceiling and the sizing when
//! something besides the generator was watched — write the JSON, and exit 0 only when a ceiling was found
//! (or the whole range passed).

use crate::dashboard::Dashboard;
use crate::engine::{Control, Runner};
use crate::otlp::Otlp;
use crate::plan::Plan;
use crate::report::units::seconds;
use crate::search::{self, text, Event, SearchOptions, SearchResult, Unit};
use crate::store::{self, RunKind};

use super::args::FindArgs;
use super::common;
use super::error::CommandError;
use super::exit::ExitCode;
pub use super::find_record::StepKeeper;
pub use super::find_record::WatchPlan;
use super::sharded::Engine;
pub use super::values::parse_percent;

pub use crate::scenario::{DEFAULT_ERROR_RULE, DEFAULT_THRESHOLDS};

/// Runs `headroom find` and returns the exit code: 0 when a ceiling was found (or every
/// step up to `--to` passed), 1 otherwise; or why it stopped (bad input...).
pub fn run(args: &FindArgs) -> Result<ExitCode, CommandError> {
    let mut setup = super::setup::find(args)?;
    let (mut plan, opts) = setup.compile()?;
    // `setup:` runs once for the whole search, before its first step.
    setup.setup.setup_values = super::once::setup(&plan, args.common.quiet)?;
    plan.journey.setup_values = setup.setup.setup_values.clone();
    if plan.sink.is_some() {
        // A search judges request steps; deliveries would straddle its steps.
        return Err(CommandError::FindSink);
    }
    let specs = common::watch_specs(&plan, &args.common);
    let watch = WatchPlan {
        tls: common::watch_tls(&args.common, &specs)?,
        specs,
        interval: args.common.watch_interval,
    };
    watch.check()?;
    let store = common::open_store(&store::resolve_path(args.common.store.as_deref()))?;
    let mut engine = Engine::start(&args.common, &setup.setup, &plan)?;
    let control = Control::default();
    common::stop_on_ctrl_c(&control, "; an interrupted search will leave no report");
    let otlp = common::start_otlp(&args.common, "find", &plan)?;
    let dashboard = common::start_dashboard(&args.common, "find", &plan, &control)?;
    let writer = common::begin_record(
        &store,
        RunKind::Find,
        args.scenario.as_deref(),
        &plan,
        &args.common,
    );
    let mut keeper = StepKeeper::new(watch, writer);
    let mut result = execute(
        &mut engine,
        &plan,
        &opts,
        &control,
        args.common.quiet,
        &mut keeper,
        dashboard.as_ref(),
        otlp.as_ref(),
    );
    engine.finish();
    common::finish_otlp(otlp);
    if let Err(e) = super::once::teardown(&std::sync::Arc::new(plan.clone()), args.common.quiet) {
        eprintln!("error: {e}");
    }
    name_the_service(&mut result, &plan);
    if let Some(id) = keeper.finish(&result, &plan.names) {
        if !args.common.quiet {
            eprintln!("saved as run {id}");
        }
    }
    println!("{}", text::render(&result));
    if let Some(watched) = crate::report::limits::terminal(&result) {
        println!("\n{watched}");
    }
    let ended = common::write_out(args.common.out.as_deref(), &result).map(|()| exit_code(&result));
    if let Some(d) = dashboard {
        let code = ended.as_ref().map_or_else(CommandError::exit_code, |c| *c);
        d.search_finished(&result, code.into());
    }
    ended
}

/// When no watch explained the failure and the conclusion asks for `--watch pid:PID
/// of the service`, names the process listening on the target's port — when the
/// target is on this machine's loopback, where that process is the service.
fn name_the_service(result: &mut SearchResult, plan: &Plan) {
    const ASK: &str = "--watch pid:PID of the service";
    let host = plan
        .target
        .host
        .trim_start_matches('[')
        .trim_end_matches(']');
    let local = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if !local || result.bottleneck.is_some() || !result.conclusion.contains(ASK) {
        return;
    }
    if let Some((pid, command)) = crate::watch::listener(plan.target.port) {
        let named = format!(
            "--watch pid:{pid} ({command}, listening on port {})",
            plan.target.port
        );
        result.conclusion = result.conclusion.replace(ASK, &named);
    }
}

/// Builds the plan and the search options from the flags (both stages: nothing runs).
/// Errors are bad input.
pub fn prepare(args: &FindArgs) -> Result<(Plan, SearchOptions), CommandError> {
    super::setup::find(args)?.compile()
}

/// Runs the search, printing a line per step (and any isolation wait) to stderr
/// unless `quiet`; `keeper` watches each measured window and records each step; a
/// `dashboard` is told of every step and every second, an `otlp` push of every second.
#[allow(clippy::too_many_arguments)]
pub fn execute(
    runner: &mut dyn Runner,
    plan: &Plan,
    opts: &SearchOptions,
    control: &Control,
    quiet: bool,
    keeper: &mut StepKeeper<'_>,
    dashboard: Option<&Dashboard>,
    otlp: Option<&Otlp>,
) -> SearchResult {
    let unit = Unit::of(plan);
    if !quiet {
        eprintln!(
            "searching the ceiling of {} ({}://{}) in {}: from {} to {}, steps of {} (+{} warm-up), thresholds {}",
            plan.name,
            plan.target.scheme,
            plan.target.authority,
            unit.as_str(),
            search::result::value(opts.range.from),
            search::result::value(opts.range.to),
            seconds(opts.timing.measured.as_secs_f64()),
            seconds(opts.timing.warmup.as_secs_f64()),
            plan.thresholds
                .iter()
                .map(|t| t.expr.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let mut on_event = |event: Event<'_>| match event {
        Event::Measuring { .. } => {
            keeper.measuring();
            if let Some(d) = dashboard {
                d.step_measuring(keeper.live_watches());
            }
        }
        Event::Measured {
            index,
            step,
            recorder,
        } => keeper.measured(index, step, recorder),
        Event::Starting {
            index,
            value,
            confirm,
        } => {
            keeper.starting(index, value);
            if let Some(d) = dashboard {
                d.step_starting(index, value, confirm);
            }
        }
        Event::Second(live) => {
            keeper.second(live);
            if let Some(d) = dashboard {
                d.second(live);
            }
            if let Some(o) = otlp {
                o.second(live);
            }
        }
        Event::Finished(index, step) => {
            if let Some(d) = dashboard {
                d.step_finished(index, step);
            }
            if !quiet {
                eprintln!("{}", text::step_line(index, step, unit));
                // Which of the self-check's reasons fired, so a re-run step says why.
                if step.summary.generator.bound {
                    eprintln!("         {}", text::bound_line(step));
                }
            }
        }
        Event::Isolated(r) if !quiet && (r.drain_wait_s >= 0.5 || !r.drained) => {
            eprintln!("         {}", text::isolation_line(r, plan.target.port))
        }
        Event::Isolated(_) => {}
        Event::Holding {
            index,
            value,
            duration,
        } => {
            keeper.starting(index, value);
            if let Some(d) = dashboard {
                d.step_starting(index, value, false);
            }
            if !quiet {
                eprintln!(
                    "holding {} {} for {} (+{} warm-up)",
                    search::result::value(value),
                    unit.as_str(),
                    search::hold::span(duration),
                    seconds(opts.timing.warmup.as_secs_f64())
                );
            }
        }
        Event::HoldMeasured(summary) => keeper.hold_measured(summary),
        Event::Held(hold) => {
            keeper.held(hold);
            if !quiet {
                eprintln!("hold {}", hold.headline());
            }
        }
    };
    search::search(runner, plan, opts, control, &mut on_event)
}

/// 105 when the search (or its `--hold`) was interrupted, 0 when it answered its
/// question ([`SearchResult::found`]) and, with `--hold`, the answer held; 1 otherwise.
pub fn exit_code(result: &SearchResult) -> ExitCode {
    let hold = result.hold.as_ref();
    if result.limited_by == search::LimitedBy::Interrupted || hold.is_some_and(|h| h.interrupted) {
        ExitCode::INTERRUPTED
    } else if hold.is_some_and(|h| !h.held) {
        ExitCode::FAILURE
    } else if result.found() {
        ExitCode::OK
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn parses_hold_durations() {
        use super::super::values::parse_hold;
        assert_eq!(parse_hold("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_hold("3s"), Ok(Duration::from_secs(3)));
        for bad in ["2s", "0s", "10", "ten minutes", "-5m", "", "9000h"] {
            let e = parse_hold(bad).unwrap_err().to_string();
            assert!(e.starts_with("expected a"), "{bad}: {e}");
        }
        let e = parse_hold("2s").unwrap_err().to_string();
        assert_eq!(e, "expected a hold of at least 3s, found \"2s\"");
        assert!(parse_hold("9000h")
            .unwrap_err()
            .to_string()
            .contains("at most a year"));
        let (_, opts) = prepare(&args(&["--url", "http://127.0.0.1:9/", "--hold", "90s"])).unwrap();
        assert_eq!(opts.hold, Some(Duration::from_secs(90)));
        let (_, opts) = prepare(&args(&["--url", "http://127.0.0.1:9/"])).unwrap();
        assert_eq!(opts.hold, None);
    }

    #[test]
    fn parses_percentages() {
        assert_eq!(parse_percent("5%"), Ok(0.05));
        assert_eq!(parse_percent("2.5"), Ok(0.025));
        assert!(parse_percent("0%").is_err());
        assert!(parse_percent("100").is_err());
        assert!(parse_percent("five").is_err());
    }

    fn args(extra: &[&str]) -> FindArgs {
        use clap::Parser;
        let mut argv = vec!["find"];
        argv.extend_from_slice(extra);
        /// `headroom find`'s flags alone, as the command line parses them.
        #[derive(clap::Parser)]
        struct Find {
            #[command(flatten)]
            args: FindArgs,
        }
        Find::parse_from(argv).args
    }

    #[test]
    fn defaults_thresholds_and_picks_the_model() {
        let (plan, opts) = prepare(&args(&["--url", "http://127.0.0.1:9/work"])).unwrap();
        let exprs: Vec<_> = plan.thresholds.iter().map(|t| t.expr.as_str()).collect();
        assert_eq!(exprs, DEFAULT_THRESHOLDS);
        assert_eq!(Unit::of(&plan), Unit::Rate);
        assert_eq!(opts.range.from, 10.0);
        assert_eq!(opts.range.precision, 0.05);

        let (plan, opts) = prepare(&args(&[
            "--url",
            "http://127.0.0.1:9/work",
            "--users",
            "--threshold",
            "p99 < 1s",
        ]))
        .unwrap();
        let exprs: Vec<_> = plan.thresholds.iter().map(|t| t.expr.as_str()).collect();
        // An error rule is always judged: fast failures must not pass a latency rule.
        assert_eq!(exprs, ["p99 < 1s", "errors < 1%"]);
        assert_eq!(Unit::of(&plan), Unit::Users);
        assert_eq!(opts.range.from, 1.0);

        // The user's own error rule stands alone.
        let (plan, _) = prepare(&args(&[
            "--url",
            "http://127.0.0.1:9/work",
            "--threshold",
            "p95 < 100ms",
            "--threshold",
            "errors < 5%",
        ]))
        .unwrap();
        let exprs: Vec<_> = plan.thresholds.iter().map(|t| t.expr.as_str()).collect();
        assert_eq!(exprs, ["p95 < 100ms", "errors < 5%"]);
    }

    #[test]
    fn a_flag_that_does_not_fit_the_scenarios_model_is_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        let users = dir.path().join("users.yaml");
        std::fs::write(
            &users,
            "target: http://127.0.0.1:9\nload: {model: users, users: 5, duration: 1s}\nrequests: [{path: /work}]\n",
        )
        .unwrap();
        let path = users.to_str().unwrap();
        // Sizes a pool the users share; was once silently searched as an arrival rate.
        let (plan, _) = prepare(&args(&[path, "--connections", "4"])).unwrap();
        assert_eq!(Unit::of(&plan), Unit::Users);
        assert_eq!(
            plan.client.connection,
            crate::client::ConnectionModel::Shared(Some(4))
        );
        let e = prepare(&args(&[path, "--max-in-flight", "4"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--max-in-flight"), "{e}");
        let (plan, _) = prepare(&args(&[path])).unwrap();
        assert_eq!(Unit::of(&plan), Unit::Users);
    }

    #[test]
    fn a_users_scenario_searches_users_and_a_scenario_without_load_searches_rates() {
        let dir = tempfile::tempdir().unwrap();
        let users = dir.path().join("u.yaml");
        std::fs::write(
            &users,
            "target: http://127.0.0.1:9\nload: {model: users, users: 5, duration: 1s, think: 1s}\nrequests: [{path: /work}]\n",
        )
        .unwrap();
        let (plan, _) = prepare(&args(&[users.to_str().unwrap()])).unwrap();
        assert_eq!(Unit::of(&plan), Unit::Users);

        let bare = dir.path().join("b.yaml");
        std::fs::write(
            &bare,
            "target: http://127.0.0.1:9\nrequests: [{path: /work}]\n",
        )
        .unwrap();
        let (plan, _) = prepare(&args(&[bare.to_str().unwrap()])).unwrap();
        assert_eq!(Unit::of(&plan), Unit::Rate);

        let broken = dir.path().join("x.yaml");
        std::fs::write(
            &broken,
            "target: http://127.0.0.1:9\nrequests: [{pth: /work}]\n",
        )
        .unwrap();
        let e = prepare(&args(&[broken.to_str().unwrap()]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.yaml:2"), "{e}");
    }

    #[test]
    fn reads_hooks_with_their_defaults_and_locates_a_blank_command() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("h.yaml");
        std::fs::write(
            &file,
            "target: http://127.0.0.1:9\nrequests: [{path: /}]\nhooks:\n  before_step: [\"psql -c 'VACUUM FULL'\"]\n  wait_until: {command: \"true\", interval: 250ms}\n",
        )
        .unwrap();
        let (plan, _) = prepare(&args(&[file.to_str().unwrap()])).unwrap();
        assert_eq!(plan.hooks.before_step, ["psql -c 'VACUUM FULL'"]);
        assert!(plan.hooks.after_step.is_empty());
        assert_eq!(plan.hooks.timeout, crate::plan::Hooks::DEFAULT_TIMEOUT);
        let wait = plan.hooks.wait_until.unwrap();
        assert_eq!(wait.command, "true");
        assert_eq!(wait.interval, Duration::from_millis(250));
        assert_eq!(wait.timeout, Duration::from_secs(60));

        std::fs::write(
            &file,
            "target: http://127.0.0.1:9\nrequests: [{path: /}]\nhooks:\n  after_step: [\"echo ok\", \" \"]\n",
        )
        .unwrap();
        let e = prepare(&args(&[file.to_str().unwrap()]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("h.yaml:4:") && e.contains("hooks.after_step[1]"),
            "{e}"
        );
    }

    #[test]
    fn refuses_a_bad_range() {
        let e = prepare(&args(&[
            "--url",
            "http://127.0.0.1:9/",
            "--from",
            "100",
            "--to",
            "50",
        ]));
        assert!(e.unwrap_err().to_string().contains("--to"));
    }
}
