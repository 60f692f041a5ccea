//! A Postman URL as the scenario has it: a URL object put back together as text (its
//! enabled query parameters, `:id` path variables filled in), then split into the
//! target's origin, when it is known at conversion, and a path of template text.

use serde_json::Value;

use super::vars::{Note, Overflow, Vars};
use crate::Outcome;

/// A URL object as Postman text: built from its parts (which carry disabled query
/// parameters and `:id` path variables), else its `raw`.
pub(super) fn url_text(url: &Value) -> String {
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
pub(super) fn split(
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
