//! What a script's expressions denote, read off oxc's syntax tree without running
//! anything: plain member chains (`pm.response.to.have.status`), literals as text or
//! as YAML values, and the JSONPath an expression reads of the response's JSON body.
//! A leaf: it imports no other module of the converter.

use oxc_ast::ast::{Argument, Expression};

use crate::Yaml;

/// How deep an expression is followed (member chains, nested `pm.test`).
pub(super) const MAX_WALK: usize = 64;

/// The JSONPath an expression reads of the response's JSON body
/// (`pm.response.json().a[0]`, `json.a` after `var json = pm.response.json()`);
/// `aliases` are the local names bound to a JSONPath so far, the last binding of a
/// name winning.
pub(super) fn json_path(
    aliases: &[(String, String)],
    expr: &Expression<'_>,
    depth: usize,
) -> Option<String> {
    if depth > MAX_WALK {
        return None;
    }
    match expr {
        Expression::CallExpression(c)
            if c.arguments.is_empty() && is_dotted(&c.callee, &["pm", "response", "json"]) =>
        {
            Some("$".into())
        }
        Expression::CallExpression(c)
            if is_dotted(&c.callee, &["JSON", "parse"])
                && matches!(c.arguments.first(), Some(Argument::Identifier(i)) if i.name == "responseBody") =>
        {
            Some("$".into())
        }
        Expression::Identifier(id) => aliases
            .iter()
            .rev()
            .find(|(name, _)| name == id.name.as_str())
            .map(|(_, path)| path.clone()),
        Expression::ParenthesizedExpression(p) => json_path(aliases, &p.expression, depth + 1),
        Expression::StaticMemberExpression(m) => {
            let base = json_path(aliases, &m.object, depth + 1)?;
            Some(segment(base, &m.property.name))
        }
        Expression::ComputedMemberExpression(m) => {
            let base = json_path(aliases, &m.object, depth + 1)?;
            match &m.expression {
                Expression::StringLiteral(s) => Some(segment(base, &s.value)),
                Expression::NumericLiteral(n) if n.value >= 0.0 && n.value.fract() == 0.0 => {
                    Some(format!("{base}[{}]", n.value))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// Appends a member to a JSONPath: `.name`, or `['name']` when it is not a plain name.
fn segment(base: String, name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        format!("{base}.{name}")
    } else {
        let escaped = name.replace('\\', "\\\\").replace('\'', "\\'");
        format!("{base}['{escaped}']")
    }
}

/// The names of a plain member chain (`pm.response.to.have.status`); empty when it is
/// not one.
pub(super) fn dotted(expr: &Expression<'_>) -> Vec<String> {
    crate::js::dotted(expr).unwrap_or_default()
}

/// Whether `expr` is the member chain `names` (`["pm", "response", "code"]`).
pub(super) fn is_dotted(expr: &Expression<'_>, names: &[&str]) -> bool {
    dotted(expr)
        .iter()
        .map(String::as_str)
        .eq(names.iter().copied())
}

/// A string or number literal's text.
pub(super) fn literal_text(expr: &Expression<'_>) -> Option<String> {
    match expr {
        Expression::StringLiteral(s) => Some(s.value.to_string()),
        Expression::NumericLiteral(n) => Some(number_text(n.value)),
        Expression::TemplateLiteral(t) if t.expressions.is_empty() => t
            .quasis
            .first()
            .and_then(|q| q.value.cooked.as_ref())
            .map(|c| c.to_string()),
        _ => None,
    }
}

/// A literal as a YAML value (for `json:` checks).
pub(super) fn literal_yaml(expr: &Expression<'_>) -> Option<Yaml> {
    match expr {
        Expression::StringLiteral(s) => Some(Yaml::str(s.value.as_str())),
        Expression::NumericLiteral(n) => Some(Yaml::from(n.value)),
        Expression::BooleanLiteral(b) => Some(Yaml::Bool(b.value)),
        Expression::NullLiteral(_) => Some(Yaml::Null),
        _ => None,
    }
}

/// A number as JavaScript writes it (`200`, `1.5`).
fn number_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 9e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}
