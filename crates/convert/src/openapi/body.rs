//! Request bodies: the operation's `requestBody` (or its `$ref`), one media type of
//! it (JSON first, then a form, then multipart, then the first listed), its example or
//! a value generated from its schema, written as the scenario's `json:`, `form:`,
//! `multipart:` or `body:`.

use super::node::Node;
use super::refs::{Doc, Problem};
use super::sample::{from_json, Gen, Origin, Val};
use super::text::{escape_braces, json_text, json_yaml, render, scalar, Enc, Piece};
use crate::Yaml;

/// A body as the request writes it.
#[derive(Debug)]
pub(crate) struct Body {
    /// `json`, `form`, `multipart` or `body`.
    pub(crate) key: &'static str,
    /// Its value.
    pub(crate) value: Yaml,
    /// A `Content-Type` header the key does not imply.
    pub(crate) content_type: Option<String>,
}

/// The body of `op`, if it has one; approximations are added to `notes`.
pub(crate) fn body<'a>(
    doc: &Doc<'a>,
    op: &'a Node,
    notes: &mut Vec<String>,
) -> Result<Option<Body>, Problem> {
    let Some(rb) = op.get("requestBody") else {
        return Ok(None);
    };
    let rb = match doc.resolve(rb) {
        Ok(r) => r.node,
        Err(p) if p.remote => {
            notes.push(format!("request body left out: {}", p.message));
            return Ok(None);
        }
        Err(p) => return Err(p),
    };
    let required = rb.flag("required");
    let content = rb.get("content").map_or(&[][..], Node::entries);
    let rank = |media: &str| {
        let m = media.to_ascii_lowercase();
        let m = m.split(';').next().unwrap_or("").trim().to_string();
        if m == "application/json" || m.ends_with("+json") || m.ends_with("/json") {
            0
        } else if m == "application/x-www-form-urlencoded" {
            1
        } else if m == "multipart/form-data" {
            2
        } else {
            3
        }
    };
    let Some(chosen) = content.iter().min_by_key(|e| rank(&e.key)) else {
        return Ok(None);
    };
    let media_type = chosen.key.as_str();
    let media = &chosen.value;
    let mut gen = Gen::new(doc);
    let (value, origin) = match gen.value_of(media, media.get("schema")) {
        Ok(v) => v,
        Err(p) if p.remote && !required => {
            notes.push(format!("optional request body left out: {}", p.message));
            return Ok(None);
        }
        Err(p) => {
            return Err(Problem {
                message: format!("request body: {}", p.message),
                ..p
            })
        }
    };
    if origin == Origin::Generated {
        notes.push(format!("{media_type} body generated from the schema"));
    }
    if gen.trimmed {
        notes.push(format!(
            "optional properties left out to keep the body under {} KiB",
            super::sample::MAX_BODY >> 10
        ));
    }
    for p in &gen.remote {
        notes.push(format!("optional part of the body left out: {}", p.message));
    }
    // Documents often give a JSON example as the text of the JSON: sent as that JSON
    // (the text is within the value bound already).
    let value = match (&value, rank(media_type)) {
        (Val::Str(text), 0) => serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .filter(|j| j.is_object() || j.is_array())
            .and_then(|j| from_json(&j, 0))
            .unwrap_or(value),
        _ => value,
    };
    let plain_type = media_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let header = |t: &str| (!t.contains('*')).then(|| t.to_string());
    Ok(Some(match rank(media_type) {
        0 => Body {
            key: "json",
            value: json_yaml(&value),
            content_type: (plain_type != "application/json").then(|| media_type.to_string()),
        },
        1 | 2 if matches!(value, Val::Map(_)) => {
            let multipart = rank(media_type) == 2;
            fields(doc, &value, multipart, media, notes)?
        }
        _ => {
            let text = match &value {
                Val::Str(s) => escape_braces(s),
                Val::Tpl(e) => format!("{{{{ {e} }}}}"),
                other if media_type.contains('*') => {
                    // `*/*` (anything goes): structured data is best sent as JSON.
                    return Ok(Some(Body {
                        key: "json",
                        value: json_yaml(other),
                        content_type: None,
                    }));
                }
                other => {
                    notes.push(format!("{media_type} body: the value is sent as JSON text (headroom does not write {media_type})"));
                    escape_braces(&json_text(other))
                }
            };
            Body {
                key: "body",
                value: Yaml::Str(text),
                content_type: header(media_type),
            }
        }
    }))
}

/// A form or multipart body's fields: scalars as text, arrays joined by `,`, objects
/// as JSON text; a multipart file (`format: binary`) as a text part.
fn fields<'a>(
    doc: &Doc<'a>,
    value: &Val,
    multipart: bool,
    media: &'a Node,
    notes: &mut Vec<String>,
) -> Result<Body, Problem> {
    let Val::Map(entries) = value else {
        return Err(Problem::new(media.at, "a form body that is not an object"));
    };
    let mut map = Yaml::map();
    for (name, v) in entries {
        if multipart && name.contains(['"', '\r', '\n']) {
            notes.push(format!(
                "multipart field {name:?} left out: its name holds a quote or a line break"
            ));
            continue;
        }
        let pieces: Vec<Piece> = match v {
            Val::Seq(items) => {
                notes.push(format!(
                    "field `{name}`: its array is sent as one value joined by commas"
                ));
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(Piece::Raw(","));
                    }
                    out.push(scalar(item));
                }
                out
            }
            Val::Map(_) => {
                notes.push(format!("field `{name}`: its object is sent as JSON text"));
                vec![Piece::Lit(json_text(v))]
            }
            other => vec![scalar(other)],
        };
        if multipart && is_file(doc, media, name) {
            notes.push(format!("multipart file `{name}` is sent as a text part; write `{name}: {{file: PATH}}` to upload a file"));
        }
        map.set(&escape_braces(name), render(&pieces, Enc::Plain));
    }
    if multipart && map == Yaml::map() {
        return Err(Problem::new(
            media.at,
            "a multipart body with no field to send",
        ));
    }
    Ok(Body {
        key: if multipart { "multipart" } else { "form" },
        value: map,
        content_type: None,
    })
}

/// Whether the media type's schema makes `field` a file (`format: binary` or
/// `base64`, or a `contentMediaType`).
fn is_file<'a>(doc: &Doc<'a>, media: &'a Node, field: &str) -> bool {
    let Some(schema) = media.get("schema").and_then(|s| doc.resolve(s).ok()) else {
        return false;
    };
    let Some(p) = schema
        .node
        .get("properties")
        .and_then(|p| p.get(field))
        .and_then(|p| doc.resolve(p).ok())
    else {
        return false;
    };
    let p = p.node;
    matches!(p.str_of("format"), Some("binary" | "base64")) || p.get("contentMediaType").is_some()
}
