//! One Postman request as a scenario request: its URL split into the target's origin
//! and a path, headers, auth (bearer, basic, API key) and body (raw, JSON,
//! urlencoded, form-data, GraphQL).

use std::path::Path;

use serde_json::Value;

use super::template::Tpl;
use super::vars::{Note, Overflow, Vars};
use crate::{Outcome, Yaml};

/// A request as converted.
#[derive(Debug)]
pub(super) struct Built {
    /// The request mapping (without `name:`).
    pub(super) yaml: Yaml,
    /// `scheme://authority` when it is known at conversion; None when the host is a
    /// variable without a value.
    pub(super) origin: Option<String>,
    /// Constructs that are not translated as they are.
    pub(super) notes: Vec<Note>,
}

/// Converts `request` (a request object or a bare URL string) with `auth` (the one in
/// force, inherited already); `dir` is where relative form-data files are looked for.
pub(super) fn build(
    request: &Value,
    auth: Option<&Value>,
    vars: &mut Vars,
    dir: &Path,
) -> Result<Built, Overflow> {
    let mut notes = Vec::new();
    let url = match request {
        Value::String(url) => url.clone(),
        _ => url_text(request.get("url").unwrap_or(&Value::Null)),
    };
    let method = request
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or("GET")
        .to_ascii_uppercase();
    let (origin, mut path) = split(&url, vars, &mut notes)?;
    let mut yaml = Yaml::map().with("method", method.as_str());
    let mut headers = Yaml::map();
    for (name, value) in header_list(request.get("header")) {
        headers.set(&name, vars.translate(&value, &mut notes)?);
    }
    let mut query = Vec::new();
    if let Some(auth) = auth {
        self::auth(auth, vars, &mut headers, &mut query, &mut notes)?;
    }
    for (k, v) in query {
        path.push(if path.contains('?') { '&' } else { '?' });
        path.push_str(&k);
        path.push('=');
        path.push_str(&v);
    }
    if path.len() > super::build::MAX_TEXT {
        return Err(Overflow);
    }
    yaml.set("path", path);
    let body = request.get("body").filter(|b| !b.is_null());
    let mut body_yaml = Vec::new();
    if let Some(body) = body {
        if body.get("disabled").and_then(Value::as_bool) != Some(true) {
            body_yaml = self::body(body, &method, &headers, vars, dir, &mut notes)?;
        }
    }
    if body_yaml.iter().any(|(k, _)| k == "multipart") {
        // headroom writes the multipart content type with its boundary; one without
        // the boundary, as a collection often has, would break the body.
        if let Yaml::Map(entries) = &mut headers {
            entries.retain(|(k, _)| !k.eq_ignore_ascii_case("content-type"));
        }
    }
    if !matches!(&headers, Yaml::Map(e) if e.is_empty()) {
        yaml.set("headers", headers);
    }
    for (key, value) in body_yaml {
        yaml.set(&key, value);
    }
    Ok(Built {
        yaml,
        origin,
        notes,
    })
}

/// A URL object as Postman text: built from its parts (which carry disabled query
/// parameters and `:id` path variables), else its `raw`.
fn url_text(url: &Value) -> String {
    let Value::Object(parts) = url else {
        return url.as_str().unwrap_or_default().to_string();
    };
    let host = match parts.get("host") {
        Some(Value::Array(h)) => h
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("."),
        Some(Value::String(h)) => h.clone(),
        _ => {
            return parts
                .get("raw")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
        }
    };
    let mut text = String::new();
    if let Some(protocol) = parts.get("protocol").and_then(Value::as_str) {
        text.push_str(protocol);
        text.push_str("://");
    }
    text.push_str(&host);
    if let Some(port) = parts.get("port").and_then(|p| {
        p.as_str()
            .map(String::from)
            .or_else(|| p.as_u64().map(|n| n.to_string()))
    }) {
        text.push(':');
        text.push_str(&port);
    }
    let variables = parts.get("variable").and_then(Value::as_array);
    let segments: Vec<String> = match parts.get("path") {
        Some(Value::Array(p)) => p
            .iter()
            .map(|s| match s {
                Value::String(s) => s.clone(),
                other => other
                    .get("value")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            })
            .collect(),
        Some(Value::String(p)) => p
            .trim_start_matches('/')
            .split('/')
            .map(String::from)
            .collect(),
        _ => Vec::new(),
    };
    for segment in segments {
        text.push('/');
        let value = segment.strip_prefix(':').and_then(|key| {
            variables?
                .iter()
                .find(|v| v.get("key").and_then(Value::as_str) == Some(key))
                .and_then(|v| v.get("value"))
                .and_then(Value::as_str)
        });
        text.push_str(value.unwrap_or(&segment));
    }
    let query: Vec<String> = parts
        .get("query")
        .and_then(Value::as_array)
        .map(|q| {
            q.iter()
                .filter(|p| p.get("disabled").and_then(Value::as_bool) != Some(true))
                .filter_map(|p| {
                    let key = p.get("key").and_then(Value::as_str)?;
                    Some(match p.get("value").and_then(Value::as_str) {
                        Some(v) => format!("{key}={v}"),
                        None => key.to_string(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    if !query.is_empty() {
        text.push('?');
        text.push_str(&query.join("&"));
    }
    text
}

/// Splits a URL (Postman text) into the origin, when known, and the path as template
/// text. A leading variable that has no value is the base URL a run gives with
/// `--url`: it is dropped from the path.
fn split(
    url: &str,
    vars: &mut Vars,
    notes: &mut Vec<Note>,
) -> Result<(Option<String>, String), Overflow> {
    let url = url.trim();
    if let Some(rest) = url.strip_prefix("{{") {
        if let Some(close) = rest.find("}}") {
            let name = rest[..close].trim();
            let whole = &url[..close + 4];
            if !vars.is_literal(whole) {
                notes.push((
                    whole.to_string(),
                    Outcome::Approximated(format!(
                        "the base URL {name} has no value at conversion: the target is a \
                         placeholder; give the real one with --url"
                    )),
                ));
                let path = vars.translate(&rest[close + 2..], notes)?;
                return Ok((None, rooted(path)));
            }
        }
    }
    let text = vars.translate(url, notes)?;
    let lower = text.to_ascii_lowercase();
    let (scheme, after) = if lower.starts_with("https://") {
        ("https", &text[8..])
    } else if lower.starts_with("http://") {
        ("http", &text[7..])
    } else {
        ("http", text.as_str())
    };
    let end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let authority = &after[..end];
    let path = after[end..]
        .split('#')
        .next()
        .unwrap_or_default()
        .to_string();
    if authority.contains("{{") || authority.is_empty() {
        notes.push((
            url.to_string(),
            Outcome::Approximated(
                "the host is not known at conversion: the target is a placeholder; give the \
                 real one with --url"
                    .into(),
            ),
        ));
        return Ok((None, rooted(path)));
    }
    Ok((Some(format!("{scheme}://{authority}")), rooted(path)))
}

/// A path that starts with `/` (or a placeholder, which the scenario also accepts).
fn rooted(path: String) -> String {
    if path.starts_with('/') {
        path
    } else if path.is_empty() {
        "/".into()
    } else {
        format!("/{path}")
    }
}

/// Enabled `{key, value}` pairs of a header list (or a v2.0 header string).
fn header_list(headers: Option<&Value>) -> Vec<(String, String)> {
    match headers {
        Some(Value::Array(list)) => list
            .iter()
            .filter(|h| h.get("disabled").and_then(Value::as_bool) != Some(true))
            .filter_map(|h| {
                let key = h.get("key").and_then(Value::as_str)?.trim();
                let value = h.get("value").and_then(Value::as_str).unwrap_or_default();
                (!key.is_empty()).then(|| (key.to_string(), value.to_string()))
            })
            .collect(),
        Some(Value::String(text)) => text
            .lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .filter(|(k, _)| !k.is_empty())
            .collect(),
        _ => Vec::new(),
    }
}

/// A parameter of an auth block: v2.1 lists `[{key, value}]`, v2.0 objects.
fn auth_param(auth: &Value, kind: &str, key: &str) -> Option<String> {
    let params = auth.get(kind)?;
    let value = match params {
        Value::Array(list) => list
            .iter()
            .find(|p| p.get("key").and_then(Value::as_str) == Some(key))?
            .get("value")?,
        Value::Object(map) => map.get(key)?,
        _ => return None,
    };
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// Adds the auth in force as a header or a query parameter.
fn auth(
    auth: &Value,
    vars: &mut Vars,
    headers: &mut Yaml,
    query: &mut Vec<(String, String)>,
    notes: &mut Vec<Note>,
) -> Result<(), Overflow> {
    let kind = auth.get("type").and_then(Value::as_str).unwrap_or("noauth");
    match kind {
        "noauth" => {}
        "bearer" => {
            let token = auth_param(auth, "bearer", "token").unwrap_or_default();
            let token = vars.translate(&token, notes)?;
            headers.set("Authorization", format!("Bearer {token}"));
        }
        "basic" => {
            let user = auth_param(auth, "basic", "username").unwrap_or_default();
            let pass = auth_param(auth, "basic", "password").unwrap_or_default();
            let pair = vars.translate(&format!("{user}:{pass}"), notes)?;
            if pair.contains("{{") {
                notes.push((
                    "auth basic".into(),
                    Outcome::LeftOut(
                        "a user or password known only at run time: write the Authorization \
                         header with base64() yourself"
                            .into(),
                    ),
                ));
            } else {
                let mut t = Tpl::new();
                t.lit("Basic ");
                t.expr(&format!("base64({})", super::template::quoted(&pair)));
                headers.set("Authorization", t.finish());
            }
        }
        "apikey" => {
            let key = auth_param(auth, "apikey", "key").unwrap_or_default();
            let value = auth_param(auth, "apikey", "value").unwrap_or_default();
            let value = vars.translate(&value, notes)?;
            match auth_param(auth, "apikey", "in").as_deref() {
                Some("query") => query.push((key, value)),
                _ => headers.set(&key, value),
            }
        }
        other => notes.push((
            format!("auth {other}"),
            Outcome::LeftOut(format!(
                "{other} auth is not translated: set the header it sends in defaults.headers"
            )),
        )),
    }
    Ok(())
}

/// The body keys (`json`, `body`, `form`, `multipart`, `graphql`) of a Postman body.
fn body(
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
            if text.len() > super::build::MAX_TEXT {
                notes.push((
                    "body raw".into(),
                    Outcome::LeftOut(format!(
                        "larger than {} bytes: not sent",
                        super::build::MAX_TEXT
                    )),
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
