//! Statements: declarations and patterns, function bodies
//! (inlined when called), blocks, `if`, loops (unrolled up to [`super::MAX_UNROLL`]),
//! `return`.

use oxc_ast::ast::{BindingPattern, Expression, ForStatementInit, Statement};
use oxc_span::{GetSpan, Span};

use super::value::{FnRef, Value};
use super::{Interp, Phase, Step, MAX_UNROLL};
use crate::ConvertError;

/// How a statement ended.
pub(crate) enum Flow<'a> {
    /// It ran to its end.
    Normal,
    /// `return` (with its value).
    Return(Value<'a>),
    /// `break`.
    Break,
    /// `continue`.
    Continue,
}

impl<'a> Interp<'a, '_> {
    /// Binds a pattern (`x`, `{a, b}`, `[a, b]`, `x = default`) to a value.
    pub(crate) fn bind(&mut self, pattern: &'a BindingPattern<'a>, value: Value<'a>, span: Span) {
        match pattern {
            BindingPattern::BindingIdentifier(id) => self.declare(id.name.as_str(), value),
            BindingPattern::AssignmentPattern(p) => {
                let value = match value {
                    Value::Undefined => self
                        .expr(&p.right)
                        .unwrap_or_else(|e| Value::Unknown(e.to_string())),
                    v => v,
                };
                self.bind(&p.left, value, span);
            }
            BindingPattern::ObjectPattern(p) => {
                for prop in &p.properties {
                    let key = prop
                        .key
                        .static_name()
                        .map(|k| k.to_string())
                        .unwrap_or_default();
                    let v = self.member(value.clone(), &key, span);
                    self.bind(&prop.value, v, span);
                }
            }
            BindingPattern::ArrayPattern(p) => {
                for (i, el) in p.elements.iter().enumerate() {
                    if let Some(el) = el {
                        let v = self.member(value.clone(), &i.to_string(), span);
                        self.bind(el, v, span);
                    }
                }
            }
        }
    }

    /// Runs statements in a new scope.
    pub(crate) fn block(&mut self, body: &'a [Statement<'a>]) -> Result<Flow<'a>, ConvertError> {
        self.scopes.push(Vec::new());
        // Hoist the block's function declarations.
        for stmt in body {
            if let Statement::FunctionDeclaration(f) = stmt {
                if let Some(id) = &f.id {
                    self.declare(id.name.as_str(), Value::Func(FnRef::Function(f)));
                }
            }
        }
        let mut flow = Flow::Normal;
        for stmt in body {
            flow = self.stmt(stmt)?;
            if !matches!(flow, Flow::Normal) {
                break;
            }
        }
        self.scopes.pop();
        Ok(flow)
    }

    /// One statement.
    pub(crate) fn stmt(&mut self, stmt: &'a Statement<'a>) -> Result<Flow<'a>, ConvertError> {
        self.enter(stmt.span())?;
        let flow = self.stmt_inner(stmt);
        self.leave();
        flow
    }

    fn stmt_inner(&mut self, stmt: &'a Statement<'a>) -> Result<Flow<'a>, ConvertError> {
        match stmt {
            Statement::ExpressionStatement(e) => {
                self.expr(&e.expression)?;
            }
            Statement::VariableDeclaration(v) => self.variables(v)?,
            Statement::FunctionDeclaration(_) | Statement::EmptyStatement(_) => {}
            Statement::BlockStatement(b) => return self.block(&b.body),
            Statement::ReturnStatement(r) => {
                let v = match &r.argument {
                    Some(e) => self.expr(e)?,
                    None => Value::Undefined,
                };
                return Ok(Flow::Return(v));
            }
            Statement::BreakStatement(_) => return Ok(Flow::Break),
            Statement::ContinueStatement(_) => return Ok(Flow::Continue),
            Statement::IfStatement(s) => return self.if_stmt(s),
            Statement::ForStatement(s) => {
                self.scopes.push(Vec::new());
                match &s.init {
                    Some(ForStatementInit::VariableDeclaration(v)) => self.variables(v)?,
                    Some(init) => {
                        if let Some(e) = init.as_expression() {
                            self.expr(e)?;
                        }
                    }
                    None => {}
                }
                let flow = self.looping(
                    s.span,
                    |it| match &s.test {
                        Some(t) => it.expr(t),
                        None => Ok(Value::Bool(true)),
                    },
                    &s.body,
                    s.update.as_ref(),
                );
                self.scopes.pop();
                return flow;
            }
            Statement::WhileStatement(s) => {
                return self.looping(s.span, |it| it.expr(&s.test), &s.body, None);
            }
            Statement::ForOfStatement(s) => {
                let list = self.expr(&s.right)?;
                let Value::Array(items) = list else {
                    self.left(
                        s.span,
                        "for...of",
                        format!("the loop's list: {}", list.why()),
                    );
                    return Ok(Flow::Normal);
                };
                if items.len() > MAX_UNROLL {
                    self.left(
                        s.span,
                        "for...of",
                        format!("more than {MAX_UNROLL} iterations are not unrolled"),
                    );
                    return Ok(Flow::Normal);
                }
                self.ok(s.span, "for...of");
                for item in items {
                    self.scopes.push(Vec::new());
                    if let oxc_ast::ast::ForStatementLeft::VariableDeclaration(v) = &s.left {
                        if let Some(d) = v.declarations.first() {
                            self.bind(&d.id, item, s.span);
                        }
                    }
                    let flow = self.stmt(&s.body)?;
                    self.scopes.pop();
                    match flow {
                        Flow::Break => break,
                        Flow::Return(v) => return Ok(Flow::Return(v)),
                        _ => {}
                    }
                }
            }
            Statement::TryStatement(t) => {
                self.approx(t.span, "try", "the try block is converted; catch and finally are not (headroom counts a failed request, it does not throw)");
                return self.block(&t.block.body);
            }
            Statement::ThrowStatement(t) => {
                self.left(
                    t.span,
                    "throw",
                    "headroom has no exceptions: a failed request is counted",
                );
            }
            other => {
                self.left(
                    other.span(),
                    statement_name(other),
                    "this statement is not converted",
                );
            }
        }
        Ok(Flow::Normal)
    }

    /// `if`: a known condition picks its branch; `Math.random()` and values read at
    /// run time become `if:` steps; anything else is left out.
    fn if_stmt(&mut self, s: &'a oxc_ast::ast::IfStatement<'a>) -> Result<Flow<'a>, ConvertError> {
        let test = self.expr(&s.test)?;
        if let Some(t) = test.truthy() {
            return match (t, &s.alternate) {
                (true, _) => self.stmt(&s.consequent),
                (false, Some(alt)) => self.stmt(alt),
                (false, None) => Ok(Flow::Normal),
            };
        }
        let cond = match self.condition(&test, s.test.span()) {
            Ok(c) => c,
            Err(why) => {
                self.left(s.span, "if", format!("its condition is not known before the run and not expressible as `if:` ({}); both branches are left out", why.0));
                return Ok(Flow::Normal);
            }
        };
        if let (Some(p), Some(alt), true) = (cond.p, &s.alternate, self.can_split()) {
            // One draw decides the branch: weighted flows say exactly that.
            let (then, early_then) = self.collect(&s.consequent)?;
            let (otherwise, early_else) = self.collect(alt)?;
            self.emit(Step::Random(p, then, otherwise));
            self.early(s.span, early_then || early_else);
            self.ok(s.span, "if (Math.random() ...)");
            return Ok(Flow::Normal);
        }
        let (then, early_then) = self.collect(&s.consequent)?;
        if !then.is_empty() {
            self.emit(Step::If(cond.text.clone(), then));
        }
        let mut early_else = false;
        if let Some(alt) = &s.alternate {
            let (otherwise, early) = self.collect(alt)?;
            early_else = early;
            if !otherwise.is_empty() {
                self.emit(Step::If(cond.negated.clone(), otherwise));
            }
        }
        self.early(s.span, early_then || early_else);
        match (cond.random, s.alternate.is_some()) {
            (true, true) => self.approx(
                s.span,
                "if (Math.random() ...)",
                format!("`if: {}` and the else branch `if: {}` draw separately: in one iteration both or neither may run", cond.text, cond.negated),
            ),
            (true, false) => self.ok(s.span, "if (Math.random() ...)"),
            (false, _) => self.ok(s.span, "if"),
        }
        Ok(Flow::Normal)
    }

    /// Whether a random `if`/`else` here can split the flow: at the top of a flow's
    /// function, below [`super::MAX_SPLITS`] splits.
    fn can_split(&self) -> bool {
        let top = self.out.len() == 2 && self.phase == Phase::Flow;
        let splits = self.out.last().map_or(0, |l| {
            l.iter().filter(|s| matches!(s, Step::Random(..))).count()
        });
        top && splits < super::MAX_SPLITS
    }

    /// Reports a `return`/`break` under a run-time condition.
    fn early(&mut self, span: Span, early: bool) {
        if early {
            self.approx(
                span,
                "return under a run-time condition",
                "the steps after it run in every iteration (a step cannot end the iteration early)",
            );
        }
    }

    /// Runs `body`, collecting its steps; and whether it ended early (`return`).
    fn collect(&mut self, body: &'a Statement<'a>) -> Result<(Vec<Step>, bool), ConvertError> {
        self.out.push(Vec::new());
        let flow = self.stmt(body);
        let steps = self.out.pop().unwrap_or_default();
        Ok((steps, !matches!(flow?, Flow::Normal)))
    }

    /// A loop: unrolled while its test is known, up to [`MAX_UNROLL`] iterations.
    fn looping(
        &mut self,
        span: Span,
        mut test: impl FnMut(&mut Self) -> Result<Value<'a>, ConvertError>,
        body: &'a Statement<'a>,
        update: Option<&'a Expression<'a>>,
    ) -> Result<Flow<'a>, ConvertError> {
        let mut n = 0usize;
        // A loop that runs past the bound is left out whole: the steps it made so far
        // are taken back, so the scenario never holds a truncated loop.
        let made = self.out.last().map_or(0, Vec::len);
        loop {
            let t = test(self)?;
            match t.truthy() {
                Some(false) => break,
                Some(true) => {}
                None => {
                    self.left(
                        span,
                        "loop",
                        format!(
                            "its condition is not known before the run ({}); the loop is left out",
                            t.why()
                        ),
                    );
                    return Ok(Flow::Normal);
                }
            }
            if n == MAX_UNROLL {
                if let Some(list) = self.out.last_mut() {
                    list.truncate(made);
                }
                self.left(
                    span,
                    "loop",
                    format!(
                        "more than {MAX_UNROLL} iterations are not unrolled; the loop is left out"
                    ),
                );
                return Ok(Flow::Normal);
            }
            n += 1;
            match self.stmt(body)? {
                Flow::Break => break,
                Flow::Return(v) => return Ok(Flow::Return(v)),
                _ => {}
            }
            if let Some(u) = update {
                self.expr(u)?;
            }
        }
        self.ok(span, "loop");
        Ok(Flow::Normal)
    }

    /// Calls a function of the script with `args`: its body is walked with the
    /// parameters bound (inlined); recursion and too deep inlining are refused.
    pub(crate) fn call_fn(
        &mut self,
        f: FnRef<'a>,
        args: Vec<Value<'a>>,
        span: Span,
    ) -> Result<Value<'a>, ConvertError> {
        if self.calls.contains(&f.start()) {
            self.left(
                span,
                "recursive call",
                "a function calling itself is not inlined",
            );
            return Ok(Value::Unknown("the result of a recursive call".into()));
        }
        if self.calls.len() >= crate::MAX_DEPTH {
            return Err(self.src.limit(
                span.start as usize,
                "helpers inlined deeper than",
                crate::MAX_DEPTH,
            ));
        }
        self.calls.push(f.start());
        self.scopes.push(Vec::new());
        let params = match f {
            FnRef::Function(func) => &func.params,
            FnRef::Arrow(a) => &a.params,
        };
        let mut args = args.into_iter();
        for p in &params.items {
            let v = args.next().unwrap_or(Value::Undefined);
            let v = match (&p.initializer, v) {
                (Some(init), Value::Undefined) => self.expr(init)?,
                (_, v) => v,
            };
            self.bind(&p.pattern, v, p.span);
        }
        let result = match f {
            FnRef::Function(func) => match &func.body {
                Some(body) => self.block(&body.statements),
                None => Ok(Flow::Normal),
            },
            FnRef::Arrow(a) => match &a.body {
                oxc_ast::ast::ArrowFunctionBody::FunctionBody(b) => self.block(&b.statements),
                other => match other.as_expression() {
                    Some(e) => self.expr(e).map(Flow::Return),
                    None => Ok(Flow::Normal),
                },
            },
        };
        self.scopes.pop();
        self.calls.pop();
        Ok(match result? {
            Flow::Return(v) => v,
            _ => Value::Undefined,
        })
    }

    /// Walks an exported function as `phase` (setup, a flow, teardown), collecting its
    /// steps; returns them and what it returned.
    pub(crate) fn walk(
        &mut self,
        f: FnRef<'a>,
        phase: Phase,
        args: Vec<Value<'a>>,
        span: Span,
    ) -> Result<(Vec<Step>, Value<'a>), ConvertError> {
        let before = self.phase;
        self.phase = phase;
        self.out.push(Vec::new());
        let result = self.call_fn(f, args, span);
        let steps = self.out.pop().unwrap_or_default();
        self.phase = before;
        Ok((steps, result?))
    }
}

/// A statement's kind, for the report.
fn statement_name(stmt: &Statement<'_>) -> &'static str {
    match stmt {
        Statement::DoWhileStatement(_) => "do...while",
        Statement::ForInStatement(_) => "for...in",
        Statement::SwitchStatement(_) => "switch",
        Statement::LabeledStatement(_) => "label",
        Statement::WithStatement(_) => "with",
        Statement::ClassDeclaration(_) => "class",
        _ => "statement",
    }
}
