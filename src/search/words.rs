//! Words and numbers a search's output shares, kept in a leaf so that the result, the
//! text, the hold and the interval can all use them without importing one another:
//! [`value`] formats a rate or user count, [`failed_rules`] names a summary's failed
//! thresholds with what they measured, [`measured`] writes a rule's figure in its unit.

use crate::metrics::summary::Summary;
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

/// A value measured by the rule `expr`, in its unit: `61.2ms`, `3.20%`, `990/s`.
pub fn measured(expr: &str, v: f64) -> String {
    let expr = expr.to_ascii_lowercase();
    let end = expr
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .unwrap_or(expr.len());
    let metric = expr[..end].rsplit('.').next().unwrap_or("");
    match metric {
        "errors" | "error_rate" | "stream_errors" | "lost" | "duplicated" => percent(v),
        "rate" => per_second(v),
        "dropped" | "abandoned" => format!("{v}"),
        _ => latency(v),
    }
}
