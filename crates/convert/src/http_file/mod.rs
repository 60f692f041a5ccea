//! A `.http` file (JetBrains HTTP Client / VS Code REST Client) as a scenario: every
//! request becomes a step of one flow named after the file, in file order, against
//! the origin of the first request.
//!
//! File variables (`@host = …`, which may refer to earlier ones) and the caller's
//! environment variables are written in place; `{{login.response.body.$.token}}` and
//! `{{login.response.headers.X-Token}}` become a capture on the request named `login`
//! and a reference to it; JetBrains response handlers (`> {% client.global.set("t",
//! response.body.token); %}`, parsed with oxc) become captures; system variables
//! become template functions. The report has one item per request and one per
//! construct that is not translated as it is.
//!
//! Bounds: the input ([`crate::MAX_INPUT`]), the requests ([`crate::MAX_ITEMS`]), a
//! body include ([`MAX_INCLUDE`] bytes, read only inside [`Options::base_dir`]),
//! variable expansion, and the handler scripts (as Postman's, on the same big stack).

mod handler;
mod parse;
mod refs;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::locate::Lines;
use crate::tpl::identifier;
use crate::{ConvertError, Converted, Outcome, Report, Source, Yaml, MAX_ITEMS};
use refs::Refs;

/// The largest body include read, bytes.
pub const MAX_INCLUDE: u64 = 1 << 20;

/// What the caller found beside the file.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The directory `< ./body.json` includes are read from (the .http file's own);
    /// None: an include is left out.
    pub base_dir: Option<std::path::PathBuf>,
    /// `--env NAME`: the environment of http-client.env.json / settings to use, when
    /// the caller found one (its variables, already read: name → value).
    pub env_vars: BTreeMap<String, String>,
}

/// Converts `source`.
pub fn convert(source: Source<'_>, options: &Options) -> Result<Converted, ConvertError> {
    source.check_size()?;
    crate::postman::on_big_stack(source, || convert_here(source, options))
}

fn convert_here(source: Source<'_>, options: &Options) -> Result<Converted, ConvertError> {
    let parsed = parse::parse(source.text, MAX_ITEMS)
        .map_err(|at| source.limit(at, "more requests than", MAX_ITEMS))?;
    if parsed.requests.is_empty() {
        return Err(source.unusable(0, "no request in the file (a line `METHOD URL`)"));
    }
    let mut report = Report::new(source.file, "requests");
    let mut refs = Refs::new(&parsed.variables, &options.env_vars);
    let mut steps: Vec<Yaml> = Vec::new();
    let mut step_of: BTreeMap<String, usize> = BTreeMap::new();
    let mut target: Option<String> = None;
    // One index of the text locates every report item.
    let lines = Lines::new(source.text);
    let note = |report: &mut Report, at: usize, construct: &str, outcome: Outcome| {
        let (line, column) = lines.line_column(at);
        report.push(line, column, construct, outcome);
    };
    for raw in &parsed.requests {
        let mut notes = Vec::new();
        let url = refs.translate(&raw.url, &mut notes).map_err(|_| {
            source.limit(
                raw.at,
                "variables expanding to more bytes than",
                refs::MAX_EXPANSION,
            )
        })?;
        let host = raw
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("host"))
            .map(|(_, v)| v.clone());
        let Some((origin, path)) = split(&url, host.as_deref()) else {
            note(
                &mut report,
                raw.at,
                &format!("{} {}", raw.method, raw.url),
                Outcome::LeftOut("no absolute http:// or https:// URL (nor a Host header)".into()),
            );
            continue;
        };
        let target = target.get_or_insert_with(|| origin.clone());
        let display = format!("{} {}", raw.method, path.split('?').next().unwrap_or("/"));
        if origin != *target {
            note(
                &mut report,
                raw.at,
                &display,
                Outcome::LeftOut(format!(
                    "a request to {origin}, another origin than the target {target}"
                )),
            );
            continue;
        }
        let name = raw.name.clone().unwrap_or_else(|| display.clone());
        let mut request = Yaml::map()
            .with("name", name.as_str())
            .with("method", raw.method.as_str())
            .with("path", path.as_str());
        let mut headers = Yaml::map();
        for (n, v) in &raw.headers {
            if n.eq_ignore_ascii_case("host") {
                continue;
            }
            let v = refs.translate(v, &mut notes).map_err(|_| {
                source.limit(
                    raw.at,
                    "variables expanding to more bytes than",
                    refs::MAX_EXPANSION,
                )
            })?;
            headers.set(n, v);
        }
        let content_type = raw
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            .map(|(_, v)| v.to_ascii_lowercase())
            .unwrap_or_default();
        let body = body(raw, options.base_dir.as_deref(), &mut notes);
        if let Some((text, templated)) = body {
            let key_value = body_yaml(&text, templated, &content_type, &mut refs, &mut notes)
                .map_err(|_| {
                    source.limit(
                        raw.at,
                        "variables expanding to more bytes than",
                        refs::MAX_EXPANSION,
                    )
                })?;
            if key_value.0 == "form" {
                if let Yaml::Map(entries) = &mut headers {
                    entries.retain(|(k, _)| !k.eq_ignore_ascii_case("content-type"));
                }
            }
            if !matches!(&headers, Yaml::Map(e) if e.is_empty()) {
                request.set("headers", headers);
            }
            request.set(&key_value.0, key_value.1);
        } else if !matches!(&headers, Yaml::Map(e) if e.is_empty()) {
            request.set("headers", headers);
        }
        if raw.no_redirect {
            request.set("redirects", 0i64);
        }
        if let Some(at) = raw.no_cookie_jar {
            notes.push((at, "@no-cookie-jar".into(), Outcome::LeftOut("the cookie jar is per user for every request: client: {cookies: false} turns it off for all".into())));
        }
        note(&mut report, raw.at, &name, Outcome::Translated);
        // References to earlier named requests become captures on them.
        for (named, var, from) in refs.take_captures() {
            if let Some(&j) = step_of.get(&named) {
                let step: &mut Yaml = &mut steps[j];
                if step.get("capture").is_none() {
                    step.set("capture", Yaml::map());
                }
                if let Some(c) = step.get_mut("capture") {
                    c.set(&var, from);
                }
            }
        }
        let mut step = Yaml::map().with("request", request);
        let mut capture = Yaml::map();
        for (at, script) in &raw.handlers {
            for (offset, construct, outcome, cap) in handler::translate(script) {
                if let Some((var, from)) = cap {
                    capture.set(&identifier(&var), from);
                    refs.captured.insert(var);
                }
                notes.push((at + offset, construct, outcome));
            }
        }
        if !matches!(&capture, Yaml::Map(e) if e.is_empty()) {
            step.set("capture", capture);
        }
        for (at, text, why) in &raw.other {
            notes.push((*at, text.clone(), Outcome::LeftOut(why.clone())));
        }
        for (at, construct, outcome) in notes {
            note(
                &mut report,
                if at == usize::MAX { raw.at } else { at },
                &construct,
                outcome,
            );
        }
        if let Some(n) = &raw.name {
            step_of.insert(n.clone(), steps.len());
        }
        refs.named.insert(name.clone());
        steps.push(step);
    }
    for (at, construct, outcome) in refs.unresolved() {
        note(&mut report, at.unwrap_or(0), &construct, outcome);
    }
    let Some(target) = target.filter(|_| !steps.is_empty()) else {
        return Err(source.unusable(0, "no request could be converted"));
    };
    let stem = Path::new(source.file)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("http")
        .to_string();
    let doc = Yaml::map()
        .with("name", stem.as_str())
        .with("target", target.as_str())
        .with(
            "load",
            Yaml::map().with("rate", 1i64).with("duration", "10s"),
        )
        .with(
            "flows",
            Yaml::Seq(vec![Yaml::map()
                .with("name", stem.as_str())
                .with("steps", Yaml::Seq(steps))]),
        );
    report.items.sort_by_key(|i| (i.line, i.column));
    let mut comments = vec![format!(
        "Made by `headroom convert http` from {}; set the load before a real run.",
        source.file
    )];
    if !refs.undefined.is_empty() {
        let names: Vec<String> = refs.undefined.values().cloned().collect();
        comments.push(format!(
            "Defined nowhere, read from the environment when the scenario loads: {}",
            names.join(", ")
        ));
    }
    Ok(Converted {
        yaml: doc.document(&comments),
        report,
    })
}

/// The origin and the path (`/` at least) of a translated URL; a relative one takes
/// its host from the `Host` header.
fn split(url: &str, host: Option<&str>) -> Option<(String, String)> {
    let lower = url.to_ascii_lowercase();
    let (scheme, rest) = if lower.starts_with("https://") {
        ("https", &url[8..])
    } else if lower.starts_with("http://") {
        ("http", &url[7..])
    } else if url.starts_with('/') {
        let host = host?.trim();
        return (!host.is_empty() && !host.contains("{{"))
            .then(|| (format!("http://{host}"), url.to_string()));
    } else {
        return None;
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    if authority.is_empty() || authority.contains("{{") {
        return None;
    }
    let path = rest[end..].split('#').next().unwrap_or_default();
    let path = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    };
    Some((format!("{scheme}://{authority}"), path))
}

/// The body text (includes read), and whether its variables are substituted.
fn body(
    raw: &parse::Raw,
    base: Option<&Path>,
    notes: &mut Vec<refs::Note>,
) -> Option<(String, bool)> {
    if raw.body.is_empty() {
        return None;
    }
    let mut text = String::new();
    let mut templated = true;
    for (i, (at, line)) in raw.body.iter().enumerate() {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix('<') {
            let (processed, path) = match rest.strip_prefix('@') {
                Some(p) => (true, p.trim()),
                None => (false, rest.trim()),
            };
            match include(base, path) {
                Ok(content) => {
                    if !processed {
                        templated = raw.body.len() > 1 && templated;
                        if raw.body.len() == 1 {
                            return Some((content, false));
                        }
                    }
                    text.push_str(&content);
                }
                Err(why) => {
                    notes.push((*at, format!("< {path}"), Outcome::LeftOut(why.to_string())))
                }
            }
        } else {
            text.push_str(line);
        }
        if i + 1 < raw.body.len() {
            text.push('\n');
        }
    }
    Some((text, templated))
}

/// Why an include (`< ./body.json`) is not sent: the report's reason.
#[derive(Debug, thiserror::Error)]
enum IncludeError {
    /// The input came from standard input: there is no directory to read from.
    #[error("no directory to read includes from: not sent")]
    NoBase,
    /// Absolute, or climbing out with `..`.
    #[error("{0} is not a path inside the file's directory: refused")]
    Outside(String),
    /// It resolves (through a link) outside the directory, or is not a file.
    #[error("{0} is not a file inside the file's directory: refused")]
    NotAFileInside(String),
    /// It cannot be read.
    #[error("{path}: {source}")]
    Read {
        /// The path as written.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Larger than [`MAX_INCLUDE`].
    #[error("{0} is larger than {MAX_INCLUDE} bytes: not sent")]
    TooLarge(String),
    /// Not UTF-8.
    #[error("{0} is not UTF-8 text: not sent")]
    NotText(String),
}

/// Reads an include: a relative path inside `base`, at most [`MAX_INCLUDE`] bytes of
/// UTF-8.
fn include(base: Option<&Path>, path: &str) -> Result<String, IncludeError> {
    use std::io::Read;
    let base = base.ok_or(IncludeError::NoBase)?;
    let read = |source: std::io::Error| IncludeError::Read {
        path: path.to_string(),
        source,
    };
    let relative = PathBuf::from(path);
    if relative.is_absolute()
        || relative.components().any(|c| {
            !matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        })
    {
        return Err(IncludeError::Outside(path.to_string()));
    }
    let base = base.canonicalize().map_err(|source| IncludeError::Read {
        path: base.display().to_string(),
        source,
    })?;
    let full = base.join(&relative).canonicalize().map_err(read)?;
    // A symbolic link may still lead out of the directory.
    if !full.starts_with(&base) || !full.is_file() {
        return Err(IncludeError::NotAFileInside(path.to_string()));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&full)
        .map_err(read)?
        .take(MAX_INCLUDE + 1)
        .read_to_end(&mut bytes)
        .map_err(read)?;
    if bytes.len() as u64 > MAX_INCLUDE {
        return Err(IncludeError::TooLarge(path.to_string()));
    }
    String::from_utf8(bytes).map_err(|_| IncludeError::NotText(path.to_string()))
}

/// The body as `json:` (JSON content), `form:` (urlencoded) or `body:`.
fn body_yaml(
    text: &str,
    templated: bool,
    content_type: &str,
    refs: &mut Refs,
    notes: &mut Vec<refs::Note>,
) -> Result<(String, Yaml), refs::Overflow> {
    let tr =
        |s: &str, refs: &mut Refs, notes: &mut Vec<refs::Note>| -> Result<String, refs::Overflow> {
            if templated {
                refs.translate(s, notes)
            } else {
                Ok(crate::tpl::escape(s))
            }
        };
    if content_type.contains("json") {
        if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
            return Ok((
                "json".into(),
                json_yaml(&value, &mut |s| tr(s, refs, notes))?,
            ));
        }
    }
    if content_type.contains("x-www-form-urlencoded") {
        let mut form = Yaml::map();
        let joined: String = text.lines().map(str::trim).collect();
        for pair in joined.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            form.set(&decode(k), tr(&decode(v), refs, notes)?);
        }
        return Ok(("form".into(), form));
    }
    Ok(("body".into(), Yaml::Str(tr(text, refs, notes)?)))
}

/// A JSON value with its string values translated.
fn json_yaml(
    value: &serde_json::Value,
    tr: &mut dyn FnMut(&str) -> Result<String, refs::Overflow>,
) -> Result<Yaml, refs::Overflow> {
    use serde_json::Value;
    Ok(match value {
        Value::String(s) => Yaml::Str(tr(s)?),
        Value::Array(a) => Yaml::Seq(
            a.iter()
                .map(|v| json_yaml(v, tr))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(o) => {
            let mut out = Vec::with_capacity(o.len());
            for (k, v) in o {
                out.push((k.clone(), json_yaml(v, tr)?));
            }
            Yaml::Map(out)
        }
        other => Yaml::from_json(other),
    })
}

/// Percent-decoding (`+` is a space), as a form field is read.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match u8::from_str_radix(text.get(i + 1..i + 3).unwrap_or("zz"), 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
