//! Calls: the script's own functions (inlined), k6's built-ins (`check`, `sleep`,
//! `group`, `JSON`, `Math`, the jslib helpers, `open`, `SharedArray`, metrics) and
//! methods of responses, HTML selections, cookie jars and constants.

use oxc_ast::ast::{CallExpression, Expression, NewExpression};
use oxc_span::{GetSpan, Span};

use super::reads::gjson;
use super::value::{seconds_text, word, Read, Value};
use super::{DataFile, Interp, Phase, Step};
use crate::ConvertError;

impl<'a> Interp<'a, '_> {
    /// A call expression.
    pub(crate) fn call(&mut self, call: &'a CallExpression<'a>) -> Result<Value<'a>, ConvertError> {
        let span = call.span;
        let callee = self.expr(&call.callee)?;
        let name = callee_text(&call.callee);
        match callee {
            Value::Func(f) => {
                let args = self.args(&call.arguments)?;
                self.call_fn(f, args, span)
            }
            Value::Builtin(b) => self.builtin(&b, call, span),
            other => {
                let why = other.why();
                self.left(
                    span,
                    format!("{name}()"),
                    format!("not a function the converter knows: {why}"),
                );
                Ok(Value::Unknown(format!("the result of {name}()")))
            }
        }
    }

    /// A k6 built-in called.
    fn builtin(
        &mut self,
        b: &str,
        call: &'a CallExpression<'a>,
        span: Span,
    ) -> Result<Value<'a>, ConvertError> {
        // Calls whose arguments are walked in their own way.
        match b {
            "check" => return self.check(call),
            "group" => return self.group(call),
            "http.batch" => return self.batch(call),
            _ => {}
        }
        if let Some(method) = b.strip_prefix("http.") {
            if matches!(
                method,
                "get" | "post" | "put" | "patch" | "del" | "head" | "options" | "request"
            ) {
                let args = self.args(&call.arguments)?;
                return self.http_call(method, args, span);
            }
            if method == "cookieJar" {
                return Ok(Value::Jar(false));
            }
        }
        let args = self.args(&call.arguments)?;
        let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::Undefined);
        Ok(match b {
            "sleep" => {
                self.sleep(arg(0), span);
                Value::Undefined
            }
            "Math.random" => Value::Rand {
                lo: 0.0,
                hi: 1.0,
                int: false,
            },
            "Math.floor" | "Math.round" | "Math.ceil" | "Math.trunc" => match arg(0) {
                Value::Num(n) => Value::Num(match b {
                    "Math.floor" => n.floor(),
                    "Math.ceil" => n.ceil(),
                    "Math.trunc" => n.trunc(),
                    _ => n.round(),
                }),
                Value::Rand { lo, hi, .. } => Value::Rand {
                    lo: lo.floor(),
                    hi: (hi - 1e-9).floor(),
                    int: true,
                },
                v => Value::Unknown(format!("{b} of {}", v.kind())),
            },
            "Math.min" | "Math.max" => {
                let nums: Option<Vec<f64>> = args
                    .iter()
                    .map(|a| match a {
                        Value::Num(n) => Some(*n),
                        _ => None,
                    })
                    .collect();
                match nums {
                    Some(n) if b == "Math.min" => {
                        Value::Num(n.into_iter().fold(f64::INFINITY, f64::min))
                    }
                    Some(n) => Value::Num(n.into_iter().fold(f64::NEG_INFINITY, f64::max)),
                    None => Value::Unknown(format!("{b} of values known at run time")),
                }
            }
            "randomIntBetween" => match (arg(0), arg(1)) {
                (Value::Num(lo), Value::Num(hi)) if lo <= hi => {
                    self.ok(span, "randomIntBetween");
                    Value::Rand { lo, hi, int: true }
                }
                _ => self.unknown(span, "randomIntBetween", "its bounds are not constants"),
            },
            "randomString" => match arg(0) {
                Value::Num(n) if (1.0..=4096.0).contains(&n) && args.len() == 1 => {
                    self.approx(span, "randomString", "`{{ rand_string(n) }}`: headroom's alphabet is letters and digits (k6's default is lowercase letters and digits)");
                    Value::Tpl(format!("{{{{ rand_string({}) }}}}", n as u64))
                }
                _ => self.unknown(
                    span,
                    "randomString",
                    "only randomString(n) with a constant length is converted",
                ),
            },
            "uuidv4" => {
                self.ok(span, "uuidv4");
                Value::Tpl("{{ uuid() }}".into())
            }
            "randomItem" => match arg(0) {
                Value::DataSet(set) => {
                    self.pick(&set, "random", span);
                    Value::DataRow(set)
                }
                Value::Array(items)
                    if !items.is_empty()
                        && items
                            .iter()
                            .all(|i| matches!(i, Value::Str(_) | Value::Num(_))) =>
                {
                    self.ok(span, "randomItem");
                    let texts: Vec<String> = items
                        .into_iter()
                        .map(|i| match i {
                            Value::Str(s) => serde_json::Value::String(s).to_string(),
                            Value::Num(n) => format!("\"{}\"", super::value::number_text(n)),
                            _ => String::new(),
                        })
                        .collect();
                    Value::Tpl(format!("{{{{ rand_choice({}) }}}}", texts.join(", ")))
                }
                v => self.unknown(
                    span,
                    "randomItem",
                    &format!(
                        "only a data file or a list of strings and numbers is converted, not {}",
                        v.kind()
                    ),
                ),
            },
            "JSON.stringify" => match arg(0) {
                // JSON.stringify(undefined) is undefined: no body at all.
                Value::Undefined => Value::Undefined,
                v => Value::JsonText(Box::new(v)),
            },
            "JSON.parse" => match arg(0) {
                Value::RespRead(id, Read::Body) => Value::RespRead(id, Read::Json(Vec::new())),
                Value::File(path) => self.data_file(&path, span),
                Value::Str(s) => serde_json::from_str::<serde_json::Value>(&s).map_or_else(
                    |_| Value::Unknown("JSON.parse of text that is not JSON".into()),
                    from_json,
                ),
                v => Value::Unknown(format!("JSON.parse of {}", v.kind())),
            },
            "open" => match arg(0) {
                Value::Str(path) => {
                    self.ok(span, "open");
                    let file = match &self.options.data_prefix {
                        Some(prefix) if !std::path::Path::new(&path).is_absolute() => prefix
                            .join(path.trim_start_matches("./"))
                            .to_string_lossy()
                            .into_owned(),
                        _ => path,
                    };
                    Value::File(file)
                }
                v => self.unknown(span, "open", &format!("the file name is {}", v.kind())),
            },
            "papaparse.parse" => match arg(0) {
                Value::File(path) => {
                    Value::Object(vec![("data".into(), self.data_file(&path, span))])
                }
                v => Value::Unknown(format!("papaparse.parse of {}", v.kind())),
            },
            "console.log" | "console.error" | "console.warn" | "console.info" | "console.debug" => {
                self.left(
                    span,
                    b.to_string(),
                    "a scenario does not log; headroom's summary and reports say what happened",
                );
                Value::Undefined
            }
            "parseHTML" => match arg(0) {
                Value::RespRead(id, Read::Body) => {
                    Value::RespRead(id, Read::Html(None, None, false))
                }
                v => self.unknown(
                    span,
                    "parseHTML",
                    &format!("only a response's body is read, not {}", v.kind()),
                ),
            },
            "parseInt" | "parseFloat" | "Number" => match arg(0) {
                Value::Str(s) => Value::Num(s.trim().parse().unwrap_or(f64::NAN)),
                Value::Num(n) if b == "parseInt" => Value::Num(n.trunc()),
                Value::Num(n) => Value::Num(n),
                v => v,
            },
            "String" => match arg(0) {
                v @ (Value::Str(_) | Value::Num(_) | Value::Bool(_) | Value::Tpl(_)) => {
                    self.concat(vec![Value::Str(String::new()), v], span)
                }
                v => Value::Unknown(format!("String of {}", v.kind())),
            },
            "encodeURIComponent" => {
                match arg(0) {
                    Value::Str(s) => Value::Str(encode_component(&s)),
                    v => match self.text(v, span) {
                        Ok(t) => {
                            self.approx(span, "encodeURIComponent", "a value known at run time is sent as it renders, not percent-encoded");
                            Value::Tpl(t)
                        }
                        Err(why) => Value::Unknown(why.0),
                    },
                }
            }
            other => self.method(other, &args, span)?,
        })
    }

    /// Methods bound to a value by [`Interp::member`] (`response.json:ID`, `html.find:ID:SEL`,
    /// `metric.add:KIND:NAME`, `Jar`), and the methods of constants.
    fn method(
        &mut self,
        b: &str,
        args: &[Value<'a>],
        span: Span,
    ) -> Result<Value<'a>, ConvertError> {
        let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::Undefined);
        let mut parts = b.splitn(3, ':');
        let head = parts.next().unwrap_or_default();
        let id = parts.next().and_then(|i| i.parse::<usize>().ok());
        let rest = parts.next().unwrap_or_default().to_string();
        Ok(match (head, id) {
            ("response.json", Some(id)) => match arg(0) {
                Value::Undefined => Value::RespRead(id, Read::Json(Vec::new())),
                Value::Str(sel) => match gjson(&sel) {
                    Ok(segs) => Value::RespRead(id, Read::Json(segs)),
                    Err(why) => self.unknown(span, "res.json", &why.0),
                },
                v => self.unknown(
                    span,
                    "res.json",
                    &format!("a selector that is {}", v.kind()),
                ),
            },
            ("response.html", Some(id)) => Value::RespRead(id, Read::Html(None, None, false)),
            ("html.find", Some(id)) => match arg(0) {
                Value::Str(sel) => Value::RespRead(id, Read::Html(Some(sel), None, false)),
                v => self.unknown(span, "find", &format!("a selector that is {}", v.kind())),
            },
            ("html.first", Some(id)) => Value::RespRead(id, Read::Html(Some(rest), None, false)),
            ("html.attr", Some(id)) if !rest.is_empty() => match arg(0) {
                Value::Str(a) => Value::RespRead(id, Read::Html(Some(rest), Some(a), false)),
                v => self.unknown(span, "attr", &format!("an attribute that is {}", v.kind())),
            },
            ("html.text", Some(id)) if !rest.is_empty() => {
                Value::RespRead(id, Read::Html(Some(rest), None, true))
            }
            _ => return self.other_method(b, args, span),
        })
    }

    /// Methods on metrics, jars and constants.
    fn other_method(
        &mut self,
        b: &str,
        args: &[Value<'a>],
        span: Span,
    ) -> Result<Value<'a>, ConvertError> {
        let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::Undefined);
        if let Some(rest) = b.strip_prefix("metric.add:") {
            let (kind, name) = rest.split_once(':').unwrap_or((rest, ""));
            self.metric_add(kind, name, arg(0), span);
            return Ok(Value::Undefined);
        }
        if b == "jar.cookiesForURL" {
            self.ok(span, "cookiesForURL");
            return Ok(Value::Jar(true));
        }
        Ok(self.unknown(
            span,
            &format!("{b}()"),
            "not a function the converter knows",
        ))
    }

    /// Reports `what` left out; its value is unknown.
    pub(crate) fn unknown(&mut self, span: Span, what: &str, why: &str) -> Value<'a> {
        self.left(span, what.to_string(), why.to_string());
        Value::Unknown(format!("{what}: {why}"))
    }

    /// `new X(...)`: `SharedArray`, custom metrics.
    pub(crate) fn new_expr(&mut self, n: &'a NewExpression<'a>) -> Result<Value<'a>, ConvertError> {
        let span = n.span;
        let callee = self.expr(&n.callee)?;
        let args = self.args(&n.arguments)?;
        let Value::Builtin(b) = callee else {
            return Ok(self.unknown(
                span,
                &format!("new {}", callee_text(&n.callee)),
                "not a class the converter knows",
            ));
        };
        Ok(match b.as_str() {
            "SharedArray" => {
                let f = match args.get(1) {
                    Some(Value::Func(f)) => *f,
                    _ => return Ok(self.unknown(span, "SharedArray", "its second argument is not a function")),
                };
                let rows = self.call_fn(f, Vec::new(), span)?;
                match rows {
                    Value::DataSet(set) => {
                        self.ok(span, "SharedArray");
                        Value::DataSet(set)
                    }
                    Value::Array(items) => {
                        self.approx(span, "SharedArray", "its rows are constants of the script, inlined where used");
                        Value::Array(items)
                    }
                    v => self.unknown(span, "SharedArray", &format!("its rows are not read from a file ({})", v.why())),
                }
            }
            "Trend" | "Counter" | "Rate" | "Gauge" => match args.first() {
                Some(Value::Str(name)) => {
                    self.metrics.push((name.clone(), b.clone()));
                    if b == "Trend" {
                        self.ok(span, format!("new Trend('{name}')"));
                    } else {
                        self.left(span, format!("new {b}('{name}')"), "headroom has no custom metrics; its adds and thresholds are left out");
                    }
                    Value::Metric(b.clone(), name.clone())
                }
                _ => self.unknown(span, &format!("new {b}"), "its name is not a constant"),
            },
            "Date" => self.unknown(span, "new Date", "the time is known at run time; use `{{ now_iso() }}` or `{{ now_unix() }}` in a template"),
            other => self.unknown(span, &format!("new {other}"), "not a class the converter knows"),
        })
    }

    /// A data file opened and parsed: registered under `data:`.
    fn data_file(&mut self, path: &str, span: Span) -> Value<'a> {
        if let Some(d) = self.data.iter().find(|d| d.file == path) {
            return Value::DataSet(d.name.clone());
        }
        let stem = std::path::Path::new(path)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "data".into());
        let mut name = word(&stem);
        while self.data.iter().any(|d| d.name == name) {
            name.push('_');
        }
        self.ok(span, format!("data file {path}"));
        self.data.push(DataFile {
            name: name.clone(),
            file: path.to_string(),
            pick: None,
        });
        Value::DataSet(name)
    }

    /// `sleep(s)`: a fixed or uniform think time.
    fn sleep(&mut self, v: Value<'a>, span: Span) {
        if self.phase == Phase::Init {
            return;
        }
        match v {
            Value::Num(s) if s >= 0.0 && s.is_finite() => {
                self.ok(span, "sleep");
                self.emit(Step::Think(seconds_text(s)));
            }
            Value::Rand { lo, hi, int }
                if lo.is_finite() && hi.is_finite() && lo >= 0.0 && lo <= hi =>
            {
                let range = format!("{}..{}", seconds_text(lo), seconds_text(hi));
                if int {
                    self.approx(
                        span,
                        "sleep",
                        format!(
                            "a uniform think time of {range}: k6 sleeps a whole number of seconds"
                        ),
                    );
                } else {
                    self.ok(span, "sleep");
                }
                self.emit(Step::Think(range));
            }
            other => {
                self.left(
                    span,
                    "sleep",
                    format!("its duration is not known before the run ({})", other.why()),
                );
            }
        }
    }

    /// `group(name, fn)`: a `group:` step around the steps `fn` makes.
    fn group(&mut self, call: &'a CallExpression<'a>) -> Result<Value<'a>, ConvertError> {
        let span = call.span;
        let args = self.args(&call.arguments)?;
        let (Some(Value::Str(name)), Some(Value::Func(f))) = (args.first(), args.get(1)) else {
            self.left(
                span,
                "group",
                "its name is not a constant or its body not a function",
            );
            return Ok(Value::Undefined);
        };
        let (name, f) = (name.clone(), *f);
        self.out.push(Vec::new());
        let result = self.call_fn(f, Vec::new(), span);
        let steps = self.out.pop().unwrap_or_default();
        let result = result?;
        if self.phase != Phase::Init && !steps.is_empty() {
            self.ok(span, format!("group '{name}'"));
            self.emit(Step::Group(name, steps));
        } else {
            self.ok(span, format!("group '{name}'"));
            for s in steps {
                self.emit(s);
            }
        }
        Ok(result)
    }
}

/// A JSON value as a constant.
fn from_json<'a>(v: serde_json::Value) -> Value<'a> {
    match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(b),
        serde_json::Value::Number(n) => Value::Num(n.as_f64().unwrap_or(f64::NAN)),
        serde_json::Value::String(s) => Value::Str(s),
        serde_json::Value::Array(a) => Value::Array(a.into_iter().map(from_json).collect()),
        serde_json::Value::Object(o) => {
            Value::Object(o.into_iter().map(|(k, v)| (k, from_json(v))).collect())
        }
    }
}

/// `encodeURIComponent` of a constant.
fn encode_component(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// How the script spells a callee (`http.get`, `api`), for the report.
pub(crate) fn callee_text(e: &Expression<'_>) -> String {
    match e.get_inner_expression() {
        Expression::Identifier(id) => id.name.to_string(),
        Expression::StaticMemberExpression(m) => {
            format!("{}.{}", callee_text(&m.object), m.property.name)
        }
        Expression::CallExpression(c) => format!("{}()", callee_text(&c.callee)),
        other => {
            let s = other.span();
            format!("expression at {}", s.start)
        }
    }
}
