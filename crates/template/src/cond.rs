//! Conditions: the scenario's `if:`, in the templates' expression language, parsed
//! once into a tree that [`Condition::eval`] walks without parsing text (but a
//! variable's value, read as a number when compared).

use std::borrow::Cow;
use std::fmt;
use std::time::SystemTime;

use rand::Rng;

use crate::error::{Problem, TemplateError, MAX_CONDITION_LEN};
use crate::number::{self, Num};
use crate::part::{show_expr, Part};
use crate::render::{self, unix_seconds};
use crate::syntax::{self, write_quoted, CmpOp, CondExpr, Expr};
use crate::{func, Escape, RenderContext, Vars};

/// A compiled condition: immutable, cheap to share between threads behind an `Arc`.
///
/// Grammar, loosest first:
///
/// ```text
/// condition  := and ( "||" and )*
/// and        := not ( "&&" not )*
/// not        := "!" not | "(" condition ")" | value ( CMP value )?
/// CMP        := "==" | "!=" | "<" | "<=" | ">" | ">="
/// value      := NUMBER | STRING | true | false | NAME | FUNCTION "(" args ")"
/// ```
///
/// So `a || b && c` is `a || (b && c)`, and `!` applies to a whole comparison:
/// `!x == 1` is `!(x == 1)`. Comparisons do not chain (`a < b < c` is an error).
///
/// Values: numbers (`3`, `-0.5`), quoted strings (`'…'` or `"…"`, a backslash takes
/// the next character as is), `true` and `false`, variables and dotted names as in
/// templates (`status`, `cookie.session`, `data.accounts.role`, `setup.token`),
/// `env.NAME` (read at compile time), and the template functions (`user()`,
/// `iteration()`, `rand_int(1, 10)`, …). `chance(p)`, `0 <= p <= 1`, is a condition
/// of its own: true with probability `p`, drawn from the context's rng.
///
/// A comparison is numeric when both sides read as numbers (number literals and the
/// numeric functions; text, quoted or a variable's value, that is a decimal number
/// such as `200`, `-1.5` or `2e3`), so `"007" == 7`. Otherwise both sides compare as
/// text, ordered byte by byte (lexicographically, `"b" > "abc"`). A variable that is
/// not set compares as the empty text.
///
/// A value alone is true unless it is unset, empty, `false`, `0`, `null` (as text), or
/// a number equal to zero.
///
/// Limits: at most 4 KiB of source and 32 levels of nesting (parentheses, `!`,
/// calls); beyond either, compiling fails.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    root: Node,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    /// Never directly holds an `Or`.
    Or(Vec<Node>),
    /// Never directly holds an `And`.
    And(Vec<Node>),
    Not(Box<Node>),
    Cmp(CmpOp, Operand, Operand),
    Truthy(Operand),
    /// `chance(p)`.
    Chance(f64),
}

#[derive(Debug, Clone, PartialEq)]
enum Operand {
    /// A number literal.
    Num(Num),
    /// `true` or `false`.
    Bool(bool),
    /// Constant text (a quoted string, `env.NAME`, an encoding of either) and the
    /// number it reads as.
    Text(String, Option<Num>),
    /// A variable or a function, evaluated on each [`Condition::eval`].
    Part(Part),
}

impl Condition {
    /// Compiles `source`. Errors name the condition (its first 80 characters) and say
    /// what was expected where.
    pub fn compile(source: &str) -> Result<Condition, TemplateError> {
        let error = |problem| TemplateError::Condition {
            text: shorten(source),
            problem,
        };
        if source.len() > MAX_CONDITION_LEN {
            return Err(error(Problem::TooLong { len: source.len() }));
        }
        let syntax = syntax::condition(source).map_err(error)?;
        let root = node(syntax).map_err(error)?;
        Ok(Condition { root })
    }

    /// Whether the condition holds for this render context (its variables, user,
    /// iteration; `chance` and random functions draw from its rng).
    pub fn eval(&self, ctx: &mut RenderContext<'_>) -> bool {
        let vars = ctx.vars;
        self.root.eval(vars, ctx)
    }

    /// Names of the variables the condition reads, in order of appearance; dotted
    /// names in full, as [`Template::variables`](crate::Template::variables).
    pub fn variables(&self) -> Vec<&str> {
        let mut names = Vec::new();
        self.root.variables(&mut names);
        names
    }
}

/// The condition in its canonical form: single spaces around operators, `||` and `&&`
/// chains flattened, parentheses only where needed (and around the operand of `!`
/// when it is a comparison or a chain), strings double-quoted. Compiling it again
/// gives the same condition.
impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.root.show(f)
    }
}

/// The first 80 characters of the trimmed `source`, `…` when cut.
fn shorten(source: &str) -> String {
    let source = source.trim();
    match source.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &source[..cut]),
        None => source.to_owned(),
    }
}

fn node(cond: CondExpr) -> Result<Node, Problem> {
    let all = |items: Vec<CondExpr>| items.into_iter().map(node).collect::<Result<_, _>>();
    Ok(match cond {
        CondExpr::Or(items) => Node::Or(all(items)?),
        CondExpr::And(items) => Node::And(all(items)?),
        CondExpr::Not(inner) => Node::Not(Box::new(node(*inner)?)),
        CondExpr::Cmp(op, left, right) => Node::Cmp(op, operand(left)?, operand(right)?),
        CondExpr::Bare(Expr::Call(name, args)) if name == "chance" => Node::Chance(chance(&args)?),
        CondExpr::Bare(value) => Node::Truthy(operand(value)?),
    })
}

/// `chance(p)`'s probability.
fn chance(args: &[Expr]) -> Result<f64, Problem> {
    if let [Expr::Num(text)] = args {
        if let Some(p) = number::read(text).map(|n| n.as_f64()) {
            if (0.0..=1.0).contains(&p) {
                return Ok(p);
            }
        }
    }
    let found: Vec<String> = args.iter().map(Expr::to_string).collect();
    Err(Problem::ChanceArguments {
        found: match found.is_empty() {
            true => "none".into(),
            false => format!("({})", found.join(", ")),
        },
    })
}

fn operand(value: Expr) -> Result<Operand, Problem> {
    match value {
        Expr::Num(text) => match number::read(&text) {
            Some(n) => Ok(Operand::Num(n)),
            None => Err(Problem::NumberRange { token: text }),
        },
        Expr::Name(name) if name == "true" => Ok(Operand::Bool(true)),
        Expr::Name(name) if name == "false" => Ok(Operand::Bool(false)),
        other => Ok(match func::compile(&other, Escape::None)? {
            Part::Literal(text) => {
                let n = number::read(&text);
                Operand::Text(text, n)
            }
            part => Operand::Part(part),
        }),
    }
}

/// An operand's value during one evaluation.
enum Val<'v> {
    Unset,
    Num(Num),
    /// Constant text and the number it reads as.
    Const(&'v str, Option<Num>),
    /// A variable's value or a function's text.
    Text(Cow<'v, str>),
}

impl Val<'_> {
    fn number(&self) -> Option<Num> {
        match self {
            Val::Unset => None,
            Val::Num(n) => Some(*n),
            Val::Const(_, n) => *n,
            Val::Text(text) => number::read(text),
        }
    }

    fn text(&self) -> Cow<'_, str> {
        match self {
            Val::Unset => Cow::Borrowed(""),
            Val::Num(n) => Cow::Owned(n.to_string()),
            Val::Const(text, _) => Cow::Borrowed(text),
            Val::Text(text) => Cow::Borrowed(text),
        }
    }

    fn truthy(&self) -> bool {
        match self {
            Val::Unset => false,
            Val::Num(n) => !n.is_zero(),
            Val::Const(text, _) => !matches!(*text, "" | "false" | "0" | "null"),
            Val::Text(text) => !matches!(text.as_ref(), "" | "false" | "0" | "null"),
        }
    }
}

fn compare(op: CmpOp, left: &Val<'_>, right: &Val<'_>) -> bool {
    let order = match (left.number(), right.number()) {
        (Some(a), Some(b)) => a.compare(b),
        _ => left.text().as_ref().cmp(right.text().as_ref()),
    };
    match op {
        CmpOp::Eq => order.is_eq(),
        CmpOp::Ne => order.is_ne(),
        CmpOp::Lt => order.is_lt(),
        CmpOp::Le => order.is_le(),
        CmpOp::Gt => order.is_gt(),
        CmpOp::Ge => order.is_ge(),
    }
}

impl Operand {
    fn value<'v>(&'v self, vars: &'v Vars, ctx: &mut RenderContext<'_>) -> Val<'v> {
        let part = match self {
            Operand::Num(n) => return Val::Num(*n),
            Operand::Bool(b) => return Val::Const(if *b { "true" } else { "false" }, None),
            Operand::Text(text, n) => return Val::Const(text, *n),
            Operand::Part(part) => part,
        };
        match part {
            Part::Var(name) => vars.get(name).map_or(Val::Unset, |v| Val::Text(v.into())),
            Part::RandInt(lo, hi) => Val::Num(Num::Int(ctx.rng.random_range(*lo..=*hi))),
            Part::RandFloat(lo, hi) => {
                let micros = ctx.rng.random_range(*lo..=*hi);
                Val::Num(Num::Float(micros as f64 / 1e6))
            }
            Part::Seq => Val::Num(Num::from_u64(render::next_seq())),
            Part::User => Val::Num(Num::from_u64(ctx.user)),
            Part::Iteration => Val::Num(Num::from_u64(ctx.iteration)),
            Part::NowUnix => Val::Num(Num::from_u64(unix_seconds(SystemTime::now()))),
            other => {
                let mut out = Vec::new();
                render::part(other, Escape::None, ctx, &mut out);
                let text = String::from_utf8(out)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
                Val::Text(Cow::Owned(text))
            }
        }
    }

    fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operand::Num(n) => write!(f, "{n}"),
            Operand::Bool(b) => write!(f, "{b}"),
            Operand::Text(text, _) => write_quoted(text, f),
            Operand::Part(part) => show_expr(part, f),
        }
    }
}

impl Node {
    fn eval(&self, vars: &Vars, ctx: &mut RenderContext<'_>) -> bool {
        match self {
            Node::Or(items) => items.iter().any(|n| n.eval(vars, ctx)),
            Node::And(items) => items.iter().all(|n| n.eval(vars, ctx)),
            Node::Not(inner) => !inner.eval(vars, ctx),
            Node::Cmp(op, left, right) => {
                let left = left.value(vars, ctx);
                let right = right.value(vars, ctx);
                compare(*op, &left, &right)
            }
            Node::Truthy(value) => value.value(vars, ctx).truthy(),
            Node::Chance(p) => ctx.rng.random_bool(*p),
        }
    }

    fn variables<'a>(&'a self, names: &mut Vec<&'a str>) {
        match self {
            Node::Or(items) | Node::And(items) => items.iter().for_each(|n| n.variables(names)),
            Node::Not(inner) => inner.variables(names),
            Node::Cmp(_, left, right) => {
                left.variables(names);
                right.variables(names);
            }
            Node::Truthy(value) => value.variables(names),
            Node::Chance(_) => {}
        }
    }

    fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Or(items) => join(items, " || ", f, |_| false),
            Node::And(items) => join(items, " && ", f, |n| matches!(n, Node::Or(_))),
            Node::Not(inner) => {
                f.write_str("!")?;
                match inner.as_ref() {
                    Node::Or(_) | Node::And(_) | Node::Cmp(..) => parenthesized(inner, f),
                    other => other.show(f),
                }
            }
            Node::Cmp(op, left, right) => {
                left.show(f)?;
                write!(f, " {} ", op.symbol())?;
                right.show(f)
            }
            Node::Truthy(value) => value.show(f),
            Node::Chance(p) => write!(f, "chance({p})"),
        }
    }
}

impl Operand {
    fn variables<'a>(&'a self, names: &mut Vec<&'a str>) {
        if let Operand::Part(part) = self {
            part.variables(names);
        }
    }
}

fn parenthesized(node: &Node, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_str("(")?;
    node.show(f)?;
    f.write_str(")")
}

/// Writes `items` joined by `separator`, in parentheses those `wrap` says.
fn join(
    items: &[Node],
    separator: &str,
    f: &mut fmt::Formatter<'_>,
    wrap: fn(&Node) -> bool,
) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(separator)?;
        }
        match wrap(item) {
            true => parenthesized(item, f)?,
            false => item.show(f)?,
        }
    }
    Ok(())
}
