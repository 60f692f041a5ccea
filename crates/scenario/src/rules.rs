//! Rules every part of a scenario compiles alike: thresholds (their scope checked
//! against the requests, streams and checks they may name) and weights. A leaf of the
//! scenario module: `compile.rs` and `workloads.rs` both use it.

use super::errors::{ScenarioError, Source};
use super::field_errors::ScopeError;
use super::values::positive_int;
use headroom_metrics::threshold::Threshold;

/// A `weight:` (1 when absent), a positive integer up to `u32::MAX`.
pub(crate) fn weight(
    src: Source<'_>,
    node: Option<&super::format::Node>,
    path: &str,
) -> Result<u32, ScenarioError> {
    let Some(node) = node else { return Ok(1) };
    let path = format!("{path}.weight");
    let w = positive_int(src, node, &path)?;
    u32::try_from(w).map_err(|_| {
        src.of(
            node,
            &path,
            format!("expected a positive integer up to {}, found {w}", u32::MAX),
        )
    })
}

/// Parses a threshold and checks that its scope names a request.
pub(crate) fn threshold(
    expr: &str,
    names: &[String],
    streams: &[headroom_plan::StreamName],
) -> Result<Threshold, ScopeError> {
    let t = Threshold::parse(expr)?;
    if matches!(t.metric, headroom_metrics::threshold::Metric::Stream(_)) {
        if streams.is_empty() {
            return Err(ScopeError::NoStreams);
        }
        if let Some(scope) = t.scope.as_deref() {
            let known = streams.iter().any(|s| s.name == scope)
                || streams.iter().any(|s| s.protocol.as_str() == scope);
            if !known {
                return Err(ScopeError::NotAStream {
                    scope: scope.to_string(),
                    streams: streams.iter().map(|s| s.name.clone()).collect(),
                });
            }
        }
    } else if t.metric == headroom_metrics::threshold::Metric::Checks {
        // A check's name, known once every request compiled: see `check_names`.
    } else {
        check_scope(t.scope.as_deref(), names)?;
    }
    Ok(t)
}

/// A `checks{NAME}` rule must name one of the scenario's checks.
pub(crate) fn check_names(thresholds: &[Threshold], checks: &[String]) -> Result<(), ScopeError> {
    for t in thresholds {
        if t.metric != headroom_metrics::threshold::Metric::Checks {
            continue;
        }
        if let Some(name) = t.scope.as_deref() {
            if !checks.iter().any(|c| c.trim() == name) {
                return Err(ScopeError::NotACheck {
                    expr: t.expr.clone(),
                    scope: name.to_string(),
                    known: checks.to_vec(),
                });
            }
        }
    }
    Ok(())
}

/// A threshold's scope must be one of the request names.
pub(crate) fn check_scope(scope: Option<&str>, names: &[String]) -> Result<(), ScopeError> {
    match scope {
        Some(scope) if !names.iter().any(|n| n == scope) => Err(ScopeError::NotARequest {
            scope: scope.to_string(),
            known: names.to_vec(),
        }),
        _ => Ok(()),
    }
}
