//! The generator watching itself (always the first watch): the headroom process's CPU
//! (cores) and RSS per sample, the engine's per-second schedule lag beside them, and
//! the engine's verdict on whether the generator, not the target, was the bound.

use super::error::ProbeError;
use super::kept::{Kept, Running};
use super::live::LiveSample;
use super::process::{ProcessSampler, Which};
use super::sampler::{Finished, RunView, Sampler};
use super::summary::{round3, Detail};
pub use super::summary::{GeneratorSample, GeneratorSummary};

/// Samples the headroom process.
pub(crate) struct GeneratorSampler {
    inner: ProcessSampler,
    /// (t, CPU cores, RSS MiB), thinned on long runs.
    samples: Kept<(f64, f64, f64)>,
    /// Exact figures over every sample.
    cpu: Running,
    rss: Running,
}

impl GeneratorSampler {
    /// Starts on this process (which always exists).
    pub(crate) fn start() -> Result<GeneratorSampler, ProbeError> {
        Ok(GeneratorSampler {
            inner: ProcessSampler::start(Which::Pid(std::process::id()))?,
            samples: Kept::default(),
            cpu: Running::default(),
            rss: Running::default(),
        })
    }
}

impl Sampler for GeneratorSampler {
    fn sample(&mut self, t: f64) -> Result<(), ProbeError> {
        let s = self.inner.measure(t)?;
        let cores = s.cpu_cores.unwrap_or(0.0);
        self.cpu.add(cores);
        self.rss.add(s.rss_mb);
        self.samples.push((s.t, cores, s.rss_mb));
        Ok(())
    }

    fn latest(&self) -> Option<LiveSample> {
        let &(t, cpu_cores, rss_mb) = self.samples.newest()?;
        Some(LiveSample::Generator {
            t,
            cpu_cores,
            rss_mb,
        })
    }

    fn finish(self: Box<Self>, run: Option<&dyn RunView>) -> Finished {
        // The engine starts a few ms after the watches, so the sample at t closes
        // (about) engine second t - 1.
        let lag_at = |t: f64| -> f64 {
            let second = (t.round() as u64).saturating_sub(1);
            run.and_then(|r| r.lag_in_second(second)).unwrap_or(0.0)
        };
        let samples: Vec<GeneratorSample> = self
            .samples
            .into_vec()
            .into_iter()
            .map(|(t, cpu_cores, rss_mb)| GeneratorSample {
                t,
                cpu_cores,
                rss_mb,
                max_lag_ms: round3(lag_at(t)),
            })
            .collect();
        let g = run.map(|r| r.generator_verdict()).unwrap_or_default();
        let timeline_lag = run.map_or(0.0, |r| r.timeline_max_lag_ms());
        let summary = GeneratorSummary {
            cpu_cores: self.cpu.avg_max(),
            rss_mb: self.rss.max(),
            max_lag_ms: round3(timeline_lag.max(g.max_lag_ms)),
            bound: g.bound,
            reason: g.reason.clone(),
            // Filled in by `Watches::finish`, which alone sees every thread's share.
            watch_cpu_s: 0.0,
            samples,
        };
        let warnings = if g.bound {
            vec![format!(
                "the generator, not the target, limited this run: {}",
                g.reason
            )]
        } else {
            Vec::new()
        };
        Finished {
            detail: Detail::Generator(summary),
            warnings,
            notices: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::GeneratorVerdict;

    /// A finished run as the watches read it: lag by second and the engine's verdict.
    struct Run {
        lags: Vec<f64>,
        verdict: GeneratorVerdict,
    }

    impl RunView for Run {
        fn lag_in_second(&self, t: u64) -> Option<f64> {
            self.lags.get(t as usize).copied()
        }
        fn timeline_max_lag_ms(&self) -> f64 {
            self.lags.iter().copied().fold(0.0, f64::max)
        }
        fn generator_verdict(&self) -> GeneratorVerdict {
            self.verdict.clone()
        }
    }

    #[test]
    fn repeats_the_engine_verdict_and_lines_up_the_lag() {
        let mut s = GeneratorSampler::start().unwrap();
        s.sample(1.0).unwrap();
        s.sample(2.0).unwrap();
        let run = Run {
            lags: vec![3.0, 40.0],
            verdict: GeneratorVerdict {
                bound: true,
                reason: "an engine thread was busy 99% of the run".into(),
                max_lag_ms: 40.0,
            },
        };
        let f = Box::new(s).finish(Some(&run as &dyn RunView));
        let Detail::Generator(g) = f.detail else {
            panic!("not a generator summary")
        };
        assert!(g.bound);
        assert_eq!(g.max_lag_ms, 40.0);
        let lags: Vec<f64> = g.samples.iter().map(|s| s.max_lag_ms).collect();
        assert_eq!(lags, [3.0, 40.0]);
        assert!(g.rss_mb.max > 0.0);
        assert!(f.warnings[0].contains("busy 99%"), "{:?}", f.warnings);
    }
}
