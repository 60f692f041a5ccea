//! The [`Sampler`] contract every watch kind implements, and [`Watched`]: a sampler
//! with its spec and the gap bookkeeping that turns failed samples into [`Gap`]s.

use super::error::ProbeError;
use super::live::{LiveSample, LiveWatch};
use super::summary::{Detail, Gap, WatchSummary};

/// What the watches read of a finished run: the engine's own verdict on the generator
/// and its per-second scheduling lag. The run summary implements it (in the metrics
/// layer, which holds the watches' summaries), so the watches never name it.
pub trait RunView {
    /// The largest scheduling lag in engine second `t` (0-based), ms, if the run had it.
    fn lag_in_second(&self, t: u64) -> Option<f64>;
    /// The largest scheduling lag of any second of the run, ms.
    fn timeline_max_lag_ms(&self) -> f64;
    /// The engine's verdict on the generator.
    fn generator_verdict(&self) -> GeneratorVerdict;
}

/// The engine's verdict on the generator, as the generator watch repeats it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GeneratorVerdict {
    /// The generator, not the target, limited the result.
    pub bound: bool,
    /// Why, in words (empty when not bound).
    pub reason: String,
    /// The largest scheduling lag the engine saw, ms.
    pub max_lag_ms: f64,
}

/// What a finished sampler hands back.
#[derive(Debug)]
pub(crate) struct Finished {
    /// The kind's figures and samples.
    pub(crate) detail: Detail,
    /// Findings that deserve attention.
    pub(crate) warnings: Vec<String>,
    /// What could not be measured and why.
    pub(crate) notices: Vec<String>,
}

/// One kind of watch. Built (and checked) by `Watches::start` on the caller's thread,
/// then moved to the sampling thread, which calls [`Sampler::sample`] once per interval.
pub(crate) trait Sampler: Send {
    /// Takes one sample at `t` seconds since the watches started. An error is a missed
    /// sample (the thing is gone or did not answer): it becomes a gap, and sampling goes on.
    fn sample(&mut self, t: f64) -> Result<(), ProbeError>;

    /// The newest sample kept, with its caps, for the live dashboard (`None` before
    /// the first).
    fn latest(&self) -> Option<LiveSample>;

    /// Ends the watch and builds its figures; `run` is what the run measured (the
    /// generator repeats its verdict and lag from it).
    fn finish(self: Box<Self>, run: Option<&dyn RunView>) -> Finished;
}

/// A sampler, its spec, and the gaps so far.
pub(crate) struct Watched {
    spec: String,
    sampler: Box<dyn Sampler>,
    gaps: Vec<Gap>,
    open: Option<(f64, String)>,
}

impl Watched {
    /// Wraps `sampler`, started from `spec`.
    pub(crate) fn new(spec: String, sampler: Box<dyn Sampler>) -> Watched {
        Watched {
            spec,
            sampler,
            gaps: Vec::new(),
            open: None,
        }
    }

    /// Samples at `t`, opening a gap on the first failure and closing it on the next success.
    pub(crate) fn sample(&mut self, t: f64) {
        match self.sampler.sample(t) {
            Ok(()) => {
                if let Some((from_t, reason)) = self.open.take() {
                    self.gaps.push(Gap {
                        from_t,
                        to_t: t,
                        reason,
                    });
                }
            }
            Err(reason) => {
                if self.open.is_none() {
                    self.open = Some((t, reason.to_string()));
                }
            }
        }
    }

    /// The newest sample, for the live dashboard.
    pub(crate) fn latest(&self) -> Option<LiveWatch> {
        Some(LiveWatch {
            spec: self.spec.clone(),
            sample: self.sampler.latest()?,
        })
    }

    /// Closes any open gap at `end_t` and builds the summary.
    pub(crate) fn finish(mut self, end_t: f64, run: Option<&dyn RunView>) -> WatchSummary {
        if let Some((from_t, reason)) = self.open.take() {
            self.gaps.push(Gap {
                from_t,
                to_t: end_t.max(from_t),
                reason,
            });
        }
        let finished = self.sampler.finish(run);
        WatchSummary {
            spec: self.spec,
            detail: finished.detail,
            gaps: self.gaps,
            warnings: finished.warnings,
            notices: finished.notices,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::ProcessSummary;

    /// Fails at the times listed, succeeds otherwise.
    struct Flaky(Vec<f64>);

    impl Sampler for Flaky {
        fn sample(&mut self, t: f64) -> Result<(), ProbeError> {
            if self.0.contains(&t) {
                Err(ProbeError::ProcessGone { pid: t as u32 })
            } else {
                Ok(())
            }
        }
        fn latest(&self) -> Option<LiveSample> {
            None
        }
        fn finish(self: Box<Self>, _: Option<&dyn RunView>) -> Finished {
            Finished {
                detail: Detail::Process(ProcessSummary::default()),
                warnings: Vec::new(),
                notices: Vec::new(),
            }
        }
    }

    #[test]
    fn failures_become_gaps_from_the_first_failure_to_the_next_success() {
        let mut w = Watched::new("pid:1".into(), Box::new(Flaky(vec![2.0, 3.0, 6.0])));
        for t in 1..=6 {
            w.sample(t as f64);
        }
        let s = w.finish(6.5, None);
        let gaps: Vec<(f64, f64, &str)> = s
            .gaps
            .iter()
            .map(|g| (g.from_t, g.to_t, g.reason.as_str()))
            .collect();
        assert_eq!(
            gaps,
            [
                (2.0, 4.0, "process 2 is gone"),
                (6.0, 6.5, "process 6 is gone")
            ]
        );
        assert_eq!(s.kind(), "process");
    }
}
