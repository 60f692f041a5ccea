//! One rule per watch kind: from a watch's summary at the failing step (and the same
//! watch at the passing step) the candidates it yields, as the table of the parent
//! module says; and how each figure is written.

use super::{Candidate, Confidence, Evidence, Kind, Point, NEAR_CAP};
use crate::metrics::summary::Summary;
use crate::search::words::value;
use crate::watch::{
    CgroupSummary, Detail, PostgresSummary, ProcessSummary, PrometheusSummary, WatchSummary,
};

/// Throttled share of periods at which a cgroup is throttled for `medium` confidence.
const THROTTLED_MEDIUM: f64 = 0.2;
/// … and for `high`.
const THROTTLED_HIGH: f64 = 0.5;
/// The built-in target's gauges (`crates/testbed/src/metrics.rs`).
const BUSY: &str = "headroom_target_workers_busy";
const WORKERS: &str = "headroom_target_workers";

/// The candidates of watch `w` at the failing step `rate`, beside the same watch at
/// the passing step.
pub(super) fn candidates(
    w: &WatchSummary,
    before: Option<(f64, &WatchSummary)>,
    rate: f64,
) -> Vec<Candidate> {
    let pair = |f: &Read| Pair {
        failing: f(&w.detail).map(|v| Point { rate, value: v }),
        passing: before.and_then(|(r, p)| f(&p.detail).map(|v| Point { rate: r, value: v })),
    };
    match &w.detail {
        Detail::Process(p) => process(w, p, &pair),
        Detail::Cgroup(c) => cgroup(c, &pair).into_iter().collect(),
        Detail::Postgres(p) => postgres(w, p, &pair),
        Detail::Prometheus(p) => workers(p, &pair).into_iter().collect(),
        Detail::Generator(_) => Vec::new(),
    }
}

/// A figure read from a watch's detail (`None`: not measured).
type Read = dyn Fn(&Detail) -> Option<f64>;
/// A reading at the failing step and at the passing one.
type Pairs<'a> = dyn Fn(&Read) -> Pair + 'a;

/// A figure at the failing step and at the passing one.
struct Pair {
    failing: Option<Point>,
    passing: Option<Point>,
}

impl Pair {
    fn evidence(self, figure: &str, cap: Option<f64>) -> Option<Evidence> {
        Some(Evidence {
            figure: figure.into(),
            cap,
            failing: self.failing?,
            passing: self.passing,
        })
    }
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| (sum / n as f64 * 1000.0).round() / 1000.0)
}

/// A candidate whose deciding figure has a cap: no candidate under [`NEAR_CAP`].
fn capped(what: String, kind: Kind, state: String, evidence: Evidence) -> Option<Candidate> {
    let cap = evidence.cap.filter(|&c| c > 0.0)?;
    let share = evidence.failing.value / cap;
    Some(Candidate {
        what,
        kind,
        state,
        confidence: Confidence::of_share(share)?,
        share,
        evidence: vec![evidence],
    })
}

fn busiest_cpu(d: &Detail) -> Option<f64> {
    match d {
        Detail::Process(p) => mean(
            p.samples
                .iter()
                .filter_map(|s| Some(s.busiest.as_ref()?.cpu_cores)),
        ),
        _ => None,
    }
}

/// CPU used plus time waiting for a CPU, of the samples that have both.
fn busiest_demand(d: &Detail) -> Option<f64> {
    match d {
        Detail::Process(p) => mean(p.samples.iter().filter_map(|s| {
            let b = s.busiest.as_ref()?;
            Some(b.cpu_cores + b.wait_cores?)
        })),
        _ => None,
    }
}

fn fds(d: &Detail) -> Option<f64> {
    match d {
        Detail::Process(p) => Some(p.fds.max as f64),
        _ => None,
    }
}

fn process(w: &WatchSummary, p: &ProcessSummary, pair: &Pairs) -> Vec<Candidate> {
    let mut out = Vec::new();
    // The busiest process at its busiest sample: whose cap the CPU is judged against.
    let top = p
        .samples
        .iter()
        .filter_map(|s| s.busiest.as_ref())
        .max_by(|a, b| a.cpu_cores.total_cmp(&b.cpu_cores));
    if let Some(top) = top {
        let cap = top.cpu_cap_cores;
        let state = if top.threads == 1 {
            "at 1 core (single-threaded)".to_string()
        } else if cap == 1.0 {
            "at the 1 core it may run on".to_string()
        } else {
            format!("at the {} cores it can use", value(cap))
        };
        let what = format!("{} (pid {})", top.command, top.pid);
        // On a shared core the process may use less than its core yet want all of it:
        // what it used plus what it waited for decides, what it used is shown beside.
        let busy = pair(&busiest_cpu).evidence("cpu_cores", Some(cap));
        let decided = match pair(&busiest_demand).evidence("cpu_demand_cores", Some(cap)) {
            Some(demand) => capped(what, Kind::Cpu, state, demand).map(|mut c| {
                c.evidence.extend(busy);
                c
            }),
            None => busy.and_then(|e| capped(what, Kind::Cpu, state, e)),
        };
        out.extend(decided);
    }
    if let Some(limit) = p.fds.limit {
        let what = match &p.command {
            Some(c) => format!("{c} ({})", w.spec),
            None => w.spec.clone(),
        };
        if let Some(e) = pair(&fds).evidence("fds", Some(limit as f64)) {
            out.extend(capped(what, Kind::Fds, "out of file descriptors".into(), e));
        }
    }
    out
}

fn cgroup_cpu(d: &Detail) -> Option<f64> {
    match d {
        Detail::Cgroup(c) => mean(c.samples.iter().map(|s| s.cpu_cores)),
        _ => None,
    }
}

fn throttled(d: &Detail) -> Option<f64> {
    match d {
        Detail::Cgroup(c) => mean(c.samples.iter().filter_map(|s| s.throttled_share)),
        _ => None,
    }
}

fn cgroup(c: &CgroupSummary, pair: &Pairs) -> Option<Candidate> {
    let what = format!("cgroup {}", c.path);
    let cpu = pair(&cgroup_cpu).evidence("cpu_cores", c.cpu_cap_cores);
    let by_cpu = cpu.clone().and_then(|e| {
        capped(
            what.clone(),
            Kind::Cpu,
            format!(
                "at its CPU quota ({} cores)",
                value(c.cpu_cap_cores.unwrap_or(0.0))
            ),
            e,
        )
    });
    let throttling = pair(&throttled);
    let share = throttling.failing.map_or(0.0, |p| p.value);
    let confidence = if share >= THROTTLED_HIGH {
        Confidence::High
    } else if share >= THROTTLED_MEDIUM {
        Confidence::Medium
    } else {
        return by_cpu;
    };
    let mut evidence: Vec<Evidence> = throttling
        .evidence("throttled_share", None)
        .into_iter()
        .collect();
    evidence.extend(cpu);
    Some(Candidate {
        what,
        kind: Kind::Throttling,
        state: "throttled by its CPU quota".into(),
        confidence: by_cpu
            .as_ref()
            .map_or(confidence, |b| b.confidence.max(confidence)),
        share: by_cpu.map_or(share, |b| b.share.max(share)),
        evidence,
    })
}

fn connections(d: &Detail) -> Option<f64> {
    match d {
        // The watch's own connection counts toward max_connections but not in `max`.
        Detail::Postgres(p) => Some(p.connections.max as f64 + 1.0),
        _ => None,
    }
}

fn locks(d: &Detail) -> Option<f64> {
    match d {
        Detail::Postgres(p) => Some(p.waiting_locks.max),
        _ => None,
    }
}

fn postgres(w: &WatchSummary, p: &PostgresSummary, pair: &Pairs) -> Vec<Candidate> {
    let mut out = Vec::new();
    let what = format!("PostgreSQL ({})", w.spec);
    // Against the whole of max_connections: a watch that connects as a superuser once
    // the others are taken sits in the reserve, so everyone's connections reach it.
    let cap = p.connections.limit;
    if cap > 0 {
        if let Some(e) = pair(&connections).evidence("connections", Some(cap as f64)) {
            out.extend(capped(
                what.clone(),
                Kind::Connections,
                "at max_connections".into(),
                e,
            ));
        }
    }
    let waits = pair(&locks);
    let grew = waits
        .failing
        .is_some_and(|f| f.value >= 1.0 && waits.passing.is_none_or(|p| f.value > p.value));
    if grew {
        if let Some(e) = waits.evidence("waiting_locks", None) {
            out.push(Candidate {
                what,
                kind: Kind::Locks,
                state: "waiting on locks".into(),
                share: NEAR_CAP,
                confidence: Confidence::Low,
                evidence: vec![e],
            });
        }
    }
    out
}

fn busy(d: &Detail) -> Option<f64> {
    match d {
        Detail::Prometheus(p) => mean(p.samples.iter().filter_map(|s| s.values.get(BUSY).copied())),
        _ => None,
    }
}

fn workers(p: &PrometheusSummary, pair: &Pairs) -> Option<Candidate> {
    let workers = p.series.iter().find(|s| s.series == WORKERS)?.last;
    let e = pair(&busy).evidence("workers_busy", Some(workers))?;
    capped(
        format!("the built-in target's workers ({})", p.url),
        Kind::Workers,
        "all busy".into(),
        e,
    )
}

/// The generator of a step it bound, from the engine's verdict.
pub(super) fn generator(rate: f64, s: &Summary) -> Candidate {
    let g = &s.generator;
    let at = |v: f64| Point { rate, value: v };
    Candidate {
        what: "the generator (headroom)".into(),
        kind: Kind::Generator,
        state: format!("bound: {}", g.reason),
        confidence: Confidence::High,
        share: 1.0,
        evidence: vec![
            Evidence {
                figure: "generator_cpu_percent".into(),
                cap: Some(g.threads as f64 * 100.0),
                failing: at(g.cpu_percent),
                passing: None,
            },
            Evidence {
                figure: "generator_lag_ms".into(),
                cap: None,
                failing: at(g.max_lag_ms),
                passing: None,
            },
        ],
    }
}

/// A figure in words: in full at the failing step (`first`), the bare number beside it.
pub(super) fn figure(e: &Evidence, v: f64, first: bool) -> String {
    let pct = |cap: f64| format!("{:.0}%", v / cap.max(1e-9) * 100.0);
    let cap = e.cap.unwrap_or(0.0);
    // `99% of 1 core`, `180% of 2 cores`.
    let of_cores = || {
        format!(
            "{} of {} core{}",
            pct(cap),
            value(cap),
            if cap == 1.0 { "" } else { "s" }
        )
    };
    match (e.figure.as_str(), first) {
        ("cpu_cores", true) => of_cores(),
        ("cpu_cores", false) | ("cpu_demand_cores", false) => pct(cap),
        ("cpu_demand_cores", true) => format!("busy or waiting for a CPU {}", of_cores()),
        ("throttled_share", true) => format!("throttled in {:.0}% of periods", v * 100.0),
        ("throttled_share", false) => format!("{:.0}%", v * 100.0),
        ("fds", true) => format!("{} of {} descriptors open", value(v), value(cap)),
        ("connections", true) => format!("{} of {} connections", value(v), value(cap)),
        ("waiting_locks", true) => format!("{} lock requests waiting", value(v)),
        // At the cap the pool is whole: the mean of the samples, read at scrape instants
        // that can fall between one request's end and the next one's start (7.9 of 8),
        // is said in whole workers.
        ("workers_busy", true) => format!("{} of {} busy", value(v.round()), value(cap)),
        ("generator_cpu_percent", _) => format!("CPU {:.0}% of {} cores", v, value(cap / 100.0)),
        ("generator_lag_ms", _) => format!("schedule lag up to {v:.1} ms"),
        _ => value(v),
    }
}
