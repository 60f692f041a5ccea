//! A Postman body as the scenario's body keys: raw text or JSON (`body:`, `json:`),
//! urlencoded (`form:`), form-data (`multipart:`, with files beside the collection)
//! and GraphQL (`graphql:`, or the JSON body Postman sends).

use std::path::Path;

use serde_json::Value;

use super::vars::{Note, Overflow, Vars};
use crate::{Outcome, Yaml};

/// The longest body or path kept, bytes of template text (the scenario compiler
/// bounds a scenario's size; a request that large is not a load test's).
pub(super) const MAX_TEXT: usize = 1 << 20;

/// The body keys (`json`, `body`, `form`, `multipart`, `graphql`) of a Postman body.
pub(super) fn body(
    body: &Value,
    method: &str,
    headers: &Yaml,
    vars: &mut Vars,
    dir: &Path,
    notes: &mut Vec<Note>,
) -> Result<Vec<(String, Yaml)>, Overflow> {
    let mode = body.get("mode").and_then(Value::as_str).unwrap_or("raw");
    let mut out = Vec::new();
    match mode {
        "raw" => {
            let raw = body.get("raw").and_then(Value::as_str).unwrap_or_default();
            if raw.is_empty() {
                return Ok(out);
            }
            let language = body
                .pointer("/options/raw/language")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let json_header = matches!(headers.get("Content-Type").or_else(|| headers.get("content-type")), Some(Yaml::Str(t)) if t.contains("json"));
            if language == "json" || json_header {
                if let Ok(value) = serde_json::from_str::<Value>(raw) {
                    out.push(("json".into(), json_yaml(&value, vars, notes)?));
                    return Ok(out);
                }
            }
            let text = vars.translate(raw, notes)?;
            if text.len() > MAX_TEXT {
                notes.push((
                    "body raw".into(),
                    Outcome::LeftOut(format!("larger than {} bytes: not sent", MAX_TEXT)),
                ));
                return Ok(out);
            }
            out.push(("body".into(), Yaml::Str(text)));
        }
        "urlencoded" => {
            let mut form = Yaml::map();
            for (key, value) in fields(body.get("urlencoded")) {
                if form.get(&key).is_some() {
                    notes.push((
                        format!("urlencoded {key}"),
                        Outcome::Approximated(
                            "a repeated field: only its last value is sent".into(),
                        ),
                    ));
                }
                form.set(&key, vars.translate(&value, notes)?);
            }
            out.push(("form".into(), form));
        }
        "formdata" => {
            let mut multipart = Yaml::map();
            for field in body
                .get("formdata")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if field.get("disabled").and_then(Value::as_bool) == Some(true) {
                    continue;
                }
                let Some(key) = field.get("key").and_then(Value::as_str) else {
                    continue;
                };
                if field.get("type").and_then(Value::as_str) == Some("file") {
                    if let Some(file) = file_field(key, field, dir, notes) {
                        multipart.set(key, file);
                    }
                    continue;
                }
                let value = field
                    .get("value")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                multipart.set(key, vars.translate(value, notes)?);
            }
            out.push(("multipart".into(), multipart));
        }
        "graphql" => {
            let graphql = body.get("graphql").unwrap_or(&Value::Null);
            let query = graphql
                .get("query")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let variables = match graphql.get("variables") {
                Some(Value::String(text)) if !text.trim().is_empty() => {
                    match serde_json::from_str::<Value>(text) {
                        Ok(v) => Some(json_yaml(&v, vars, notes)?),
                        Err(e) => {
                            notes.push((
                                "graphql variables".into(),
                                Outcome::LeftOut(format!("not JSON ({e}): not sent")),
                            ));
                            None
                        }
                    }
                }
                Some(v @ Value::Object(_)) => Some(json_yaml(v, vars, notes)?),
                _ => None,
            };
            // The GraphQL form sends its query as written; a query with variables in it,
            // or a method other than POST, is sent as the JSON body Postman sends.
            if query.contains("{{") || method != "POST" {
                let mut json = Yaml::map().with("query", vars.translate(query, notes)?);
                if let Some(v) = variables {
                    json.set("variables", v);
                }
                out.push(("json".into(), json));
            } else {
                let mut form = Yaml::map().with("query", query);
                if let Some(v) = variables {
                    form.set("variables", v);
                }
                out.push(("graphql".into(), form));
            }
        }
        "file" => notes.push((
            "body file".into(),
            Outcome::LeftOut("a binary file body: write it as body: or multipart:".into()),
        )),
        other => notes.push((
            format!("body {other}"),
            Outcome::LeftOut(format!("the body mode {other} is not translated")),
        )),
    }
    Ok(out)
}

/// Enabled `{key, value}` fields.
fn fields(list: Option<&Value>) -> Vec<(String, String)> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|f| f.get("disabled").and_then(Value::as_bool) != Some(true))
        .filter_map(|f| {
            let key = f.get("key").and_then(Value::as_str)?;
            let value = f.get("value").and_then(Value::as_str).unwrap_or_default();
            Some((key.to_string(), value.to_string()))
        })
        .collect()
}

/// A form-data file field: kept when its `src` is a relative path to a file beside the
/// collection, else reported.
fn file_field(key: &str, field: &Value, dir: &Path, notes: &mut Vec<Note>) -> Option<Yaml> {
    let construct = format!("formdata file {key}");
    let Some(src) = field.get("src").and_then(Value::as_str) else {
        notes.push((
            construct,
            Outcome::LeftOut("no single file path (src): not sent".into()),
        ));
        return None;
    };
    let path = Path::new(src);
    let outside = path.is_absolute()
        || path
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir));
    if outside || !dir.join(path).is_file() {
        let why = if outside {
            format!("{src} is not a path inside the collection's directory: not sent")
        } else {
            format!("{src} is not a file beside the collection: not sent")
        };
        notes.push((construct, Outcome::LeftOut(why)));
        return None;
    }
    notes.push((
        construct,
        Outcome::Approximated(format!(
            "{src} is read relative to the scenario file: write the scenario beside the collection"
        )),
    ));
    let mut file = Yaml::map().with("file", src);
    if let Some(ct) = field
        .get("contentType")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
    {
        file.set("content_type", ct);
    }
    Some(file)
}

/// A JSON value with its strings (keys literal, values templated) translated.
fn json_yaml(value: &Value, vars: &mut Vars, notes: &mut Vec<Note>) -> Result<Yaml, Overflow> {
    Ok(match value {
        Value::String(s) => Yaml::Str(vars.translate(s, notes)?),
        Value::Array(items) => Yaml::Seq(
            items
                .iter()
                .map(|v| json_yaml(v, vars, notes))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => {
            let mut out = Vec::with_capacity(map.len());
            for (k, v) in map {
                out.push((k.clone(), json_yaml(v, vars, notes)?));
            }
            Yaml::Map(out)
        }
        other => Yaml::from_json(other),
    })
}
