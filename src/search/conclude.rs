//! [`conclude`]: how a search's loop ended ([`End`]), put into a [`SearchResult`]:
//! the ceiling, why the search stopped, the sentence that says so, the knee, and how
//! sure the answer is (the interval its trials left, and any noise).

use std::time::Duration;

use super::interval::CeilingInterval;
use super::knee::{knee, latency_limit};
use super::model;
use super::noise::Noisy;
use super::result::{LimitedBy, SearchResult};
use super::step::{StepRecord, Unit};
use super::strategy::Conclusion;
use super::text::failures;
use super::words::value;

/// How the loop ended, before it is put in words.
pub(super) enum End {
    /// The strategy concluded.
    Strategy(Conclusion),
    /// A step stayed generator-bound when re-run.
    Generator,
    /// Ctrl-C (or a step that was interrupted).
    Interrupted,
    /// A hook failed or a step could not run: the message.
    Error(String),
}

/// Puts the end of the loop into a result: ceiling, label and sentence.
pub(super) fn conclude(
    end: End,
    unit: Unit,
    steps: Vec<StepRecord>,
    interval: Option<CeilingInterval>,
    took: Duration,
) -> SearchResult {
    let u = unit.as_str();
    let best_unbound = steps
        .iter()
        .filter(|s| s.passed && !s.summary.generator.bound)
        .map(|s| s.rate)
        .reduce(f64::max);
    let failed_at = steps
        .iter()
        .filter(|s| !s.passed && !s.summary.generator.bound && !s.summary.interrupted)
        .map(|s| s.rate)
        .reduce(f64::min);
    let failure_of = |rate: f64| {
        steps
            .iter()
            .find(|s| s.rate == rate && !s.passed && !s.summary.generator.bound)
            .map(failures)
            .unwrap_or_default()
    };
    let lower = |best: Option<f64>| {
        best.map_or("no step passed before that".into(), |b| {
            format!("the ceiling is at least {} {u} (a lower bound)", value(b))
        })
    };
    let (ceiling, lower_bound, limited_by, mut conclusion) = match end {
        End::Strategy(Conclusion::Ceiling { ceiling, failed }) => (
            Some(ceiling),
            false,
            LimitedBy::Thresholds,
            format!(
                "Ceiling {} {u}: {} ({}).",
                value(ceiling),
                interval.map_or_else(
                    || format!("{} {u} failed", value(failed)),
                    |i| i.describe(unit)
                ),
                failure_of(failed)
            ),
        ),
        End::Strategy(Conclusion::Range(top)) => (
            Some(top),
            true,
            LimitedBy::Range,
            format!(
                "Every step up to --to {} {u} passed: the ceiling is at least that. Raise --to to search higher.",
                value(top)
            ),
        ),
        End::Strategy(Conclusion::NothingPassed(from)) => (
            None,
            false,
            LimitedBy::Thresholds,
            format!(
                "Even the first step, {} {u}, failed ({}): no ceiling found. Try a lower --from.",
                value(from),
                failure_of(from)
            ),
        ),
        End::Strategy(Conclusion::NotReproducible(v)) => (
            None,
            false,
            LimitedBy::Thresholds,
            format!(
                "The lowest passing step, {} {u}, failed when run again: results do not repeat, so no ceiling is claimed. Try a lower --from, longer steps (--step-duration) or a longer --cooldown.",
                value(v)
            ),
        ),
        End::Generator => {
            let step = steps.last().expect("a generator-bound step ends the search");
            (
                best_unbound,
                true,
                LimitedBy::Generator,
                format!(
                    "The generator, not the target, limited the step at {} {u} ({}), so that step says nothing about the target; {}. {}",
                    value(step.rate),
                    step.summary.generator.reason,
                    lower(best_unbound),
                    if step.summary.generator.starved {
                        "To search higher, run headroom on another machine than the target's: other processes kept the host's CPU busy, and more --threads will not help."
                    } else {
                        "To search higher, give the generator more --threads, run it on another machine, or split the load across shards."
                    }
                ),
            )
        }
        End::Interrupted => (
            best_unbound,
            true,
            LimitedBy::Interrupted,
            format!("The search was interrupted after {} steps; {}.", steps.len(), lower(best_unbound)),
        ),
        End::Error(message) => (
            best_unbound,
            true,
            LimitedBy::Error,
            format!("{message}. {} step(s) were done; {}.", steps.len(), lower(best_unbound)),
        ),
    };
    let points: Vec<(f64, f64)> = steps
        .iter()
        .filter(|s| !s.summary.generator.bound && !s.summary.interrupted && s.summary.requests > 0)
        .map(|s| (s.rate, s.summary.latency_ms.p95))
        .collect();
    let limit = steps
        .first()
        .and_then(|s| latency_limit(&s.summary.thresholds));
    let bottleneck = super::bottleneck::conclude(&steps, limited_by, ceiling, &mut conclusion);
    let noisy = Noisy::of(&steps);
    let model = model::fit_steps(unit, steps.iter().map(|s| (s.rate, &s.summary)));
    let conclusion = match &noisy {
        Some(n) => format!("{conclusion} {}", n.sentence(u)),
        None => conclusion,
    };
    SearchResult {
        version: 1,
        ceiling,
        ceiling_is_lower_bound: lower_bound && ceiling.is_some(),
        knee: knee(&points, limit),
        limited_by,
        unit,
        failed_at,
        bottleneck,
        conclusion,
        duration_s: took.as_secs_f64(),
        steps,
        hold: None,
        ceiling_interval: interval,
        noisy,
        model,
    }
}
