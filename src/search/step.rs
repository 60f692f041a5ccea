//! One search step: the scenario at one constant rate (or user count), warmed up and
//! then measured, judged on the measured window alone ([`run_step`]).
//!
//! The warm-up is the first phase of the step's one engine run, as wrk2's calibration
//! period is: at its end the engine discards what it recorded and keeps everything
//! else, so the measured window starts with open connections and a warm target, and
//! nothing the warm-up measured can leak into the step's summary.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::isolation::IsolationReport;
use super::keepup::{self, KeepUp};
use crate::engine::{Control, EngineError, Observer, Runner, Step};
use crate::metrics::recorder::Recorder;
use crate::metrics::summary::Summary;
use crate::plan::{Load, Plan, Schedule};

/// What a search varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Unit {
    /// Arrival rate, requests (iterations) per second: the open model.
    #[serde(rename = "req/s")]
    Rate,
    /// Concurrent users: the closed model.
    #[serde(rename = "users")]
    Users,
}

impl Unit {
    /// What a search over `plan` varies: its load model's value.
    pub fn of(plan: &Plan) -> Unit {
        match plan.load {
            Load::ArrivalRate { .. } => Unit::Rate,
            Load::Users { .. } => Unit::Users,
        }
    }

    /// `req/s` or `users`, as printed after a value.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Rate => "req/s",
            Unit::Users => "users",
        }
    }

    /// The unit a label written by [`Unit::as_str`] (or a summary's load model)
    /// names: `users` is the closed model, anything else a rate.
    pub fn from_label(label: &str) -> Unit {
        if label == "users" {
            Unit::Users
        } else {
            Unit::Rate
        }
    }
}

/// How long each step lasts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepTiming {
    /// Load before the measured window, discarded (zero for none).
    pub warmup: Duration,
    /// The measured window.
    pub measured: Duration,
}

/// One finished step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// The rate (req/s) or user count of the step, in the search's unit.
    pub rate: f64,
    /// Every threshold held over the measured window, which completed requests and was
    /// not interrupted.
    pub passed: bool,
    /// This step re-ran the best pass to confirm it.
    pub confirmation: bool,
    /// Seconds of warm-up run before the measured window (not in `summary`).
    pub warmup_s: f64,
    /// The wait between the previous step and this one (`None` for the first step).
    pub isolation: Option<IsolationReport>,
    /// Whether the target kept up with the load (a step that did not never passes).
    #[serde(default)]
    pub keep_up: KeepUp,
    /// The measured window's summary, with its thresholds and generator self-check.
    pub summary: Summary,
}

#[cfg(test)]
impl StepRecord {
    /// A first run at `rate` measured as `summary`, with nothing else recorded (no
    /// warm-up, isolation or keep-up verdict): what the search's table tests judge.
    pub fn measured(rate: f64, passed: bool, summary: Summary) -> StepRecord {
        StepRecord {
            rate,
            passed,
            confirmation: false,
            warmup_s: 0.0,
            isolation: None,
            keep_up: KeepUp::default(),
            summary,
        }
    }
}

/// `base` with its load replaced by a constant `value` (a rate for the arrival-rate
/// model, a user count for the users model) for `duration`, keeping the model's other
/// settings (in-flight and connection caps, think time; a count of iterations is
/// dropped: a step lasts its duration).
///
/// With `workloads`, the searched one (whose own load is `None`) runs that load from
/// the step's start, and every other runs as written, fitted to the step: from its
/// `start:` to the step's end, a constant load held that long, a staged one cut there.
pub fn plan_at(base: &Plan, value: f64, duration: Duration) -> Plan {
    let schedule = Schedule::constant(value, duration);
    let load = match &base.load {
        Load::ArrivalRate { max_in_flight, .. } => Load::ArrivalRate {
            schedule,
            max_in_flight: *max_in_flight,
        },
        Load::Users { think, .. } => Load::Users {
            schedule,
            think: *think,
            // A step is measured over its window, never cut short by a count.
            iterations: None,
        },
    };
    let mut plan = Plan {
        load,
        // Every step hands out data rows and user numbers anew.
        journey: base.journey.fresh(),
        ..base.clone()
    };
    for w in &mut plan.workloads {
        match &mut w.load {
            None => w.start = Duration::ZERO,
            Some(load) => fit(load, duration.saturating_sub(w.start)),
        }
    }
    plan
}

/// A background workload's load over a step `length` long from its start: a constant
/// one held that long, a staged one cut at it.
fn fit(load: &mut Load, length: Duration) {
    let (Load::ArrivalRate { schedule, .. } | Load::Users { schedule, .. }) = load;
    let constant = matches!(schedule.stages(), [one] if one.target == schedule.start());
    *schedule = match constant {
        true => Schedule::constant(schedule.start(), length),
        false => schedule.until(length),
    };
}

/// The plan of search step `step` over `base`: its constant value for the warm-up and
/// the measured window, the warm-up discarded.
pub fn step_plan(base: &Plan, step: Step) -> Plan {
    let mut plan = plan_at(base, step.value, step.warmup + step.measured);
    plan.warmup = step.warmup;
    plan
}

/// Runs the step at `value`: the warm-up, then the measured window, in one engine run
/// that tells `observer` when the window begins and of each of its seconds. Returns
/// the window's record (its `isolation` left `None` for the caller to fill) with its
/// exact histograms. Errors only when the run cannot be carried out at all; failed
/// requests are part of the record.
pub fn run_step(
    runner: &mut dyn Runner,
    base: &Plan,
    value: f64,
    timing: StepTiming,
    control: &Control,
    observer: &mut dyn Observer,
) -> Result<(StepRecord, Recorder), EngineError> {
    let step = Step {
        value,
        warmup: timing.warmup,
        measured: timing.measured,
    };
    let outcome = runner.run(
        Arc::new(step_plan(base, step)),
        Some(step),
        control,
        observer,
    )?;
    if let Some(lost) = outcome.lost {
        // A step missing a shard's share measured less load than it claims.
        return Err(EngineError::Shard(lost));
    }
    let summary = outcome.summary;
    let record = StepRecord {
        rate: value,
        passed: passed(&summary),
        confirmation: false,
        warmup_s: timing.warmup.as_secs_f64(),
        isolation: None,
        keep_up: keepup::judge(&summary),
        summary,
    };
    Ok((record, outcome.recorder))
}

/// A step passes when it completed requests, ran its whole window, every threshold
/// held, and the target kept up ([`keepup::judge`]).
pub fn passed(summary: &Summary) -> bool {
    summary.requests > 0
        && !summary.interrupted
        && summary.thresholds.iter().all(|t| t.ok)
        && keepup::judge(summary).kept_up()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Think;
    use crate::scenario::{self, Overrides};

    fn base(users: bool) -> Plan {
        let overrides = Overrides {
            url: Some("http://127.0.0.1:9/work".into()),
            rate: (!users).then_some(10.0),
            users: users.then_some(1),
            max_in_flight: (!users).then_some(77),
            ..Overrides::default()
        };
        scenario::load(None, &overrides).unwrap()
    }

    #[test]
    fn a_step_plan_holds_one_value_and_keeps_the_models_settings() {
        let p = plan_at(&base(false), 800.0, Duration::from_secs(3));
        let Load::ArrivalRate {
            schedule,
            max_in_flight,
            ..
        } = &p.load
        else {
            panic!("{:?}", p.load)
        };
        assert_eq!(*schedule, Schedule::constant(800.0, Duration::from_secs(3)));
        assert_eq!(*max_in_flight, 77);
        assert_eq!(p.duration(), Duration::from_secs(3));
        assert_eq!(Unit::of(&p), Unit::Rate);

        let u = plan_at(&base(true), 12.0, Duration::from_secs(2));
        let Load::Users {
            schedule, think, ..
        } = &u.load
        else {
            panic!("{:?}", u.load)
        };
        assert_eq!(schedule.peak(), 12.0);
        assert_eq!(*think, Think::None);
        assert_eq!(Unit::of(&u), Unit::Users);
    }

    #[test]
    fn a_step_varies_the_searched_workload_and_fits_the_others_to_it() {
        let text = "target: http://127.0.0.1:9\nworkloads:
  - {name: api, load: {rate: 10, duration: 30s}, start: 5s, requests: [{name: a, path: /}]}
  - {name: steady, load: {users: 3, duration: 30s}, start: 1s, requests: [{name: b, path: /}]}
  - {name: ramp, load: {stages: [{duration: 2s, target: 100}, {duration: 9s, target: 100}]}, requests: [{name: c, path: /}]}
";
        let setup = scenario::Setup {
            scenario: Some(scenario::ScenarioText {
                file: "s.yaml".into(),
                text: text.into(),
            }),
            overrides: Overrides {
                fallback_rate: Some(1.0),
                workload: Some("api".into()),
                ..Overrides::default()
            },
            purpose: scenario::Purpose::Search,
            setup_values: Default::default(),
        };
        let base = setup.plan().unwrap();
        let p = plan_at(&base, 40.0, Duration::from_secs(3));
        // The searched workload runs the step's load from the step's start.
        assert!(p.workloads[0].load.is_none() && p.workloads[0].start.is_zero());
        assert_eq!(
            p.load.schedule(),
            &Schedule::constant(40.0, Duration::from_secs(3))
        );
        // A constant one is held from its start to the step's end; stages are cut.
        let steady = p.load_of(&p.workloads[1]);
        assert_eq!(
            steady.schedule(),
            &Schedule::constant(3.0, Duration::from_secs(2))
        );
        let ramp = p.load_of(&p.workloads[2]).schedule();
        assert_eq!(
            (ramp.duration(), ramp.peak()),
            (Duration::from_secs(3), 100.0)
        );
        assert_eq!(p.duration(), Duration::from_secs(3));
    }

    #[test]
    fn a_step_passes_only_with_requests_all_thresholds_and_a_whole_window() {
        use crate::metrics::summary::ThresholdResult;
        let mut s = Summary {
            requests: 10,
            thresholds: vec![ThresholdResult {
                expr: "p95 < 1s".into(),
                ok: true,
                value: 1.0,
                window: None,
            }],
            ..Summary::empty("t", 1.0)
        };
        assert!(passed(&s));
        s.thresholds[0].ok = false;
        assert!(!passed(&s));
        s.thresholds[0].ok = true;
        s.interrupted = true;
        assert!(!passed(&s));
        s.interrupted = false;
        s.requests = 0;
        assert!(!passed(&s));
        // Thresholds held, but the target served 900 of 1000 scheduled per second.
        s.requests = 900;
        s.rate.offered = 1000.0;
        s.rate.achieved = 900.0;
        assert!(!passed(&s));
    }
}
