//! Rules on non-fatal checks, as k6's `checks: ['rate>0.99']`: `checks > 99%` (passed
//! checks, percent of all checks that ran) and `checks{NAME} > 99%` (of the checks
//! named NAME, any text without `}`). The name may hold what the general grammar
//! splits on (`<`, `.`, `over`...), so these rules are split here, before it.

use super::error::RuleError;
use super::parse::{split_op, split_window};
use super::{Metric, Threshold};

/// The word that starts a checks rule.
const WORD: &str = "checks";

/// A name as an error message or an example shows it: at most 40 characters.
fn shown(name: &str) -> String {
    match name.char_indices().nth(40) {
        Some((at, _)) => format!("{}…", &name[..at]),
        None => name.to_string(),
    }
}

/// Parses `expr` when it is a checks rule (`checks OP VALUE` or `checks{NAME} OP
/// VALUE`); `Ok(None)` when it is not one (`checks.p95 < 5ms` scopes a request named
/// `checks`, `checksum.p95` another), for the general grammar to read.
pub(super) fn parse(expr: &str) -> Result<Option<Threshold>, RuleError> {
    let text = expr.trim();
    let is_word = text
        .get(..WORD.len())
        .is_some_and(|w| w.eq_ignore_ascii_case(WORD));
    if !is_word {
        return Ok(None);
    }
    let after = text[WORD.len()..].trim_start();
    let (scope, rest) = if let Some(inner) = after.strip_prefix('{') {
        let end = inner.find('}').ok_or(RuleError::ChecksUnterminated)?;
        let name = inner[..end].trim();
        if name.is_empty() {
            return Err(RuleError::ChecksEmptyName);
        }
        (Some(name), &inner[end + 1..])
    } else if after.starts_with(['<', '>', '=', '!']) {
        (None, after)
    } else {
        return Ok(None);
    };
    let written = match scope {
        None => WORD.to_string(),
        Some(name) => format!("{WORD}{{{}}}", shown(name)),
    };
    let (rule, window_s) = split_window(rest)?;
    if window_s.is_some() {
        return Err(RuleError::WindowMetric {
            metric: WORD.to_string(),
        });
    }
    let (lhs, op, rhs) = split_op(rule)?;
    if !lhs.trim().is_empty() {
        return Err(RuleError::ChecksTrailing {
            text: shown(lhs.trim()),
        });
    }
    let example = format!("\"{written} {op} 99%\"");
    let rhs = rhs.trim();
    let number_len = rhs
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rhs.len());
    let (number, unit) = (&rhs[..number_len], rhs[number_len..].trim());
    let limit: f64 = number
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| RuleError::NoNumber {
            op,
            example: example.clone(),
        })?;
    if unit != "%" {
        return Err(RuleError::ChecksPercent { example });
    }
    if limit > 100.0 {
        return Err(RuleError::ChecksOver100 {
            number: shown(number),
        });
    }
    Ok(Some(Threshold {
        expr: text.to_string(),
        scope: scope.map(str::to_string),
        metric: Metric::Checks,
        op,
        limit,
        window_s: None,
    }))
}
