//! Operators: arithmetic and comparisons of constants, random numbers
//! (`Math.random() * 3`, `Math.random() < 0.3` as `chance(0.3)`), and comparisons
//! decided at run time as `if:` conditions.

use oxc_ast::ast::{BinaryOperator, LogicalOperator};
use oxc_span::Span;

use super::value::{number_text, Cond, Value};
use super::Interp;

impl<'a> Interp<'a, '_> {
    /// A binary operator.
    pub(crate) fn binary(
        &mut self,
        op: BinaryOperator,
        l: Value<'a>,
        r: Value<'a>,
        span: Span,
    ) -> Value<'a> {
        use BinaryOperator as B;
        if op == B::Addition {
            let stringy = |v: &Value<'_>| {
                !matches!(
                    v,
                    Value::Num(_)
                        | Value::Bool(_)
                        | Value::Null
                        | Value::Undefined
                        | Value::Rand { .. }
                )
            };
            if stringy(&l) || stringy(&r) {
                return self.concat(vec![l, r], span);
            }
        }
        match (&l, &r) {
            (Value::Num(a), Value::Num(b)) => {
                let (a, b) = (*a, *b);
                return match op {
                    B::Addition => Value::Num(a + b),
                    B::Subtraction => Value::Num(a - b),
                    B::Multiplication => Value::Num(a * b),
                    B::Division => Value::Num(a / b),
                    B::Remainder => Value::Num(a % b),
                    B::Exponential => Value::Num(a.powf(b)),
                    B::LessThan => Value::Bool(a < b),
                    B::LessEqualThan => Value::Bool(a <= b),
                    B::GreaterThan => Value::Bool(a > b),
                    B::GreaterEqualThan => Value::Bool(a >= b),
                    B::Equality | B::StrictEquality => Value::Bool(a == b),
                    B::Inequality | B::StrictInequality => Value::Bool(a != b),
                    _ => Value::Unknown(format!("`{}` on numbers", op.as_str())),
                };
            }
            (Value::Rand { lo, hi, int }, Value::Num(k))
            | (Value::Num(k), Value::Rand { lo, hi, int }) => {
                let (lo, hi, k, int) = (*lo, *hi, *k, *int);
                let left = matches!(l, Value::Rand { .. });
                match op {
                    B::Multiplication => {
                        return Value::Rand {
                            lo: lo * k,
                            hi: hi * k,
                            int: int && k.fract() == 0.0,
                        }
                    }
                    B::Addition => {
                        return Value::Rand {
                            lo: lo + k,
                            hi: hi + k,
                            int: int && k.fract() == 0.0,
                        }
                    }
                    B::Subtraction if left => {
                        return Value::Rand {
                            lo: lo - k,
                            hi: hi - k,
                            int: int && k.fract() == 0.0,
                        }
                    }
                    B::LessThan | B::LessEqualThan | B::GreaterThan | B::GreaterEqualThan
                        if !int && lo == 0.0 && hi == 1.0 =>
                    {
                        // Math.random() < p (or p > Math.random()) holds with probability p.
                        let below = matches!(
                            (op, left),
                            (B::LessThan | B::LessEqualThan, true)
                                | (B::GreaterThan | B::GreaterEqualThan, false)
                        );
                        let p = if below { k } else { 1.0 - k }.clamp(0.0, 1.0);
                        return Value::Cond(Box::new(Cond {
                            text: format!("chance({})", number_text(round6(p))),
                            negated: format!("chance({})", number_text(round6(1.0 - p))),
                            random: true,
                            p: Some(p),
                        }));
                    }
                    _ => {}
                }
            }
            (Value::Rand { .. }, _) if op == B::Multiplication => {
                return Value::Rand {
                    lo: 0.0,
                    hi: f64::NAN,
                    int: false,
                };
            }
            (Value::Tpl(t), Value::Num(_)) | (Value::Tpl(t), Value::Unknown(_))
                if matches!(op, B::Remainder | B::Subtraction) =>
            {
                if t == "{{ user() }}" {
                    return Value::Index("unique");
                }
                if t == "{{ iteration() }}" {
                    return Value::Index("sequential");
                }
            }
            _ => {}
        }
        if l.is_const() && r.is_const() {
            return match op {
                B::StrictEquality | B::Equality => Value::Bool(const_eq(&l, &r)),
                B::StrictInequality | B::Inequality => Value::Bool(!const_eq(&l, &r)),
                _ => Value::Unknown(format!(
                    "`{}` on {} and {}",
                    op.as_str(),
                    l.kind(),
                    r.kind()
                )),
            };
        }
        match compare_op(op) {
            Some(cmp) => match (self.operand(l, span), self.operand(r, span)) {
                (Ok(a), Ok(b)) => Value::Cond(Box::new(Cond {
                    text: format!("{a} {cmp} {b}"),
                    negated: format!("!({a} {cmp} {b})"),
                    random: false,
                    p: None,
                })),
                (Err(why), _) | (_, Err(why)) => Value::Unknown(why.0),
            },
            None => Value::Unknown(format!(
                "`{}` on {} and {}",
                op.as_str(),
                l.kind(),
                r.kind()
            )),
        }
    }

    /// `&&`/`||` where the left side is decided at run time.
    pub(crate) fn logical(
        &mut self,
        op: LogicalOperator,
        l: Value<'a>,
        r: Value<'a>,
        span: Span,
    ) -> Value<'a> {
        let r = self.settle_env(r, span);
        let (Value::Cond(a), Value::Cond(b)) = (&l, &r) else {
            return match (op, &l) {
                // `__ENV.X || 'default'` where X is a template: the default never applies
                // in the scenario.
                (_, Value::Unknown(_)) => l,
                _ => Value::Unknown(format!(
                    "`{}` on {} and {}",
                    op.as_str(),
                    l.kind(),
                    r.kind()
                )),
            };
        };
        let (word, neg) = match op {
            LogicalOperator::And => ("&&", "||"),
            LogicalOperator::Or => ("||", "&&"),
            LogicalOperator::Coalesce => return Value::Unknown("`??` of a condition".into()),
        };
        Value::Cond(Box::new(Cond {
            text: format!("({}) {word} ({})", a.text, b.text),
            negated: format!("({}) {neg} ({})", a.negated, b.negated),
            random: a.random || b.random,
            p: None,
        }))
    }

    /// One side of a comparison in the `if:` language.
    pub(crate) fn operand(
        &mut self,
        v: Value<'a>,
        span: Span,
    ) -> Result<String, super::value::Why> {
        match v {
            Value::Num(n) => Ok(number_text(n)),
            Value::Str(s) => Ok(serde_json::Value::String(s).to_string()),
            Value::Bool(b) => Ok(b.to_string()),
            other => {
                let text = self.text(other, span)?;
                match text.strip_prefix("{{ ").and_then(|t| t.strip_suffix(" }}")) {
                    Some(inner) if !inner.contains("{{") => Ok(inner.to_string()),
                    _ => Err(super::value::Why(format!(
                        "{text:?} is not one value an `if:` can compare"
                    ))),
                }
            }
        }
    }
}

/// Rounds to 6 decimals (probabilities computed from `1 - p`).
pub(crate) fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// Equality of two constants (strict enough for what scripts compare).
fn const_eq(a: &Value<'_>, b: &Value<'_>) -> bool {
    match (a, b) {
        (Value::Num(x), Value::Num(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Null, Value::Null) | (Value::Undefined, Value::Undefined) => true,
        _ => false,
    }
}

/// The `if:` spelling of a comparison.
fn compare_op(op: BinaryOperator) -> Option<&'static str> {
    use BinaryOperator as B;
    Some(match op {
        B::Equality | B::StrictEquality => "==",
        B::Inequality | B::StrictInequality => "!=",
        B::LessThan => "<",
        B::LessEqualThan => "<=",
        B::GreaterThan => ">",
        B::GreaterEqualThan => ">=",
        _ => return None,
    })
}
