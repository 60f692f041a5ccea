//! Postman test and pre-request scripts, parsed with oxc: the declarative subset
//! (`pm.test` blocks of `pm.response.to.have.status(…)` and `pm.expect(…)` assertions,
//! `pm.environment.set(name, pm.response.json().x)`) becomes `check:` and `capture:`
//! entries and variable values; every other statement is reported, never run.
//!
//! This module bounds and parses a script and walks its statements (`pm.test` blocks,
//! local names bound to the response's JSON); what an assertion becomes is
//! [`super::assertions`]' part, what a variable set becomes [`super::captures`]'.

use oxc_allocator::Allocator;
use oxc_ast::ast::{Argument, BindingPattern, Expression, Statement};
use oxc_parser::Parser;
use oxc_span::{GetSpan, SourceType};

use super::assertions::{assertion, status};
use super::captures;
use super::effects::{not_run, Effects, Listen, Met};
use super::expr::{dotted, json_path};
use crate::{Outcome, Yaml};

/// The longest script translated, bytes (Postman scripts are a few KiB; the parser
/// recurses on nesting, so length bounds its stack use along with [`MAX_BRACKETS`]).
pub(super) const MAX_SCRIPT: usize = 64 << 10;
/// How deep brackets may nest in a script before it is left out unparsed.
const MAX_BRACKETS: usize = 256;

/// Translates `script` (the `exec` lines joined with `\n`).
pub(super) fn translate(script: &str, listen: Listen) -> (Effects, Vec<Met>) {
    let mut walk = Walk {
        script,
        listen,
        effects: Effects::default(),
        met: Vec::new(),
        aliases: Vec::new(),
    };
    if script.trim().is_empty() {
        return (walk.effects, walk.met);
    }
    if script.len() > MAX_SCRIPT {
        walk.leave(
            0,
            "script",
            format!("longer than {MAX_SCRIPT} bytes: not read"),
        );
        return (walk.effects, walk.met);
    }
    if crate::js::bracket_depth(script) > MAX_BRACKETS {
        walk.leave(
            0,
            "script",
            format!("brackets nested deeper than {MAX_BRACKETS}: not read"),
        );
        return (walk.effects, walk.met);
    }
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, script, SourceType::cjs()).parse();
    if let Some(error) = parsed.diagnostics.first() {
        let at = error.labels.first().map_or(0, |l| l.offset() as usize);
        let message = format!(
            "syntax error ({}): the whole script is left out",
            error.message
        );
        walk.leave(at, "script", message);
        return (walk.effects, walk.met);
    }
    for statement in &parsed.program.body {
        walk.statement(statement, None, 0);
    }
    (walk.effects, walk.met)
}

struct Walk<'s> {
    script: &'s str,
    listen: Listen,
    effects: Effects,
    met: Vec<Met>,
    /// Local names bound to a JSONPath of the response (`var json = pm.response.json()`).
    aliases: Vec<(String, String)>,
}

impl Walk<'_> {
    /// Records a statement at byte `at` of the script.
    fn push(&mut self, at: usize, construct: &str, outcome: Outcome) {
        let at = at.min(self.script.len());
        let before = &self.script[..floor(self.script, at)];
        let line = before.bytes().filter(|&b| b == b'\n').count();
        let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1);
        self.met.push(Met {
            line,
            column,
            construct: construct.to_string(),
            outcome,
        });
    }

    fn leave(&mut self, at: usize, construct: &str, why: String) {
        self.push(at, construct, Outcome::LeftOut(why));
    }

    /// The source text of a span, first line, shortened.
    fn text(&self, start: u32, end: u32) -> String {
        let (start, end) = (start as usize, (end as usize).min(self.script.len()));
        let text = self.script.get(start..end).unwrap_or_default();
        let line = text.lines().next().unwrap_or_default().trim();
        if line.chars().count() > 80 {
            let cut: String = line.chars().take(77).collect();
            format!("{cut}...")
        } else {
            line.to_string()
        }
    }

    fn statement(&mut self, statement: &Statement<'_>, test: Option<&str>, depth: usize) {
        let span = statement.span();
        let construct = match test {
            Some(name) => format!("pm.test({name:?}): {}", self.text(span.start, span.end)),
            None => self.text(span.start, span.end),
        };
        let at = span.start as usize;
        match statement {
            Statement::EmptyStatement(_) => {}
            Statement::ExpressionStatement(e) => {
                let outcome = self.expression(&e.expression, test, depth);
                if let Some(outcome) = outcome {
                    self.push(at, &construct, outcome);
                }
            }
            Statement::VariableDeclaration(d) => {
                for declarator in &d.declarations {
                    let bound = match (&declarator.id, &declarator.init) {
                        (BindingPattern::BindingIdentifier(id), Some(init)) => {
                            json_path(&self.aliases, init, 0).map(|p| (id.name.to_string(), p))
                        }
                        _ => None,
                    };
                    match bound {
                        Some(alias) => {
                            self.aliases.push(alias);
                            self.push(at, &construct, Outcome::Translated);
                        }
                        None => self.leave(at, &construct, not_run()),
                    }
                }
            }
            _ => self.leave(at, &construct, not_run()),
        }
    }

    /// Translates an expression statement; None when it reported itself (a `pm.test`
    /// block reports its statements).
    fn expression(
        &mut self,
        expr: &Expression<'_>,
        test: Option<&str>,
        depth: usize,
    ) -> Option<Outcome> {
        let Expression::CallExpression(call) = expr else {
            return Some(Outcome::LeftOut(not_run()));
        };
        let callee = dotted(&call.callee);
        let callee: Vec<&str> = callee.iter().map(String::as_str).collect();
        match callee.as_slice() {
            ["pm", "test"] if depth < 2 => {
                let name = match call.arguments.first() {
                    Some(Argument::StringLiteral(s)) => s.value.to_string(),
                    _ => "test".to_string(),
                };
                let body = match call.arguments.get(1) {
                    Some(Argument::FunctionExpression(f)) => f.body.as_ref().map(|b| &b.statements),
                    Some(Argument::ArrowFunctionExpression(f)) => match &f.body {
                        oxc_ast::ast::ArrowFunctionBody::FunctionBody(b) => Some(&b.statements),
                        _ => None,
                    },
                    _ => None,
                };
                let Some(body) = body else {
                    return Some(Outcome::LeftOut(
                        "pm.test without a function: not run".into(),
                    ));
                };
                for statement in body {
                    self.statement(statement, Some(&name), depth + 1);
                }
                None
            }
            ["pm", "environment" | "collectionVariables" | "globals" | "variables", "set"] => Some(
                captures::set(&mut self.effects, self.listen, &self.aliases, call),
            ),
            ["pm", "response", "to", "have", "status"] => match call.arguments.first() {
                Some(Argument::NumericLiteral(n)) => {
                    Some(status(&mut self.effects.checks, Yaml::from(n.value)))
                }
                _ => Some(Outcome::LeftOut(
                    "a status that is not a number literal".into(),
                )),
            },
            ["pm", "response", "to", "have", "header"] => {
                Some(captures::header(&mut self.effects, call))
            }
            _ => {
                let _ = test;
                Some(assertion(&mut self.effects.checks, &self.aliases, call))
            }
        }
    }
}

/// The largest char boundary at or below `index`.
fn floor(text: &str, mut index: usize) -> usize {
    while index > 0 && !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}
