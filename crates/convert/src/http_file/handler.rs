//! JetBrains response handlers (`> {% … %}`), parsed with oxc: `client.global.set(name,
//! response.body.x)` and `response.headers.valueOf("X")` become captures; every other
//! statement is reported, never run.

use oxc_allocator::Allocator;
use oxc_ast::ast::{Argument, Expression, Statement};
use oxc_parser::Parser;
use oxc_span::{GetSpan, SourceType};

use crate::js::{bracket_depth, dotted};
use crate::Outcome;

/// The longest handler read, bytes.
const MAX_HANDLER: usize = 64 << 10;
/// How deep brackets may nest before a handler is left out unparsed.
const MAX_BRACKETS: usize = 256;

/// One statement: its offset in the script, text, outcome, and the capture it makes
/// (variable, source).
pub(super) type Met = (usize, String, Outcome, Option<(String, String)>);

/// Translates a handler script.
pub(super) fn translate(script: &str) -> Vec<Met> {
    let mut out = Vec::new();
    if script.len() > MAX_HANDLER || bracket_depth(script) > MAX_BRACKETS {
        out.push((
            0,
            "response handler".into(),
            Outcome::LeftOut("too long or too deeply nested: not read".into()),
            None,
        ));
        return out;
    }
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, script, SourceType::cjs()).parse();
    if let Some(e) = parsed.diagnostics.first() {
        let at = e.labels.first().map_or(0, |l| l.offset() as usize);
        out.push((
            at,
            "response handler".into(),
            Outcome::LeftOut(format!("syntax error ({}): not read", e.message)),
            None,
        ));
        return out;
    }
    for statement in &parsed.program.body {
        let span = statement.span();
        let text = script
            .get(span.start as usize..span.end as usize)
            .unwrap_or_default();
        let text = text.lines().next().unwrap_or_default().trim().to_string();
        let capture = match statement {
            Statement::ExpressionStatement(e) => capture(&e.expression),
            _ => None,
        };
        match capture {
            Some(c) => out.push((span.start as usize, text, Outcome::Translated, Some(c))),
            None => out.push((span.start as usize, text, Outcome::LeftOut(
                "headroom does not run handlers: only client.global.set from the response is translated".into()), None)),
        }
    }
    out
}

/// `client.global.set("name", SOURCE)`.
fn capture(expr: &Expression<'_>) -> Option<(String, String)> {
    let Expression::CallExpression(call) = expr else {
        return None;
    };
    if dotted(&call.callee)? != ["client", "global", "set"] {
        return None;
    }
    let Some(Argument::StringLiteral(name)) = call.arguments.first() else {
        return None;
    };
    let value = call.arguments.get(1)?.as_expression()?;
    if let Expression::CallExpression(c) = value {
        if dotted(&c.callee)? == ["response", "headers", "valueOf"] {
            if let Some(Argument::StringLiteral(h)) = c.arguments.first() {
                return Some((name.value.to_string(), format!("header:{}", h.value)));
            }
        }
        return None;
    }
    let names = dotted(value)?;
    let path = names.strip_prefix(&["response".to_string(), "body".to_string()])?;
    let mut source = String::from("$");
    for segment in path {
        source.push('.');
        source.push_str(segment);
    }
    Some((name.value.to_string(), source))
}
