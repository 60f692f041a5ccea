//! The load engine: one OS thread per core, each with its own single-threaded tokio
//! runtime, connections and [`Recorder`]. [`run`] starts the threads, merges their
//! finished seconds into the timeline as they arrive (calling back for live
//! progress), then merges their recorders into the [`Summary`].
//!
//! Who drives whom: [`run`] → `attack::run_thread` per thread → a driver (pacer or
//! users) → `iteration::run_iteration` → the HTTP client; results flow back only
//! through each thread's recorder.

mod attack;
mod cpu;
pub(crate) mod iteration;
pub mod pacer;
mod selfcheck;
mod start;
pub(crate) mod summarize;
mod timer;
pub(crate) mod work;

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use selfcheck::{
    generator_bound, starved, Evidence, BUSY_BOUND, HOST_SATURATED, LAG_BOUND, LATE_SHARE,
    MIN_LATE, OTHERS_SHARE, STARVED_WAIT,
};

use crate::metrics::recorder::{Recorder, SecondBucket};
use crate::metrics::summary::{Generator, Second, Summary};
use crate::plan::{Load, Plan};
use attack::{Report, Slot};
use cpu::ThreadTimes;
use iteration::Seed;

use crate::client::connect::{resolved, Connector};
use crate::client::Protocol;
use start::StartLine;

/// Lets another thread (a Ctrl-C handler) stop a run early. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Control {
    stop: Arc<AtomicBool>,
}

impl Control {
    /// Asks the run to stop: no new iterations start; in-flight ones get a short grace.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Whether [`Control::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

/// Live figures after each completed second: what the progress line shows
/// ([`crate::report::progress`]) and what the run store records as the run goes.
/// Plain data, built by the engine.
#[derive(Debug, Clone, Default)]
pub struct Live {
    /// Time since the run started.
    pub elapsed: Duration,
    /// Planned duration.
    pub total: Duration,
    /// Requests completed since the start, successful or not.
    pub requests: u64,
    /// Of those, requests that ended in an error of any kind.
    pub errors: u64,
    /// Scheduled iterations dropped since the start (in-flight limit reached).
    pub dropped: u64,
    /// Iterations in flight at the end of the second.
    pub in_flight: u64,
    /// Active users (closed model); `None` in the open model.
    pub users: Option<u64>,
    /// The last second's timeline entry (its request count and p95 are the progress
    /// line's rate and latency).
    pub last: Second,
    /// The merged counts `last` was made from: its latency histogram (corrected, µs),
    /// errors by kind and requests by name. The live dashboard reads its percentiles,
    /// error kinds and `/metrics` counters from it.
    pub last_bucket: SecondBucket,
}

/// What the engine tells the command that runs it, as the run goes. A closure
/// `FnMut(&Live)` is an observer that only listens for seconds.
pub trait Observer {
    /// A second of the measured window completed on every thread.
    fn second(&mut self, live: &Live);
    /// The warm-up ended and the measured window began (only for a plan with a
    /// warm-up; called once, before its first second).
    fn measuring(&mut self) {}
}

impl<F: FnMut(&Live)> Observer for F {
    fn second(&mut self, live: &Live) {
        self(live)
    }
}

/// A run that could not be carried out at all (as opposed to failed requests).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The target host did not resolve.
    #[error("cannot resolve target {host}:{port}: {reason}")]
    Resolve {
        /// Host as given.
        host: String,
        /// Port.
        port: u16,
        /// Resolver's message.
        reason: String,
    },
    /// The target's host name is not a valid TLS server name.
    #[error("{0}")]
    ServerName(String),
    /// A request of the plan cannot be sent in the run's protocol.
    #[error("{0}")]
    Request(String),
    /// An engine thread could not start or failed.
    #[error("engine thread failed: {0}")]
    Thread(String),
}

/// The result of a run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Everything measured.
    pub summary: Summary,
    /// The first connection failure, when some connections could not be opened.
    pub connect_failure: Option<String>,
    /// The first failed TLS handshake (`address: reason`), when some failed.
    pub tls_failure: Option<String>,
    /// The merged recorder (exact histograms), for stores and shard merges.
    pub recorder: Recorder,
}

/// Runs `plan` to completion (or until `control` stops it), telling `observer` of each
/// completed second of the measured window (and of the window's start, after a
/// warm-up) from this thread. Everything measured covers the measured window alone.
pub fn run(
    plan: Arc<Plan>,
    control: &Control,
    observer: &mut dyn Observer,
) -> Result<Outcome, EngineError> {
    // Resolved once: every connection of the run goes to this address.
    let resolving = Instant::now();
    let addr = resolve(&plan)?;
    let dns = resolving.elapsed();
    let connector = match &plan.client.tls {
        None => Connector::tcp(addr),
        Some(config) => Connector::tls(addr, &plan.target.host, config.clone())
            .map_err(EngineError::ServerName)?,
    };
    let connector = Arc::new(match plan.client.protocol {
        Protocol::Http2 => connector.require_h2(),
        Protocol::Http1 => connector,
    });
    let tls_failure = Arc::new(Mutex::new(None));
    let workload = Arc::new(work::Workload::new(&plan).map_err(EngineError::Request)?);
    let connect_failure = Arc::new(Mutex::new(None));
    let graphql_failure = Arc::new(Mutex::new(None));
    let threads = plan.threads.max(1);
    let (tx, rx) = mpsc::channel();
    // Every thread counts its schedule from the same instant, fixed once all are ready.
    let start_line = Arc::new(StartLine::new(threads));
    let placeholder = Instant::now();
    let mut handles = Vec::with_capacity(threads);
    for index in 0..threads {
        let seed = Seed {
            plan: plan.clone(),
            workload: workload.clone(),
            connector: connector.clone(),
            stop: control.stop.clone(),
            connect_failure: connect_failure.clone(),
            tls_failure: tls_failure.clone(),
            graphql_failure: graphql_failure.clone(),
        };
        let (tx, line) = (tx.clone(), start_line.clone());
        let slot = Slot { index, threads };
        let handle = std::thread::Builder::new()
            .name(format!("headroom-engine-{index}"))
            .spawn(move || attack::run_thread(seed, slot, &line, tx));
        let handle = match handle {
            Ok(handle) => handle,
            Err(e) => {
                // The threads already spawned wait at the line: let them go unused.
                start_line.close();
                return Err(EngineError::Thread(e.to_string()));
            }
        };
        handles.push(handle);
    }
    drop(tx);

    let mut timeline = Timeline::new(&plan, threads);
    let mut merged = Recorder::new(plan.names.len());
    merged.record_dns(dns);
    let mut cpu = Vec::new();
    let mut stopped_at = None;
    let mut last_done: Option<Instant> = None;
    let mut measuring = plan.warmup.is_zero();
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Report::Second(bucket)) => timeline.add(bucket, false, observer),
            Ok(Report::Measuring) => {
                if !std::mem::replace(&mut measuring, true) {
                    observer.measuring();
                }
            }
            Ok(Report::Done(recorder, last, thread_cpu, done)) => {
                if measuring {
                    merged.merge(&recorder);
                    last_done = last_done.max(done);
                    timeline.add(last, true, observer);
                } else {
                    // Stopped during the warm-up: nothing was measured.
                    timeline.count_only(last.t);
                }
                cpu.push(thread_cpu);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if stopped_at.is_none() && control.is_stopped() {
            stopped_at = Some(Instant::now());
        }
    }
    for handle in handles {
        match handle.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(EngineError::Thread(e.to_string())),
            Err(_) => return Err(EngineError::Thread("an engine thread panicked".into())),
        }
    }
    // Everything below is about the measured window, which starts after the warm-up.
    let start = start_line.fixed().unwrap_or(placeholder) + plan.warmup;
    let planned = plan.measured();
    let interrupted = stopped_at.is_some_and(|t| t < start + planned);
    let scheduled = match stopped_at {
        Some(t) if interrupted => t.saturating_duration_since(start),
        _ => planned,
    };
    let fastest = Duration::from_micros(merged.overall.latency.min());
    let measured = measured_span(start, scheduled, last_done, fastest);
    let generator = self_check(&plan, &merged, &cpu, scheduled);
    let mut summary = summarize::summarize(
        &plan,
        &merged,
        timeline.finish(observer),
        summarize::Span {
            scheduled,
            measured,
        },
        interrupted,
        generator,
    );
    let connect_failure = connect_failure
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let tls_failure = tls_failure
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let graphql_failure = graphql_failure.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(message) = graphql_failure.clone() {
        summary
            .errors
            .first_message
            .insert("graphql".into(), message);
    }
    Ok(Outcome {
        summary,
        connect_failure,
        tls_failure,
        recorder: merged,
    })
}

/// Raises this process's soft limit on open files to its hard limit; returns the
/// limit now in force.
pub fn raise_fd_limit() -> nix::Result<u64> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
    }
    Ok(hard)
}

/// The address to connect to: the `--resolve` entry for the target, else the first
/// address its host resolves to.
fn resolve(plan: &Plan) -> Result<SocketAddr, EngineError> {
    let t = &plan.target;
    if let Some(addr) = resolved(&plan.client.resolve, &t.host, t.port) {
        return Ok(addr);
    }
    let err = |reason: String| EngineError::Resolve {
        host: t.host.clone(),
        port: t.port,
        reason,
    };
    let mut addrs = (t.host.as_str(), t.port)
        .to_socket_addrs()
        .map_err(|e| err(e.to_string()))?;
    addrs.next().ok_or_else(|| err("no address".into()))
}

fn self_check(plan: &Plan, rec: &Recorder, times: &[ThreadTimes], duration: Duration) -> Generator {
    let wall = duration.as_secs_f64().max(1e-9);
    let us = |v: u64| Duration::from_micros(v);
    let evidence = Evidence {
        open_model: matches!(plan.load, Load::ArrivalRate { .. }),
        p99_lag: us(rec.lag.value_at_quantile(0.99)),
        max_lag: us(rec.lag.max()),
        arrivals: rec.lag.len(),
        late: late_arrivals(&rec.lag),
        thread_busy: times
            .iter()
            .map(|t| (t.cpu + t.waited).as_secs_f64() / wall)
            .collect(),
        thread_waited: times
            .iter()
            .map(|t| t.waited.as_secs_f64() / wall)
            .collect(),
        // The host's ticks over the longest-lived engine thread's life.
        host_busy: times
            .iter()
            .map(|t| t.host)
            .max_by_key(|h| h.total)
            .and_then(|h| h.busy_share()),
        cpus: times.iter().map(|t| t.host.cpus).max().unwrap_or(0),
        own_errors: rec.overall.errors[crate::metrics::ErrorKind::Generator as usize],
    };
    let reason = generator_bound(&evidence);
    Generator {
        host_cpu_percent: evidence.host_busy.map_or(0.0, |h| h * 100.0),
        starved: reason.is_some() && starved(&evidence).is_some(),
        cpu_percent: times.iter().map(|t| t.cpu.as_secs_f64()).sum::<f64>() / wall * 100.0,
        threads: times.len(),
        max_lag_ms: evidence.max_lag.as_secs_f64() * 1000.0,
        p99_lag_ms: evidence.p99_lag.as_secs_f64() * 1000.0,
        bound: reason.is_some(),
        reason: reason.unwrap_or_default(),
    }
}

/// How long the run served requests, for the achieved rate: the schedule, plus the
/// time requests kept completing after it beyond what one request takes anyway.
///
/// A backlog drained after the schedule extends the span, so it cannot inflate the
/// rate; the last requests of a target that kept up end one latency after the
/// schedule, as the first ones ended one latency after its start, and do not shrink it.
fn measured_span(
    start: Instant,
    scheduled: Duration,
    last_done: Option<Instant>,
    fastest: Duration,
) -> Duration {
    let Some(last_done) = last_done else {
        return scheduled;
    };
    let after = last_done.saturating_duration_since(start + scheduled);
    scheduled + after.saturating_sub(fastest)
}

/// Arrivals in a lag histogram (microseconds) that started more than [`LAG_BOUND`] late.
fn late_arrivals(lag: &hdrhistogram::Histogram<u64>) -> u64 {
    let bound = LAG_BOUND.as_micros() as u64;
    let on_time = lag.count_between(0, bound);
    lag.len().saturating_sub(on_time)
}

/// Collects per-thread seconds and emits each second once every thread reported it.
struct Timeline<'a> {
    plan: &'a Plan,
    threads: usize,
    pending: BTreeMap<u64, (SecondBucket, usize)>,
    done: Vec<Second>,
    live: Live,
}

impl<'a> Timeline<'a> {
    fn new(plan: &'a Plan, threads: usize) -> Timeline<'a> {
        let live = Live {
            total: plan.measured(),
            ..Live::default()
        };
        Timeline {
            plan,
            threads,
            pending: BTreeMap::new(),
            done: Vec::new(),
            live,
        }
    }

    fn add(&mut self, bucket: SecondBucket, last: bool, observer: &mut dyn Observer) {
        if last && bucket.latency.is_empty() && bucket.dropped == 0 && bucket.errors == 0 {
            // An empty tail is no second of the run; count the report and move on.
            self.count_only(bucket.t);
        } else {
            let t = bucket.t;
            let entry = self
                .pending
                .entry(t)
                .or_insert_with(|| (SecondBucket::new(t), 0));
            entry.0.merge(&bucket);
            entry.1 += 1;
        }
        while let Some(entry) = self.pending.first_entry() {
            if entry.get().1 < self.threads {
                break;
            }
            let (bucket, _) = entry.remove();
            self.emit(&bucket, observer);
        }
    }

    fn count_only(&mut self, t: u64) {
        if let Some(entry) = self.pending.get_mut(&t) {
            entry.1 += 1;
        }
    }

    fn emit(&mut self, bucket: &SecondBucket, observer: &mut dyn Observer) {
        let second = summarize::second(bucket, self.plan);
        self.live.elapsed = Duration::from_secs(bucket.t + 1);
        self.live.requests += second.requests;
        self.live.errors += second.errors;
        self.live.dropped += second.dropped;
        self.live.in_flight = bucket.in_flight;
        self.live.users = matches!(self.plan.load, Load::Users { .. }).then_some(bucket.users);
        self.live.last = second.clone();
        self.live.last_bucket = bucket.clone();
        observer.second(&self.live);
        self.done.push(second);
    }

    /// The seconds not every thread reported (a thread whose work ended earlier sends
    /// no later second) are complete now that all threads are done: the observer hears
    /// them too, so that what it added up (the dashboard's and OTLP's counters) ends
    /// equal to the summary's totals.
    fn finish(mut self, observer: &mut dyn Observer) -> Vec<Second> {
        let rest: Vec<SecondBucket> = std::mem::take(&mut self.pending)
            .into_values()
            .map(|(b, _)| b)
            .collect();
        for bucket in rest {
            self.emit(&bucket, observer);
        }
        self.done.sort_by_key(|s| s.t);
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_span_grows_by_the_drain_beyond_one_request() {
        let start = Instant::now();
        let ms = Duration::from_millis;
        let s = Duration::from_secs(2);
        let fastest = ms(10);
        // The last request ended one latency after the schedule: the target kept up.
        assert_eq!(measured_span(start, s, Some(start + s + ms(9)), fastest), s);
        // A 500 ms backlog drained after the schedule counts, less one latency.
        let drained = measured_span(start, s, Some(start + s + ms(510)), fastest);
        assert_eq!(drained, s + ms(500));
        // Nothing completed (or everything before the end): the schedule alone.
        assert_eq!(measured_span(start, s, None, fastest), s);
        assert_eq!(measured_span(start, s, Some(start + ms(300)), fastest), s);
    }
}
