//! Checks on spanned scalar values (numbers, durations, think times) that turn a wrong
//! value into a [`ScenarioError`] saying what was expected and what was found.

use std::time::Duration;

use serde_json::Value;

use super::duration::{parse_duration, parse_think};
use super::errors::{found, ScenarioError, Source};
use super::field_errors::LimitError;
use super::format::Node;
use headroom_plan::Think;

/// The highest arrival rate a load may ask for, per second: above what any generator
/// sends, and far below where the schedule's arithmetic loses precision.
pub const MAX_RATE: f64 = 10_000_000.0;

/// The most users, iterations in flight or connections a load may ask for: each holds
/// memory and (users, connections) a file descriptor, so a typo such as an extra
/// zero must not make the generator allocate until it is killed.
pub const MAX_CONCURRENCY: u64 = 1_000_000;

/// `Err` saying what the limit is when `value` is above `max`.
pub(crate) fn at_most(value: f64, max: f64, what: &str) -> Result<(), LimitError> {
    if value <= max {
        Ok(())
    } else {
        Err(LimitError {
            value,
            max,
            what: what.to_string(),
        })
    }
}

/// An integer ≥ 1 (weights, user counts, in-flight limits).
pub(crate) fn positive_int(src: Source<'_>, node: &Node, path: &str) -> Result<u64, ScenarioError> {
    match node.value.as_u64() {
        Some(n) if n > 0 => Ok(n),
        _ => Err(src.of(
            node,
            path,
            format!("expected a positive integer, found {}", found(&node.value)),
        )),
    }
}

/// An integer ≥ 0 (user-count stage targets).
pub(crate) fn non_negative_int(
    src: Source<'_>,
    node: &Node,
    path: &str,
) -> Result<u64, ScenarioError> {
    node.value.as_u64().ok_or_else(|| {
        src.of(
            node,
            path,
            format!("expected an integer >= 0, found {}", found(&node.value)),
        )
    })
}

/// A finite number ≥ 0, or > 0 when `positive`.
pub(crate) fn number(
    src: Source<'_>,
    node: &Node,
    path: &str,
    positive: bool,
) -> Result<f64, ScenarioError> {
    let ok = |x: f64| x.is_finite() && if positive { x > 0.0 } else { x >= 0.0 };
    match node.value.as_f64() {
        Some(x) if ok(x) => Ok(x),
        _ => {
            let want = if positive {
                "a number > 0"
            } else {
                "a number >= 0"
            };
            Err(src.of(
                node,
                path,
                format!("expected {want}, found {}", found(&node.value)),
            ))
        }
    }
}

/// A duration with a unit (`500ms`, `1.5s`, `1m30s`).
pub(crate) fn duration(
    src: Source<'_>,
    node: &Node,
    path: &str,
) -> Result<Duration, ScenarioError> {
    parse_duration(&scalar_text(&node.value)).map_err(|e| src.of(node, path, e))
}

/// A think time: a duration or a range `low..high`.
pub(crate) fn think(src: Source<'_>, node: &Node, path: &str) -> Result<Think, ScenarioError> {
    parse_think(&scalar_text(&node.value)).map_err(|e| src.of(node, path, e))
}

/// The text of a scalar for parsers that read text; collections describe themselves
/// so the parser's "found ..." stays readable.
fn scalar_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => found(other),
    }
}
