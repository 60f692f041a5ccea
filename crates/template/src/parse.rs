//! Template compilation: splits the source into literal text and `{{ expr }}` parts and
//! checks every expression (function name, argument count and types) up front.

use super::render::json_escape;
use super::{Escape, Part};
use crate::error::{Problem, TemplateError, MAX_ISO_OFFSET_S};

/// Marks a typed placeholder in [`json_source`]'s output: `{{\u{1}expr}}`. A raw
/// control character never appears in serialized JSON (serde_json escapes it inside
/// strings), so no JSON a user writes can produce the marker.
const TYPED: char = '\u{1}';

/// Appends `value` as compact JSON; a string that is exactly one placeholder becomes a
/// typed placeholder, unquoted.
pub(super) fn json_source(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match value {
        Value::String(s) => match single_placeholder(s) {
            Some(expr) => {
                out.push_str("{{");
                out.push(TYPED);
                out.push_str(expr);
                out.push_str("}}");
            }
            None => out.push_str(&Value::String(s.clone()).to_string()),
        },
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_source(item, out);
            }
            out.push(']');
        }
        Value::Object(fields) => {
            out.push('{');
            for (i, (key, item)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                json_source(item, out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The expression of a string that is exactly one `{{ expr }}`, nothing around it.
fn single_placeholder(s: &str) -> Option<&str> {
    let inner = s.strip_prefix("{{")?.strip_suffix("}}")?;
    (!inner.contains("{{") && !inner.contains("}}")).then_some(inner)
}

/// Parses `source` into parts; adjacent literals are merged.
pub(super) fn parse(source: &str, escape: Escape) -> Result<Vec<Part>, TemplateError> {
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut rest = source;
    while let Some(open) = rest.find("{{") {
        literal.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after.find("}}").ok_or_else(|| TemplateError::Unclosed {
            text: source.to_owned(),
        })?;
        let expr = after[..close].trim();
        let part = match expr.strip_prefix(TYPED) {
            // Only JSON templates come from `json_source`; elsewhere the marker is text.
            Some(inner) if escape == Escape::Json => typed(expression(inner.trim(), escape)?),
            _ => expression(expr, escape)?,
        };
        match part {
            Part::Literal(text) => literal.push_str(&text),
            part => {
                if !literal.is_empty() {
                    parts.push(Part::Literal(std::mem::take(&mut literal)));
                }
                parts.push(part);
            }
        }
        rest = &after[close + 2..];
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        parts.push(Part::Literal(literal));
    }
    Ok(parts)
}

/// The typed form of a compiled expression: a compile-time value becomes a quoted
/// JSON string literal (it is already escaped).
fn typed(part: Part) -> Part {
    match part {
        Part::Literal(text) => Part::Literal(format!("\"{text}\"")),
        other => Part::Typed(Box::new(other)),
    }
}

/// Compiles one placeholder's expression.
fn expression(expr: &str, escape: Escape) -> Result<Part, TemplateError> {
    if expr.is_empty() {
        return Err(TemplateError::Empty);
    }
    let placeholder = |problem| TemplateError::Placeholder {
        expr: expr.to_owned(),
        problem,
    };
    if let Some(name) = expr.strip_prefix("env.") {
        if !is_identifier(name) {
            return Err(placeholder(Problem::EnvName));
        }
        let value = std::env::var(name).map_err(|_| {
            placeholder(Problem::EnvUnset {
                name: name.to_owned(),
            })
        })?;
        return Ok(Part::Literal(escaped(&value, escape)));
    }
    let Some(open) = expr.find('(') else {
        if is_identifier(expr) {
            return Ok(Part::Var(expr.to_string()));
        }
        return Err(placeholder(Problem::NotAnExpression));
    };
    let name = expr[..open].trim();
    let args_src = expr[open + 1..]
        .strip_suffix(')')
        .ok_or_else(|| placeholder(Problem::Unclosed))?;
    let args = arguments(args_src).map_err(placeholder)?;
    call(name, &args, escape).map_err(placeholder)
}

/// A literal argument of a function call.
#[derive(Debug, PartialEq)]
enum Arg {
    Int(i64),
    Str(String),
}

fn call(name: &str, args: &[Arg], escape: Escape) -> Result<Part, Problem> {
    let no_args = |part: Part| {
        if args.is_empty() {
            Ok(part)
        } else {
            Err(Problem::NoArguments {
                function: name.to_owned(),
                found: args.len(),
            })
        }
    };
    match name {
        "rand_int" => match args {
            [Arg::Int(lo), Arg::Int(hi)] if lo <= hi => Ok(Part::RandInt(*lo, *hi)),
            [Arg::Int(lo), Arg::Int(hi)] => Err(Problem::RandIntOrder { lo: *lo, hi: *hi }),
            _ => Err(Problem::RandIntArguments {
                found: describe(args),
            }),
        },
        "rand_choice" => {
            let mut options = Vec::with_capacity(args.len());
            for arg in args {
                match arg {
                    Arg::Str(s) => options.push(escaped(s, escape)),
                    Arg::Int(_) => {
                        return Err(Problem::RandChoiceArguments {
                            found: describe(args),
                        })
                    }
                }
            }
            if options.is_empty() {
                return Err(Problem::RandChoiceEmpty);
            }
            Ok(Part::RandChoice(options))
        }
        "uuid" => no_args(Part::Uuid),
        "seq" => no_args(Part::Seq),
        "now_unix" => no_args(Part::NowUnix),
        "now_iso" => match args {
            [] => Ok(Part::NowIso(0)),
            [Arg::Int(offset)] if offset.unsigned_abs() <= MAX_ISO_OFFSET_S as u64 => {
                Ok(Part::NowIso(*offset))
            }
            [Arg::Int(offset)] => Err(Problem::IsoOffset { offset: *offset }),
            _ => Err(Problem::IsoArguments {
                found: describe(args),
            }),
        },
        _ => Err(Problem::UnknownFunction {
            function: name.to_owned(),
        }),
    }
}

fn describe(args: &[Arg]) -> String {
    if args.is_empty() {
        return "none".into();
    }
    let kinds: Vec<&str> = args
        .iter()
        .map(|a| match a {
            Arg::Int(_) => "integer",
            Arg::Str(_) => "string",
        })
        .collect();
    format!("({})", kinds.join(", "))
}

/// Splits a comma-separated argument list of integers and quoted strings.
fn arguments(src: &str) -> Result<Vec<Arg>, Problem> {
    let mut args = Vec::new();
    let mut chars = src.trim_start().chars().peekable();
    if chars.peek().is_none() {
        return Ok(args);
    }
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        match chars.peek() {
            Some(&quote @ ('"' | '\'')) => {
                chars.next();
                let mut text = String::new();
                loop {
                    match chars.next() {
                        Some('\\') => match chars.next() {
                            Some(c) => text.push(c),
                            None => return Err(Problem::UnterminatedString),
                        },
                        Some(c) if c == quote => break,
                        Some(c) => text.push(c),
                        None => return Err(Problem::UnterminatedString),
                    }
                }
                args.push(Arg::Str(text));
            }
            Some(_) => {
                let mut token = String::new();
                while let Some(c) = chars.next_if(|c| *c != ',' && !c.is_whitespace()) {
                    token.push(c);
                }
                let n = token.parse::<i64>().map_err(|_| Problem::NotAnArgument {
                    token: token.clone(),
                })?;
                args.push(Arg::Int(n));
            }
            None => return Err(Problem::MissingArgument),
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        match chars.next() {
            None => return Ok(args),
            Some(',') => continue,
            Some(c) => return Err(Problem::NoComma { found: c }),
        }
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn escaped(value: &str, escape: Escape) -> String {
    match escape {
        Escape::None => value.to_string(),
        Escape::Json => {
            let mut out = Vec::with_capacity(value.len());
            json_escape(value.as_bytes(), &mut out);
            String::from_utf8(out).expect("JSON escaping keeps UTF-8 valid")
        }
    }
}
