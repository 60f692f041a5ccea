//! [`search`]: the loop that asks the [`Strategy`] for the next value, isolates, runs
//! hooks and the step, and turns the way it ended into a [`SearchResult`].
//!
//! Per step, in order: isolation from the previous step (cooldown, wait for ports),
//! `before_step` hooks, `wait_until`, warm-up, measured window, `after_step` hooks. A
//! failing hook, an engine error or Ctrl-C ends the search; so does a generator-bound
//! step, once it is bound again when re-run (a busy moment on a shared machine can
//! bind one short step). The steps done so far are kept in the result.
//!
//! With `--hold D` and an answer, the answer is then run for D like one more step
//! (isolation, hooks with `HEADROOM_HOLD=1`, warm-up, a measured window of D) and
//! [`super::hold::judge`] says whether it held; Ctrl-C during it keeps the answer.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::conclude::{conclude, End};
use super::estimate::boundary;
use super::hold::{self, Hold};
use super::hooks::{run_hook, wait_until, HookError};
use super::interval::CeilingInterval;
use super::isolation::{between_steps, ports, IsolationOptions, IsolationReport, NextStep};
use super::keepup::RATE_TOLERANCE;
use super::result::SearchResult;
use super::step::{run_step, StepRecord, StepTiming, Unit};
use super::strategy::{Next, Order, Probing, Range, Strategy};
use super::trend::Thirds;
use super::trials::Trials;
use crate::engine::{Control, Live, Observer, Runner};
use crate::metrics::recorder::Recorder;
use crate::metrics::summary::Summary;
use crate::plan::Plan;

/// Everything a search needs besides the plan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchOptions {
    /// Values to try and the precision to stop at.
    pub range: Range,
    /// Warm-up and measured window of each step.
    pub timing: StepTiming,
    /// Rest between steps.
    pub isolation: IsolationOptions,
    /// `--hold`: run the answer for this long once found (`None`: no hold).
    pub hold: Option<Duration>,
    /// `--trials` and `--allow-failed-trials`: how the boundary loads are decided.
    pub trials: Trials,
    /// `--strategy`: estimates or plain bisection.
    pub order: Order,
}

/// Progress of a search, for live output.
#[derive(Debug)]
pub enum Event<'a> {
    /// The wait before a step is over.
    Isolated(&'a IsolationReport),
    /// A step is about to start (1-based `index`).
    Starting {
        /// Step number, from 1.
        index: usize,
        /// Rate or user count.
        value: f64,
        /// True when re-running the best pass.
        confirm: bool,
    },
    /// The warm-up of step `index` is over and its measured window starts now.
    Measuring {
        /// Step number, from 1.
        index: usize,
        /// Rate or user count.
        value: f64,
    },
    /// Step `index`'s measured window is over: its record, which the listener may
    /// complete (say, with watch summaries in `step.summary.watches`), and its exact
    /// histograms. [`Event::Finished`] follows once the step's hooks ran.
    Measured {
        /// Step number, from 1.
        index: usize,
        /// The step's record so far.
        step: &'a mut StepRecord,
        /// The measured window's histograms.
        recorder: &'a Recorder,
    },
    /// A second of a step's measured window completed.
    Second(&'a Live),
    /// A step finished (1-based `index`).
    Finished(usize, &'a StepRecord),
    /// The hold of the answer is about to start (its warm-up first); [`Event::Measuring`]
    /// and [`Event::Second`] follow as for a step.
    Holding {
        /// The hold's number in the run's order (one past the last step).
        index: usize,
        /// The value held: the ceiling.
        value: f64,
        /// How long it is held (the measured window).
        duration: Duration,
    },
    /// The hold's measured window is over: its summary, which the listener may complete
    /// (watches) before it is judged. [`Event::Held`] follows.
    HoldMeasured(&'a mut Summary),
    /// The hold was judged (or could not run).
    Held(&'a Hold),
}

/// Turns the engine's news of one step into search events.
struct StepObserver<'e> {
    on_event: &'e mut dyn FnMut(Event<'_>),
    index: usize,
    value: f64,
    warm: bool,
    /// Each second's histogram, kept for a hold's latency trend.
    thirds: Option<Thirds>,
}

impl Observer for StepObserver<'_> {
    fn second(&mut self, live: &Live) {
        if let Some(thirds) = self.thirds.as_mut() {
            thirds.second(live);
        }
        (self.on_event)(Event::Second(live));
    }

    fn measuring(&mut self) {
        (self.on_event)(Event::Measuring {
            index: self.index,
            value: self.value,
        });
    }
}

/// Searches for the ceiling of `base` (its thresholds judge each step; its load model
/// says whether rates or user counts are searched). Never fails: errors end the search
/// and are reported in the result, with `limited_by: error`. Safe to stop from another
/// thread through `control`.
pub fn search(
    runner: &mut dyn Runner,
    base: &Plan,
    opts: &SearchOptions,
    control: &Control,
    on_event: &mut dyn FnMut(Event<'_>),
) -> SearchResult {
    let started = Instant::now();
    let unit = Unit::of(base);
    let probing = match (opts.order, unit) {
        (Order::Bisect, _) => Probing::Bisect,
        // An open-model step may fall RATE_TOLERANCE behind and still pass: the probe
        // above an estimate must offer more than the estimate divided by what passes.
        (Order::Estimate, Unit::Rate) => Probing::Estimates {
            overshoot: RATE_TOLERANCE / (1.0 - RATE_TOLERANCE),
        },
        (Order::Estimate, Unit::Users) => Probing::Estimates { overshoot: 0.0 },
    };
    let mut strategy = Strategy::new(opts.range, opts.trials, probing);
    let mut steps: Vec<StepRecord> = Vec::new();
    // The value of a generator-bound step being re-run, if any.
    let mut rerun_bound: Option<f64> = None;
    let addr = target_addr(base);
    let end = loop {
        if control.is_stopped() {
            break End::Interrupted;
        }
        let (value, confirm) = match strategy.next() {
            Next::Run { value, confirm } => (value, confirm),
            Next::Done(c) => break End::Strategy(c),
        };
        let isolation = (!steps.is_empty()).then(|| {
            let next = NextStep {
                addr,
                port: base.target.port,
                ports_needed: ports::needed(base, value, steps.last().map(|s| &s.summary)),
            };
            let r = between_steps(&opts.isolation, &next, control);
            on_event(Event::Isolated(&r));
            r
        });
        let index = steps.len() + 1;
        let mut env = step_env(index, value, unit);
        if let Err(e) = before(base, &env, control) {
            break hook_end(e, control);
        }
        on_event(Event::Starting {
            index,
            value,
            confirm,
        });
        let measured = {
            let mut observer = StepObserver {
                on_event: &mut *on_event,
                index,
                value,
                warm: !opts.timing.warmup.is_zero(),
                thirds: None,
            };
            if !observer.warm {
                observer.measuring();
            }
            run_step(runner, base, value, opts.timing, control, &mut observer)
        };
        let (mut step, recorder) = match measured {
            Ok(measured) => measured,
            Err(e) => break End::Error(format!("step {index} could not run: {e}")),
        };
        step.confirmation = confirm;
        step.isolation = isolation;
        on_event(Event::Measured {
            index,
            step: &mut step,
            recorder: &recorder,
        });
        env.push((
            "HEADROOM_STEP_PASSED".into(),
            u8::from(step.passed).to_string(),
        ));
        // A generator-bound step does not count: the search runs it again (below), and
        // a hook that acts per counted step (a fault injected on the second one) needs
        // to tell the two apart.
        env.push((
            "HEADROOM_STEP_GENERATOR_BOUND".into(),
            u8::from(step.summary.generator.bound).to_string(),
        ));
        let after = after(base, &env, control);
        let (passed, bound, interrupted) = (
            step.passed,
            step.summary.generator.bound,
            step.summary.interrupted,
        );
        let estimate = boundary(&step, unit, opts.range.precision);
        on_event(Event::Finished(index, &step));
        steps.push(step);
        if interrupted || control.is_stopped() {
            break End::Interrupted;
        }
        if let Err(e) = after {
            break hook_end(e, control);
        }
        if bound {
            if rerun_bound == Some(value) {
                break End::Generator;
            }
            // The strategy has not heard of this step, so it asks for the same one again.
            rerun_bound = Some(value);
            continue;
        }
        rerun_bound = None;
        strategy.record_measured(value, passed, estimate);
    };
    let interval = match end {
        End::Strategy(c) => CeilingInterval::of(&strategy, c),
        _ => None,
    };
    let mut result = conclude(end, unit, steps, interval, started.elapsed());
    if let Some(duration) = opts
        .hold
        .filter(|_| result.found() && !control.is_stopped())
    {
        let hold = hold_answer(runner, base, &result, opts, duration, control, on_event);
        result.conclusion = format!("{} {}", result.conclusion, hold.sentence(unit));
        // `duration_s` stays the search's own: the time to the answer, not the hold's.
        result.hold = Some(hold);
    }
    result
}

/// Where the steps connect, for the isolation's port count (the engine resolves the
/// name again for each step and reports a failure there).
fn target_addr(base: &Plan) -> Option<SocketAddr> {
    (base.target.host.as_str(), base.target.port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
}

/// The hooks' environment for step `index` (from 1) at `value`.
fn step_env(index: usize, value: f64, unit: Unit) -> Vec<(String, String)> {
    vec![
        ("HEADROOM_STEP".to_string(), index.to_string()),
        (
            "HEADROOM_STEP_VALUE".to_string(),
            super::words::value(value),
        ),
        ("HEADROOM_STEP_UNIT".to_string(), unit.as_str().to_string()),
    ]
}

/// Runs the answer of `result` (its ceiling) for `duration` as one more step: isolation,
/// hooks (with `HEADROOM_HOLD=1`), the search's warm-up, then a measured window of
/// `duration`, judged by [`hold::judge`]. A hook that fails, or an engine that cannot
/// run it, makes a hold that did not hold, saying why.
fn hold_answer(
    runner: &mut dyn Runner,
    base: &Plan,
    result: &SearchResult,
    opts: &SearchOptions,
    duration: Duration,
    control: &Control,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Hold {
    let value = result.ceiling.expect("only a found ceiling is held");
    let index = result.steps.len() + 1;
    let not_run = |reason: String| hold::not_run(&base.name, value, duration, reason);
    let next = NextStep {
        addr: target_addr(base),
        port: base.target.port,
        ports_needed: ports::needed(base, value, result.steps.last().map(|s| &s.summary)),
    };
    let isolation = between_steps(&opts.isolation, &next, control);
    on_event(Event::Isolated(&isolation));
    let mut env = step_env(index, value, result.unit);
    env.push(("HEADROOM_HOLD".into(), "1".into()));
    if let Err(e) = before(base, &env, control) {
        let hold = not_run(format!("{e}; the hold did not run"));
        on_event(Event::Held(&hold));
        return hold;
    }
    on_event(Event::Holding {
        index,
        value,
        duration,
    });
    let timing = StepTiming {
        warmup: opts.timing.warmup,
        measured: duration,
    };
    let mut observer = StepObserver {
        on_event: &mut *on_event,
        index,
        value,
        warm: !timing.warmup.is_zero(),
        thirds: Some(Thirds::default()),
    };
    if !observer.warm {
        observer.measuring();
    }
    let measured = run_step(runner, base, value, timing, control, &mut observer);
    let thirds = observer.thirds.take().unwrap_or_default();
    let mut summary = match measured {
        Ok((step, _)) => step.summary,
        Err(e) => {
            let hold = not_run(format!("the hold could not run: {e}"));
            on_event(Event::Held(&hold));
            return hold;
        }
    };
    on_event(Event::HoldMeasured(&mut summary));
    let trend = thirds.trend(duration.as_secs_f64());
    let mut hold = hold::judge(value, duration, summary, trend);
    env.push((
        "HEADROOM_STEP_PASSED".into(),
        u8::from(hold.held).to_string(),
    ));
    if let Err(e) = after(base, &env, control) {
        if !control.is_stopped() {
            // The figures stand; the hook's failure is reported with them.
            let reason = hold.reason.take().map_or(String::new(), |r| r + ", ");
            hold.reason = Some(format!("{reason}{e}"));
            hold.held = false;
        }
    }
    on_event(Event::Held(&hold));
    hold
}

fn before(base: &Plan, env: &[(String, String)], control: &Control) -> Result<(), HookError> {
    let hooks = &base.hooks;
    for (i, command) in hooks.before_step.iter().enumerate() {
        let name = format!("hooks.before_step[{i}]");
        run_hook(&name, command, env, hooks.timeout, control)?;
    }
    if let Some(wait) = &hooks.wait_until {
        wait_until(wait, env, control)?;
    }
    Ok(())
}

fn after(base: &Plan, env: &[(String, String)], control: &Control) -> Result<(), HookError> {
    let hooks = &base.hooks;
    for (i, command) in hooks.after_step.iter().enumerate() {
        let name = format!("hooks.after_step[{i}]");
        run_hook(&name, command, env, hooks.timeout, control)?;
    }
    Ok(())
}

fn hook_end(e: HookError, control: &Control) -> End {
    if control.is_stopped() {
        End::Interrupted
    } else {
        End::Error(format!("{e}; the search stopped"))
    }
}
