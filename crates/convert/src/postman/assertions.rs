//! The script matchers: Chai assertions (`pm.expect(SUBJECT).to.WORDS(ARGS)`) on the
//! status, the response time, the body text and the JSON body, and status checks,
//! each becoming one entry of `check:` ([`Checks`]) or reported as not translated.

use oxc_ast::ast::{Argument, ArrayExpressionElement, CallExpression, Expression};

use super::effects::{not_run, Checks};
use super::expr::{is_dotted, json_path, literal_text, literal_yaml, MAX_WALK};
use crate::{Outcome, Yaml};

/// The Chai words that only make an assertion read well.
const CHAINS: &[&str] = &[
    "to", "be", "been", "is", "that", "which", "and", "has", "have", "with", "at", "of", "same",
    "but", "does", "still", "also",
];

/// Records a status check.
pub(super) fn status(checks: &mut Checks, status: Yaml) -> Outcome {
    if checks.status.is_some() {
        return Outcome::LeftOut("a second status check: check: holds one".into());
    }
    checks.status = Some(status);
    Outcome::Translated
}

/// `pm.expect(SUBJECT).to.WORDS(ARGS)`, with `aliases` the local names bound to a
/// JSONPath of the response.
pub(super) fn assertion(
    checks: &mut Checks,
    aliases: &[(String, String)],
    call: &CallExpression<'_>,
) -> Outcome {
    let Some((subject, words)) = expect_chain(&call.callee) else {
        return Outcome::LeftOut(not_run());
    };
    let arg = call.arguments.first().and_then(Argument::as_expression);
    let words: Vec<&str> = words
        .iter()
        .map(String::as_str)
        .filter(|w| !CHAINS.contains(w))
        .collect();
    let [word] = words.as_slice() else {
        return Outcome::LeftOut(format!(
            "the assertion .{}: not translated",
            words.join(".")
        ));
    };
    let equal = matches!(*word, "eql" | "equal" | "equals" | "eq");
    if is_dotted(subject, &["pm", "response", "code"]) {
        return match (*word, arg) {
            (_, Some(Expression::NumericLiteral(n))) if equal => {
                status(checks, Yaml::from(n.value))
            }
            ("oneOf", Some(Expression::ArrayExpression(a))) => {
                let codes: Option<Vec<Yaml>> = a
                    .elements
                    .iter()
                    .map(|e| match e {
                        ArrayExpressionElement::NumericLiteral(n) => Some(Yaml::from(n.value)),
                        _ => None,
                    })
                    .collect();
                match codes {
                    Some(codes) if !codes.is_empty() => status(checks, Yaml::Seq(codes)),
                    _ => Outcome::LeftOut("status codes that are not number literals".into()),
                }
            }
            _ => Outcome::LeftOut(format!("the status assertion .{word}: not translated")),
        };
    }
    if is_dotted(subject, &["pm", "response", "responseTime"]) {
        return match (*word, arg) {
            ("below" | "lessThan" | "lt", Some(Expression::NumericLiteral(n)))
                if checks.duration.is_none() =>
            {
                checks.duration = Some(format!("<{}ms", n.value));
                Outcome::Translated
            }
            _ => Outcome::LeftOut(format!("the time assertion .{word}: not translated")),
        };
    }
    if let Expression::CallExpression(c) = subject {
        if is_dotted(&c.callee, &["pm", "response", "text"]) {
            return match (*word, arg.and_then(literal_text)) {
                ("include" | "includes" | "contain" | "contains", Some(text))
                    if checks.body_contains.is_none() =>
                {
                    checks.body_contains = Some(text);
                    Outcome::Translated
                }
                _ => Outcome::LeftOut(format!("the body assertion .{word}: not translated")),
            };
        }
    }
    if let Some(path) = json_path(aliases, subject, 0) {
        if *word == "exist" && checks.json_path.is_none() {
            checks.json_path = Some(path);
            return Outcome::Translated;
        }
        if let (true, Some(value)) = (equal, arg.and_then(literal_yaml)) {
            if checks.json.iter().any(|(p, _)| *p == path) {
                return Outcome::LeftOut("a second check of the same JSONPath".into());
            }
            checks.json.push((path, value));
            return Outcome::Translated;
        }
        return Outcome::LeftOut(format!("the JSON assertion .{word}: not translated"));
    }
    Outcome::LeftOut(not_run())
}

/// `pm.expect(SUBJECT).a.b.c` (the callee of the final call, or the whole expression
/// for a property assertion like `.to.exist`): the subject and the words after it.
fn expect_chain<'e, 'a>(expr: &'e Expression<'a>) -> Option<(&'e Expression<'a>, Vec<String>)> {
    let mut words = Vec::new();
    let mut at = expr;
    for _ in 0..MAX_WALK {
        match at {
            Expression::StaticMemberExpression(m) => {
                words.push(m.property.name.to_string());
                at = &m.object;
            }
            Expression::CallExpression(c) if is_dotted(&c.callee, &["pm", "expect"]) => {
                words.reverse();
                return c
                    .arguments
                    .first()
                    .and_then(Argument::as_expression)
                    .map(|a| (a, words));
            }
            _ => return None,
        }
    }
    None
}
