//! Expressions: constants are computed, run-time values become templates, responses
//! and what is read of them stay symbolic until used (then they become captures).

use oxc_ast::ast::{
    Argument, ArrayExpressionElement, Expression, LogicalOperator, ObjectPropertyKind,
    UnaryOperator,
};
use oxc_span::{GetSpan, Span};

use super::value::{number_text, Cond, FnRef, Value};
use super::Interp;
use crate::ConvertError;

/// Whether an import of `module` is one the converter knows.
pub(crate) fn module_known(module: &str) -> bool {
    matches!(
        module,
        "k6" | "k6/http" | "k6/metrics" | "k6/data" | "k6/html"
    ) || (module.contains("jslib.k6.io")
        && (module.contains("k6-utils") || module.contains("papaparse")))
}

/// Globals k6 scripts use without importing them.
const GLOBALS: &[&str] = &[
    "Math",
    "JSON",
    "open",
    "console",
    "parseInt",
    "parseFloat",
    "Number",
    "String",
    "encodeURIComponent",
    "__ENV",
];

impl<'a> Interp<'a, '_> {
    /// Evaluates an expression.
    pub(crate) fn expr(&mut self, e: &'a Expression<'a>) -> Result<Value<'a>, ConvertError> {
        self.enter(e.span())?;
        let v = self.expr_inner(e);
        self.leave();
        v
    }

    fn expr_inner(&mut self, e: &'a Expression<'a>) -> Result<Value<'a>, ConvertError> {
        let span = e.span();
        Ok(match e.get_inner_expression() {
            Expression::BooleanLiteral(b) => Value::Bool(b.value),
            Expression::NullLiteral(_) => Value::Null,
            Expression::NumericLiteral(n) => Value::Num(n.value),
            Expression::StringLiteral(s) => Value::Str(s.value.to_string()),
            Expression::TemplateLiteral(t) => {
                let mut parts = Vec::new();
                for (i, q) in t.quasis.iter().enumerate() {
                    let text = q
                        .value
                        .cooked
                        .as_ref()
                        .map_or(q.value.raw.as_str(), |c| c.as_str());
                    parts.push(Value::Str(text.to_string()));
                    if let Some(x) = t.expressions.get(i) {
                        parts.push(self.expr(x)?);
                    }
                }
                self.concat(parts, span)
            }
            Expression::Identifier(id) => self.identifier(id.name.as_str(), span),
            Expression::ArrayExpression(a) => {
                let mut items = Vec::new();
                for el in &a.elements {
                    match el {
                        ArrayExpressionElement::SpreadElement(s) => match self.expr(&s.argument)? {
                            Value::Array(more) => items.extend(more),
                            v => items.push(Value::Unknown(format!("a spread of {}", v.kind()))),
                        },
                        ArrayExpressionElement::Elision(_) => items.push(Value::Undefined),
                        other => match other.as_expression() {
                            Some(x) => items.push(self.expr(x)?),
                            None => items.push(Value::Undefined),
                        },
                    }
                }
                Value::Array(items)
            }
            Expression::ObjectExpression(o) => {
                let mut entries: Vec<(String, Value<'a>)> = Vec::new();
                for p in &o.properties {
                    match p {
                        ObjectPropertyKind::ObjectProperty(p) => {
                            let key = match p.key.static_name() {
                                Some(k) if !p.computed => k.to_string(),
                                _ => match p.key.as_expression().map(|k| self.expr(k)) {
                                    Some(Ok(Value::Str(s))) => s,
                                    Some(Ok(Value::Num(n))) => number_text(n),
                                    Some(Err(e)) => return Err(e),
                                    _ => continue,
                                },
                            };
                            let v = self.expr(&p.value)?;
                            set_entry(&mut entries, key, v);
                        }
                        ObjectPropertyKind::SpreadProperty(s) => {
                            if let Value::Object(more) = self.expr(&s.argument)? {
                                for (k, v) in more {
                                    set_entry(&mut entries, k, v);
                                }
                            }
                        }
                    }
                }
                Value::Object(entries)
            }
            Expression::ArrowFunctionExpression(f) => Value::Func(FnRef::Arrow(f)),
            Expression::FunctionExpression(f) => Value::Func(FnRef::Function(f)),
            Expression::StaticMemberExpression(m) => {
                let obj = self.expr(&m.object)?;
                self.member(obj, m.property.name.as_str(), span)
            }
            Expression::ComputedMemberExpression(m) => {
                let obj = self.expr(&m.object)?;
                let key = self.expr(&m.expression)?;
                self.computed(obj, key, span)
            }
            Expression::ChainExpression(c) => match c.expression.as_member_expression() {
                Some(m) => {
                    let obj = self.expr(m.object())?;
                    match m.static_property_name() {
                        Some(k) => self.member(obj, k, span),
                        None => Value::Unknown("a computed optional member".into()),
                    }
                }
                None => match &c.expression {
                    oxc_ast::ast::ChainElement::CallExpression(call) => self.call(call)?,
                    _ => Value::Unknown("an optional chain".into()),
                },
            },
            Expression::CallExpression(call) => self.call(call)?,
            Expression::NewExpression(n) => self.new_expr(n)?,
            Expression::UnaryExpression(u) => {
                let v = self.expr(&u.argument)?;
                let v = self.settle(v);
                match (u.operator, v) {
                    (UnaryOperator::LogicalNot, Value::Cond(c)) => Value::Cond(Box::new(Cond {
                        text: c.negated.clone(),
                        negated: c.text.clone(),
                        random: c.random,
                        p: c.p.map(|p| 1.0 - p),
                    })),
                    (UnaryOperator::LogicalNot, v) => match v.truthy() {
                        Some(t) => Value::Bool(!t),
                        None => Value::Unknown(format!("`!` of {}", v.kind())),
                    },
                    (UnaryOperator::UnaryNegation, Value::Num(n)) => Value::Num(-n),
                    (UnaryOperator::UnaryPlus, Value::Num(n)) => Value::Num(n),
                    (UnaryOperator::UnaryPlus, Value::Str(s)) => {
                        Value::Num(s.trim().parse().unwrap_or(f64::NAN))
                    }
                    (UnaryOperator::Typeof, v) if v.is_const() => {
                        Value::Str(typeof_name(&v).into())
                    }
                    (op, v) => Value::Unknown(format!("`{}` of {}", op.as_str(), v.kind())),
                }
            }
            Expression::BinaryExpression(b) => {
                let l = self.expr(&b.left)?;
                let r = self.expr(&b.right)?;
                self.binary(b.operator, l, r, span)
            }
            Expression::LogicalExpression(l) => {
                let left = self.expr(&l.left)?;
                let left = self.settle_env(left, span);
                match (l.operator, &left, left.truthy()) {
                    (LogicalOperator::Or, _, Some(true)) => left,
                    (LogicalOperator::Or, _, Some(false)) => self.expr(&l.right)?,
                    (LogicalOperator::And, _, Some(false)) => left,
                    (LogicalOperator::And, _, Some(true)) => self.expr(&l.right)?,
                    (LogicalOperator::Coalesce, Value::Undefined | Value::Null, _) => {
                        self.expr(&l.right)?
                    }
                    (LogicalOperator::Coalesce, _, Some(_)) => left,
                    (op, _, None) => {
                        let right = self.expr(&l.right)?;
                        self.logical(op, left, right, span)
                    }
                }
            }
            Expression::ConditionalExpression(c) => {
                let test = self.expr(&c.test)?;
                let test = self.settle_env(test, span);
                match test.truthy() {
                    Some(true) => self.expr(&c.consequent)?,
                    Some(false) => self.expr(&c.alternate)?,
                    None => {
                        Value::Unknown(format!("a `? :` on {} decided at run time", test.kind()))
                    }
                }
            }
            Expression::AssignmentExpression(a) => {
                let v = self.expr(&a.right)?;
                let v = match a.operator {
                    oxc_ast::ast::AssignmentOperator::Assign => v,
                    op => match (a.left.get_identifier_name(), op.to_binary_operator()) {
                        (Some(name), Some(bop)) => {
                            let old = self.lookup(name).cloned().unwrap_or(Value::Undefined);
                            self.binary(bop, old, v, span)
                        }
                        _ => Value::Unknown("a compound assignment".into()),
                    },
                };
                match a.left.get_identifier_name() {
                    Some(name) => self.assign(name, v.clone()),
                    None => self.assign_member(&a.left, v.clone()),
                }
                v
            }
            Expression::UpdateExpression(u) => {
                let Some(name) = u.argument.get_identifier_name() else {
                    return Ok(Value::Unknown("an update of a member".into()));
                };
                let old = self.lookup(name).cloned().unwrap_or(Value::Undefined);
                let new = match (&old, u.operator) {
                    (Value::Num(n), oxc_ast::ast::UpdateOperator::Increment) => Value::Num(n + 1.0),
                    (Value::Num(n), oxc_ast::ast::UpdateOperator::Decrement) => Value::Num(n - 1.0),
                    _ => Value::Unknown("an update of a value not known statically".into()),
                };
                self.assign(name, new.clone());
                if u.prefix {
                    new
                } else {
                    old
                }
            }
            Expression::SequenceExpression(s) => {
                let mut last = Value::Undefined;
                for x in &s.expressions {
                    last = self.expr(x)?;
                }
                last
            }
            Expression::AwaitExpression(a) => self.expr(&a.argument)?,
            other => Value::Unknown(format!(
                "this kind of expression ({}) is not evaluated",
                expression_name(other)
            )),
        })
    }

    /// `obj.key = v` on an object held in a variable (`data.token = ...`).
    fn assign_member(&mut self, target: &'a oxc_ast::ast::AssignmentTarget<'a>, v: Value<'a>) {
        let Some(m) = target.as_member_expression() else {
            return;
        };
        let (Expression::Identifier(obj), Some(key)) =
            (m.object().get_inner_expression(), m.static_property_name())
        else {
            return;
        };
        let name = obj.name.as_str();
        if let Some(Value::Object(mut entries)) = self.lookup(name).cloned() {
            set_entry(&mut entries, key.to_string(), v);
            self.assign(name, Value::Object(entries));
        }
    }

    /// A name: a variable, a k6 global, `__VU`/`__ITER`.
    fn identifier(&mut self, name: &str, span: Span) -> Value<'a> {
        if let Some(v) = self.lookup(name) {
            return v.clone();
        }
        match name {
            "undefined" => Value::Undefined,
            "NaN" => Value::Num(f64::NAN),
            "Infinity" => Value::Num(f64::INFINITY),
            "__VU" => {
                self.ok(span, "__VU");
                Value::Tpl("{{ user() }}".into())
            }
            "__ITER" => {
                self.approx(span, "__ITER", "`{{ iteration() }}`: a user's iterations from 0, as k6's; but in an arrival-rate workload each arrival is a new user (0), where k6 reuses its VUs");
                Value::Tpl("{{ iteration() }}".into())
            }
            g if GLOBALS.contains(&g) => Value::Builtin(g.to_string()),
            other => Value::Unknown(format!("`{other}` is not defined in the script")),
        }
    }

    /// Joins parts into one string: a constant, or a template when any part renders
    /// at run time.
    pub(crate) fn concat(&mut self, parts: Vec<Value<'a>>, span: Span) -> Value<'a> {
        let mut text = String::new();
        let mut runtime = false;
        for p in parts {
            runtime |= !matches!(
                p,
                Value::Str(_) | Value::Num(_) | Value::Bool(_) | Value::Null | Value::Undefined
            );
            match self.text(p, span) {
                Ok(t) => text.push_str(&t),
                Err(why) => return Value::Unknown(why.0),
            }
        }
        if runtime {
            Value::Tpl(text)
        } else {
            Value::Str(text)
        }
    }

    /// The arguments of a call, evaluated.
    pub(crate) fn args(
        &mut self,
        args: &'a [Argument<'a>],
    ) -> Result<Vec<Value<'a>>, ConvertError> {
        let mut out = Vec::new();
        for a in args {
            match a.as_expression() {
                Some(e) => out.push(self.expr(e)?),
                None => out.push(Value::Unknown("a spread argument".into())),
            }
        }
        Ok(out)
    }
}

/// Sets `key` in an object's entries (replacing in place, or appending).
pub(crate) fn set_entry<'a>(entries: &mut Vec<(String, Value<'a>)>, key: String, v: Value<'a>) {
    match entries.iter_mut().find(|(k, _)| *k == key) {
        Some(slot) => slot.1 = v,
        None => entries.push((key, v)),
    }
}

/// `typeof` of a constant.
fn typeof_name(v: &Value<'_>) -> &'static str {
    match v {
        Value::Undefined => "undefined",
        Value::Bool(_) => "boolean",
        Value::Num(_) => "number",
        Value::Str(_) => "string",
        _ => "object",
    }
}

/// An expression's kind, for messages.
fn expression_name(e: &Expression<'_>) -> &'static str {
    match e {
        Expression::ClassExpression(_) => "class",
        Expression::RegExpLiteral(_) => "regular expression",
        Expression::TaggedTemplateExpression(_) => "tagged template",
        Expression::ThisExpression(_) => "this",
        Expression::YieldExpression(_) => "yield",
        Expression::ImportExpression(_) => "import()",
        Expression::BigIntLiteral(_) => "BigInt",
        _ => "other",
    }
}
