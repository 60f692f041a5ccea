//! One Postman request as a scenario request: its URL split into the target's origin
//! and a path, headers, auth (bearer, basic, API key) and body (raw, JSON,
//! urlencoded, form-data, GraphQL). This module assembles the request; the URL is
//! [`super::url`]'s, the auth [`super::auth`]'s and the body [`super::body`]'s.

use std::path::Path;

use serde_json::Value;

use super::body::MAX_TEXT;
use super::url::{split, url_text};
use super::vars::{Note, Overflow, Vars};
use crate::Yaml;

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
        super::auth::auth(auth, vars, &mut headers, &mut query, &mut notes)?;
    }
    for (k, v) in query {
        path.push(if path.contains('?') { '&' } else { '?' });
        path.push_str(&k);
        path.push('=');
        path.push_str(&v);
    }
    if path.len() > MAX_TEXT {
        return Err(Overflow);
    }
    yaml.set("path", path);
    let body = request.get("body").filter(|b| !b.is_null());
    let mut body_yaml = Vec::new();
    if let Some(body) = body {
        if body.get("disabled").and_then(Value::as_bool) != Some(true) {
            body_yaml = super::body::body(body, &method, &headers, vars, dir, &mut notes)?;
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
