//! Thresholds: pass/fail rules on a summary, such as `p95 < 500ms`, `errors < 1%`,
//! `create_task.p99 < 800ms`, `rate > 990/s` or `dropped == 0`.
//!
//! The grammar is `[NAME.]METRIC OP VALUE`, whitespace-tolerant:
//!
//! | METRIC | VALUE | measured as |
//! |---|---|---|
//! | `p50` `p90` `p95` `p99` `p99.9` `min` `avg` `max` | number with `us`, `ms` or `s` | latency, ms |
//! | `errors` (or `error_rate`) | number with `%` | failed requests, percent of requests |
//! | `rate` | number with `/s` | achieved requests per second |
//! | `dropped` | plain count (whole run only) | dropped iterations |
//! | `abandoned` | plain count (whole run only) | requests in flight when the run ended |
//! | `success_p95` (any latency statistic after `success_`) | as latency | successful requests' latency, ms |
//! | `delivery.p95` (`min` `p50` `p90` `p95` `p99` `max`) | as latency | delivery latency through the `sink:`, ms |
//! | `delivery.lost`, `delivery.duplicated` | number with `%` | percent of the ids registered with the sink |
//!
//! The scope `delivery` always means the sink (a request named `delivery` cannot be
//! judged per name). A delivery rule in a run without a sink fails.
//! | `message_p95`, `first_message_p95`, `stream_connect_p95`, `gap_p95`, `lateness_p95` (any statistic) | as latency | stream round trip, time to first message, connect + handshake, gap between messages received, lateness against the stated cadence, ms |
//! | `stream_errors` | number with `%` | failed stream operations and background stream failures |
//!
//! A stream rule's NAME is a stream name, a protocol (`ws`, `sse`, `grpc`) or none (all).
//!
//! Non-fatal checks have a grammar of their own (see [`checks`](self::checks)):
//! `checks OP N%` judges the checks that passed, percent of all checks that ran (as
//! k6's `checks: ['rate>0.99']`), and `checks{NAME} OP N%` those of one check name
//! (any text without `}`). A checks rule fails when none of its checks ran, and takes
//! no `over D`.
//!
//! Latency rules on the whole run and error rules (whole run or per name) take a
//! suffix `over D` (`p95 < 500ms over 10s`): judged on every window of D seconds, see
//! [`window`].
//!
//! OP is one of `<`, `<=`, `>`, `>=`, `==`. NAME may contain dots: the scope is everything
//! before the last `.` that precedes a known metric. [`Threshold::parse`] compiles a rule
//! once; [`Threshold::evaluate`] (or [`evaluate_all`]) judges it against a [`Summary`].

mod checks;
mod error;
mod parse;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests_checks;
#[cfg(test)]
mod tests_delivery;
#[cfg(test)]
mod tests_streams;
#[cfg(test)]
mod tests_window;
pub mod window;

use std::fmt;

use crate::streams::StreamSummary;
use crate::summary::{Latency, Summary, ThresholdResult};
pub use error::{RuleError, ThresholdError};
use parse::{parse_value, split_metric, split_op};

/// A parsed threshold rule. Plain data: safe to clone and share.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// The rule as written.
    pub expr: String,
    /// Request name the rule is limited to (`None` for the whole run).
    pub scope: Option<String>,
    /// What is measured.
    pub metric: Metric,
    /// How the measurement is compared with `limit`.
    pub op: Op,
    /// The bound, in the metric's unit (ms, percent, per second or a count).
    pub limit: f64,
    /// `over D`: the rule is judged on every window of this many seconds (sliding by
    /// one second) instead of the whole run; see [`window`].
    pub window_s: Option<u64>,
}

/// The quantity a rule constrains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// A latency statistic, in milliseconds.
    Latency(LatencyStat),
    /// Failed requests as a percentage of completed requests.
    ErrorPercent,
    /// Achieved requests per second.
    Rate,
    /// Dropped iterations (whole run).
    Dropped,
    /// A latency statistic of successful requests only, in milliseconds
    /// (`success_p95`): fast failures cannot make it look good.
    SuccessLatency(LatencyStat),
    /// Requests still in flight when the run ended (whole run).
    Abandoned,
    /// `delivery.p95` and the like: delivery latency through the scenario's sink, ms.
    DeliveryLatency(LatencyStat),
    /// `delivery.lost`: registered ids not delivered by the end of the grace period,
    /// percent of registered ids.
    DeliveryLost,
    /// `delivery.duplicated`: deliveries of an id already delivered, percent of
    /// registered ids.
    DeliveryDuplicated,
    /// A stream figure; the scope is a stream name, a protocol (`ws`, `sse`, `grpc`)
    /// or none (all streams).
    Stream(StreamMetric),
    /// `checks` and `checks{NAME}`: non-fatal checks that passed, percent of those that
    /// ran; the scope is a check name (`None`: all checks).
    Checks,
}

/// What a stream rule measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamMetric {
    /// Per-message round trip (`message_p95`), ms.
    Message(LatencyStat),
    /// Time to first message (`first_message_p95`), ms.
    FirstMessage(LatencyStat),
    /// Connect + handshake (`stream_connect_p95`), ms.
    Connect(LatencyStat),
    /// Gap between consecutive messages received (`gap_p95`), ms: the pace of a
    /// stream the server pushes, which has no round trip.
    Gap(LatencyStat),
    /// Lateness of each message against the cadence the opening step states
    /// (`lateness_p95`, with `every:`), ms.
    Lateness(LatencyStat),
    /// Failed stream operations and background failures, percent (`stream_errors`).
    Errors,
}

/// One statistic of a latency distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencyStat {
    /// Median.
    P50,
    /// 90th percentile.
    P90,
    /// 95th percentile.
    P95,
    /// 99th percentile.
    P99,
    /// 99.9th percentile.
    P999,
    /// Fastest.
    Min,
    /// Mean.
    Avg,
    /// Slowest.
    Max,
}

impl LatencyStat {
    /// Picks this statistic out of a latency summary (ms).
    pub fn of(self, latency: &Latency) -> f64 {
        match self {
            LatencyStat::P50 => latency.p50,
            LatencyStat::P90 => latency.p90,
            LatencyStat::P95 => latency.p95,
            LatencyStat::P99 => latency.p99,
            LatencyStat::P999 => latency.p999,
            LatencyStat::Min => latency.min,
            LatencyStat::Avg => latency.avg,
            LatencyStat::Max => latency.max,
        }
    }
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
}

impl Op {
    /// True when `measured OP limit` holds; false whenever either side is NaN.
    pub fn holds(self, measured: f64, limit: f64) -> bool {
        match self {
            Op::Lt => measured < limit,
            Op::Le => measured <= limit,
            Op::Gt => measured > limit,
            Op::Ge => measured >= limit,
            Op::Eq => measured == limit,
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Eq => "==",
        })
    }
}

impl Threshold {
    /// Parses a rule. The error says what was expected and quotes the rule, e.g.
    /// `threshold "p95 < 500": latency needs a unit (us, ms or s), e.g. "p95 < 500ms"`.
    pub fn parse(expr: &str) -> Result<Threshold, ThresholdError> {
        let fail = |reason: RuleError| ThresholdError {
            expr: expr.trim().to_string(),
            reason,
        };
        if let Some(rule) = checks::parse(expr).map_err(fail)? {
            return Ok(rule);
        }
        let (rule, window_s) = parse::split_window(expr).map_err(fail)?;
        let (lhs, op, rhs) = split_op(rule).map_err(fail)?;
        let (scope, metric, metric_text) = split_metric(lhs.trim()).map_err(fail)?;
        let limit = parse_value(metric, metric_text, op, rhs.trim()).map_err(fail)?;
        let (scope, metric) = match (scope.as_deref(), metric) {
            (Some("delivery"), Metric::Latency(LatencyStat::Avg | LatencyStat::P999)) => {
                return Err(fail(RuleError::DeliveryStat))
            }
            (Some("delivery"), Metric::Latency(stat)) => (None, Metric::DeliveryLatency(stat)),
            (Some("delivery"), m @ (Metric::DeliveryLost | Metric::DeliveryDuplicated)) => {
                (None, m)
            }
            (_, Metric::DeliveryLost | Metric::DeliveryDuplicated) => {
                return Err(fail(RuleError::DeliveryFigure {
                    metric: metric_text.to_string(),
                    op,
                    value: rhs.trim().to_string(),
                }))
            }
            (Some("delivery"), _) => return Err(fail(RuleError::DeliveryRule)),
            _ => (scope, metric),
        };
        if window_s.is_some() {
            parse::check_windowed(scope.as_deref(), metric, metric_text).map_err(fail)?;
        }
        Ok(Threshold {
            expr: expr.trim().to_string(),
            scope,
            metric,
            op,
            limit,
            window_s,
        })
    }

    /// The measured value in the rule's unit, or `None` when the rule's scope names a
    /// request that the summary does not have (or, for a checks rule, when none of its
    /// checks ran).
    pub fn measure(&self, summary: &Summary) -> Option<f64> {
        if self.metric == Metric::Checks {
            return summary.checks.passed_percent(self.scope.as_deref());
        }
        if let Metric::Stream(m) = self.metric {
            let s = self.stream_scope(summary)?;
            return Some(match m {
                StreamMetric::Message(stat) => stat.of(&s.message_latency_ms),
                StreamMetric::FirstMessage(stat) => stat.of(&s.first_message_ms),
                StreamMetric::Connect(stat) => stat.of(&s.connect_ms),
                StreamMetric::Gap(stat) => stat.of(&s.gap_ms),
                StreamMetric::Lateness(stat) => stat.of(&s.lateness_ms),
                StreamMetric::Errors => s.errors.rate * 100.0,
            });
        }
        let (requests, latency, success, errors) = match &self.scope {
            None => (
                summary.requests,
                &summary.latency_ms,
                &summary.latency_success_ms,
                summary.errors.count,
            ),
            Some(name) => {
                let n = summary.by_name.get(name)?;
                (
                    n.requests,
                    &n.latency_ms,
                    &n.latency_success_ms,
                    n.errors.count,
                )
            }
        };
        Some(match self.metric {
            Metric::Latency(stat) => stat.of(latency),
            Metric::SuccessLatency(stat) => stat.of(success),
            Metric::ErrorPercent if requests == 0 => 0.0,
            Metric::ErrorPercent => errors as f64 * 100.0 / requests as f64,
            Metric::Rate if self.scope.is_none() => summary.rate.achieved,
            Metric::Rate if summary.duration_s > 0.0 => requests as f64 / summary.duration_s,
            Metric::Rate => 0.0,
            Metric::Dropped => summary.dropped as f64,
            Metric::Abandoned => summary.abandoned as f64,
            Metric::DeliveryLatency(stat) => {
                let l = &summary.delivery.as_ref()?.latency_ms;
                match stat {
                    LatencyStat::Min => l.min,
                    LatencyStat::P50 => l.p50,
                    LatencyStat::P90 => l.p90,
                    LatencyStat::P95 => l.p95,
                    LatencyStat::P99 => l.p99,
                    LatencyStat::Max | LatencyStat::Avg | LatencyStat::P999 => l.max,
                }
            }
            Metric::DeliveryLost => summary.delivery.as_ref()?.lost_rate * 100.0,
            Metric::DeliveryDuplicated => summary.delivery.as_ref()?.duplicated_rate * 100.0,
            Metric::Stream(_) | Metric::Checks => unreachable!("measured above"),
        })
    }

    /// The stream figures a stream rule's scope names: a stream, a protocol's total,
    /// or (no scope) all streams.
    fn stream_scope<'a>(&self, summary: &'a Summary) -> Option<&'a StreamSummary> {
        match self.scope.as_deref() {
            None => summary.stream_totals.get("all"),
            Some(name) => summary
                .streams
                .get(name)
                .or_else(|| summary.stream_totals.get(name).filter(|_| name != "all")),
        }
    }

    /// Judges the rule against a summary. `value` is the measurement in the rule's unit
    /// (ms, percent, per second or a count). The rule fails, with value 0, when its scope
    /// is missing from the summary or the measurement is not a finite number; a latency
    /// rule also fails when its scope completed no request, and a checks rule when none
    /// of its checks ran (there is nothing to judge).
    pub fn evaluate(&self, summary: &Summary) -> ThresholdResult {
        let (requests, succeeded) = match &self.scope {
            None => (Some(summary.requests), Some(summary.completed)),
            Some(name) => summary
                .by_name
                .get(name)
                .map(|n| (Some(n.requests), Some(n.requests - n.errors.count)))
                .unwrap_or((None, None)),
        };
        let judged = match self.measure(summary) {
            Some(value) if value.is_finite() => {
                let stream = self.stream_scope(summary);
                let measured_nothing = match self.metric {
                    Metric::Stream(StreamMetric::Message(_)) => {
                        stream.is_none_or(|s| s.round_trips == 0)
                    }
                    Metric::Stream(StreamMetric::FirstMessage(_)) => stream
                        .is_none_or(|s| s.first_message_ms.max == 0.0 && s.messages.received == 0),
                    Metric::Stream(StreamMetric::Connect(_)) => {
                        stream.is_none_or(|s| s.sessions == 0)
                    }
                    Metric::Stream(StreamMetric::Gap(_)) => stream.is_none_or(|s| s.gaps == 0),
                    // A stream without `every:` has no lateness: a rule on it fails
                    // rather than pass on zeros.
                    Metric::Stream(StreamMetric::Lateness(_)) => {
                        stream.is_none_or(|s| s.cadence_messages == 0)
                    }
                    Metric::Latency(_) => requests == Some(0),
                    Metric::SuccessLatency(_) => succeeded == Some(0),
                    Metric::DeliveryLatency(_) => summary
                        .delivery
                        .as_ref()
                        .is_none_or(|d| d.latency_ms.count == 0),
                    _ => false,
                };
                Some((value, !measured_nothing && self.op.holds(value, self.limit)))
            }
            _ => None,
        };
        let (value, ok) = judged.unwrap_or((0.0, false));
        ThresholdResult {
            expr: self.expr.clone(),
            ok,
            value,
            window: None,
        }
    }
}

/// Judges every rule against one summary, in the order given.
pub fn evaluate_all(thresholds: &[Threshold], summary: &Summary) -> Vec<ThresholdResult> {
    thresholds.iter().map(|t| t.evaluate(summary)).collect()
}

#[cfg(test)]
mod tests;
