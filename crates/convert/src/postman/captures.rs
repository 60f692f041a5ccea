//! The script captures: variables a script sets (`pm.environment.set(name, value)`
//! and its siblings) to a constant, or to what the response holds (a JSONPath of its
//! body, a header, the status, a cookie), and a header test kept as a capture of
//! that header.

use oxc_ast::ast::{Argument, CallExpression, Expression};

use super::effects::{Effects, Listen};
use super::expr::{is_dotted, json_path, literal_text};
use crate::Outcome;

/// `pm.environment.set(name, value)` and its siblings, in a script run at `listen`,
/// with `aliases` the local names bound to a JSONPath of the response.
pub(super) fn set(
    effects: &mut Effects,
    listen: Listen,
    aliases: &[(String, String)],
    call: &CallExpression<'_>,
) -> Outcome {
    let (Some(Argument::StringLiteral(name)), Some(value)) =
        (call.arguments.first(), call.arguments.get(1))
    else {
        return Outcome::LeftOut("a variable name that is not a string literal".into());
    };
    let name = name.value.to_string();
    let Some(value) = value.as_expression() else {
        return Outcome::LeftOut("a spread argument: not translated".into());
    };
    if let Some(constant) = literal_text(value) {
        effects.constants.push((name, constant));
        return Outcome::Translated;
    }
    if listen == Listen::PreRequest {
        return Outcome::LeftOut("a computed value: pre-request scripts are not run".into());
    }
    let source = match json_path(aliases, value, 0) {
        Some(path) => Some(path),
        None => response_source(value),
    };
    match source {
        Some(source) => {
            effects.captures.push((name, source));
            Outcome::Translated
        }
        None => Outcome::LeftOut("a value computed by the script: not run".into()),
    }
}

/// `pm.response.to.have.header(name)`: a capture of the header (a response without
/// it fails the request); a test of its value is left out.
pub(super) fn header(effects: &mut Effects, call: &CallExpression<'_>) -> Outcome {
    match call.arguments.first() {
        Some(Argument::StringLiteral(name)) if call.arguments.len() == 1 => {
            let var = format!("header_{}", crate::tpl::identifier(&name.value));
            let from = format!("header:{}", name.value);
            effects.captures.push((var.clone(), from));
            Outcome::Approximated(format!(
                "a capture `{var}` of the header: a response without it fails the \
                 request (as `check`) rather than one test"
            ))
        }
        _ => Outcome::LeftOut("a header value test: check: has no header matcher".into()),
    }
}

/// A capture source for what a script reads of the response other than its JSON.
fn response_source(expr: &Expression<'_>) -> Option<String> {
    if is_dotted(expr, &["pm", "response", "code"]) {
        return Some("status".into());
    }
    let Expression::CallExpression(c) = expr else {
        return None;
    };
    let Some(Argument::StringLiteral(name)) = c.arguments.first() else {
        return None;
    };
    if is_dotted(&c.callee, &["pm", "response", "headers", "get"]) {
        return Some(format!("header:{}", name.value));
    }
    if is_dotted(&c.callee, &["pm", "cookies", "get"]) {
        return Some(format!("cookie:{}", name.value));
    }
    None
}
