//! Running one share of a plan: [`run_share`] starts the engine threads on this
//! process's [`Slice`] of the load, merges their seconds as they complete (calling back
//! for live progress) and their recorders at the end, and returns the raw [`Share`]:
//! exact histograms, counts, seconds, thread CPU times and timings, with no summary
//! and no verdict. [`super::merge`] turns any number of shares into one summary.
//!
//! A share is plain data (serde), so a shard can send it over a socket to a
//! coordinator; [`Share::check`] vets one that arrived that way.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::attack::{self, Slot};
use super::cpu::ThreadTimes;
use super::handover::Report;
use super::start::StartLine;
use super::thread::Seed;
use super::timeline::Timeline;
use super::{lanes, work, Control, EngineError, Misfit, Observer, ShareMismatch, LAG_BOUND};
use headroom_client::connect::{resolved, Connector};
use headroom_client::Protocol;
use headroom_metrics::recorder::{Recorder, SecondBucket};
use headroom_metrics::summary::Generator;
use headroom_plan::{Plan, Slice};

/// The raw result of running one share of a plan: everything measured over the
/// measured window, merged over this process's engine threads, not yet summarised.
/// Times are offsets from the start of the measured window, which every share of a run
/// has in common.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Share {
    /// Which part of the run's load this share ran.
    pub shard: Slice,
    /// The whole measured window: exact histograms and counts.
    pub recorder: Recorder,
    /// Each second of the measured window with something in it, in order (`t` from 0).
    pub seconds: Vec<SecondBucket>,
    /// The part of the measured window's schedule that ran (all of it unless
    /// interrupted).
    pub scheduled: Duration,
    /// When the last request ended; `None` when none ended in the measured window.
    pub last_done: Option<Duration>,
    /// Whether the run was stopped before its schedule ended.
    pub interrupted: bool,
    /// The first failure of each kind worth naming.
    pub failures: Failures,
    /// Each engine thread's CPU use over the measured window, for the self-check.
    pub(crate) threads: Vec<ThreadTimes>,
}

/// The first failure of each kind a share saw, in words, for the output.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failures {
    /// The first connection that could not be opened.
    pub connect: Option<String>,
    /// The first failed TLS handshake (`address: reason`).
    pub tls: Option<String>,
    /// The first GraphQL error.
    pub graphql: Option<String>,
}

impl Share {
    /// This share's generator self-check: whether this process, not the target,
    /// limited what it measured, judged on its own lag and CPU times.
    pub fn generator(&self, plan: &Plan) -> Generator {
        self_check(plan, &self.recorder, &self.threads, self.scheduled)
    }

    /// Checks that a share (received from a shard) has the shape of `plan`'s: a tally
    /// per request name, no more streams than the plan has (each with its bounded
    /// close codes and event types), seconds in order within
    /// the run's length plus an hour of drain. A share that fails would merge
    /// wrongly (names shifted) or blow up what the coordinator keeps.
    pub fn check(&self, plan: &Plan) -> Result<(), ShareMismatch> {
        let fail = |reason: Misfit| {
            Err(ShareMismatch {
                shard: self.shard.index(),
                reason,
            })
        };
        let names = plan.names.len();
        if let Err(reason) = fits(plan, &self.recorder) {
            return fail(reason);
        }
        let longest = plan.measured().as_secs() + 3600;
        let mut last = None;
        for s in &self.seconds {
            if s.t > longest || last.is_some_and(|l| s.t <= l) {
                return fail(Misfit::Second { t: s.t });
            }
            if s.by_name.len() > names {
                return fail(Misfit::UnknownNames { t: s.t });
            }
            last = Some(s.t);
        }
        Ok(())
    }
}

/// Whether `recorder` (a share's, or a second's that a shard forwarded) has the shape
/// of `plan`'s: a tally per request name and no more streams than the plan has.
pub fn fits(plan: &Plan, recorder: &Recorder) -> Result<(), Misfit> {
    let names = plan.names.len();
    if recorder.by_name.len() != names {
        let got = recorder.by_name.len();
        return Err(Misfit::Names { got, plan: names });
    }
    if recorder.streams.tallies.len() > plan.streams.len() {
        return Err(Misfit::Streams {
            plan: plan.streams.len(),
        });
    }
    Ok(())
}

/// Runs `shard`'s part of `plan` to completion (or until `control` stops it), telling
/// `observer` of each completed second of the measured window (and of the window's
/// start, after a warm-up) from this thread. A single process runs
/// [`Slice::WHOLE`]; [`super::run`] is this plus [`super::merge`] of the one share.
pub fn run_share(
    plan: Arc<Plan>,
    shard: Slice,
    control: &Control,
    observer: &mut dyn Observer,
) -> Result<Share, EngineError> {
    run_share_at(plan, shard, None, control, observer)
}

/// Gives a shard's start instant once its engine threads are ready: a shard tells its
/// coordinator it is ready and returns the absolute start it is given, or `None` to
/// give the run up before anything is sent.
pub type Starter<'a> = &'a mut dyn FnMut() -> Option<Instant>;

/// [`run_share`], with the measured schedule's start given by `starter` once every
/// engine thread is ready (a shard of a sharded run), or fixed just after they are
/// (`None`, a single process). Errors with [`EngineError::NotStarted`] when the starter
/// gives the run up.
pub fn run_share_at(
    plan: Arc<Plan>,
    shard: Slice,
    starter: Option<Starter<'_>>,
    control: &Control,
    observer: &mut dyn Observer,
) -> Result<Share, EngineError> {
    // This share's users are numbered apart from other shards', and take rows of
    // `unique` data files from its own slice; every run starts its cursors anew.
    let plan = {
        let mut own = (*plan).clone();
        own.journey = plan.journey.for_shard(shard);
        Arc::new(own)
    };
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
        Protocol::Http3 => connector
            .require_h3()
            .map_err(|e| EngineError::Quic(e.to_string()))?,
        Protocol::Http1 => connector,
    });
    let tls_failure = Arc::new(Mutex::new(None));
    let workload = Arc::new(work::Workload::new(&plan).map_err(EngineError::Request)?);
    let workloads = (plan.workloads.iter())
        .map(|w| work::Workload::of(&plan, &w.items, &w.weights).map(Arc::new))
        .collect::<Result<Vec<_>, _>>()
        .map_err(EngineError::Request)?;
    let loads = lanes::seeds(&plan, shard, &workloads);
    let connect_failure = Arc::new(Mutex::new(None));
    let graphql_failure = Arc::new(Mutex::new(None));
    let threads = plan.threads.max(1);
    let (tx, rx) = mpsc::channel();
    // Every thread counts its schedule from the same instant, fixed once all are ready.
    let start_line = Arc::new(match starter {
        Some(_) => StartLine::external(threads),
        None => StartLine::new(threads),
    });
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
        let thread = Slice::new(index as u64, threads as u64).expect("index < threads");
        let slot = Slot {
            shard,
            thread,
            loads: loads.clone(),
        };
        let handle = std::thread::Builder::new()
            .name(format!("headroom-engine-{index}"))
            .spawn(move || attack::run_thread(seed, slot, &line, tx));
        let handle = match handle {
            Ok(handle) => handle,
            Err(e) => {
                // The threads already spawned wait at the line: let them go unused.
                start_line.close();
                return Err(EngineError::Thread(e));
            }
        };
        handles.push(handle);
    }
    drop(tx);
    if let Some(starter) = starter {
        let at = match start_line.wait_ready() {
            true => starter(),
            false => None,
        };
        match at {
            Some(at) => start_line.open(at),
            None => {
                start_line.close();
                for handle in handles {
                    let _ = handle.join();
                }
                return Err(EngineError::NotStarted);
            }
        }
    }

    let mut timeline = Timeline::new(&plan, threads);
    let mut merged = Recorder::new(plan.names.len());
    merged.record_dns(dns);
    let mut cpu = Vec::new();
    let mut stopped_at = None;
    let mut last_done: Option<Instant> = None;
    let mut measuring = plan.warmup.is_zero();
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Report::Second(bucket, delta)) => {
                timeline.add(bucket, Some(*delta), false, observer)
            }
            Ok(Report::Measuring) => {
                if !std::mem::replace(&mut measuring, true) {
                    observer.measuring();
                }
            }
            Ok(Report::Done(recorder, last, thread_cpu, done)) => {
                if measuring {
                    last_done = last_done.max(done);
                    timeline.add(last, Some(*recorder), true, observer);
                } else {
                    // Stopped during the warm-up: nothing was measured.
                    timeline.count_only(last.t, None);
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
            Ok(Err(e)) => return Err(EngineError::Thread(e)),
            Err(_) => return Err(EngineError::Panicked),
        }
    }
    // Everything below is about the measured window, which starts after the warm-up.
    let start = start_line.fixed().unwrap_or(placeholder) + plan.warmup;
    let planned = plan.measured();
    let interrupted = stopped_at.is_some_and(|t| t < start + planned);
    let scheduled = match stopped_at {
        Some(t) if interrupted => t.saturating_duration_since(start),
        // A run counted in iterations ran until its last request ended, when that was
        // before its bound.
        _ if plan.ends_by_count() => {
            last_done.map_or(planned, |t| t.saturating_duration_since(start).min(planned))
        }
        _ => planned,
    };
    let first =
        |failure: &Mutex<Option<String>>| failure.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let (seconds, so_far) = timeline.finish(observer);
    merged.merge(&so_far);
    Ok(Share {
        shard,
        recorder: merged,
        seconds,
        scheduled,
        last_done: last_done.map(|t| t.saturating_duration_since(start)),
        interrupted,
        failures: Failures {
            connect: first(&connect_failure),
            tls: first(&tls_failure),
            graphql: first(&graphql_failure),
        },
        threads: cpu,
    })
}

/// The address to connect to: the `--resolve` entry for the target, else the first
/// address its host resolves to.
fn resolve(plan: &Plan) -> Result<SocketAddr, EngineError> {
    let t = &plan.target;
    if let Some(addr) = resolved(&plan.client.resolve, &t.host, t.port) {
        return Ok(addr);
    }
    let mut addrs = (t.host.as_str(), t.port)
        .to_socket_addrs()
        .map_err(|source| EngineError::Resolve {
            host: t.host.clone(),
            port: t.port,
            source,
        })?;
    addrs.next().ok_or_else(|| EngineError::NoAddress {
        host: t.host.clone(),
        port: t.port,
    })
}

/// The generator's self-check over one process's record and thread times.
fn self_check(plan: &Plan, rec: &Recorder, times: &[ThreadTimes], duration: Duration) -> Generator {
    let wall = duration.as_secs_f64().max(1e-9);
    let us = |v: u64| Duration::from_micros(v);
    let evidence = super::Evidence {
        open_model: plan.loads().any(|(load, _)| load.is_open()),
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
        own_errors: rec.overall.errors[headroom_metrics::ErrorKind::Generator as usize],
    };
    let reason = super::generator_bound(&evidence);
    Generator {
        host_cpu_percent: evidence.host_busy.map_or(0.0, |h| h * 100.0),
        starved: reason.is_some() && super::starved(&evidence).is_some(),
        cpu_percent: times.iter().map(|t| t.cpu.as_secs_f64()).sum::<f64>() / wall * 100.0,
        threads: times.len(),
        max_lag_ms: evidence.max_lag.as_secs_f64() * 1000.0,
        p99_lag_ms: evidence.p99_lag.as_secs_f64() * 1000.0,
        bound: reason.is_some(),
        reason: reason.unwrap_or_default(),
    }
}

/// Arrivals in a lag histogram (microseconds) that started more than [`LAG_BOUND`] late.
fn late_arrivals(lag: &hdrhistogram::Histogram<u64>) -> u64 {
    let bound = LAG_BOUND.as_micros() as u64;
    let on_time = lag.count_between(0, bound);
    lag.len().saturating_sub(on_time)
}
