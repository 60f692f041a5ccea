//! Watches: what the system under test and the generator were doing while the load
//! ran — processes, cgroups (and Docker containers), a PostgreSQL database, a
//! Prometheus endpoint, and always the generator itself.
//!
//! [`Watches::start`] parses every spec ([`Spec`]) and opens every sampler on the
//! caller's thread, so a spec that cannot start is an error before any load is sent;
//! then one sampling thread (`thread`) takes a sample from each every interval, off the
//! engine's threads. [`Watches::finish`] stops it and returns a [`WatchSummary`] per
//! watch, the generator's first. A sample that fails mid-run is a gap, never an abort.
//!
//! One file per kind: `process`, `cgroup` (+ `docker` to find a container's cgroup),
//! `postgres` (+ `pg_statements`), `prometheus` (+ `scrape`, its HTTP client),
//! `generator`; `sampler`
//! holds the contract and gap bookkeeping, `summary` the JSON types, `kept` the bound
//! on what a long run's samples may hold.

mod cgroup;
mod docker;
mod error;
mod generator;
mod kept;
mod listener;
mod live;
mod pg_statements;
mod postgres;
mod process;
mod prometheus;
mod sampler;
mod samples;
mod scrape;
mod spec;
mod summary;
mod thread;

// The workspace's one helper for tests that need something of the machine (here
// cgroup v2), shared with the main crate's tests rather than copied.
#[cfg(test)]
#[path = "../../../tests/support/require.rs"]
mod test_require;

use std::sync::Arc;
use std::time::{Duration, Instant};

pub use cgroup::CgroupSummary;
pub use error::{Chain, HttpError, ProbeError, SpecError, MAX_BODY};
pub use generator::{GeneratorSample, GeneratorSummary};
pub use listener::listener;
pub use live::{LiveSample, LiveWatch, LiveWatches};
pub use postgres::{Connections, PostgresSummary, TableTuples};
pub use process::{FdUse, ProcessSummary, FD_WARN_SHARE};
pub use prometheus::{PrometheusSummary, SeriesSummary, MAX_SERIES};
pub use sampler::{GeneratorVerdict, RunView};
pub use samples::{
    BusiestProcess, CgroupSample, PostgresSample, ProcessSample, PrometheusSample, TopQuery,
};
pub use scrape::default_tls;
pub use spec::Spec;
pub use summary::{AvgMax, Detail, Gap, Max, ProfileRow, WatchSummary};

use sampler::{Sampler, Watched};
use thread::SamplingThread;

/// Sampling interval when none is given.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);

/// A watch that could not start: bad input, reported before any load is sent.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The spec is malformed.
    #[error("--watch {spec:?}: {reason}")]
    Spec {
        /// The spec as given.
        spec: String,
        /// What is wrong.
        #[source]
        reason: SpecError,
    },
    /// The spec names something that cannot be watched now.
    #[error("--watch {spec:?}: {reason}")]
    Start {
        /// The spec as given.
        spec: String,
        /// Why it cannot be watched.
        #[source]
        reason: ProbeError,
    },
    /// The interval is zero.
    #[error("--watch-interval must be above zero")]
    Interval,
    /// The sampling thread could not be started.
    #[error("cannot start the watch thread: {0}")]
    Thread(#[source] std::io::Error),
}

/// Running watches. Drop without [`Watches::finish`] stops the thread and loses the samples.
pub struct Watches {
    thread: SamplingThread,
    live: LiveWatches,
    /// CPU spent opening the samplers on the caller's thread.
    start_cpu: Duration,
}

impl Watches {
    /// Starts the generator's self-watch and one watch per spec, sampled every `interval`
    /// on a thread of their own. Fails, with nothing left running, if any spec is bad or
    /// its target is unreachable now (no such process, cgroup, database, endpoint, or
    /// Docker engine).
    ///
    /// `tls` is what an `https://` Prometheus endpoint is trusted by: the run's own
    /// trust settings (`--cacert`, `--insecure`), as curl applies its flags to every URL;
    /// `None` trusts Mozilla's roots ([`default_tls`]).
    pub fn start(
        specs: &[String],
        interval: Duration,
        tls: Option<Arc<rustls::ClientConfig>>,
    ) -> Result<Watches, WatchError> {
        if interval.is_zero() {
            return Err(WatchError::Interval);
        }
        let cpu_before = thread::thread_cpu();
        let self_error = |reason| WatchError::Start {
            spec: "self".into(),
            reason,
        };
        let mut watched = vec![Watched::new(
            "self".into(),
            Box::new(generator::GeneratorSampler::start().map_err(self_error)?),
        )];
        for text in specs {
            let spec = Spec::parse(text).map_err(|reason| WatchError::Spec {
                spec: text.clone(),
                reason,
            })?;
            let sampler = open(&spec, &tls).map_err(|reason| WatchError::Start {
                spec: text.clone(),
                reason,
            })?;
            watched.push(Watched::new(text.clone(), sampler));
        }
        let live = LiveWatches::default();
        let thread = SamplingThread::spawn(watched, interval, Instant::now(), live.clone())
            .map_err(WatchError::Thread)?;
        Ok(Watches {
            thread,
            live,
            start_cpu: thread::thread_cpu().saturating_sub(cpu_before),
        })
    }

    /// The newest sample of every watch, updated after each sampling round: what the
    /// live dashboard shows while the watches run.
    pub fn live(&self) -> LiveWatches {
        self.live.clone()
    }

    /// Stops sampling and returns one summary per watch, the generator's first. `run`
    /// (the run's summary, when there is one) gives the generator its lag and verdict.
    pub fn finish(self, run: Option<&dyn RunView>) -> Vec<WatchSummary> {
        let cpu_before = thread::thread_cpu();
        let (watched, end_t, sampling_cpu) = self.thread.stop();
        let mut out: Vec<WatchSummary> = watched
            .into_iter()
            .map(|w| w.finish(summary::round3(end_t), run))
            .collect();
        let cost = self.start_cpu + sampling_cpu + thread::thread_cpu().saturating_sub(cpu_before);
        if let Some(Detail::Generator(g)) = out.first_mut().map(|w| &mut w.detail) {
            g.watch_cpu_s = cost.as_secs_f64();
        }
        out
    }
}

/// Opens the sampler for `spec`; `tls` for an `https://` Prometheus endpoint.
fn open(
    spec: &Spec,
    tls: &Option<Arc<rustls::ClientConfig>>,
) -> Result<Box<dyn Sampler>, ProbeError> {
    Ok(match spec {
        Spec::Pid(pid) => Box::new(process::ProcessSampler::start(process::Which::Pid(*pid))?),
        Spec::Process(name) => Box::new(process::ProcessSampler::start(process::Which::Name(
            name.clone(),
        ))?),
        Spec::Cgroup(path) => Box::new(cgroup::CgroupSampler::start(path)?),
        Spec::Docker(name) => Box::new(cgroup::CgroupSampler::start(&docker::container_cgroup(
            name,
        )?)?),
        Spec::Postgres(url) => Box::new(postgres::PostgresSampler::start(url)?),
        Spec::Prometheus { url, metrics } => Box::new(prometheus::PrometheusSampler::start(
            url,
            metrics.clone(),
            tls.clone(),
        )?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_shorter_than_the_interval_still_gets_a_sample() {
        let me = format!("pid:{}", std::process::id());
        let w =
            Watches::start(std::slice::from_ref(&me), Duration::from_millis(400), None).unwrap();
        std::thread::sleep(Duration::from_millis(250));
        let out = w.finish(None);
        let Detail::Process(p) = &out[1].detail else {
            panic!("not a process summary")
        };
        assert_eq!(p.samples.len(), 1);
        assert!(p.samples[0].t >= 0.25, "{:?}", p.samples[0]);
        let Detail::Generator(g) = &out[0].detail else {
            panic!("not a generator summary")
        };
        assert!(g.rss_mb.max > 0.0, "{g:?}");
    }

    #[test]
    fn generator_comes_first_and_samples_every_interval() {
        let me = format!("pid:{}", std::process::id());
        let w = Watches::start(std::slice::from_ref(&me), Duration::from_millis(50), None).unwrap();
        std::thread::sleep(Duration::from_millis(280));
        let out = w.finish(None);
        assert_eq!(out.len(), 2);
        assert_eq!((out[0].kind(), out[0].spec.as_str()), ("generator", "self"));
        assert_eq!(
            (out[1].kind(), out[1].spec.as_str()),
            ("process", me.as_str())
        );
        let Detail::Process(p) = &out[1].detail else {
            panic!("not a process summary")
        };
        assert!((4..=6).contains(&p.samples.len()), "{}", p.samples.len());
        assert!(out[1].gaps.is_empty());
        let Detail::Generator(g) = &out[0].detail else {
            panic!("not a generator summary")
        };
        assert!(
            g.watch_cpu_s > 0.0 && g.watch_cpu_s < 0.25,
            "{}",
            g.watch_cpu_s
        );
    }

    #[test]
    fn the_live_board_holds_the_newest_sample_of_each_watch() {
        let me = format!("pid:{}", std::process::id());
        let w = Watches::start(std::slice::from_ref(&me), Duration::from_millis(50), None).unwrap();
        let live = w.live();
        assert!(live.latest().is_empty(), "nothing before the first round");
        std::thread::sleep(Duration::from_millis(180));
        let latest = live.latest();
        let out = w.finish(None);
        let kinds: Vec<(&str, &str)> = latest
            .iter()
            .map(|l| (l.spec.as_str(), kind_of(&l.sample)))
            .collect();
        assert_eq!(kinds, [("self", "generator"), (me.as_str(), "process")]);
        let Detail::Process(p) = &out[1].detail else {
            panic!("not a process summary")
        };
        let LiveSample::Process(newest) = &latest[1].sample else {
            panic!("not a process sample")
        };
        assert!(
            p.samples.contains(newest),
            "the live sample is one the summary keeps"
        );
        let json = serde_json::to_value(&latest[0]).unwrap();
        assert_eq!(json["kind"], "generator");
        assert!(json["rss_mb"].as_f64().unwrap() > 0.0, "{json}");
    }

    fn kind_of(s: &LiveSample) -> &'static str {
        match s {
            LiveSample::Generator { .. } => "generator",
            LiveSample::Process(_) => "process",
            LiveSample::Cgroup { .. } => "cgroup",
            LiveSample::Postgres { .. } => "postgres",
            LiveSample::Prometheus(_) => "prometheus",
        }
    }

    #[test]
    fn a_bad_spec_names_itself() {
        let err = Watches::start(&["pid:nope".into()], DEFAULT_INTERVAL, None)
            .err()
            .unwrap()
            .to_string();
        assert!(err.starts_with("--watch \"pid:nope\": "), "{err}");
        let err = Watches::start(&["docker:db".into()], DEFAULT_INTERVAL, None)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("docker:db"), "{err}");
        assert!(Watches::start(&[], Duration::ZERO, None).is_err());
    }
}
