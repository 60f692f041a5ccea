//! Words and numbers a search's output shares, kept in a leaf so that the result, the
//! text, the hold and the interval can all use them without importing one another:
//! [`value`] formats a rate or user count, [`failed_rules`] names a summary's failed
//! thresholds with what they measured, [`measured`] writes a rule's figure in its unit.

use crate::metrics::summary::Summary;
use crate::metrics::threshold::{Metric, StreamMetric, Threshold};
use headroom_format::units::{latency, per_second, percent};

/// Formats a rate or user count: whole numbers without decimals (`800`), others with one.
pub fn value(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else {
        format!("{v:.1}")
    }
}

/// The failed thresholds of a summary with their measured values:
/// `p95 < 50ms (61.2ms), errors < 1% (3.20%)`.
pub fn failed_rules(s: &Summary) -> String {
    let failed: Vec<String> = s
        .thresholds
        .iter()
        .filter(|t| !t.ok)
        .map(|t| format!("{} ({})", t.expr, measured(&t.expr, t.value)))
        .collect();
    failed.join(", ")
}

/// A value measured by the rule `expr`, in its unit: `61.2ms`, `3.20%`, `990/s`. The
/// unit is the rule's metric as [`Threshold::parse`] reads it (a rule that does not
/// parse is shown as latency).
pub fn measured(expr: &str, v: f64) -> String {
    match Threshold::parse(expr).map(|t| t.metric) {
        Ok(
            Metric::ErrorPercent
            | Metric::DeliveryLost
            | Metric::DeliveryDuplicated
            | Metric::Stream(StreamMetric::Errors)
            | Metric::Checks,
        ) => percent(v),
        Ok(Metric::Rate) => per_second(v),
        Ok(Metric::Dropped | Metric::Abandoned) => format!("{v}"),
        _ => latency(v),
    }
}
