//! Postman test and pre-request scripts, parsed with oxc: the declarative subset
//! (`pm.test` blocks of `pm.response.to.have.status(…)` and `pm.expect(…)` assertions,
//! `pm.environment.set(name, pm.response.json().x)`) becomes `check:` and `capture:`
//! entries and variable values; every other statement is reported, never run.

use oxc_allocator::Allocator;
use oxc_ast::ast::{
    Argument, ArrayExpressionElement, BindingPattern, CallExpression, Expression, Statement,
};
use oxc_parser::Parser;
use oxc_span::{GetSpan, SourceType};

use crate::{Outcome, Yaml};

/// The longest script translated, bytes (Postman scripts are a few KiB; the parser
/// recurses on nesting, so length bounds its stack use along with [`MAX_BRACKETS`]).
pub(super) const MAX_SCRIPT: usize = 64 << 10;
/// How deep brackets may nest in a script before it is left out unparsed.
const MAX_BRACKETS: usize = 256;
/// How deep an expression is followed (member chains, nested `pm.test`).
const MAX_WALK: usize = 64;

/// Which event a script runs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Listen {
    /// `listen: test`, after the response.
    Test,
    /// `listen: prerequest`, before the request.
    PreRequest,
}

/// The checks a script's assertions became (one of each matcher, as `check:` has).
#[derive(Debug, Default, Clone)]
pub(super) struct Checks {
    /// `status:`.
    pub(super) status: Option<Yaml>,
    /// `body_contains:`.
    pub(super) body_contains: Option<String>,
    /// `json:` entries, JSONPath → value.
    pub(super) json: Vec<(String, Yaml)>,
    /// `json_path:` (a path that must match).
    pub(super) json_path: Option<String>,
    /// `duration:` (`<500ms`).
    pub(super) duration: Option<String>,
}

impl Checks {
    /// Whether no check was made.
    pub(super) fn is_empty(&self) -> bool {
        self.status.is_none()
            && self.body_contains.is_none()
            && self.json.is_empty()
            && self.json_path.is_none()
            && self.duration.is_none()
    }

    /// Adds the checks of `other` that do not conflict with these.
    pub(super) fn merge(&mut self, other: &Checks) {
        if self.status.is_none() {
            self.status.clone_from(&other.status);
        }
        if self.body_contains.is_none() {
            self.body_contains.clone_from(&other.body_contains);
        }
        if self.json_path.is_none() {
            self.json_path.clone_from(&other.json_path);
        }
        if self.duration.is_none() {
            self.duration.clone_from(&other.duration);
        }
        for (path, value) in &other.json {
            if !self.json.iter().any(|(p, _)| p == path) {
                self.json.push((path.clone(), value.clone()));
            }
        }
    }

    /// The `check:` mapping.
    pub(super) fn to_yaml(&self) -> Yaml {
        let mut map = Yaml::map();
        if let Some(status) = &self.status {
            map.set("status", status.clone());
        }
        if let Some(text) = &self.body_contains {
            map.set("body_contains", text.as_str());
        }
        if let Some(path) = &self.json_path {
            map.set("json_path", path.as_str());
        }
        if !self.json.is_empty() {
            map.set("json", Yaml::Map(self.json.clone()));
        }
        if let Some(d) = &self.duration {
            map.set("duration", d.as_str());
        }
        map
    }
}

/// What a script does that the scenario keeps.
#[derive(Debug, Default, Clone)]
pub(super) struct Effects {
    /// Its assertions.
    pub(super) checks: Checks,
    /// Variables set from the response: Postman name → capture source (`$.token`,
    /// `header:X`, `status`, `cookie:X`).
    pub(super) captures: Vec<(String, String)>,
    /// Variables set to constants: name → value.
    pub(super) constants: Vec<(String, String)>,
}

/// One statement met: where in the script (0-based line of the joined `exec`, byte
/// column in that line), as the script spells it, and what became of it.
#[derive(Debug, Clone)]
pub(super) struct Met {
    /// 0-based line in the script.
    pub(super) line: usize,
    /// Byte column in that line.
    pub(super) column: usize,
    /// The statement, shortened.
    pub(super) construct: String,
    /// What became of it.
    pub(super) outcome: Outcome,
}

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
    if bracket_depth(script) > MAX_BRACKETS {
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

/// The deepest bracket nesting of `text`, counted on every bracket (strings and
/// comments included: an over-estimate only leaves a script out).
fn bracket_depth(text: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for b in text.bytes() {
        match b {
            b'(' | b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// The Chai words that only make an assertion read well.
const CHAINS: &[&str] = &[
    "to", "be", "been", "is", "that", "which", "and", "has", "have", "with", "at", "of", "same",
    "but", "does", "still", "also",
];

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
                            self.json_path(init, 0).map(|p| (id.name.to_string(), p))
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
            ["pm", "environment" | "collectionVariables" | "globals" | "variables", "set"] => {
                Some(self.set(call))
            }
            ["pm", "response", "to", "have", "status"] => match call.arguments.first() {
                Some(Argument::NumericLiteral(n)) => Some(self.status(Yaml::from(n.value))),
                _ => Some(Outcome::LeftOut(
                    "a status that is not a number literal".into(),
                )),
            },
            ["pm", "response", "to", "have", "header"] => match call.arguments.first() {
                Some(Argument::StringLiteral(name)) if call.arguments.len() == 1 => {
                    let var = format!("header_{}", super::template::identifier(&name.value));
                    let from = format!("header:{}", name.value);
                    self.effects.captures.push((var.clone(), from));
                    Some(Outcome::Approximated(format!(
                        "a capture `{var}` of the header: a response without it fails the \
                         request (as `check`) rather than one test"
                    )))
                }
                _ => Some(Outcome::LeftOut(
                    "a header value test: check: has no header matcher".into(),
                )),
            },
            _ => {
                let _ = test;
                Some(self.assertion(call))
            }
        }
    }

    /// `pm.environment.set(name, value)` and its siblings.
    fn set(&mut self, call: &CallExpression<'_>) -> Outcome {
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
            self.effects.constants.push((name, constant));
            return Outcome::Translated;
        }
        if self.listen == Listen::PreRequest {
            return Outcome::LeftOut("a computed value: pre-request scripts are not run".into());
        }
        let source = match self.json_path(value, 0) {
            Some(path) => Some(path),
            None => response_source(value),
        };
        match source {
            Some(source) => {
                self.effects.captures.push((name, source));
                Outcome::Translated
            }
            None => Outcome::LeftOut("a value computed by the script: not run".into()),
        }
    }

    /// Records a status check.
    fn status(&mut self, status: Yaml) -> Outcome {
        if self.effects.checks.status.is_some() {
            return Outcome::LeftOut("a second status check: check: holds one".into());
        }
        self.effects.checks.status = Some(status);
        Outcome::Translated
    }

    /// `pm.expect(SUBJECT).to.WORDS(ARGS)`.
    fn assertion(&mut self, call: &CallExpression<'_>) -> Outcome {
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
                    self.status(Yaml::from(n.value))
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
                        Some(codes) if !codes.is_empty() => self.status(Yaml::Seq(codes)),
                        _ => Outcome::LeftOut("status codes that are not number literals".into()),
                    }
                }
                _ => Outcome::LeftOut(format!("the status assertion .{word}: not translated")),
            };
        }
        if is_dotted(subject, &["pm", "response", "responseTime"]) {
            return match (*word, arg) {
                ("below" | "lessThan" | "lt", Some(Expression::NumericLiteral(n)))
                    if self.effects.checks.duration.is_none() =>
                {
                    self.effects.checks.duration = Some(format!("<{}ms", n.value));
                    Outcome::Translated
                }
                _ => Outcome::LeftOut(format!("the time assertion .{word}: not translated")),
            };
        }
        if let Expression::CallExpression(c) = subject {
            if is_dotted(&c.callee, &["pm", "response", "text"]) {
                return match (*word, arg.and_then(literal_text)) {
                    ("include" | "includes" | "contain" | "contains", Some(text))
                        if self.effects.checks.body_contains.is_none() =>
                    {
                        self.effects.checks.body_contains = Some(text);
                        Outcome::Translated
                    }
                    _ => Outcome::LeftOut(format!("the body assertion .{word}: not translated")),
                };
            }
        }
        if let Some(path) = self.json_path(subject, 0) {
            if *word == "exist" && self.effects.checks.json_path.is_none() {
                self.effects.checks.json_path = Some(path);
                return Outcome::Translated;
            }
            if let (true, Some(value)) = (equal, arg.and_then(literal_yaml)) {
                if self.effects.checks.json.iter().any(|(p, _)| *p == path) {
                    return Outcome::LeftOut("a second check of the same JSONPath".into());
                }
                self.effects.checks.json.push((path, value));
                return Outcome::Translated;
            }
            return Outcome::LeftOut(format!("the JSON assertion .{word}: not translated"));
        }
        Outcome::LeftOut(not_run())
    }

    /// The JSONPath an expression reads of the response's JSON body
    /// (`pm.response.json().a[0]`, `json.a` after `var json = pm.response.json()`).
    fn json_path(&self, expr: &Expression<'_>, depth: usize) -> Option<String> {
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
            Expression::Identifier(id) => self
                .aliases
                .iter()
                .rev()
                .find(|(name, _)| name == id.name.as_str())
                .map(|(_, path)| path.clone()),
            Expression::ParenthesizedExpression(p) => self.json_path(&p.expression, depth + 1),
            Expression::StaticMemberExpression(m) => {
                let base = self.json_path(&m.object, depth + 1)?;
                Some(segment(base, &m.property.name))
            }
            Expression::ComputedMemberExpression(m) => {
                let base = self.json_path(&m.object, depth + 1)?;
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

/// The names of a plain member chain (`pm.response.to.have.status`); empty when it is
/// not one.
fn dotted(expr: &Expression<'_>) -> Vec<String> {
    let mut names = Vec::new();
    let mut at = expr;
    for _ in 0..MAX_WALK {
        match at {
            Expression::StaticMemberExpression(m) => {
                names.push(m.property.name.to_string());
                at = &m.object;
            }
            Expression::Identifier(id) => {
                names.push(id.name.to_string());
                names.reverse();
                return names;
            }
            _ => return Vec::new(),
        }
    }
    Vec::new()
}

fn is_dotted(expr: &Expression<'_>, names: &[&str]) -> bool {
    dotted(expr)
        .iter()
        .map(String::as_str)
        .eq(names.iter().copied())
}

/// A string or number literal's text.
fn literal_text(expr: &Expression<'_>) -> Option<String> {
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
fn literal_yaml(expr: &Expression<'_>) -> Option<Yaml> {
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

fn not_run() -> String {
    "headroom does not run scripts: only status, body, JSON and time assertions and \
     variables set from the response are translated"
        .into()
}

/// The largest char boundary at or below `index`.
fn floor(text: &str, mut index: usize) -> usize {
    while index > 0 && !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}
