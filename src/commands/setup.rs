//! The two stages of `run` and `find`, as ripgrep's `LowArgs` → `HiArgs`: clap's flags
//! ([`RunArgs`], [`FindArgs`]) become a [`Setup`] (the scenario's text, read here once,
//! and the [`Overrides`]) with no other I/O; the plan is compiled from that `Setup` by
//! [`Setup::plan`], the one function a shard also builds its plan with, from the
//! coordinator's `Setup` (see ARCHITECTURE.md, "The path of a `run`").

use std::path::Path;

use crate::convert::{fronts, ConvertError};
use crate::plan::Plan;
use crate::scenario::{Overrides, Purpose, ScenarioText, Setup};
use crate::search::{IsolationOptions, Order, Range, SearchOptions, StepTiming, Trials, Unit};

use super::args::{FindArgs, RunArgs};
use super::common;
use super::error::CommandError;

/// `headroom run`'s setup: `--rate`, `--users` and `--duration` on top of the shared
/// flags, and the scenario file's text.
pub fn run(args: &RunArgs) -> Result<Setup, CommandError> {
    let overrides = Overrides {
        rate: args.rate,
        users: args.users,
        duration: args.duration,
        ..common::overrides(args.url.as_deref(), &args.common)?
    };
    Ok(Setup {
        scenario: read(args.scenario.as_deref(), args.common.strict)?,
        overrides,
        purpose: Purpose::Run,
        setup_values: Vec::new(),
    })
}

/// `headroom check`'s setup: the scenario file alone, with no flag on top, for a run:
/// the very [`Setup`] `headroom run SCENARIO` builds, so `check` compiles the plan
/// `run` would (and fails with `run`'s errors).
pub fn check(scenario: &Path) -> Result<Setup, CommandError> {
    Ok(Setup {
        scenario: read(Some(scenario), false)?,
        overrides: Overrides::default(),
        purpose: Purpose::Run,
        setup_values: Vec::new(),
    })
}

/// `headroom find`'s setup: the plan's [`Setup`] and the search's own flags, whose
/// range defaults depend on the compiled plan's model ([`FindSetup::compile`]).
#[derive(Debug, Clone)]
pub struct FindSetup {
    /// What the plan is compiled from (also what shards receive).
    pub setup: Setup,
    /// `--from`, when given.
    pub from: Option<f64>,
    /// `--to`, when given.
    pub to: Option<f64>,
    /// `--precision`, as a fraction.
    pub precision: f64,
    /// `--warmup` and `--step-duration`.
    pub timing: StepTiming,
    /// `--cooldown`, `--wait-ports`, `--time-wait-limit`, `--drain-timeout`.
    pub isolation: IsolationOptions,
    /// `--hold`, when given.
    pub hold: Option<std::time::Duration>,
    /// `--trials` and `--allow-failed-trials`.
    pub trials: Trials,
    /// `--strategy`.
    pub order: Order,
}

/// `headroom find`'s setup from its flags.
pub fn find(args: &FindArgs) -> Result<FindSetup, CommandError> {
    let mut overrides = common::overrides(args.url.as_deref(), &args.common)?;
    // The model is decided once: `--users` asks for users; otherwise the scenario's
    // `load` section decides, and only a scenario without one (or no scenario) is
    // searched by arrival rate. The search sets each step's value itself, so these
    // values only pick the model. A flag that does not fit the model is bad input.
    if args.users {
        overrides.users = Some(1);
    } else {
        overrides.fallback_rate = Some(1.0);
    }
    overrides.workload = args.workload.clone();
    let setup = Setup {
        scenario: read(args.scenario.as_deref(), args.common.strict)?,
        overrides,
        purpose: Purpose::Search,
        setup_values: Vec::new(),
    };
    Ok(FindSetup {
        setup,
        from: args.from,
        to: args.to,
        precision: args.precision,
        timing: StepTiming {
            warmup: args.warmup,
            measured: args.step_duration,
        },
        isolation: IsolationOptions {
            cooldown: args.cooldown,
            ports: args.wait_ports,
            time_wait_limit: args.time_wait_limit,
            drain_timeout: args.drain_timeout,
            ..IsolationOptions::default()
        },
        hold: args.hold,
        trials: Trials {
            per_load: args.trials,
            allowed_failures: args.allow_failed_trials,
        },
        order: args.strategy,
    })
}

impl FindSetup {
    /// The plan (with a search's thresholds) and the search options; the range's
    /// defaults follow the plan's model. Errors are bad input.
    pub fn compile(&self) -> Result<(Plan, SearchOptions), CommandError> {
        let plan = self.setup.plan()?;
        let unit = Unit::of(&plan);
        let range = Range {
            from: self.from.unwrap_or(match unit {
                Unit::Rate => 10.0,
                Unit::Users => 1.0,
            }),
            to: self.to.unwrap_or(match unit {
                Unit::Rate => 1_000_000.0,
                Unit::Users => 100_000.0,
            }),
            precision: self.precision,
        };
        range
            .validate()
            .map_err(|e| CommandError::Range(e.into()))?;
        self.trials
            .validate()
            .map_err(|e| CommandError::Range(e.into()))?;
        if self.timing.measured < std::time::Duration::from_millis(500) {
            return Err(CommandError::Flag {
                flag: "--step-duration",
                reason: "expected at least 500ms",
            });
        }
        let opts = SearchOptions {
            range,
            timing: self.timing,
            isolation: self.isolation,
            hold: self.hold,
            trials: self.trials,
            order: self.order,
        };
        Ok((plan, opts))
    }
}

/// The scenario file's text, when there is a file; a k6 script is converted here, in
/// memory, and the rest of the run reads the scenario it became (shards too: they
/// receive the scenario's text, never the script).
fn read(path: Option<&Path>, strict: bool) -> Result<Option<ScenarioText>, CommandError> {
    match path {
        Some(script) if fronts::is_k6_script(script) => Ok(Some(k6_scenario(script, strict)?)),
        _ => Ok(path.map(ScenarioText::read).transpose()?),
    }
}

/// A k6 script's scenario. The report's closing line is printed first, so the user
/// knows what the numbers that follow measure; with `strict`, a left-out construct
/// stops here (bad input).
fn k6_scenario(script: &Path, strict: bool) -> Result<ScenarioText, CommandError> {
    let converted = fronts::k6(script, &[], None)?;
    let shown = script.display();
    eprintln!(
        "k6 script {shown}: {} (`headroom convert k6 {shown}` lists each)",
        converted.report.summary()
    );
    if strict {
        converted
            .strict(&shown.to_string())
            .map_err(ConvertError::from)?;
    }
    // Named after the script, so a message points at it; its directory is the
    // script's, so a data file it opens resolves as the script wrote it.
    Ok(ScenarioText {
        file: format!("{shown} (converted from k6)"),
        text: converted.yaml,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_args(argv: &[&str]) -> RunArgs {
        use clap::Parser;
        /// `headroom run`'s flags alone, as the command line parses them.
        #[derive(clap::Parser)]
        struct Run {
            #[command(flatten)]
            args: RunArgs,
        }
        Run::parse_from(std::iter::once("run").chain(argv.iter().copied())).args
    }

    fn find_args(argv: &[&str]) -> FindArgs {
        use clap::Parser;
        /// `headroom find`'s flags alone, as the command line parses them.
        #[derive(clap::Parser)]
        struct Find {
            #[command(flatten)]
            args: FindArgs,
        }
        Find::parse_from(std::iter::once("find").chain(argv.iter().copied())).args
    }

    /// What a shard compares: the plan's shape, as its `Debug` says it (a plan holds
    /// compiled templates, which have no equality of their own).
    fn shape(plan: &Plan) -> String {
        format!("{plan:?}")
    }

    #[test]
    fn a_setup_round_trips_through_json_and_compiles_to_the_same_plan() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.yaml");
        std::fs::write(
            &file,
            "target: http://127.0.0.1:9\nload: {rate: 50, duration: 2s}\nrequests: [{path: /work, headers: {x-a: b}}]\nthresholds: [\"p99 < 1s\"]\n",
        )
        .unwrap();
        let path = file.to_str().unwrap();
        let cases = [
            run(&run_args(&[
                path,
                "--rate",
                "20",
                "--threshold",
                "p95 < 9ms",
            ]))
            .unwrap(),
            run(&run_args(&[
                "--url",
                "http://127.0.0.1:9/x?q=1",
                "--users",
                "3",
                "--duration",
                "5s",
                "-H",
                "x-k: v",
                "--json",
                "{\"a\": 1}",
                "--resolve",
                "example.com:80:127.0.0.1",
                "--connection",
                "shared:4",
                "--timeout",
                "2s",
                "--threads",
                "2",
            ]))
            .unwrap(),
            find(&find_args(&[path, "--users", "--step-duration", "1s"]))
                .unwrap()
                .setup,
            find(&find_args(&["--url", "http://127.0.0.1:9/"]))
                .unwrap()
                .setup,
        ];
        for setup in cases {
            let json = serde_json::to_string(&setup).unwrap();
            let back: Setup = serde_json::from_str(&json).unwrap();
            assert_eq!(back, setup);
            assert_eq!(shape(&back.plan().unwrap()), shape(&setup.plan().unwrap()));
        }
    }

    #[test]
    fn the_direct_path_and_the_setup_agree() {
        let (plan, _) = find(&find_args(&["--url", "http://127.0.0.1:9/"]))
            .unwrap()
            .compile()
            .unwrap();
        let exprs: Vec<_> = plan.thresholds.iter().map(|t| t.expr.as_str()).collect();
        assert_eq!(exprs, crate::scenario::DEFAULT_THRESHOLDS);
        let setup = run(&run_args(&["--url", "http://127.0.0.1:9/", "--rate", "5"])).unwrap();
        let direct = crate::scenario::load(None, &setup.overrides).unwrap();
        assert_eq!(shape(&setup.plan().unwrap()), shape(&direct));
    }

    #[test]
    fn check_builds_the_setup_run_builds_with_no_flags() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.yaml");
        std::fs::write(
            &file,
            "target: http://127.0.0.1:9\nload: {rate: 5, duration: 1s}\nrequests: [{path: /}]\n",
        )
        .unwrap();
        let path = file.to_str().unwrap();
        assert_eq!(check(&file).unwrap(), run(&run_args(&[path])).unwrap());
    }

    #[test]
    fn an_unreadable_scenario_is_named() {
        let e = run(&run_args(&["/no/such/scenario.yaml"]))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/no/such/scenario.yaml: "), "{e}");
    }
}
