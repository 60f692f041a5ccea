//! The compiled pieces of a template, and how they show in source syntax.

use std::fmt;

use crate::encode::Encoding;
use crate::number::micros_text;
use crate::syntax::write_quoted;
use crate::time::TimeFormat;

/// One piece of a compiled template.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    /// Text copied as is (already escaped when it came from a compile-time value).
    Literal(String),
    /// `rand_int(lo, hi)`, inclusive, `lo <= hi`.
    RandInt(i64, i64),
    /// `rand_float(lo, hi)` in millionths, inclusive, `lo <= hi`.
    RandFloat(i64, i64),
    /// `rand_choice(...)`: one of these (already escaped), never empty.
    RandChoice(Vec<String>),
    /// `rand_string(n)`: `n` random ASCII letters and digits.
    RandString(usize),
    /// `uuid()`.
    Uuid,
    /// `seq()`.
    Seq,
    /// `user()`.
    User,
    /// `iteration()`.
    Iteration,
    /// `now_unix()`.
    NowUnix,
    /// `now_iso(offset_s)`.
    NowIso(i64),
    /// `now_format(FMT, offset_s)`.
    NowFormat(Box<TimeFormat>),
    /// A captured variable or a dotted name the engine fills, escaped at render time.
    Var(String),
    /// `base64(x)` or `urlencode(x)` of a part that varies (a constant is encoded at
    /// compile time into a literal); the inner part renders unescaped.
    Encode(Encoding, Box<Part>),
    /// A JSON value that is exactly one placeholder: the part rendered as a JSON value
    /// (numbers bare, strings quoted, captured JSON as captured). Never a literal
    /// (a typed compile-time value becomes a quoted `Literal`).
    Typed(Box<Part>),
}

impl Part {
    /// Appends the names of the variables this part reads, in order.
    pub(crate) fn variables<'a>(&'a self, names: &mut Vec<&'a str>) {
        match self {
            Part::Var(name) => names.push(name),
            Part::Encode(_, inner) | Part::Typed(inner) => inner.variables(names),
            _ => {}
        }
    }
}

/// Writes one part as a template's `Display` does: a literal as is, anything else as
/// `{{ expr }}`.
pub(crate) fn show(part: &Part, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match part {
        Part::Literal(text) => f.write_str(text),
        Part::Typed(inner) => show(inner, f),
        other => {
            f.write_str("{{ ")?;
            show_expr(other, f)?;
            f.write_str(" }}")
        }
    }
}

/// Writes one part as an expression, without braces (a literal quoted).
pub(crate) fn show_expr(part: &Part, f: &mut impl fmt::Write) -> fmt::Result {
    match part {
        Part::Literal(text) => write_quoted(text, f),
        Part::RandInt(lo, hi) => write!(f, "rand_int({lo}, {hi})"),
        Part::RandFloat(lo, hi) => {
            write!(f, "rand_float({}, {})", micros_text(*lo), micros_text(*hi))
        }
        Part::RandChoice(options) => {
            f.write_str("rand_choice(")?;
            for (i, option) in options.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write_quoted(option, f)?;
            }
            f.write_str(")")
        }
        Part::RandString(n) => write!(f, "rand_string({n})"),
        Part::Uuid => f.write_str("uuid()"),
        Part::Seq => f.write_str("seq()"),
        Part::User => f.write_str("user()"),
        Part::Iteration => f.write_str("iteration()"),
        Part::NowUnix => f.write_str("now_unix()"),
        Part::NowIso(offset) => write!(f, "now_iso({offset})"),
        Part::NowFormat(format) => {
            f.write_str("now_format(")?;
            write_quoted(&format.source, f)?;
            match format.offset {
                0 => f.write_str(")"),
                offset => write!(f, ", {offset})"),
            }
        }
        Part::Var(name) => f.write_str(name),
        Part::Encode(encoding, inner) => {
            write!(f, "{}(", encoding.name())?;
            show_expr(inner, f)?;
            f.write_str(")")
        }
        Part::Typed(inner) => show_expr(inner, f),
    }
}
