//! Compiling what a web application's journey adds to a request: `form:` and
//! `multipart:` bodies, non-fatal `check:` rules, `redirects:`, and captures from any
//! part of a response (`capture:` sources and the `{from, pick, default}` form).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use serde_saphyr::Spanned;

use super::errors::{found, ScenarioError, Source};
use super::fields::{json_path, template};
use super::format::{CheckSpec, Node};
use super::values::non_negative_int;
use headroom_plan::journey::{Check, CheckRule, Expected, Multipart, Piece};
use headroom_template::{Escape, Template};

/// Largest file a `multipart:` body reads: it is kept in memory and sent with every
/// request, so a bigger one is a mistake (a wrong path).
pub(crate) const MAX_UPLOAD: u64 = 16 * 1024 * 1024;
/// Most redirects a request may be told to follow.
const MAX_REDIRECTS: u64 = 100;

/// Reads a `redirects:` count.
pub(crate) fn redirects(src: Source<'_>, node: &Node, path: &str) -> Result<u32, ScenarioError> {
    let n = non_negative_int(src, node, path)?;
    if n > MAX_REDIRECTS {
        return Err(src.of(
            node,
            path,
            format!("at most {MAX_REDIRECTS} redirects, found {n}"),
        ));
    }
    Ok(n as u32)
}

/// Compiles a `form:` map into an urlencoded body: names encoded at load, values
/// templates whose rendering is encoded.
pub(crate) fn form(
    src: Source<'_>,
    fields: &Spanned<BTreeMap<String, Spanned<String>>>,
    path: &str,
    vars: Option<&[String]>,
) -> Result<Template, ScenarioError> {
    let mut parts = Vec::with_capacity(fields.value.len() * 2);
    for (i, (name, value)) in fields.value.iter().enumerate() {
        let sep = if i == 0 { "" } else { "&" };
        parts.push(Template::literal(
            &format!("{sep}{}=", headroom_template::form_encode(name)),
            Escape::None,
        ));
        parts.push(template(
            src,
            value,
            &format!("{path}.{name}"),
            &value.value,
            Escape::Form,
            vars,
        )?);
    }
    Ok(Template::concat(parts, Escape::Form))
}

/// Compiles a `multipart:` map: each field a text (template) or a file
/// `{file, filename, content_type}` read now, relative to the scenario's directory.
pub(crate) fn multipart(
    src: Source<'_>,
    node: &Node,
    path: &str,
    vars: Option<&[String]>,
) -> Result<Multipart, ScenarioError> {
    let Value::Object(fields) = &node.value else {
        return Err(src.of(
            node,
            path,
            format!(
                "expected a map of fields (name: text, or name: {{file: PATH}}), found {}",
                found(&node.value)
            ),
        ));
    };
    if fields.is_empty() {
        return Err(src.of(node, path, "expected at least one field"));
    }
    let boundary = format!("headroom-{:016x}", rand::random::<u64>());
    let mut pieces = Vec::new();
    let mut total = 0u64;
    for (name, value) in fields {
        let field = format!("{path}.{name}");
        if name.contains(['"', '\r', '\n']) {
            return Err(src.of(
                node,
                &field,
                "a field name cannot hold `\"` or a line break",
            ));
        }
        match value {
            Value::String(text) => {
                pieces.push(Piece::Text(Template::literal(
                    &format!(
                        "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n"
                    ),
                    Escape::None,
                )));
                let spanned = Spanned::new(text.clone(), node.referenced, node.defined);
                pieces.push(Piece::Text(template(
                    src,
                    &spanned,
                    &field,
                    text,
                    Escape::None,
                    vars,
                )?));
                pieces.push(Piece::Text(Template::literal("\r\n", Escape::None)));
            }
            Value::Object(file) => {
                let text = |key: &str| -> Result<Option<String>, ScenarioError> {
                    match file.get(key) {
                        None => Ok(None),
                        Some(Value::String(s)) if !s.contains(['"', '\r', '\n']) => {
                            Ok(Some(s.clone()))
                        }
                        Some(other) => Err(src.of(
                            node,
                            &format!("{field}.{key}"),
                            format!(
                                "expected text without quotes or line breaks, found {}",
                                found(other)
                            ),
                        )),
                    }
                };
                if let Some(key) = file
                    .keys()
                    .find(|k| !["file", "filename", "content_type"].contains(&k.as_str()))
                {
                    return Err(src.of(
                        node,
                        &format!("{field}.{key}"),
                        "unknown key: a file field has `file`, `filename` and `content_type`",
                    ));
                }
                let Some(rel) = text("file")? else {
                    return Err(src.of(
                        node,
                        &field,
                        "expected `file:` (a path relative to the scenario)",
                    ));
                };
                let bytes = read_upload(src, node, &format!("{field}.file"), &rel)?;
                total += bytes.len() as u64;
                if total > MAX_UPLOAD {
                    return Err(src.of(
                        node,
                        &field,
                        format!("the files of one body exceed {} MiB", MAX_UPLOAD >> 20),
                    ));
                }
                let filename = text("filename")?.unwrap_or_else(|| {
                    Path::new(&rel)
                        .file_name()
                        .map(|f| f.to_string_lossy().into_owned())
                        .unwrap_or_default()
                });
                let content_type =
                    text("content_type")?.unwrap_or_else(|| "application/octet-stream".to_string());
                pieces.push(Piece::Text(Template::literal(
                    &format!(
                        "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; \
                         filename=\"{filename}\"\r\nContent-Type: {content_type}\r\n\r\n"
                    ),
                    Escape::None,
                )));
                pieces.push(Piece::Bytes(bytes));
                pieces.push(Piece::Text(Template::literal("\r\n", Escape::None)));
            }
            other => {
                return Err(src.of(
                    node,
                    &field,
                    format!("expected text or {{file: PATH}}, found {}", found(other)),
                ))
            }
        }
    }
    pieces.push(Piece::Text(Template::literal(
        &format!("--{boundary}--\r\n"),
        Escape::None,
    )));
    Ok(Multipart { boundary, pieces })
}

/// Reads an uploaded file once, bounded by [`MAX_UPLOAD`].
fn read_upload(
    src: Source<'_>,
    node: &Node,
    path: &str,
    rel: &str,
) -> Result<Arc<[u8]>, ScenarioError> {
    use std::io::Read;
    let dir = Path::new(src.file).parent().unwrap_or(Path::new(""));
    let full = dir.join(rel);
    let shown = full.display();
    let file = std::fs::File::open(&full)
        .map_err(|e| src.of(node, path, format!("cannot read {shown}: {e}")))?;
    let mut bytes = Vec::new();
    file.take(MAX_UPLOAD + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| src.of(node, path, format!("cannot read {shown}: {e}")))?;
    if bytes.len() as u64 > MAX_UPLOAD {
        return Err(src.of(
            node,
            path,
            format!(
                "{shown} is larger than {} MiB, the most an upload may hold",
                MAX_UPLOAD >> 20
            ),
        ));
    }
    Ok(bytes.into())
}

/// Compiles a `check:` block into checks named `REQUEST.MATCHER` (`home.status`,
/// `home.body_contains`, `home.json $.user`, `home.duration`), interning each name
/// into `names` (the plan's check names).
pub(crate) fn checks(
    src: Source<'_>,
    spec: &Spanned<CheckSpec>,
    path: &str,
    request: &str,
    vars: Option<&[String]>,
    names: &mut Vec<String>,
) -> Result<Vec<Check>, ScenarioError> {
    let c = &spec.value;
    let mut out = Vec::new();
    let mut add = |matcher: &str, rule: CheckRule| {
        let name = format!("{request}.{matcher}");
        let id = match names.iter().position(|n| *n == name) {
            Some(i) => i,
            None => {
                names.push(name);
                names.len() - 1
            }
        };
        out.push(Check { id, rule });
    };
    if let Some(node) = &c.status {
        add(
            "status",
            CheckRule::Status(super::fields::status(src, node, &format!("{path}.status"))?),
        );
    }
    if let Some(text) = &c.body_contains {
        let t = template(
            src,
            text,
            &format!("{path}.body_contains"),
            &text.value,
            Escape::None,
            vars,
        )?;
        add("body_contains", CheckRule::BodyContains(t));
    }
    if let Some(q) = &c.json_path {
        let compiled = json_path(src, q, &format!("{path}.json_path"), &q.value)?;
        add(
            &format!("json {}", q.value),
            CheckRule::Json {
                path: compiled,
                equals: None,
            },
        );
    }
    for (query, value) in &c.json {
        let field = format!("{path}.json.{query}");
        let compiled = json_path(src, value, &field, query)?;
        let equals = expected(src, value, &field, vars)?;
        add(
            &format!("json {query}"),
            CheckRule::Json {
                path: compiled,
                equals: Some(equals),
            },
        );
    }
    if let Some(bound) = &c.duration {
        let field = format!("{path}.duration");
        let text = bound.value.trim();
        let Some(limit) = text.strip_prefix('<') else {
            return Err(src.of(
                bound,
                &field,
                format!("expected a bound such as <500ms, found {:?}", bound.value),
            ));
        };
        let d =
            super::duration::parse_duration(limit.trim()).map_err(|e| src.of(bound, &field, e))?;
        add("duration", CheckRule::Duration(d));
    }
    if out.is_empty() {
        return Err(src.of(
            spec,
            path,
            "expected at least one of `status`, `body_contains`, `json_path`, `json`, `duration`",
        ));
    }
    Ok(out)
}

/// An expected JSON value: a string with placeholders becomes a template.
pub(crate) fn expected(
    src: Source<'_>,
    value: &Node,
    path: &str,
    vars: Option<&[String]>,
) -> Result<Expected, ScenarioError> {
    match &value.value {
        Value::String(s) if s.contains("{{") => {
            let spanned = Spanned::new(s.clone(), value.referenced, value.defined);
            Ok(Expected::Template(template(
                src,
                &spanned,
                path,
                s,
                Escape::None,
                vars,
            )?))
        }
        other => Ok(Expected::Value(other.clone())),
    }
}
