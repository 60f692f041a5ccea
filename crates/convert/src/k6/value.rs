//! What the static evaluator knows of a JavaScript value: a constant, a text that
//! renders at run time (a template), a random number, a response and what is read of
//! it, the script's own functions, k6's built-ins, or nothing (with the reason).

use oxc_ast::ast::{ArrowFunctionExpression, Function};

/// A function of the script, to inline when it is called.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FnRef<'a> {
    /// `function f() {}` (declaration or expression).
    Function(&'a Function<'a>),
    /// `() => ...`.
    Arrow(&'a ArrowFunctionExpression<'a>),
}

impl FnRef<'_> {
    /// Where the function starts: its identity on the call stack (recursion check).
    pub(crate) fn start(&self) -> u32 {
        match self {
            FnRef::Function(f) => f.span.start,
            FnRef::Arrow(f) => f.span.start,
        }
    }
}

/// One step of a path into a JSON body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Seg {
    /// An object member.
    Key(String),
    /// An array element.
    Index(u64),
}

/// What is read of a response.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Read {
    /// `res.json(...)` / `JSON.parse(res.body)`, then members.
    Json(Vec<Seg>),
    /// `res.headers`, then `[NAME]` (None until named).
    Header(Option<String>),
    /// `res.html()` / `.find(SEL)` (None until a selector is given), then `.attr(A)`
    /// (the attribute) or `.text()`.
    Html(Option<String>, Option<String>, bool),
    /// `res.timings` (then `.duration`: true).
    Timings(bool),
    /// `res.body`.
    Body,
    /// `res.status`.
    Status,
    /// `res.cookies`, then the name, then `[0]`, then `.value`.
    Cookie(Option<String>),
}

/// A JavaScript value as far as it is known without running the script.
#[derive(Debug, Clone)]
pub(crate) enum Value<'a> {
    /// `undefined`.
    Undefined,
    /// `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// A number.
    Num(f64),
    /// A constant string.
    Str(String),
    /// An array.
    Array(Vec<Value<'a>>),
    /// An object, in insertion order.
    Object(Vec<(String, Value<'a>)>),
    /// Text rendered at run time, in headroom's template syntax (`Bearer {{ token }}`).
    Tpl(String),
    /// A random number between `lo` and `hi` (`Math.random() * 3`,
    /// `randomIntBetween(1, 5)` with `int`).
    Rand {
        /// The smallest value.
        lo: f64,
        /// The largest value.
        hi: f64,
        /// Whole numbers only.
        int: bool,
    },
    /// `JSON.stringify(v)`: the JSON text of a value.
    JsonText(Box<Value<'a>>),
    /// The response of request `.0` (an index into the requests made).
    Resp(usize),
    /// Something read of the response of request `.0`.
    RespRead(usize, Read),
    /// A function of the script.
    Func(FnRef<'a>),
    /// A k6 built-in, by its dotted name (`http.get`, `check`, `Math.random`).
    Builtin(String),
    /// A `SharedArray` of a data file, by its `data:` name.
    DataSet(String),
    /// One row of a data file.
    DataRow(String),
    /// A custom metric: its kind (`Trend`) and name.
    Metric(String, String),
    /// `http.cookieJar()`, then `.cookiesForURL(url)` (true).
    Jar(bool),
    /// `__ENV.NAME`: `{{ env.NAME }}` where it is text; its value at conversion
    /// where the script decides something with it.
    Env(String),
    /// The text of a file the script `open()`s (path as the scenario names it).
    File(String),
    /// How a data file is indexed: `users[__VU % users.length]` (`unique`),
    /// `[__ITER % ...]` (`sequential`), `[random]` (`random`).
    Index(&'static str),
    /// A condition decided at run time, as `if:` says it.
    Cond(Box<Cond>),
    /// Not known statically; why.
    Unknown(String),
}

/// A run-time condition in the `if:` language.
#[derive(Debug, Clone)]
pub(crate) struct Cond {
    /// The condition (`chance(0.3)`, `status == 200`).
    pub(crate) text: String,
    /// Its negation (for an `else`).
    pub(crate) negated: String,
    /// Whether it draws a random number (`Math.random()`).
    pub(crate) random: bool,
    /// For `Math.random() < p` alone: `p`.
    pub(crate) p: Option<f64>,
}

/// Why a value (or an option, a rule) cannot be used where it is: the report's reason.
#[derive(Debug, Clone)]
pub(crate) struct Why(pub(crate) String);

impl From<&str> for Why {
    fn from(reason: &str) -> Why {
        Why(reason.to_string())
    }
}

impl From<String> for Why {
    fn from(reason: String) -> Why {
        Why(reason)
    }
}

impl Value<'_> {
    /// JavaScript truthiness, when it is known.
    pub(crate) fn truthy(&self) -> Option<bool> {
        Some(match self {
            Value::Undefined | Value::Null => false,
            Value::Bool(b) => *b,
            Value::Num(n) => *n != 0.0 && !n.is_nan(),
            Value::Str(s) => !s.is_empty(),
            Value::Array(_) | Value::Object(_) | Value::Func(_) | Value::Builtin(_) => true,
            Value::DataSet(_) | Value::DataRow(_) | Value::Metric(..) | Value::Jar(_) => true,
            Value::Resp(_) | Value::File(_) => true,
            _ => return None,
        })
    }

    /// Whether it is a constant (JSON-like, all the way down).
    pub(crate) fn is_const(&self) -> bool {
        match self {
            Value::Undefined | Value::Null | Value::Bool(_) | Value::Num(_) | Value::Str(_) => true,
            Value::Array(items) => items.iter().all(Value::is_const),
            Value::Object(entries) => entries.iter().all(|(_, v)| v.is_const()),
            _ => false,
        }
    }

    /// The reason an unknown value is unknown (or a generic one).
    pub(crate) fn why(&self) -> String {
        match self {
            Value::Unknown(why) => why.clone(),
            other => format!("{} is not known statically", other.kind()),
        }
    }

    /// A short name of what kind of value it is, for messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Value::Undefined => "undefined",
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Num(_) => "a number",
            Value::Str(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
            Value::Tpl(_) => "a text rendered at run time",
            Value::Rand { .. } => "a random number",
            Value::JsonText(_) => "a JSON text",
            Value::Resp(_) => "a response",
            Value::RespRead(..) => "a part of a response",
            Value::Func(_) => "a function",
            Value::Builtin(_) => "a k6 built-in",
            Value::DataSet(_) => "a data file",
            Value::DataRow(_) => "a row of a data file",
            Value::Metric(..) => "a custom metric",
            Value::Jar(_) => "a cookie jar",
            Value::Env(_) => "an environment variable",
            Value::File(_) => "a file's text",
            Value::Index(_) => "a row index",
            Value::Cond(_) => "a condition",
            Value::Unknown(_) => "a value",
        }
    }
}

/// A number as JavaScript prints it (`3`, `0.5`).
pub(crate) fn number_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

/// A duration in seconds as headroom writes it (`500ms`, `1.5s`, `45s`, `2m`,
/// `1m30s`, `1h`).
pub(crate) fn seconds_text(s: f64) -> String {
    let ms = (s * 1000.0).round();
    if ms % 1000.0 != 0.0 {
        return if ms < 1000.0 {
            format!("{}ms", number_text(ms))
        } else {
            format!("{}s", number_text(ms / 1000.0))
        };
    }
    let secs = ms / 1000.0;
    if !(60.0..1e12).contains(&secs) {
        return format!("{}s", number_text(secs));
    }
    let (h, m, s) = (
        (secs / 3600.0).floor(),
        ((secs % 3600.0) / 60.0).floor(),
        secs % 60.0,
    );
    let mut out = String::new();
    for (n, unit) in [(h, "h"), (m, "m"), (s, "s")] {
        if n > 0.0 {
            out.push_str(&format!("{}{unit}", number_text(n)));
        }
    }
    out
}

/// Parses a k6 duration (`30s`, `1m30s`, `500ms`, `2h`; a bare number is
/// milliseconds) into seconds.
pub(crate) fn parse_duration(text: &str) -> Option<f64> {
    let text = text.trim();
    if let Ok(ms) = text.parse::<f64>() {
        return Some(ms / 1000.0);
    }
    let mut total = 0.0;
    let mut rest = text;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let n: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "us" | "µs" => 0.000_001,
            _ => return None,
        };
        total += n * scale;
        rest = &rest[unit_len..];
    }
    Some(total)
}

/// A name usable as a capture or data name: letters, digits and `_` (others become
/// `_`), not starting with a digit, never empty.
pub(crate) fn word(text: &str) -> String {
    let mut out: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'v');
    }
    out
}
