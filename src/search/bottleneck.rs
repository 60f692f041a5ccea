//! The bottleneck, named with evidence: which watched resource reached its cap (or
//! saturated) between the last passing step and the first failing one, with the
//! figures of both steps and how sure the attribution is.
//!
//! A pure function of two steps' summaries ([`attribute`]; [`of_steps`] picks the two
//! from a search, as the reports' `SearchView` does): each watch is read by a rule in
//! [`rules`], which yields a [`Candidate`] when its figure at the failing step is near
//! its cap:
//!
//! | kind | watch | figure (failing step) | cap |
//! |---|---|---|---|
//! | `cpu` | `pid:`/`process:` | mean CPU of the busiest process, plus the time it waited for a CPU when single-threaded (a shared core) | its threads or allowed CPUs, whichever is fewer (1 core when single-threaded) |
//! | `cpu` | `cgroup:`/`docker:` | mean CPU of the cgroup | its `cpu.max` quota |
//! | `throttling` | `cgroup:`/`docker:` | mean share of periods throttled | — (≥ 20 %) |
//! | `fds` | `pid:`/`process:` | most open descriptors | their soft limit |
//! | `connections` | `postgres:` | most client connections + the watch's own | `max_connections` |
//! | `locks` | `postgres:` | most lock requests waiting | — (any, more than at the passing step) |
//! | `workers` | `prometheus:` of the built-in target | mean `headroom_target_workers_busy` | `headroom_target_workers` |
//! | `generator` | the generator | the engine's verdict (`generator.bound`) | — |
//!
//! **Confidence**: `high` when the figure is at its cap (≥ 95 %; throttled in at
//! least half the periods; the generator's own verdict), `medium` when near it
//! (≥ 80 %; throttled in at least a fifth), `low` for a symptom without a cap (lock
//! waits). A figure under 80 % of its cap is no candidate. Candidates are ranked by
//! confidence, then by how full the cap is, then by kind (a hard limit that makes
//! requests fail — descriptors, connections — before throughput limits); the first
//! is the bottleneck and the rest are its `others`. When no watch yields a candidate,
//! [`hint`] says which watch would.

mod rules;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use super::limited::LimitedBy;
use super::step::{StepRecord, Unit};
use super::words::value;
use crate::metrics::summary::Summary;
use crate::watch::Detail;

/// Share of a cap at which a figure is at it: `high` confidence.
pub const AT_CAP: f64 = 0.95;
/// Share of a cap at which a figure is near it: `medium` confidence; below, no candidate.
pub const NEAR_CAP: f64 = 0.80;

/// What ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// File descriptors at the soft limit.
    Fds,
    /// PostgreSQL connections at `max_connections`.
    Connections,
    /// A cgroup's CPU quota throttling it.
    Throttling,
    /// The built-in target's workers all busy.
    Workers,
    /// A process at the cores it can use, or a cgroup at its quota.
    Cpu,
    /// PostgreSQL sessions waiting on locks.
    Locks,
    /// The generator itself.
    Generator,
}

impl Kind {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Fds => "fds",
            Kind::Connections => "connections",
            Kind::Throttling => "throttling",
            Kind::Workers => "workers",
            Kind::Cpu => "cpu",
            Kind::Locks => "locks",
            Kind::Generator => "generator",
        }
    }
}

/// How sure the attribution is (the rule is in the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// A symptom without a cap.
    Low,
    /// Near its cap.
    Medium,
    /// At its cap.
    High,
}

impl Confidence {
    /// `high`, `medium` or `low`.
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        }
    }

    /// The confidence of a figure at `share` of its cap; `None` below [`NEAR_CAP`].
    pub fn of_share(share: f64) -> Option<Confidence> {
        if share >= AT_CAP {
            Some(Confidence::High)
        } else if share >= NEAR_CAP {
            Some(Confidence::Medium)
        } else {
            None
        }
    }
}

/// A figure at one step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The step's value (rate or users).
    pub rate: f64,
    /// The figure there.
    pub value: f64,
}

/// One figure behind an attribution, at the failing step and the passing one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// What is measured: `cpu_demand_cores` (CPU used plus waited for), `cpu_cores`, `throttled_share`, `fds`, `connections`,
    /// `waiting_locks`, `workers_busy`, `generator_cpu_percent`, `generator_lag_ms`.
    pub figure: String,
    /// Its cap, in the same unit (`None`: none).
    pub cap: Option<f64>,
    /// At the first failing step.
    pub failing: Point,
    /// At the last passing step (`None`: no step passed, or it lacked the watch).
    pub passing: Option<Point>,
}

/// One resource that may explain the failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// What: `nginx (pid 4242)`, `cgroup /sys/fs/cgroup/web`, `PostgreSQL (postgres:…)`.
    pub what: String,
    /// What ran out.
    pub kind: Kind,
    /// Its state in words: `at 1 core`, `at its CPU quota`, `out of file descriptors`.
    pub state: String,
    /// The figures, the deciding one first.
    pub evidence: Vec<Evidence>,
    /// How sure.
    pub confidence: Confidence,
    /// Share of the cap the deciding figure reached at the failing step (for ranking).
    pub share: f64,
}

/// The `bottleneck` of a search's result: the first-ranked [`Candidate`], and the others.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bottleneck {
    /// The bottleneck.
    #[serde(flatten)]
    pub top: Candidate,
    /// Further candidates, ranked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub others: Vec<Candidate>,
}

/// The bottleneck between a passing step (`(value, summary)`, when one passed) and the
/// failing step above it; `None` when no watch of the failing step explains it.
pub fn attribute(passing: Option<(f64, &Summary)>, failing: (f64, &Summary)) -> Option<Bottleneck> {
    let mut found: Vec<Candidate> = failing
        .1
        .watches
        .iter()
        .flat_map(|w| {
            let before = passing.and_then(|(rate, s)| {
                s.watches
                    .iter()
                    .find(|p| p.spec == w.spec)
                    .map(|p| (rate, p))
            });
            rules::candidates(w, before, failing.0)
        })
        .collect();
    found.sort_by(|a, b| {
        b.confidence
            .cmp(&a.confidence)
            .then(b.share.min(1.0).total_cmp(&a.share.min(1.0)))
            .then(a.kind.cmp(&b.kind))
    });
    let mut found = found.into_iter();
    Some(Bottleneck {
        top: found.next()?,
        others: found.collect(),
    })
}

/// The generator as the bottleneck of a generator-bound step, from the engine's verdict.
pub fn generator(bound: (f64, &Summary)) -> Bottleneck {
    Bottleneck {
        top: rules::generator(bound.0, bound.1),
        others: Vec::new(),
    }
}

/// The bottleneck of a search: between the step that holds `ceiling` (the last one run
/// at it) and the lowest failing step above it, when it ended at thresholds; the
/// generator when it ended there; `None` otherwise.
pub fn of_steps(
    steps: &[StepRecord],
    limited_by: LimitedBy,
    ceiling: Option<f64>,
) -> Option<Bottleneck> {
    match limited_by {
        LimitedBy::Thresholds => {
            let failing = first_failing(steps, ceiling)?;
            let passing = ceiling.and_then(|c| {
                steps
                    .iter()
                    .rev()
                    .find(|s| s.passed && !s.summary.generator.bound && s.rate == c)
            });
            attribute(
                passing.map(|s| (s.rate, &s.summary)),
                (failing.rate, &failing.summary),
            )
        }
        LimitedBy::Generator => steps
            .iter()
            .rev()
            .find(|s| s.summary.generator.bound)
            .map(|s| generator((s.rate, &s.summary))),
        LimitedBy::Range | LimitedBy::Interrupted | LimitedBy::Error => None,
    }
}

/// The lowest step above `ceiling` that failed at the target: neither bound by the
/// generator nor interrupted (those say nothing about the target).
fn first_failing(steps: &[StepRecord], ceiling: Option<f64>) -> Option<&StepRecord> {
    let floor = ceiling.unwrap_or(f64::NEG_INFINITY);
    steps
        .iter()
        .filter(|s| {
            !s.passed && !s.summary.generator.bound && !s.summary.interrupted && s.rate > floor
        })
        .min_by(|a, b| a.rate.total_cmp(&b.rate))
}

/// The search's bottleneck ([`of_steps`]); when it ended at a failing step no watch
/// explains, `conclusion` gets the [`hint`] as one more sentence.
pub fn conclude(
    steps: &[StepRecord],
    limited_by: LimitedBy,
    ceiling: Option<f64>,
    conclusion: &mut String,
) -> Option<Bottleneck> {
    let found = of_steps(steps, limited_by, ceiling);
    if found.is_none() && limited_by == LimitedBy::Thresholds {
        if let Some(f) = first_failing(steps, ceiling) {
            let mut h = hint(&f.summary);
            if let Some(first) = h.get_mut(0..1) {
                first.make_ascii_uppercase();
            }
            conclusion.push_str(&format!(" {h}."));
        }
    }
    found
}

/// When the failing step's watches explain nothing: which watch would, in a sentence
/// (`no watch explains the failure: add --watch pid:PID of the service`).
pub fn hint(failing: &Summary) -> String {
    let has = |f: fn(&Detail) -> bool| failing.watches.iter().any(|w| f(&w.detail));
    let process = has(|d| matches!(d, Detail::Process(_) | Detail::Cgroup(_)));
    let database = has(|d| matches!(d, Detail::Postgres(_)));
    let metrics = has(|d| matches!(d, Detail::Prometheus(_)));
    let mut wanted = Vec::new();
    if !process {
        wanted.push("--watch pid:PID of the service");
    }
    if !database {
        wanted.push("--watch postgres:URL of its database");
    }
    if !metrics {
        wanted.push("--watch prometheus:URL of its metrics");
    }
    if process && wanted.is_empty() {
        return "no watch explains the failure: none of the watched resources reached its cap \
                (the limit may be in code the watches cannot see: a lock, a pool, a rate limit)"
            .into();
    }
    let lead = if process {
        "no watch explains the failure: the watched processes stayed under their CPU and descriptor limits; add "
    } else {
        "no watch explains the failure: add "
    };
    format!("{lead}{}", wanted.join(", or "))
}

/// The one line: `nginx (pid 123) at 1 core: 99% of 1 core at 1600/s, 62% at 800/s
/// (high)`, with `; also: …` naming the other candidates.
pub fn line(b: &Bottleneck, unit: Unit) -> String {
    let mut out = candidate_line(&b.top, unit);
    if !b.others.is_empty() {
        let others: Vec<String> = b
            .others
            .iter()
            .map(|c| format!("{} {} ({})", c.what, c.state, c.confidence.as_str()))
            .collect();
        out.push_str(&format!("; also: {}", others.join(", ")));
    }
    out
}

fn candidate_line(c: &Candidate, unit: Unit) -> String {
    let at = |rate: f64| match unit {
        Unit::Rate => format!("{}/s", value(rate)),
        Unit::Users => format!("{} users", value(rate)),
    };
    let figures: Vec<String> = c
        .evidence
        .iter()
        .map(|e| {
            let mut s = format!(
                "{} at {}",
                rules::figure(e, e.failing.value, true),
                at(e.failing.rate)
            );
            if let Some(p) = e.passing {
                s.push_str(&format!(
                    ", {} at {}",
                    rules::figure(e, p.value, false),
                    at(p.rate)
                ));
            }
            s
        })
        .collect();
    format!(
        "{} {}: {} ({})",
        c.what,
        c.state,
        figures.join("; "),
        c.confidence.as_str()
    )
}
