//! Members of values: objects and arrays, `__ENV.NAME`, a response's `status`,
//! `headers[...]`, `json()` paths and `html()` selections, rows of data files, cookie
//! jars, metrics; and how rows of a data file are picked.

use oxc_span::Span;

use super::value::{number_text, Read, Seg, Value};
use super::Interp;

impl<'a> Interp<'a, '_> {
    /// A static member: `obj.key`.
    pub(crate) fn member(&mut self, obj: Value<'a>, key: &str, span: Span) -> Value<'a> {
        match obj {
            Value::Object(entries) => entries
                .into_iter()
                .find(|(k, _)| k == key)
                .map_or(Value::Undefined, |(_, v)| v),
            Value::Array(items) if key == "length" => Value::Num(items.len() as f64),
            Value::Array(items) => key
                .parse::<usize>()
                .ok()
                .and_then(|i| items.into_iter().nth(i))
                .unwrap_or(Value::Undefined),
            Value::Str(s) if key == "length" => Value::Num(s.chars().count() as f64),
            Value::Builtin(b) if b == "__ENV" => Value::Env(key.to_string()),
            Value::Builtin(b) => Value::Builtin(format!("{b}.{key}")),
            Value::Resp(id) => match key {
                "status" => Value::RespRead(id, Read::Status),
                "body" => Value::RespRead(id, Read::Body),
                "headers" => Value::RespRead(id, Read::Header(None)),
                "timings" => Value::RespRead(id, Read::Timings(false)),
                "cookies" => Value::RespRead(id, Read::Cookie(None)),
                "json" | "html" => Value::Builtin(format!("response.{key}:{id}")),
                other => Value::Unknown(format!("`response.{other}` is not converted")),
            },
            Value::RespRead(id, read) => match (read, key) {
                (Read::Json(mut segs), k) => {
                    segs.push(match k.parse::<u64>() {
                        Ok(i) => Seg::Index(i),
                        Err(_) => Seg::Key(k.to_string()),
                    });
                    Value::RespRead(id, Read::Json(segs))
                }
                (Read::Header(None), k) => Value::RespRead(id, Read::Header(Some(k.to_string()))),
                (Read::Timings(false), "duration") => Value::RespRead(id, Read::Timings(true)),
                (Read::Cookie(None), k) => Value::RespRead(id, Read::Cookie(Some(k.to_string()))),
                (Read::Cookie(Some(n)), "0" | "value") => {
                    Value::RespRead(id, Read::Cookie(Some(n)))
                }
                (Read::Html(sel, attr, text), "attr" | "text" | "find" | "first") => {
                    let _ = (attr, text);
                    Value::Builtin(format!("html.{key}:{id}:{}", sel.unwrap_or_default()))
                }
                (Read::Body, "length") => Value::Unknown("the body's length".into()),
                (r, k) => Value::Unknown(format!("`.{k}` of {r:?} is not converted")),
            },
            Value::DataSet(_) if key == "length" => {
                Value::Unknown("the number of rows, known at run time".into())
            }
            Value::DataRow(set) => {
                self.ok(span, format!("data column {key}"));
                Value::Tpl(format!("{{{{ data.{set}.{key} }}}}"))
            }
            Value::Jar(false) if key == "cookiesForURL" => {
                Value::Builtin("jar.cookiesForURL".into())
            }
            Value::Jar(true) => Value::Tpl(format!("{{{{ cookie.{key} }}}}")),
            Value::Tpl(t) if t.starts_with("{{ cookie.") => Value::Tpl(t),
            Value::Metric(kind, name) => Value::Builtin(format!("metric.{key}:{kind}:{name}")),
            Value::File(_) | Value::DataSet(_) => {
                Value::Unknown(format!("`.{key}` of a data file"))
            }
            Value::Unknown(why) => Value::Unknown(why),
            other => Value::Unknown(format!("`.{key}` of {}", other.kind())),
        }
    }

    /// A computed member: `obj[key]`.
    pub(crate) fn computed(&mut self, obj: Value<'a>, key: Value<'a>, span: Span) -> Value<'a> {
        match (obj, self.settle_env(key, span)) {
            (Value::DataSet(set), key) => {
                let pick = match key {
                    Value::Index(pick) => pick,
                    Value::Rand { .. } => "random",
                    Value::Num(_) => {
                        self.approx(span, "a fixed row", "a fixed index becomes one row per iteration in order (`pick: sequential`)");
                        "sequential"
                    }
                    other => {
                        self.approx(
                            span,
                            "a row index",
                            format!(
                                "{} as an index: rows are taken in order (`pick: sequential`)",
                                other.kind()
                            ),
                        );
                        "sequential"
                    }
                };
                self.pick(&set, pick, span);
                Value::DataRow(set)
            }
            (obj, Value::Str(k)) => self.member(obj, &k, span),
            (obj, Value::Num(n)) => self.member(obj, &number_text(n), span),
            (_, key) => Value::Unknown(format!("a member named by {}", key.kind())),
        }
    }

    /// Records how rows of `set` are picked.
    pub(crate) fn pick(&mut self, set: &str, pick: &'static str, span: Span) {
        let Some(file) = self.data.iter_mut().find(|d| d.name == set) else {
            return;
        };
        match file.pick {
            None => {
                file.pick = Some(pick);
                match pick {
                    "unique" => self.approx(span, "a row per VU", "`pick: unique`: each user keeps a row of its own, and more users than rows is an error (k6's `__VU % length` shares rows)"),
                    "sequential" => self.approx(span, "a row per iteration", "`pick: sequential`: one cursor for the whole run (k6's `__ITER` counts per VU)"),
                    _ => self.ok(span, "a random row"),
                }
            }
            Some(p) if p != pick => self.approx(
                span,
                "row pick",
                format!("the file is read with `pick: {p}` as first used"),
            ),
            Some(_) => {}
        }
    }

    /// `Env` values decide with their value at conversion (the caller's, else unset).
    pub(crate) fn settle_env(&mut self, v: Value<'a>, span: Span) -> Value<'a> {
        match v {
            Value::Env(name) => match self.options.env.get(&name) {
                Some(val) => {
                    self.approx(
                        span,
                        format!("__ENV.{name}"),
                        format!("fixed at conversion to {val:?} (the environment's value)"),
                    );
                    Value::Str(val.clone())
                }
                None => {
                    self.approx(
                        span,
                        format!("__ENV.{name}"),
                        "unset at conversion: the script's default is used",
                    );
                    Value::Undefined
                }
            },
            v => v,
        }
    }

    /// Used where a value is decided (not rendered): `Env` as in [`Self::settle_env`].
    pub(crate) fn settle(&mut self, v: Value<'a>) -> Value<'a> {
        match v {
            Value::Env(_) => self.settle_env(v, Span::default()),
            v => v,
        }
    }
}
