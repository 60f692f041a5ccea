//! What `headroom find` does around each step besides running it: starts the watches
//! when a measured window begins and puts their summaries in that step's summary, and
//! records the search in the run store (a row at the start, each step as it completes,
//! and at the end the best passing step's summary and histograms, or why none passed;
//! a `--hold` is recorded beside the steps).

use std::sync::Arc;
use std::time::Duration;

use crate::engine::Live;
use crate::metrics::recorder::Recorder;
use crate::metrics::summary::{Partial, PartialStep, Summary};
use crate::search::{Hold, LimitedBy, SearchResult, StepRecord};
use crate::store::{RunWriter, StoreError};
use crate::watch::{LiveWatches, WatchError, Watches};

/// The watches to run around each measured window: specs and sampling interval.
#[derive(Debug, Clone)]
pub struct WatchPlan {
    /// Watch specs (`pid:N`, `docker:NAME`, ...); empty for none besides the generator.
    pub specs: Vec<String>,
    /// How often they sample.
    pub interval: Duration,
    /// What an `https://` Prometheus endpoint is trusted by (`None`: Mozilla's roots).
    pub tls: Option<Arc<rustls::ClientConfig>>,
}

impl Default for WatchPlan {
    /// The generator alone, sampled every second (`--watch-interval`'s default).
    fn default() -> Self {
        WatchPlan {
            specs: Vec::new(),
            interval: Duration::from_secs(1),
            tls: None,
        }
    }
}

impl WatchPlan {
    /// Starts the watches once and stops them at once, so a spec that cannot start
    /// is reported as bad input before any load is sent.
    pub fn check(&self) -> Result<(), WatchError> {
        Watches::start(&self.specs, self.interval, self.tls.clone())?.finish(None);
        Ok(())
    }
}

/// The best passing step seen so far: its value, summary and histograms.
#[derive(Debug)]
struct Best {
    rate: f64,
    summary: Summary,
    recorder: Recorder,
}

/// Follows one search step by step: watches each measured window and records it.
pub struct StepKeeper<'s> {
    watch: WatchPlan,
    running: Option<Watches>,
    writer: Option<RunWriter<'s>>,
    best: Option<Best>,
    warned: bool,
    /// The step running now (from 0) and its load, for its summary so far.
    current: Option<PartialStep>,
}

impl<'s> StepKeeper<'s> {
    /// A keeper that runs `watch` around each measured window and, with a `writer`
    /// (from [`Store::begin_run`](crate::store::Store::begin_run)), records into it.
    pub fn new(watch: WatchPlan, writer: Option<RunWriter<'s>>) -> StepKeeper<'s> {
        StepKeeper {
            watch,
            running: None,
            writer,
            best: None,
            warned: false,
            current: None,
        }
    }

    /// A step (`index` from 1), or the hold, starts at `value`.
    pub fn starting(&mut self, index: usize, value: f64) {
        self.current = Some(PartialStep {
            index: index.saturating_sub(1) as u32,
            value,
        });
    }

    /// A second of the running step completed: store what the step measured so far,
    /// so a search killed now keeps it beside the steps it completed.
    pub fn second(&mut self, live: &Live) {
        let (Some(writer), Some(checkpoint)) = (self.writer.as_mut(), &live.checkpoint) else {
            return;
        };
        let mut summary = Summary::clone(checkpoint);
        if let Some(partial) = summary.partial.as_mut() {
            partial.step = self.current;
        }
        let stored = writer.step_so_far(&summary);
        warn_once(&mut self.warned, stored);
    }

    /// The id of the run being recorded, if any.
    pub fn run_id(&self) -> Option<i64> {
        self.writer.as_ref().map(RunWriter::id)
    }

    /// The newest samples of the watches running now (`None` between windows).
    pub fn live_watches(&self) -> Option<LiveWatches> {
        self.running.as_ref().map(Watches::live)
    }

    /// A measured window starts: start the watches. One that cannot start now (it did
    /// at [`WatchPlan::check`]) costs a warning, not the search.
    pub fn measuring(&mut self) {
        match Watches::start(
            &self.watch.specs,
            self.watch.interval,
            self.watch.tls.clone(),
        ) {
            Ok(watches) => self.running = Some(watches),
            Err(e) => eprintln!("warning: {e}; this step has no watches"),
        }
    }

    /// A measured window ended: stop the watches into `step.summary.watches`, store the
    /// step (`index` from 1) and remember it when it is the best pass so far.
    pub fn measured(&mut self, index: usize, step: &mut StepRecord, recorder: &Recorder) {
        if let Some(watches) = self.running.take() {
            step.summary.watches = watches.finish(Some(&step.summary));
        }
        if let Some(writer) = self.writer.as_mut() {
            let stored = writer.step(
                index.saturating_sub(1) as u32,
                step.rate,
                step.passed,
                &step.summary,
            );
            warn_once(&mut self.warned, stored);
            // Killed before the next step's first second, the search reads as this
            // step, whole, and the steps before it.
            let mut whole = step.summary.clone();
            let seconds = step.summary.timeline.len() as u64;
            whole.partial = Some(Partial {
                seconds,
                last_second: seconds.saturating_sub(1),
                step: self.current,
            });
            let stored = writer.step_so_far(&whole);
            warn_once(&mut self.warned, stored);
        }
        let better = self.best.as_ref().is_none_or(|b| step.rate >= b.rate);
        if step.passed && !step.summary.generator.bound && better {
            self.best = Some(Best {
                rate: step.rate,
                summary: step.summary.clone(),
                recorder: recorder.clone(),
            });
        }
    }

    /// The hold's measured window ended: stop the watches into its `summary`.
    pub fn hold_measured(&mut self, summary: &mut Summary) {
        if let Some(watches) = self.running.take() {
            summary.watches = watches.finish(Some(&*summary));
        }
    }

    /// The hold was judged: record it beside the steps.
    pub fn held(&mut self, hold: &Hold) {
        if let Some(writer) = self.writer.as_mut() {
            let json = serde_json::to_value(hold).expect("a hold always serializes");
            let stored = writer.hold(hold.value, hold.held, &json);
            warn_once(&mut self.warned, stored);
        }
    }

    /// Ends the record: the best passing step's summary and histograms
    /// (`names[i]` names `recorder.by_name[i]`), or `failed` with the result's
    /// conclusion when no step passed; `interrupted` either way when the search was
    /// stopped. Returns the run id when it was recorded.
    pub fn finish(mut self, result: &SearchResult, names: &[String]) -> Option<i64> {
        if let Some(watches) = self.running.take() {
            watches.finish(None);
        }
        let writer = self.writer?;
        let id = writer.id();
        // A stopped search is recorded as `interrupted` (its best step so far kept),
        // not `done` or `failed`: it did not answer its question.
        let interrupted = result.limited_by == LimitedBy::Interrupted;
        let ended = match (self.best, interrupted) {
            (Some(best), false) => writer.finish(&best.summary, &best.recorder, names),
            (Some(best), true) => writer.finish_interrupted(&best.summary, &best.recorder, names),
            (None, false) => writer.fail(&result.conclusion),
            (None, true) => writer.interrupt(&result.conclusion),
        };
        match ended {
            Ok(()) => Some(id),
            Err(e) => {
                eprintln!("warning: {e}");
                None
            }
        }
    }
}

fn warn_once(warned: &mut bool, result: Result<(), StoreError>) {
    if let Err(e) = result {
        if !std::mem::replace(warned, true) {
            eprintln!("warning: {e}");
        }
    }
}
