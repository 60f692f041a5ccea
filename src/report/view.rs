//! A search's steps as every report reads them, whether they come from the run store
//! ([`SearchView::stored`]) or straight from the search ([`SearchView::result`]): which
//! step holds the ceiling, which step failed just above it, and in words what limited
//! the ceiling ([`SearchView::limited_by`]); [`stored_hold`] reads its `--hold` back.
//! [`whole_seconds`] keeps a timeline to the
//! seconds its measured window fully covers, for every chart of rates over time.

use crate::metrics::summary::{Second, Summary};
use crate::search::interval::trials_sentence;
use crate::search::keepup;
use crate::search::noise::{Noisy, Trial};
use crate::search::result::value;
use crate::search::text::failed_rules;
use crate::search::{Hold, LimitedBy, SearchResult};
use crate::store::{RunStatus, StoredRun};

/// One step of a search.
#[derive(Debug, Clone, Copy)]
pub struct StepView<'a> {
    /// Step number, from 1.
    pub number: u32,
    /// The step's value: its rate or its user count.
    pub value: f64,
    /// Passed every threshold.
    pub passed: bool,
    /// The step's measured window.
    pub summary: &'a Summary,
}

impl StepView<'_> {
    /// The generator, not the target, limited this step: it says nothing of the target.
    pub fn bound(&self) -> bool {
        self.summary.generator.bound
    }

    /// Why the step failed: its failed thresholds, then how the target fell behind.
    pub fn failure(&self) -> String {
        let rules = failed_rules(self.summary);
        let behind = keepup::judge(self.summary).describe().unwrap_or_default();
        [rules, behind]
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A search's steps, in the order run.
#[derive(Debug, Clone)]
pub struct SearchView<'a> {
    /// `req/s` or `users`.
    pub unit: &'static str,
    /// The steps.
    pub steps: Vec<StepView<'a>>,
    /// What the search said limited it, when known (a stored run does not keep it).
    known: Option<LimitedBy>,
    /// The ceiling the search found, when known.
    known_ceiling: Option<Option<f64>>,
    /// The stored run was interrupted or failed (with its message), when stored.
    ended: Option<(RunStatus, Option<&'a str>)>,
}

impl<'a> SearchView<'a> {
    /// The stored search's steps; `None` when the run is not a search.
    pub fn stored(run: &'a StoredRun) -> Option<SearchView<'a>> {
        let first = run.steps.first()?;
        Some(SearchView {
            unit: unit_of(&first.summary),
            steps: run
                .steps
                .iter()
                .map(|s| StepView {
                    number: s.index + 1,
                    value: s.rate,
                    passed: s.ok,
                    summary: &s.summary,
                })
                .collect(),
            known: None,
            known_ceiling: None,
            ended: Some((run.row.status, run.row.message.as_deref())),
        })
    }

    /// The steps of a search that just ran.
    pub fn result(result: &'a SearchResult) -> SearchView<'a> {
        SearchView {
            unit: result.unit.as_str(),
            steps: result
                .steps
                .iter()
                .zip(1..)
                .map(|(s, number)| StepView {
                    number,
                    value: s.rate,
                    passed: s.passed,
                    summary: &s.summary,
                })
                .collect(),
            known: Some(result.limited_by),
            known_ceiling: Some(result.ceiling),
            ended: None,
        }
    }

    /// The ceiling: as the search said, or for a stored search the highest value that
    /// passed (not limited by the generator) below every failed value — a value that
    /// passed once and failed when run again is no ceiling, as the search decides.
    pub fn ceiling(&self) -> Option<f64> {
        if let Some(known) = self.known_ceiling {
            return known;
        }
        let lowest_failure = self
            .steps
            .iter()
            .filter(|s| !s.passed && !s.bound() && !s.summary.interrupted)
            .map(|s| s.value)
            .fold(f64::INFINITY, f64::min);
        self.steps
            .iter()
            .filter(|s| s.passed && !s.bound() && s.value < lowest_failure)
            .map(|s| s.value)
            .reduce(f64::max)
    }

    /// The last step run at the ceiling (its confirmation when there was one).
    pub fn ceiling_step(&self) -> Option<StepView<'a>> {
        let c = self.ceiling()?;
        self.steps
            .iter()
            .rev()
            .find(|s| s.passed && !s.bound() && s.value == c)
            .copied()
    }

    /// The lowest failing step above the ceiling (any failing step without one), not
    /// limited by the generator nor interrupted: the load the target could not take.
    pub fn failing_step(&self) -> Option<StepView<'a>> {
        let floor = self.ceiling().unwrap_or(f64::NEG_INFINITY);
        self.steps
            .iter()
            .filter(|s| !s.passed && !s.bound() && !s.summary.interrupted && s.value > floor)
            .min_by(|a, b| a.value.total_cmp(&b.value))
            .copied()
    }

    /// What limited the ceiling, in one line: `thresholds: 825 req/s failed: p95 < 50ms
    /// (103ms)`, `errors: ...`, `generator: ...`, `range: ...`, `interrupted`, `error: ...`.
    /// A stored search does not keep the search's own label; it is read from the steps
    /// the same way the search decided it.
    pub fn limited_by(&self) -> String {
        let u = self.unit;
        let failing = self.failing_step();
        let bound = self.steps.iter().rev().find(|s| s.bound());
        match self.label() {
            LimitedBy::Thresholds => match failing {
                Some(f) => {
                    let rules = &f.summary.thresholds;
                    let errors_only = rules.iter().filter(|t| !t.ok).all(|t| {
                        let e = t.expr.trim_start().to_ascii_lowercase();
                        e.starts_with("errors") || e.starts_with("error_rate")
                    }) && rules.iter().any(|t| !t.ok);
                    let kind = if errors_only { "errors" } else { "thresholds" };
                    format!("{kind}: {} {u} failed: {}", value(f.value), f.failure())
                }
                None => "thresholds".into(),
            },
            LimitedBy::Generator => match bound {
                Some(b) => format!(
                    "generator: it could not drive {} {u} ({}); the ceiling is only a lower bound",
                    value(b.value),
                    b.summary.generator.reason
                ),
                None => "generator".into(),
            },
            LimitedBy::Range => {
                "range: every step passed; the ceiling is at least the highest step (raise --to)"
                    .into()
            }
            LimitedBy::Interrupted => {
                "interrupted: the search was stopped; the ceiling is only a lower bound".into()
            }
            LimitedBy::Error => match self.ended.and_then(|e| e.1) {
                Some(m) => format!("error: {m}"),
                None => "error: a hook failed or a step could not run".into(),
            },
        }
    }

    /// Why the search stopped: as it said, or for a stored search as its steps show
    /// it (a generator-bound step ends a search; a failed step above the best pass
    /// bounds it; otherwise the range did).
    pub fn label(&self) -> LimitedBy {
        match (self.known, self.ended) {
            (Some(l), _) => l,
            (None, Some((RunStatus::Interrupted, _))) => LimitedBy::Interrupted,
            (None, Some((RunStatus::Failed, Some(_)))) if self.ceiling().is_some() => {
                LimitedBy::Error
            }
            _ if self.steps.last().is_some_and(|s| s.bound()) => LimitedBy::Generator,
            _ if self.failing_step().is_some() => LimitedBy::Thresholds,
            _ => LimitedBy::Range,
        }
    }

    /// The ceiling is only a lower bound: the search stopped for another reason than
    /// a failed step above it.
    pub fn lower_bound(&self) -> bool {
        self.label() != LimitedBy::Thresholds
    }

    /// The generator-bound steps, in the order run.
    pub fn bound_steps(&self) -> impl Iterator<Item = &StepView<'a>> {
        self.steps.iter().filter(|s| s.bound())
    }

    /// The runs that judge the target: not generator-bound, not interrupted.
    fn judged(&self) -> impl Iterator<Item = &StepView<'a>> {
        self.steps
            .iter()
            .filter(|s| !s.bound() && !s.summary.interrupted)
    }

    /// The trials at the ceiling and at the lowest failure above it: `passed 2 of 2
    /// trials; 821 req/s failed 1 of 1` (only the first part when nothing above failed).
    pub fn trials(&self) -> Option<String> {
        let c = self.ceiling()?;
        // (passed, runs) at a value.
        let at = |v: f64| {
            self.judged()
                .filter(|s| s.value == v)
                .fold((0, 0), |(p, n), s| (p + u32::from(s.passed), n + 1))
        };
        let high = self
            .judged()
            .filter(|s| !s.passed && s.value > c)
            .map(|s| s.value)
            .reduce(f64::min)
            .map(|h| {
                let (passed, runs) = at(h);
                (h, runs - passed, runs)
            });
        let (passed, runs) = at(c);
        Some(trials_sentence(passed, runs, high, self.unit))
    }

    /// Trials at one load that disagreed, if any (see [`Noisy`]).
    pub fn noisy(&self) -> Option<Noisy> {
        Noisy::of_trials(self.judged().map(|s| Trial {
            rate: s.value,
            passed: s.passed,
            p95_ms: s.summary.latency_ms.p95,
            thresholds: &s.summary.thresholds,
        }))
    }

    /// The generator's verdict over the whole search, in one sentence.
    pub fn generator(&self) -> String {
        let bound: Vec<_> = self.bound_steps().collect();
        let cpu = self
            .steps
            .iter()
            .map(|s| s.summary.generator.cpu_percent)
            .fold(0.0, f64::max);
        let lag = self
            .steps
            .iter()
            .map(|s| s.summary.generator.p99_lag_ms)
            .fold(0.0, f64::max);
        match bound.first() {
            None => format!(
                "kept up in every step (highest CPU {cpu:.0}% of one core, highest p99 schedule lag {})",
                crate::report::units::latency(lag)
            ),
            Some(b) => format!(
                "bound in {} step(s), first at {} {} ({}); bound steps say nothing about the target",
                bound.len(),
                value(b.value),
                self.unit,
                b.summary.generator.reason
            ),
        }
    }
}

/// The hold a stored search ran (`find --hold`), when it ran one and it reads back.
pub fn stored_hold(run: &StoredRun) -> Option<Hold> {
    serde_json::from_value(run.hold.as_ref()?.json.clone()).ok()
}

/// `users` for a closed-model summary, `req/s` otherwise.
pub fn unit_of(s: &Summary) -> &'static str {
    if s.model == "users" {
        "users"
    } else {
        "req/s"
    }
}

/// The seconds of `timeline` that its measured window of `duration_s` covers whole.
///
/// Why: seconds are cut by completion time from the window's start, so the last one
/// (`t` ≥ the window's length) holds only the responses that completed in the fraction
/// of a second the drain lasted, and a count over a fraction of a second drawn as a
/// per-second rate falls towards 0. It is excluded rather than scaled: scaling by
/// that fraction would turn 15 stragglers in 20 ms into a spike of 750/s. A second
/// that ends within 50 ms past the window still counts (timer jitter at its end).
pub fn whole_seconds(timeline: &[Second], duration_s: Option<f64>) -> Vec<&Second> {
    timeline
        .iter()
        .filter(|s| duration_s.is_none_or(|d| (s.t + 1) as f64 <= d + 0.05))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(t: u64, requests: u64) -> Second {
        Second {
            t,
            requests,
            errors: 0,
            dropped: 0,
            offered: 100.0,
            p50_ms: 1.0,
            p95_ms: 2.0,
            p99_ms: 3.0,
            max_lag_ms: 0.0,
            generator_cpu_percent: 0.0,
        }
    }

    fn summary(requests: u64, failed: Option<&str>, bound: bool) -> Summary {
        use crate::metrics::summary::ThresholdResult;
        let mut s = Summary::empty("t", 2.0);
        s.requests = requests;
        s.generator.bound = bound;
        s.generator.reason = "busy".into();
        s.thresholds = vec![ThresholdResult {
            expr: failed.unwrap_or("p95 < 50ms").into(),
            ok: failed.is_none(),
            value: 3.0,
            window: None,
        }];
        s
    }

    fn view<'a>(steps: &[(f64, bool, &'a Summary)]) -> SearchView<'a> {
        SearchView {
            unit: "req/s",
            steps: steps
                .iter()
                .zip(1..)
                .map(|(&(value, passed, summary), number)| StepView {
                    number,
                    value,
                    passed,
                    summary,
                })
                .collect(),
            known: None,
            known_ceiling: None,
            ended: Some((RunStatus::Done, None)),
        }
    }

    #[test]
    fn a_stored_search_says_what_limited_it_as_the_search_did() {
        let ok = summary(100, None, false);
        let slow = summary(100, Some("p95 < 50ms"), false);
        let errors = summary(100, Some("errors < 1%"), false);
        let bound = summary(100, None, true);
        let v = view(&[
            (100.0, true, &ok),
            (200.0, false, &slow),
            (150.0, true, &ok),
            (175.0, false, &errors),
            (150.0, true, &ok),
        ]);
        assert_eq!(v.ceiling(), Some(150.0));
        assert_eq!(v.ceiling_step().unwrap().number, 5);
        assert_eq!(v.failing_step().unwrap().number, 4);
        assert!(!v.lower_bound());
        assert!(
            v.limited_by()
                .starts_with("errors: 175 req/s failed: errors < 1%"),
            "{}",
            v.limited_by()
        );
        // A bound step ends a search: its ceiling is a lower bound, whatever failed above.
        let v = view(&[
            (100.0, true, &ok),
            (400.0, false, &slow),
            (200.0, false, &bound),
        ]);
        assert_eq!(v.label(), LimitedBy::Generator);
        assert!(v.lower_bound());
        assert!(v
            .limited_by()
            .starts_with("generator: it could not drive 200 req/s (busy)"));
        assert!(v
            .generator()
            .starts_with("bound in 1 step(s), first at 200 req/s"));
        // 200 passed, then failed when run again: 150 is the ceiling, 200 the failure.
        let v = view(&[
            (100.0, true, &ok),
            (200.0, true, &ok),
            (400.0, false, &slow),
            (200.0, false, &slow),
            (150.0, true, &ok),
        ]);
        assert_eq!(v.ceiling(), Some(150.0));
        assert!(
            v.limited_by().starts_with("thresholds: 200 req/s failed: "),
            "{}",
            v.limited_by()
        );
        let v = view(&[(100.0, true, &ok), (200.0, true, &ok)]);
        assert_eq!(v.label(), LimitedBy::Range);
        assert!(v.failing_step().is_none() && v.lower_bound());
    }

    #[test]
    fn the_partial_last_second_is_left_out() {
        let t = [second(0, 99), second(1, 100), second(2, 1)];
        let kept: Vec<u64> = whole_seconds(&t, Some(2.0)).iter().map(|s| s.t).collect();
        assert_eq!(kept, [0, 1]);
        let kept = whole_seconds(&t, Some(2.38));
        assert_eq!(kept.len(), 2);
        assert_eq!(whole_seconds(&t, Some(3.0)).len(), 3);
        assert_eq!(whole_seconds(&t, None).len(), 3);
    }
}
