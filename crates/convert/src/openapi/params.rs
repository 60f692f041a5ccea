//! Parameters: the path item's and the operation's (the operation's win by name and
//! place), each given a value ([`Gen`]) and written where it goes with its `style`
//! and `explode` (OpenAPI's defaults: `simple` in paths and headers, `form` with
//! `explode` in queries and cookies). Path parameters are substituted into the path,
//! query parameters that are required or have an example go into the query string,
//! headers become headers, cookies one `Cookie` header.

use super::node::Node;
use super::refs::{Doc, Problem};
use super::sample::{Gen, Origin, Val};
use super::text::{render, scalar, Enc, Piece};

/// What parameters and security add to a request.
#[derive(Debug, Default)]
pub(crate) struct Parts {
    /// The path, parameters substituted, as template text.
    pub(crate) path: String,
    /// Query string pairs, encoded (`name=value`).
    pub(crate) query: Vec<String>,
    /// Headers (name, template text).
    pub(crate) headers: Vec<(String, String)>,
    /// Cookies, encoded (`name=value`).
    pub(crate) cookies: Vec<String>,
    /// What was approximated.
    pub(crate) notes: Vec<String>,
}

/// Headers a parameter may not set: OpenAPI says they are ignored (the body and the
/// security scheme set them).
const IGNORED_HEADERS: &[&str] = &["accept", "content-type", "authorization"];

/// Fills `parts` from the parameters of `path_item` and `op` for `template` (the
/// document's path, `{name}` placeholders and all).
pub(crate) fn apply<'a>(
    doc: &Doc<'a>,
    template: &str,
    path_item: &'a Node,
    op: &'a Node,
    parts: &mut Parts,
) -> Result<(), Problem> {
    let mut params: Vec<&'a Node> = Vec::new();
    for list in [path_item.get("parameters"), op.get("parameters")]
        .into_iter()
        .flatten()
    {
        for p in list.items() {
            let p = doc.resolve(p)?.node;
            let key = (p.str_of("name"), p.str_of("in"));
            params.retain(|q| (q.str_of("name"), q.str_of("in")) != key);
            params.push(p);
        }
    }
    let mut path_values: Vec<(String, Vec<Piece>)> = Vec::new();
    for p in params {
        let (Some(name), Some(place)) = (p.str_of("name"), p.str_of("in")) else {
            return Err(Problem::new(p.at, "a parameter without `name` or `in`"));
        };
        let required = p.flag("required") || place == "path";
        if !required && !has_example(doc, p) {
            continue;
        }
        if place == "header" && IGNORED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            continue;
        }
        if place == "header" && !is_token(name) {
            parts.notes.push(format!(
                "header parameter {name:?} left out: not a valid header name"
            ));
            continue;
        }
        let (value, origin) = match value(doc, p) {
            Ok(v) => v,
            Err(problem) if !required && problem.remote => {
                parts.notes.push(format!(
                    "{place} parameter `{name}` left out: {}",
                    problem.message
                ));
                continue;
            }
            Err(problem) => {
                return Err(Problem {
                    message: format!(
                        "required {place} parameter `{name}` has no usable value: {}",
                        problem.message
                    ),
                    ..problem
                })
            }
        };
        if origin == Origin::Generated {
            parts.notes.push(format!(
                "{place} parameter `{name}` generated from its schema"
            ));
        }
        let style = p.str_of("style");
        let explode = p.get("explode").and_then(|e| match e.value {
            super::node::Value::Bool(b) => Some(b),
            _ => None,
        });
        match place {
            "path" => path_values.push((
                name.to_string(),
                path_style(name, &value, style, explode.unwrap_or(false)),
            )),
            "query" => {
                let style = style.unwrap_or("form");
                if matches!(style, "form" | "deepObject") || !matches!(value, Val::Seq(_)) {
                    parts
                        .query
                        .extend(form(name, &value, style, explode.unwrap_or(true)));
                } else {
                    let sep = if style == "pipeDelimited" { "|" } else { "%20" };
                    let mut pieces = vec![Piece::Lit(name.to_string()), Piece::Raw("=")];
                    pieces.extend(joined(&value, sep));
                    parts.query.push(render(&pieces, Enc::Url));
                }
            }
            "header" => {
                let pieces = path_style(name, &value, Some("simple"), explode.unwrap_or(false));
                parts
                    .headers
                    .push((name.to_string(), render(&pieces, Enc::Plain)));
            }
            "cookie" => {
                let mut pieces = vec![Piece::Lit(name.to_string()), Piece::Raw("=")];
                pieces.extend(joined(&value, ","));
                parts.cookies.push(render(&pieces, Enc::Url));
            }
            other => parts.notes.push(format!(
                "parameter `{name}` in `{other}` is not a place OpenAPI knows; left out"
            )),
        }
    }
    parts.path = substitute(template, &path_values, &mut parts.notes);
    Ok(())
}

/// Whether a parameter (or its content, or its schema) gives an example.
fn has_example<'a>(doc: &Doc<'a>, p: &'a Node) -> bool {
    let holder_has = |n: &Node| n.get("example").is_some() || n.get("examples").is_some();
    if holder_has(p) {
        return true;
    }
    if let Some(media) = p.get("content").and_then(|c| c.entries().first()) {
        if holder_has(&media.value) {
            return true;
        }
    }
    p.get("schema")
        .and_then(|s| doc.resolve(s).ok())
        .is_some_and(|s| holder_has(s.node))
}

/// A parameter's value: from `schema`, or from `content` (its first media type, sent
/// as JSON text).
fn value<'a>(doc: &Doc<'a>, p: &'a Node) -> Result<(Val, Origin), Problem> {
    let mut gen = Gen::new(doc);
    if let Some(media) = p.get("content").and_then(|c| c.entries().first()) {
        let media = &media.value;
        // The parameter's own example first, then the media type's, then its schema.
        let holder = match p.get("example").is_some() || p.get("examples").is_some() {
            true => p,
            false => media,
        };
        let (v, origin) = gen.value_of(holder, media.get("schema"))?;
        return Ok((Val::Str(super::text::json_text(&v)), origin));
    }
    gen.value_of(p, p.get("schema"))
}

/// `simple` (and `label`, `matrix`) serialization of a path or header value.
fn path_style(name: &str, v: &Val, style: Option<&str>, explode: bool) -> Vec<Piece> {
    let mut out = Vec::new();
    let (prefix, sep): (&[Piece], &'static str) = match style {
        Some("label") => (&[Piece::Raw(".")], if explode { "." } else { "," }),
        Some("matrix") => (&[], if explode { ";" } else { "," }),
        _ => (&[], ","),
    };
    out.extend_from_slice(prefix);
    if style == Some("matrix") {
        out.push(Piece::Raw(";"));
        if !(explode && matches!(v, Val::Map(_))) {
            out.push(Piece::Lit(name.to_string()));
            out.push(Piece::Raw("="));
        }
    }
    match v {
        Val::Map(entries) => {
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(Piece::Raw(sep));
                }
                out.push(Piece::Lit(k.clone()));
                out.push(Piece::Raw(if explode { "=" } else { "," }));
                out.push(scalar(v));
            }
        }
        _ => out.extend(joined(v, sep)),
    }
    out
}

/// An array's items joined by `sep`; a scalar alone.
fn joined(v: &Val, sep: &'static str) -> Vec<Piece> {
    match v {
        Val::Seq(items) => {
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(Piece::Raw(sep));
                }
                out.push(scalar(item));
            }
            out
        }
        other => vec![scalar(other)],
    }
}

/// `form` (and `deepObject`) serialization into query pairs.
fn form(name: &str, v: &Val, style: &str, explode: bool) -> Vec<String> {
    let pair = |key: Vec<Piece>, value: Vec<Piece>| {
        let mut pieces = key;
        pieces.push(Piece::Raw("="));
        pieces.extend(value);
        render(&pieces, Enc::Url)
    };
    let lit = |s: &str| vec![Piece::Lit(s.to_string())];
    match v {
        Val::Map(entries) if style == "deepObject" => entries
            .iter()
            .map(|(k, v)| {
                pair(
                    vec![
                        Piece::Lit(name.into()),
                        Piece::Raw("%5B"),
                        Piece::Lit(k.clone()),
                        Piece::Raw("%5D"),
                    ],
                    vec![scalar(v)],
                )
            })
            .collect(),
        Val::Map(entries) if explode => entries
            .iter()
            .map(|(k, v)| pair(lit(k), vec![scalar(v)]))
            .collect(),
        Val::Map(_) => vec![pair(lit(name), path_style(name, v, None, false))],
        Val::Seq(items) if explode => items
            .iter()
            .map(|i| pair(lit(name), vec![scalar(i)]))
            .collect(),
        other => vec![pair(lit(name), joined(other, ","))],
    }
}

/// The path with each `{name}` replaced (the document's text percent-encoded where a
/// path may not hold it); an undeclared one gets `1`, noted.
fn substitute(template: &str, values: &[(String, Vec<Piece>)], notes: &mut Vec<String>) -> String {
    let mut pieces = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            break;
        };
        if rest[open..].starts_with("{{") {
            // Not a parameter: text, escaped with the text before it.
            pieces.push(render(
                &[Piece::Lit(rest[..open + 2].to_string())],
                Enc::Path,
            ));
            rest = &rest[open + 2..];
            continue;
        }
        let name = &rest[open + 1..close];
        pieces.push(render(&[Piece::Lit(rest[..open].to_string())], Enc::Path));
        match values.iter().find(|(n, _)| n == name) {
            Some((_, value)) => pieces.push(render(value, Enc::Url)),
            None => {
                notes.push(format!(
                    "path parameter `{name}` is not declared; 1 is sent"
                ));
                pieces.push("1".to_string());
            }
        }
        rest = &rest[close + 1..];
    }
    pieces.push(render(&[Piece::Lit(rest.to_string())], Enc::Path));
    pieces.concat()
}

/// Whether `name` is an HTTP header name (RFC 9110 token).
pub(crate) fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}
