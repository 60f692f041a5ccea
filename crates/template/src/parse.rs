//! Template compilation: splits the source into literal text and `{{ expr }}` parts,
//! each expression parsed (`syntax`) and checked (`func`) up front.

use crate::error::TemplateError;
use crate::part::Part;
use crate::{func, syntax, Escape};

/// Marks a typed placeholder in [`json_source`]'s output: `{{\u{1}expr}}`. A raw
/// control character never appears in serialized JSON (serde_json escapes it inside
/// strings), so no JSON a user writes can produce the marker.
const TYPED: char = '\u{1}';

/// Appends `value` as compact JSON; a string that is exactly one placeholder becomes a
/// typed placeholder, unquoted.
pub(super) fn json_source(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match value {
        Value::String(s) => match single_placeholder(s) {
            Some(expr) => {
                out.push_str("{{");
                out.push(TYPED);
                out.push_str(expr);
                out.push_str("}}");
            }
            None => out.push_str(&Value::String(s.clone()).to_string()),
        },
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_source(item, out);
            }
            out.push(']');
        }
        Value::Object(fields) => {
            out.push('{');
            for (i, (key, item)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                json_source(item, out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The expression of a string that is exactly one `{{ expr }}`, nothing around it.
fn single_placeholder(s: &str) -> Option<&str> {
    let inner = s.strip_prefix("{{")?.strip_suffix("}}")?;
    (!inner.contains("{{") && !inner.contains("}}")).then_some(inner)
}

/// Parses `source` into parts; adjacent literals are merged.
pub(super) fn parse(source: &str, escape: Escape) -> Result<Vec<Part>, TemplateError> {
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut rest = source;
    // Literal text of a form value is encoded now, once.
    let text = |s: &str| match escape {
        Escape::Form => crate::encode::Encoding::Url.text(s),
        _ => s.to_string(),
    };
    while let Some(open) = rest.find("{{") {
        literal.push_str(&text(&rest[..open]));
        let after = &rest[open + 2..];
        let close = after.find("}}").ok_or_else(|| TemplateError::Unclosed {
            text: source.to_owned(),
        })?;
        let expr = after[..close].trim();
        let part = match expr.strip_prefix(TYPED) {
            // Only JSON templates come from `json_source`; elsewhere the marker is text.
            Some(inner) if escape == Escape::Json => typed(expression(inner.trim(), escape)?),
            _ => expression(expr, escape)?,
        };
        match part {
            Part::Literal(text) => literal.push_str(&text),
            part => {
                if !literal.is_empty() {
                    parts.push(Part::Literal(std::mem::take(&mut literal)));
                }
                parts.push(part);
            }
        }
        rest = &after[close + 2..];
    }
    literal.push_str(&text(rest));
    if !literal.is_empty() {
        parts.push(Part::Literal(literal));
    }
    Ok(parts)
}

/// The typed form of a compiled expression: a compile-time value becomes a quoted
/// JSON string literal (it is already escaped).
fn typed(part: Part) -> Part {
    match part {
        Part::Literal(text) => Part::Literal(format!("\"{text}\"")),
        other => Part::Typed(Box::new(other)),
    }
}

/// Compiles one placeholder's expression.
fn expression(expr: &str, escape: Escape) -> Result<Part, TemplateError> {
    if expr.is_empty() {
        return Err(TemplateError::Empty);
    }
    let placeholder = |problem| TemplateError::Placeholder {
        expr: expr.to_owned(),
        problem,
    };
    let syntax = syntax::value(expr).map_err(placeholder)?;
    func::compile(&syntax, escape).map_err(placeholder)
}
