//! Rules over sliding windows (`p95 < 500ms over 10s`) and judging rules live, as a
//! run goes (`run --abort-on-fail`), both from the per-second [`SecondBucket`]s.
//!
//! A window of D seconds is the merge of D consecutive seconds' buckets; windows slide
//! by one second, from the first second of the measured window to the last, and the
//! rule must hold on every one. A slow spell of a few seconds in a long run fails the
//! window that holds it, where a whole-run figure would dilute it among the healthy
//! seconds (k6#2379). The per-second histograms keep two significant digits, so a
//! window's percentile is within 1% of the exact one. A window longer than the run
//! judges the whole run, from the run's own figures, and says so (`whole_run`).
//!
//! A window in which no request completed has no latency and is not judged by a
//! latency rule; its error rate is 0%.

use std::collections::VecDeque;

use crate::recorder::SecondBucket;
use crate::summary::{Summary, ThresholdResult, ThresholdWindow};

use super::{LatencyStat, Metric, Op, Threshold};

/// The sum of some consecutive seconds' buckets, kept as a window slides: seconds are
/// added as they enter and subtracted as they leave.
struct Sum {
    bucket: SecondBucket,
}

impl Sum {
    fn new() -> Sum {
        Sum {
            bucket: SecondBucket::new(0),
        }
    }

    fn add(&mut self, b: &SecondBucket) {
        self.bucket.merge(b);
    }

    fn subtract(&mut self, b: &SecondBucket) {
        self.bucket
            .latency
            .subtract(&b.latency)
            .expect("a second in the window was added to it before");
        self.bucket.errors -= b.errors;
        for (a, b) in self.bucket.by_name.iter_mut().zip(&b.by_name) {
            a.requests -= b.requests;
            for (x, y) in a.errors.iter_mut().zip(b.errors) {
                *x -= y;
            }
        }
    }
}

/// The figure a rule reads from a sum of seconds, in the rule's unit, or `None` when
/// there is nothing to judge (no latency in the seconds) or the buckets do not hold
/// the figure (a named latency, a stream, delivery...).
fn measure(rule: &Threshold, b: &SecondBucket, names: &[String]) -> Option<f64> {
    match (rule.scope.as_deref(), rule.metric) {
        (None, Metric::Latency(stat)) => {
            let h = &b.latency;
            if h.is_empty() {
                return None;
            }
            let q = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
            Some(match stat {
                LatencyStat::P50 => q(0.50),
                LatencyStat::P90 => q(0.90),
                LatencyStat::P95 => q(0.95),
                LatencyStat::P99 => q(0.99),
                LatencyStat::P999 => q(0.999),
                LatencyStat::Min => h.min() as f64 / 1000.0,
                LatencyStat::Max => h.max() as f64 / 1000.0,
                LatencyStat::Avg => h.mean() / 1000.0,
            })
        }
        (scope, Metric::ErrorPercent) => {
            let (requests, errors) = match scope {
                None => (b.latency.len(), b.errors),
                Some(name) => {
                    let id = names.iter().position(|n| n == name)?;
                    let c = b.by_name.get(id).copied().unwrap_or_default();
                    (c.requests, c.errors.iter().sum())
                }
            };
            Some(match requests {
                0 => 0.0,
                n => errors as f64 * 100.0 / n as f64,
            })
        }
        (None, Metric::Dropped) => Some(b.dropped as f64),
        _ => None,
    }
}

/// Whether `value` is worse for the rule than `than`.
fn worse(op: Op, value: f64, than: f64) -> bool {
    match op {
        Op::Lt | Op::Le => value > than,
        Op::Gt | Op::Ge => value < than,
        Op::Eq => false,
    }
}

/// Judges every rule: a rule with `over D` on every window of `seconds` (the run's
/// merged buckets, in order of `t`), the others on the summary. `run_s` is how many
/// seconds the run's schedule lasted; `names` the plan's request names.
pub fn judge_all(
    rules: &[Threshold],
    summary: &Summary,
    seconds: &[SecondBucket],
    names: &[String],
    run_s: u64,
) -> Vec<ThresholdResult> {
    rules
        .iter()
        .map(|rule| match rule.window_s {
            None => rule.evaluate(summary),
            Some(d) => judge_windows(rule, d, summary, seconds, names, run_s),
        })
        .collect()
}

/// Judges one rule on every window of `d` seconds.
fn judge_windows(
    rule: &Threshold,
    d: u64,
    summary: &Summary,
    seconds: &[SecondBucket],
    names: &[String],
    run_s: u64,
) -> ThresholdResult {
    let last = seconds.iter().map(|b| b.t + 1).max().unwrap_or(0);
    let n = run_s.max(last);
    let known = rule.scope.as_ref().is_none_or(|s| names.contains(s));
    if d >= n || !known {
        // The whole run is the one window (or a name the run never had, which the
        // summary's verdict fails).
        let mut r = rule.evaluate(summary);
        r.window = known.then_some(ThresholdWindow {
            start_s: 0,
            end_s: n,
            value: r.value,
            whole_run: true,
        });
        return r;
    }
    // Seconds by index; a second nothing happened in is empty.
    let empty = SecondBucket::new(0);
    let mut dense: Vec<&SecondBucket> = vec![&empty; n as usize];
    for b in seconds {
        dense[b.t as usize] = b;
    }
    let mut sum = Sum::new();
    let mut first_failed: Option<ThresholdWindow> = None;
    let mut worst: Option<ThresholdWindow> = None;
    for end in 0..n {
        sum.add(dense[end as usize]);
        if end >= d {
            sum.subtract(dense[(end - d) as usize]);
        }
        if end + 1 < d {
            continue;
        }
        let Some(value) = measure(rule, &sum.bucket, names).filter(|v| v.is_finite()) else {
            continue;
        };
        let window = ThresholdWindow {
            start_s: end + 1 - d,
            end_s: end + 1,
            value,
            whole_run: false,
        };
        if !rule.op.holds(value, rule.limit) {
            first_failed = Some(window);
            break;
        }
        if worst.is_none_or(|w| worse(rule.op, value, w.value)) {
            worst = Some(window);
        }
    }
    let Some(window) = first_failed.or(worst) else {
        // No window had anything to judge: the summary's verdict says why.
        return rule.evaluate(summary);
    };
    ThresholdResult {
        expr: rule.expr.clone(),
        ok: first_failed.is_none(),
        value: window.value,
        window: Some(window),
    }
}

/// The text that says where a windowed rule failed, e.g. `failed in 40s–50s (p95
/// 812 ms)`, or held (`held in every 10s window, worst 40s–50s`).
pub fn describe(r: &ThresholdResult, figure: &str) -> Option<String> {
    let w = r.window?;
    Some(match (r.ok, w.whole_run) {
        (_, true) => format!("window longer than the run: judged the whole run ({figure})"),
        (false, false) => format!("failed in {}s–{}s ({figure})", w.start_s, w.end_s),
        (true, false) => format!("held in every window, worst {}s–{}s", w.start_s, w.end_s),
    })
}

/// Judges the rules live, second by second, for `run --abort-on-fail`: a windowed rule
/// on its latest full window, any other rule on everything recorded so far, as k6's
/// `abortOnFail` does (a whole-run figure failing so far may still recover by the end,
/// but the run stops anyway: that is what the flag asks for). Only rules the
/// per-second buckets hold are judged live (latency of the whole run, error rates,
/// dropped); the rest are judged at the end as usual.
pub struct LiveJudge {
    rules: Vec<Threshold>,
    names: Vec<String>,
    /// The latest seconds, as many as the longest window.
    recent: VecDeque<SecondBucket>,
    /// Every second so far.
    total: Sum,
    keep: usize,
    /// No rule is judged before this many seconds have been recorded.
    grace_s: u64,
}

/// A rule judged failed as the run went.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveFailure {
    /// The rule and what it measured, e.g. `p95 < 500ms over 10s: failed in 3s–13s
    /// (p95 812 ms)`.
    pub reason: String,
    /// The second after the last one judged.
    pub at_s: u64,
}

impl LiveJudge {
    /// A judge of `rules` that starts judging once `grace_s` seconds were recorded:
    /// the first seconds of a run (connections opening, caches warming) say little.
    pub fn new(rules: &[Threshold], names: &[String], grace_s: u64) -> LiveJudge {
        let keep = rules.iter().filter_map(|r| r.window_s).max().unwrap_or(0) as usize;
        LiveJudge {
            rules: rules.to_vec(),
            names: names.to_vec(),
            recent: VecDeque::with_capacity(keep),
            total: Sum::new(),
            keep,
            grace_s,
        }
    }

    /// Adds a finished second (the merged bucket of every thread) and judges the
    /// rules; returns the first that failed.
    pub fn second(&mut self, bucket: &SecondBucket) -> Option<LiveFailure> {
        self.total.add(bucket);
        if self.keep > 0 {
            if self.recent.len() == self.keep {
                self.recent.pop_front();
            }
            self.recent.push_back(bucket.clone());
        }
        let at_s = bucket.t + 1;
        if at_s < self.grace_s {
            return None;
        }
        for rule in &self.rules {
            let (value, window) = match rule.window_s {
                None => (measure(rule, &self.total.bucket, &self.names), None),
                Some(d) if (self.recent.len() as u64) < d => continue,
                Some(d) => {
                    let mut sum = SecondBucket::new(0);
                    let from = self.recent.len() - d as usize;
                    for b in self.recent.iter().skip(from) {
                        sum.merge(b);
                    }
                    (measure(rule, &sum, &self.names), Some(at_s - d))
                }
            };
            let Some(value) = value.filter(|v| v.is_finite()) else {
                continue;
            };
            if rule.op.holds(value, rule.limit) {
                continue;
            }
            let figure = figure(rule, value);
            let reason = match window {
                Some(start) => format!("{}: failed in {start}s–{at_s}s ({figure})", rule.expr),
                None => format!("{}: {figure} after {at_s}s", rule.expr),
            };
            return Some(LiveFailure { reason, at_s });
        }
        None
    }
}

/// A rule's figure as a person reads it: `p95 812 ms`, `errors 4.2%`, `dropped 3`.
pub fn figure(rule: &Threshold, value: f64) -> String {
    let name = rule.expr.split(['<', '>', '=']).next().unwrap_or("").trim();
    match rule.metric {
        Metric::ErrorPercent | Metric::Checks => format!("{name} {value:.2}%"),
        Metric::Dropped => format!("{name} {value:.0}"),
        _ => format!("{name} {value:.1} ms"),
    }
}
