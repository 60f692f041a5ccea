//! Compiling one parsed expression into a part: every function's arguments and every
//! name are checked when the template loads, and what is constant is folded into a
//! literal (`env.NAME`, a quoted string, `base64`/`urlencode` of either).

use crate::encode::Encoding;
use crate::error::{Problem, MAX_ENCODINGS, MAX_ISO_OFFSET_S, MAX_RAND_STRING};
use crate::number;
use crate::part::Part;
use crate::syntax::Expr;
use crate::time::TimeFormat;
use crate::write::json_escape;
use crate::Escape;

/// Compiles `expr` for a template escaped with `escape`.
pub(crate) fn compile(expr: &Expr, escape: Escape) -> Result<Part, Problem> {
    compile_in(expr, escape, 0)
}

/// [`compile`] inside `encodings` nested `base64`/`urlencode` calls.
fn compile_in(expr: &Expr, escape: Escape, encodings: usize) -> Result<Part, Problem> {
    match expr {
        Expr::Str(text) => Ok(Part::Literal(escaped(text, escape))),
        Expr::Num(_) => Err(Problem::NotAnExpression),
        Expr::Name(name) => self::name(name, escape),
        Expr::Call(function, args) => match function.as_str() {
            "base64" => encode(Encoding::Base64, args, encodings),
            "urlencode" => encode(Encoding::Url, args, encodings),
            "chance" => Err(Problem::ChanceNotAValue),
            _ => call(function, args, escape),
        },
    }
}

/// A name: `env.NAME` resolved now into a literal, anything else a variable the
/// render looks up by its full name.
fn name(name: &str, escape: Escape) -> Result<Part, Problem> {
    if let Some(var) = name.strip_prefix("env.") {
        if !is_identifier(var) {
            return Err(Problem::EnvName);
        }
        let value = std::env::var(var).map_err(|_| Problem::EnvUnset {
            name: var.to_owned(),
        })?;
        return Ok(Part::Literal(escaped(&value, escape)));
    }
    check_variable(name)?;
    Ok(Part::Var(name.to_owned()))
}

/// Checks a variable's name: an identifier, or one of the dotted names the engine
/// fills (`cookie.NAME`, `data.SET.COLUMN`, `setup.NAME`).
fn check_variable(name: &str) -> Result<(), Problem> {
    let Some((prefix, rest)) = name.split_once('.') else {
        return match is_identifier(name) {
            true => Ok(()),
            false => Err(Problem::NotAnExpression),
        };
    };
    let (ok, expected) = match prefix {
        "cookie" => (
            is_word(rest, true),
            "cookie.NAME, NAME made of letters, digits, `_` and `-`",
        ),
        "data" => (
            rest.split_once('.')
                .is_some_and(|(set, column)| is_word(set, false) && is_word(column, true)),
            "data.SET.COLUMN, SET made of letters, digits and `_`, COLUMN also of `-`",
        ),
        "setup" => (
            is_word(rest, false),
            "setup.NAME, NAME made of letters, digits and `_`",
        ),
        _ => {
            return Err(Problem::UnknownPrefix {
                prefix: prefix.to_owned(),
                name: name.to_owned(),
            })
        }
    };
    match ok {
        true => Ok(()),
        false => Err(Problem::DottedName {
            name: name.to_owned(),
            expected,
        }),
    }
}

/// `base64(x)` or `urlencode(x)`. The argument renders raw; the encoded text is ASCII
/// that no escaping changes, so it needs none.
fn encode(encoding: Encoding, args: &[Expr], encodings: usize) -> Result<Part, Problem> {
    let [arg] = args else {
        return Err(Problem::EncodeArguments {
            function: encoding.name(),
            found: args.len(),
        });
    };
    if encodings >= MAX_ENCODINGS {
        return Err(Problem::EncodeDepth);
    }
    Ok(match compile_in(arg, Escape::None, encodings + 1)? {
        Part::Literal(text) => Part::Literal(encoding.text(&text)),
        inner => Part::Encode(encoding, Box::new(inner)),
    })
}

/// A literal argument.
#[derive(Debug, Clone, Copy)]
enum Lit<'a> {
    /// An integer, and its text.
    Int(i64, &'a str),
    /// A decimal number's text.
    Dec(&'a str),
    Str(&'a str),
}

/// The functions whose arguments are all literals.
const LITERAL_FUNCTIONS: &[&str] = &[
    "rand_int",
    "rand_float",
    "rand_choice",
    "rand_string",
    "uuid",
    "seq",
    "user",
    "iteration",
    "now_unix",
    "now_iso",
    "now_format",
];

/// A call of a function whose arguments are literals.
fn call(function: &str, args: &[Expr], escape: Escape) -> Result<Part, Problem> {
    if !LITERAL_FUNCTIONS.contains(&function) {
        return Err(Problem::UnknownFunction {
            function: function.to_owned(),
        });
    }
    let args = literals(args)?;
    let no_args = |part: Part| match args.len() {
        0 => Ok(part),
        found => Err(Problem::NoArguments {
            function: function.to_owned(),
            found,
        }),
    };
    let found = || describe(&args);
    match function {
        "rand_int" => match args[..] {
            [Lit::Int(lo, _), Lit::Int(hi, _)] if lo <= hi => Ok(Part::RandInt(lo, hi)),
            [Lit::Int(lo, _), Lit::Int(hi, _)] => Err(Problem::RandIntOrder { lo, hi }),
            _ => Err(Problem::RandIntArguments { found: found() }),
        },
        "rand_float" => rand_float(&args),
        "rand_choice" => {
            let mut options = Vec::with_capacity(args.len());
            for arg in &args {
                match arg {
                    Lit::Str(s) => options.push(escaped(s, escape)),
                    _ => return Err(Problem::RandChoiceArguments { found: found() }),
                }
            }
            if options.is_empty() {
                return Err(Problem::RandChoiceEmpty);
            }
            Ok(Part::RandChoice(options))
        }
        "rand_string" => match args[..] {
            [Lit::Int(n, _)] if (1..=MAX_RAND_STRING).contains(&n) => {
                Ok(Part::RandString(n as usize))
            }
            [Lit::Int(n, _)] => Err(Problem::RandStringArguments {
                found: n.to_string(),
            }),
            _ => Err(Problem::RandStringArguments { found: found() }),
        },
        "uuid" => no_args(Part::Uuid),
        "seq" => no_args(Part::Seq),
        "user" => no_args(Part::User),
        "iteration" => no_args(Part::Iteration),
        "now_unix" => no_args(Part::NowUnix),
        "now_iso" => match args[..] {
            [] => Ok(Part::NowIso(0)),
            [Lit::Int(offset, _)] => Ok(Part::NowIso(offset_s("now_iso", offset)?)),
            _ => Err(Problem::IsoArguments { found: found() }),
        },
        _ => {
            let (format, offset) = match args[..] {
                [Lit::Str(format)] => (format, 0),
                [Lit::Str(format), Lit::Int(offset, _)] => {
                    (format, offset_s("now_format", offset)?)
                }
                _ => return Err(Problem::FormatArguments { found: found() }),
            };
            let format = TimeFormat::compile(format, offset, escape)?;
            Ok(Part::NowFormat(Box::new(format)))
        }
    }
}

/// `rand_float(lo, hi)`: the millionths from `lo` rounded up to `hi` rounded down.
fn rand_float(args: &[Lit<'_>]) -> Result<Part, Problem> {
    let (lo, hi) = match args {
        [Lit::Int(_, lo) | Lit::Dec(lo), Lit::Int(_, hi) | Lit::Dec(hi)] => (*lo, *hi),
        _ => {
            return Err(Problem::RandFloatArguments {
                found: describe(args),
            })
        }
    };
    let range = |text: &str| Problem::RandFloatRange {
        value: text.to_owned(),
    };
    let low = number::micros(lo, true).ok_or_else(|| range(lo))?;
    let high = number::micros(hi, false).ok_or_else(|| range(hi))?;
    if low > high {
        return Err(Problem::RandFloatOrder {
            lo: lo.to_owned(),
            hi: hi.to_owned(),
        });
    }
    Ok(Part::RandFloat(low, high))
}

/// An offset of `now_iso` or `now_format`, checked against its bound.
fn offset_s(function: &'static str, offset: i64) -> Result<i64, Problem> {
    match offset.unsigned_abs() <= MAX_ISO_OFFSET_S as u64 {
        true => Ok(offset),
        false => Err(Problem::IsoOffset { function, offset }),
    }
}

/// The arguments as literals; a name or a call is [`Problem::NotAnArgument`].
fn literals(args: &[Expr]) -> Result<Vec<Lit<'_>>, Problem> {
    args.iter()
        .map(|arg| match arg {
            Expr::Num(text) if text.contains('.') => Ok(Lit::Dec(text)),
            Expr::Num(text) => match text.parse() {
                Ok(n) => Ok(Lit::Int(n, text)),
                Err(_) => Err(Problem::NumberRange {
                    token: text.clone(),
                }),
            },
            Expr::Str(text) => Ok(Lit::Str(text)),
            other => Err(Problem::NotAnArgument {
                token: other.to_string(),
            }),
        })
        .collect()
}

fn describe(args: &[Lit<'_>]) -> String {
    if args.is_empty() {
        return "none".into();
    }
    let kinds: Vec<&str> = args
        .iter()
        .map(|a| match a {
            Lit::Int(..) => "integer",
            Lit::Dec(_) => "decimal",
            Lit::Str(_) => "string",
        })
        .collect();
    format!("({})", kinds.join(", "))
}

/// A variable name: a letter or `_`, then letters, digits and `_`.
pub(crate) fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A segment of a dotted name: letters, digits, `_`, and `-` when `dash`.
fn is_word(s: &str, dash: bool) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || dash && b == b'-')
}

/// `value` escaped for the template.
pub(crate) fn escaped(value: &str, escape: Escape) -> String {
    match escape {
        Escape::None => value.to_string(),
        Escape::Form => crate::encode::Encoding::Url.text(value),
        Escape::Json => {
            let mut out = Vec::with_capacity(value.len());
            json_escape(value.as_bytes(), &mut out);
            String::from_utf8(out).expect("JSON escaping keeps UTF-8 valid")
        }
    }
}
