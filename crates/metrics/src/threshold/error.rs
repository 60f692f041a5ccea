//! [`ThresholdError`]: a threshold rule that does not parse, quoting the rule, and
//! [`RuleError`]: what is wrong with it.

use super::Op;

pub(super) const METRIC_LIST: &str = "p50, p90, p95, p99, p99.9, min, avg, max (or success_p95 and the like, \
                           for successful requests only), errors, rate, dropped, abandoned, \
                           or for streams message_p95, first_message_p95, stream_connect_p95, \
                           gap_p95, lateness_p95 (any statistic) and stream_errors; delivery.p95, delivery.lost or delivery.duplicated with a sink; \
                           checks or checks{NAME} (percent of checks passed)";

/// What a rule looks like, for the operator errors.
pub(super) const EXPECTED: &str = "expected METRIC OP VALUE with OP one of <, <=, >, >=, ==, \
                                   e.g. \"p95 < 500ms\"";

/// A rule that does not parse: `threshold "RULE": REASON`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("threshold \"{expr}\": {reason}")]
pub struct ThresholdError {
    /// The rule as written, trimmed.
    pub expr: String,
    /// What is wrong with it.
    #[source]
    pub reason: RuleError,
}

/// What is wrong with a threshold rule; each message says what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuleError {
    /// No comparison operator.
    #[error("{}", EXPECTED)]
    NoOperator,
    /// An operator headroom does not know (`!=`, `=<`...).
    #[error("unknown operator; {}", EXPECTED)]
    UnknownOperator,
    /// Nothing before the operator.
    #[error("missing metric before the operator; expected one of {}", METRIC_LIST)]
    NoMetric,
    /// A metric headroom does not know.
    #[error("unknown metric \"{word}\"; expected one of {}", METRIC_LIST)]
    UnknownMetric {
        /// The word found where the metric goes.
        word: String,
    },
    /// `.p95`: a dot with no request name before it.
    #[error("empty request name before the dot, e.g. \"create_task.p95\"")]
    EmptyScope,
    /// A whole-run count (`dropped`, `abandoned`) scoped to a request.
    #[error("{metric} is counted for the whole run, not per request name")]
    WholeRun {
        /// The metric's name.
        metric: &'static str,
    },
    /// The value is not a non-negative number.
    #[error("expected a non-negative number after {op}, e.g. {example}")]
    NoNumber {
        /// The operator.
        op: Op,
        /// A rule that would parse, quoted.
        example: String,
    },
    /// A latency with no unit.
    #[error("latency needs a unit (us, ms or s), e.g. \"{written} {op} {number}ms\"")]
    NoLatencyUnit {
        /// The metric as written.
        written: String,
        /// The operator.
        op: Op,
        /// The number as written.
        number: String,
    },
    /// A latency unit headroom does not know.
    #[error("unknown latency unit \"{unit}\"; expected us, ms or s")]
    LatencyUnit {
        /// The unit as written.
        unit: String,
    },
    /// An error rule whose value does not end in `%`.
    #[error("errors are a percentage ending in %, e.g. {example}")]
    NotPercent {
        /// A rule that would parse, quoted.
        example: String,
    },
    /// A rate rule whose value does not end in `/s`.
    #[error("rate is per second, ending in /s, e.g. {example}")]
    NotPerSecond {
        /// A rule that would parse, quoted.
        example: String,
    },
    /// A count rule whose value is not a whole number with no unit.
    #[error("{written} is a whole count with no unit, e.g. {example}")]
    NotCount {
        /// The metric as written.
        written: String,
        /// A rule that would parse, quoted.
        example: String,
    },
    /// A value too large once in the metric's unit.
    #[error("{number} is too large; expected e.g. {example}")]
    TooLarge {
        /// The number as written.
        number: String,
        /// A rule that would parse, quoted.
        example: String,
    },
    /// `delivery.avg` or `delivery.p99.9`.
    #[error("delivery latency has min, p50, p90, p95, p99 and max")]
    DeliveryStat,
    /// `lost` or `duplicated` without `delivery.`.
    #[error("{metric} is a delivery figure: write \"delivery.{metric} {op} {value}\"")]
    DeliveryFigure {
        /// The metric as written.
        metric: String,
        /// The operator.
        op: Op,
        /// The value as written.
        value: String,
    },
    /// `delivery.` before a metric that is not a delivery figure.
    #[error(
        "delivery rules are delivery.p95 (any latency statistic), delivery.lost or delivery.duplicated"
    )]
    DeliveryRule,
    /// `over` followed by something that is not a window length.
    #[error(
        "expected a window length after \"over\" (seconds, minutes or hours, e.g. \"p95 < 500ms over 10s\"), found \"{text}\""
    )]
    Window {
        /// What followed `over` (at most 40 characters).
        text: String,
    },
    /// `over 0s`.
    #[error("a window must be at least 1s long, e.g. \"p95 < 500ms over 10s\"")]
    WindowZero,
    /// `over 500ms` or `over 1.5s`.
    #[error(
        "a window is a whole number of seconds (the run is recorded per second), e.g. \"over 10s\""
    )]
    WindowWhole,
    /// `over 30d`.
    #[error("a window is at most a week (168h) long")]
    WindowTooLong,
    /// `over` on a metric it does not apply to.
    #[error(
        "\"over\" applies to latency (p50, p90, p95, p99, p99.9, min, avg, max) and errors, not to {metric}"
    )]
    WindowMetric {
        /// The metric as written.
        metric: String,
    },
    /// `checks{` with no `}` after the name.
    #[error("checks{{ has no closing }}; expected checks{{NAME}} OP VALUE, e.g. \"checks{{status ok}} > 99%\"")]
    ChecksUnterminated,
    /// `checks{}`.
    #[error("empty check name between {{ and }}, e.g. \"checks{{status ok}} > 99%\"")]
    ChecksEmptyName,
    /// Something between `checks{NAME}` and the operator.
    #[error("unexpected \"{text}\" after checks{{NAME}}; expected checks{{NAME}} OP VALUE, e.g. \"checks{{status ok}} > 99%\"")]
    ChecksTrailing {
        /// What came before the operator (at most 40 characters).
        text: String,
    },
    /// A checks rule whose value does not end in `%`.
    #[error("checks are the percentage of checks that passed, ending in %, e.g. {example}")]
    ChecksPercent {
        /// A rule that would parse, quoted.
        example: String,
    },
    /// A checks rule over 100%.
    #[error("{number}% is more than all checks; a share of checks passed is at most 100%")]
    ChecksOver100 {
        /// The number as written (at most 40 characters).
        number: String,
    },
    /// `over` on a named request's latency.
    #[error(
        "\"over\" takes the whole run's latency, not a request's: per-second latency is not kept per name (write \"p95 < … over D\", or \"{name}.errors < … over D\")"
    )]
    WindowNamedLatency {
        /// The request name.
        name: String,
    },
}
