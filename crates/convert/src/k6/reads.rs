//! Values where they are used: as text (a template), as a JSON body (YAML), as an
//! `if:` condition. A response read used here becomes a capture on its request.

use oxc_span::Span;

use super::value::{number_text, Cond, Read, Seg, Value, Why};
use super::Interp;
use crate::Yaml;

impl<'a> Interp<'a, '_> {
    /// The value as template text (`Bearer {{ token }}`), or why it cannot be one.
    pub(crate) fn text(&mut self, v: Value<'a>, span: Span) -> Result<String, Why> {
        Ok(match v {
            Value::Str(s) => s,
            Value::Num(n) => number_text(n),
            Value::Bool(b) => b.to_string(),
            Value::Null => "null".into(),
            Value::Undefined => "undefined".into(),
            Value::Tpl(t) => t,
            Value::Env(name) => {
                self.ok(span, format!("__ENV.{name}"));
                format!("{{{{ env.{name} }}}}")
            }
            Value::Rand { lo, hi, int: true } if lo.is_finite() && hi.is_finite() => {
                format!(
                    "{{{{ rand_int({}, {}) }}}}",
                    number_text(lo.ceil()),
                    number_text(hi.floor())
                )
            }
            Value::Rand { lo, hi, int: false } if lo.is_finite() && hi.is_finite() => {
                format!(
                    "{{{{ rand_float({}, {}) }}}}",
                    number_text(lo),
                    number_text(hi)
                )
            }
            Value::JsonText(inner) => {
                let y = self.yaml(*inner, span)?;
                yaml_json(&y)
            }
            Value::RespRead(id, read) => {
                let name = self.capture(id, read, span)?;
                format!("{{{{ {name} }}}}")
            }
            other => return Err(Why(other.why())),
        })
    }

    /// The value as a JSON body node; `undefined` members are dropped as
    /// `JSON.stringify` drops them.
    pub(crate) fn yaml(&mut self, v: Value<'a>, span: Span) -> Result<Yaml, Why> {
        Ok(match v {
            Value::Null | Value::Undefined => Yaml::Null,
            Value::Bool(b) => Yaml::Bool(b),
            Value::Num(n) => Yaml::from(n),
            Value::Array(items) => {
                let mut out = Vec::new();
                for item in items {
                    out.push(self.yaml(item, span)?);
                }
                Yaml::Seq(out)
            }
            Value::Object(entries) => {
                let mut out = Yaml::map();
                for (k, v) in entries {
                    if matches!(v, Value::Undefined | Value::Func(_)) {
                        continue;
                    }
                    let y = self.yaml(v, span)?;
                    out.set(&k, y);
                }
                out
            }
            other => Yaml::Str(self.text(other, span)?),
        })
    }

    /// Adds (or finds) the capture of `read` on request `id`; its variable's name.
    pub(crate) fn capture(&mut self, id: usize, read: Read, span: Span) -> Result<String, Why> {
        let Some(req) = self.reqs.get(id) else {
            return Err(Why("a response of another part of the script".into()));
        };
        if self.no_captures {
            return Err(Why(
                "a check's condition reads the response only to check it".into(),
            ));
        }
        if req.parallel {
            return Err(Why(
                "a response of `http.batch`: requests sent in parallel take no captures".into(),
            ));
        }
        let (source, hint) = match &read {
            // JavaScript's `.length` of an array (or a string) has no JSONPath: `$.a.length`
            // would read a member named `length` and fail the request where there is
            // none. (A check's `.length > 0` is converted on its own.)
            Read::Json(segs) if matches!(segs.last(), Some(Seg::Key(k)) if k == "length") => {
                return Err(Why(
                    "`.length` of a JSON value is not a value a capture can take (JSONPath has no length)".into(),
                ))
            }
            Read::Json(segs) => (json_path(segs)?, segs.iter().rev().find_map(|s| match s {
                Seg::Key(k) => Some(k.clone()),
                Seg::Index(_) => None,
            }).unwrap_or_else(|| "body".into())),
            Read::Header(Some(h)) => (format!("header:{h}"), h.to_ascii_lowercase()),
            Read::Html(Some(sel), Some(attr), _) => (format!("css:{sel}@{attr}"), attr.clone()),
            Read::Html(Some(sel), None, true) => (format!("css:{sel}"), "text".into()),
            Read::Status => ("status".into(), "status".into()),
            Read::Cookie(Some(c)) => (format!("cookie:{c}"), c.clone()),
            Read::Body => return Err(Why("the whole body as a value is not converted (capture a JSON field, a header or an HTML element instead)".into())),
            other => return Err(Why(format!("{other:?} of a response is not a value a capture can take"))),
        };
        if let Some((name, _)) = req.captures.iter().find(|(_, s)| *s == source) {
            return Ok(name.clone());
        }
        let name = self.fresh_name(&hint);
        self.ok(span, format!("capture {name} ({source})"));
        if let Some(req) = self.reqs.get_mut(id) {
            req.captures.push((name.clone(), source));
        }
        Ok(name)
    }

    /// The value as an `if:` condition.
    pub(crate) fn condition(&mut self, v: &Value<'a>, _span: Span) -> Result<Cond, Why> {
        match v {
            Value::Cond(c) => Ok((**c).clone()),
            other => Err(Why(other.why())),
        }
    }
}

/// A JSONPath for a path into a JSON body (`$.items[0].id`).
pub(crate) fn json_path(segs: &[Seg]) -> Result<String, Why> {
    let mut out = String::from("$");
    for s in segs {
        match s {
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
            Seg::Key(k)
                if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                out.push('.');
                out.push_str(k);
            }
            Seg::Key(k) if !k.contains('\'') && !k.contains('\\') => {
                out.push_str(&format!("['{k}']"))
            }
            Seg::Key(k) => {
                return Err(Why(format!(
                    "the key {k:?} cannot be written in a JSONPath"
                )))
            }
        }
    }
    Ok(out)
}

/// A k6 JSON selector (gjson: `items.0.id`) as path segments; `#` and wildcards are
/// not converted.
pub(crate) fn gjson(selector: &str) -> Result<Vec<Seg>, Why> {
    let mut segs = Vec::new();
    for part in selector.split('.') {
        if part.is_empty() || part.contains(['#', '*', '?', '|', '@']) {
            return Err(Why(format!(
                "the selector {selector:?} uses gjson syntax headroom's JSONPath does not have"
            )));
        }
        segs.push(match part.parse::<u64>() {
            Ok(i) => Seg::Index(i),
            Err(_) => Seg::Key(part.to_string()),
        });
    }
    Ok(segs)
}

/// A YAML node as compact JSON text.
pub(crate) fn yaml_json(y: &Yaml) -> String {
    fn conv(y: &Yaml) -> serde_json::Value {
        match y {
            Yaml::Null => serde_json::Value::Null,
            Yaml::Bool(b) => (*b).into(),
            Yaml::Int(i) => (*i).into(),
            Yaml::Float(f) => serde_json::Number::from_f64(*f)
                .map_or(serde_json::Value::Null, serde_json::Value::Number),
            Yaml::Str(s) => s.clone().into(),
            Yaml::Seq(items) => items.iter().map(conv).collect(),
            Yaml::Map(entries) => entries
                .iter()
                .map(|(k, v)| (k.clone(), conv(v)))
                .collect::<serde_json::Map<_, _>>()
                .into(),
        }
    }
    conv(y).to_string()
}
