//! `check(res, {name: (r) => cond})` onto a request's non-fatal `check:` matchers, and
//! custom metrics' `.add()`.
//!
//! A condition is read from its AST (the function is not inlined): the response
//! parameter is bound to the response and each side of a comparison is evaluated, so
//! `r.status === 200`, `r.json('a.b') === 'x'`, `r.json().id !== undefined`,
//! `r.json('items').length > 0`, `r.body.includes('x')` and
//! `r.timings.duration < 500` are recognized whatever helper built the request.

use oxc_ast::ast::{
    ArrowFunctionBody, BinaryOperator, CallExpression, Expression, FormalParameters,
    LogicalOperator, Statement, UnaryOperator,
};
use oxc_span::{GetSpan, Span};

use super::reads::json_path;
use super::value::{number_text, FnRef, Read, Seg, Value, Why};
use super::{Interp, Phase};
use crate::{ConvertError, Yaml};

/// One matcher of `check:` (`status`, `json`, `json_path`, `body_contains`,
/// `duration`), and whether it only approximates the condition (with why).
type Matcher = (String, Yaml, Option<String>);

impl<'a> Interp<'a, '_> {
    /// `check(subject, {name: fn, ...})`.
    pub(crate) fn check(
        &mut self,
        call: &'a CallExpression<'a>,
    ) -> Result<Value<'a>, ConvertError> {
        let span = call.span;
        let args = self.args(&call.arguments)?;
        let subject = args.first().cloned().unwrap_or(Value::Undefined);
        let Some(Value::Object(conds)) = args.get(1).cloned() else {
            self.left(
                span,
                "check",
                "its conditions are not an object of functions",
            );
            return Ok(Value::Unknown("a check's result".into()));
        };
        let id = match subject {
            Value::Resp(id) if self.phase != Phase::Init => Some(id),
            _ => None,
        };
        let mut kept = Vec::new();
        let mut left = Vec::new();
        for (name, f) in conds {
            let construct = format!("check '{name}'");
            let (Some(id), Value::Func(f)) = (id, f) else {
                left.push((
                    construct,
                    "it checks something other than a response".to_string(),
                ));
                continue;
            };
            match self.matchers(f, id, span) {
                Ok(ms) => match self.merge(id, ms) {
                    Ok(approx) => {
                        kept.push(name.clone());
                        match approx {
                            None => self.ok(span, construct),
                            Some(note) => self.approx(
                                span,
                                construct,
                                format!("{note}; headroom names it {}", self.check_names(id)),
                            ),
                        }
                    }
                    Err(why) => left.push((construct, why.0)),
                },
                Err(why) => left.push((construct, why.0)),
            }
        }
        let kept = match kept.is_empty() {
            true => "nothing of this check".to_string(),
            false => format!("kept of this check: {}", kept.join(", ")),
        };
        for (construct, why) in left {
            self.left(span, construct, format!("{why} ({kept})"));
        }
        Ok(Value::Unknown("a check's result, known at run time".into()))
    }

    /// How headroom names the checks of request `id` (`NAME.MATCHER`).
    fn check_names(&self, id: usize) -> String {
        let req = &self.reqs[id];
        let name = req
            .name
            .clone()
            .unwrap_or_else(|| format!("{} {}", req.method, req.path));
        format!("`{name}.<matcher>`")
    }

    /// The matchers a check function's condition becomes.
    fn matchers(&mut self, f: FnRef<'a>, id: usize, span: Span) -> Result<Vec<Matcher>, Why> {
        let (params, body) = match f {
            FnRef::Arrow(a) => match &a.body {
                ArrowFunctionBody::FunctionBody(b) => (&a.params, b.statements.as_slice()),
                other => match other.as_expression() {
                    Some(e) => return self.with_param(&a.params, e, id, span),
                    None => return Err(Why("an arrow function without a body".into())),
                },
            },
            FnRef::Function(func) => match &func.body {
                Some(b) => (&func.params, b.statements.as_slice()),
                None => return Err(Why("an empty function".into())),
            },
        };
        let cond = match body {
            [Statement::ExpressionStatement(e)] => &e.expression,
            [Statement::ReturnStatement(r)] => match &r.argument {
                Some(e) => e,
                None => return Err(Why("it returns nothing".into())),
            },
            _ => return Err(Why("its function is more than one condition".into())),
        };
        self.with_param(params, cond, id, span)
    }

    /// Reads `cond` with the function's first parameter bound to response `id`.
    fn with_param(
        &mut self,
        params: &'a FormalParameters<'a>,
        cond: &'a Expression<'a>,
        id: usize,
        span: Span,
    ) -> Result<Vec<Matcher>, Why> {
        self.scopes.push(Vec::new());
        if let Some(p) = params.items.first() {
            self.bind(&p.pattern, Value::Resp(id), span);
        }
        self.no_captures = true;
        let out = self.condition_matchers(cond);
        self.no_captures = false;
        self.scopes.pop();
        out
    }

    /// Reads one condition.
    fn condition_matchers(&mut self, e: &'a Expression<'a>) -> Result<Vec<Matcher>, Why> {
        let at = e.span();
        match e.get_inner_expression() {
            Expression::LogicalExpression(l) if l.operator == LogicalOperator::And => {
                let mut out = self.condition_matchers(&l.left)?;
                out.extend(self.condition_matchers(&l.right)?);
                Ok(out)
            }
            Expression::LogicalExpression(l) if l.operator == LogicalOperator::Or => {
                // `r.status === 200 || r.status === 201`: a list of statuses.
                let mut statuses = Vec::new();
                for side in [&l.left, &l.right] {
                    for (key, value, _) in self.condition_matchers(side)? {
                        match (key.as_str(), value) {
                            ("status", Yaml::Seq(items)) => statuses.extend(items),
                            ("status", one) => statuses.push(one),
                            _ => {
                                return Err(Why(
                                    "`||` of conditions other than statuses has no matcher".into(),
                                ))
                            }
                        }
                    }
                }
                Ok(vec![("status".into(), Yaml::Seq(statuses), None)])
            }
            Expression::BinaryExpression(b) => {
                let l = self.eval_quiet(&b.left)?;
                let r = self.eval_quiet(&b.right)?;
                self.comparison(b.operator, l, r, at)
            }
            Expression::CallExpression(c) => self.includes(c, at),
            Expression::UnaryExpression(u) if u.operator == UnaryOperator::LogicalNot => {
                match u.argument.get_inner_expression() {
                    Expression::UnaryExpression(inner)
                        if inner.operator == UnaryOperator::LogicalNot =>
                    {
                        self.truthy_matcher(&inner.argument)
                    }
                    _ => Err(Why("a negated condition has no matcher".into())),
                }
            }
            other => self.truthy_matcher(other),
        }
    }

    /// `r.json('id')` (truthy): the field exists.
    fn truthy_matcher(&mut self, e: &'a Expression<'a>) -> Result<Vec<Matcher>, Why> {
        match self.eval_quiet(e)? {
            Value::RespRead(_, Read::Json(segs)) if !segs.is_empty() => Ok(vec![(
                "json_path".into(),
                Yaml::str(json_path(&segs)?),
                Some("`json_path`: the field exists (k6 also fails a field that is false, 0 or empty)".into()),
            )]),
            v => Err(Why(format!("the condition is {}, which no headroom matcher checks", v.kind()))),
        }
    }

    /// `r.body.includes('x')`, `r.body.indexOf('x') !== -1` (via [`Self::comparison`]).
    fn includes(&mut self, c: &'a CallExpression<'a>, _at: Span) -> Result<Vec<Matcher>, Why> {
        let Some(m) = c.callee.get_inner_expression().as_member_expression() else {
            return Err(Why("a call that is not a body test".into()));
        };
        let (Some("includes"), Some(arg)) = (
            m.static_property_name(),
            c.arguments.first().and_then(|a| a.as_expression()),
        ) else {
            return Err(Why("a call that is not `body.includes(text)`".into()));
        };
        let obj = self.eval_quiet(m.object())?;
        let needle = self.eval_quiet(arg)?;
        match obj {
            Value::RespRead(_, Read::Body) => Ok(vec![(
                "body_contains".into(),
                Yaml::str(self.text(needle, c.span)?),
                None,
            )]),
            v => Err(Why(format!("`includes` on {}", v.kind()))),
        }
    }

    /// A comparison of something read of the response with a value.
    fn comparison(
        &mut self,
        op: BinaryOperator,
        l: Value<'a>,
        r: Value<'a>,
        at: Span,
    ) -> Result<Vec<Matcher>, Why> {
        use BinaryOperator as B;
        let eq = matches!(op, B::Equality | B::StrictEquality);
        let ne = matches!(op, B::Inequality | B::StrictInequality);
        let (read, other, flipped) = match (l, r) {
            (Value::RespRead(_, read), other) => (read, other, false),
            (other, Value::RespRead(_, read)) => (read, other, true),
            (l, r) => {
                return Err(Why(format!(
                    "it compares {} with {}, neither read from the response",
                    l.kind(),
                    r.kind()
                )))
            }
        };
        let op = if flipped { flip(op) } else { op };
        match (read, other) {
            (Read::Status, Value::Num(n)) if eq => Ok(vec![("status".into(), Yaml::from(n), None)]),
            (Read::Json(mut segs), Value::Num(n)) if matches!(segs.last(), Some(Seg::Key(k)) if k == "length") && n == 0.0 && matches!(op, B::GreaterThan | B::Inequality | B::StrictInequality) => {
                segs.pop();
                segs.push(Seg::Index(0));
                Ok(vec![("json_path".into(), Yaml::str(json_path(&segs)?), Some("`json_path` on the first element: it exists when the list is not empty".into()))])
            }
            (Read::Json(segs), Value::Undefined | Value::Null) if ne && !segs.is_empty() => {
                Ok(vec![("json_path".into(), Yaml::str(json_path(&segs)?), None)])
            }
            (Read::Json(segs), v) if eq && !segs.is_empty() => {
                let expected = self.yaml(v, at)?;
                Ok(vec![("json".into(), Yaml::map().with(&json_path(&segs)?, expected), None)])
            }
            (Read::Timings(true), Value::Num(ms)) if matches!(op, B::LessThan | B::LessEqualThan) => Ok(vec![(
                "duration".into(),
                Yaml::str(format!("<{}ms", number_text(ms))),
                Some("`duration` bounds the whole request, redirects included (k6's `timings.duration` is the last hop's)".into()),
            )]),
            (Read::Header(Some(h)), _) => Err(Why(format!("headroom's checks have no header matcher (a capture `header:{h}` reads it)"))),
            (read, v) => Err(Why(format!("comparing {read:?} with {} has no headroom matcher", v.kind()))),
        }
    }

    /// Evaluates without reporting or capturing: the value as it is.
    fn eval_quiet(&mut self, e: &'a Expression<'a>) -> Result<Value<'a>, Why> {
        self.expr(e).map_err(|e| Why(e.to_string()))
    }

    /// Adds matchers to request `id`'s `check:`; the first approximation's note.
    fn merge(&mut self, id: usize, ms: Vec<Matcher>) -> Result<Option<String>, Why> {
        let req = &mut self.reqs[id];
        let mut note = None;
        for (key, value, approx) in &ms {
            let existing = req.check.iter_mut().find(|(k, _)| k == key);
            match (existing, key.as_str(), value) {
                (None, _, _) => {}
                (Some((_, Yaml::Map(old))), "json", Yaml::Map(new)) => {
                    if new.iter().any(|(k, _)| old.iter().any(|(o, _)| o == k)) {
                        return Err(Why("another check already compares this field".into()));
                    }
                }
                (Some(_), k, _) => {
                    return Err(Why(format!(
                        "another check of this request already uses `{k}`"
                    )))
                }
            }
            if note.is_none() {
                note.clone_from(approx);
            }
        }
        for (key, value, _) in ms {
            match req.check.iter_mut().find(|(k, _)| *k == key) {
                Some((_, Yaml::Map(old))) => {
                    if let Yaml::Map(new) = value {
                        old.extend(new);
                    }
                }
                _ => req.check.push((key, value)),
            }
        }
        Ok(note)
    }

    /// `metric.add(v)`: a Trend timing one request becomes thresholds on it.
    pub(crate) fn metric_add(&mut self, kind: &str, name: &str, v: Value<'a>, span: Span) {
        let construct = format!("{name}.add");
        match (kind, v) {
            ("Trend", Value::RespRead(id, Read::Timings(true))) => {
                if let Some(req) = self.reqs.get_mut(id) {
                    if req.name.is_none() {
                        req.name = Some(name.to_string());
                    }
                }
                self.trends.push((name.to_string(), id));
                self.approx(span, construct, "the Trend times one request: its thresholds judge that request's latency (which counts redirects and connecting)");
            }
            _ => self.left(span, construct, "headroom has no custom metrics (a Trend that times one request's `timings.duration` is converted)"),
        }
    }
}

/// `a OP b` as `b OP' a`.
fn flip(op: BinaryOperator) -> BinaryOperator {
    use BinaryOperator as B;
    match op {
        B::LessThan => B::GreaterThan,
        B::GreaterThan => B::LessThan,
        B::LessEqualThan => B::GreaterEqualThan,
        B::GreaterEqualThan => B::LessEqualThan,
        other => other,
    }
}
