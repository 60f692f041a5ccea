//! An OpenAPI 3.0/3.1 document (YAML or JSON) as a scenario: one request per
//! operation, equal weights, against the first server's URL.
//!
//! Each request is named by the operation's `operationId` (else `METHOD /path`) and
//! carries what a client must send: path parameters substituted, required query
//! parameters (and those with examples), headers and cookies, the body (the
//! document's example, else one generated from the schema), the credentials of its
//! security requirement from environment variables, and `expect: {status}` for the
//! documented success statuses. The report has one line per operation kept:
//! translated, approximated (with what was generated or guessed) or left out (with
//! why, and where).
//!
//! Bounds: the input size ([`crate::MAX_INPUT`]), nesting and `$ref` chains
//! ([`crate::MAX_DEPTH`]), 2,000,000 values in the document (YAML aliases expanded
//! included), operations kept ([`crate::MAX_ITEMS`]), each generated value (64 KiB of
//! JSON, 100,000 schema steps) and all of them (20,000,000 steps). Nothing outside the
//! document is read: a `$ref` to another file or a URL is reported, never fetched.
//!
//! Secrets are never written into the scenario: a credential is `{{ env.NAME }}`,
//! `NAME` the security scheme's name in SCREAMING_SNAKE_CASE, listed in a comment at
//! the top (an unset variable is an error when the scenario loads).

mod body;
mod formats;
mod json;
mod node;
mod params;
mod read;
mod refs;
mod sample;
mod security;
mod text;
mod val;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_hostile;
#[cfg(test)]
mod tests_limits;
#[cfg(test)]
mod tests_values;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use self::node::{Node, Value};
use self::params::Parts;
use self::refs::{Doc, Problem};
use crate::locate::Lines as Locator;
use crate::{ConvertError, Converted, Outcome, Report, Source, Yaml, MAX_ITEMS};

/// What the command line adds to a conversion.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--operations GLOB` (repeatable): keep the operations whose operationId or
    /// `METHOD /path` (e.g. `GET /pets/{petId}`) matches one glob; empty keeps all.
    pub operations: Vec<String>,
    /// `--server URL`: the target instead of the document's first server.
    pub server: Option<String>,
}

/// The operations of a path item, in the order OpenAPI lists them.
const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Converts the OpenAPI document `source`.
pub fn convert(source: Source<'_>, options: &Options) -> Result<Converted, ConvertError> {
    source.check_size()?;
    let root = read::parse(&source)?;
    check_version(&source, &root)?;
    let globs = globs(&source, &options.operations)?;
    let doc = Doc::new(&root, source);
    let target = target(&doc, options)?;
    let lines = Locator::new(source.text);
    let mut report = Report::new(source.file, "operations");
    let mut requests: Vec<Built> = Vec::new();
    let mut first_problem: Option<Problem> = None;
    let mut kept = 0usize;
    let paths = root.get("paths").map_or(&[][..], Node::entries);
    for path in paths {
        let template = path.key.as_str();
        // `x-…` keys are extensions, not paths.
        if template.starts_with("x-") {
            continue;
        }
        let item = doc.resolve(&path.value);
        if let (Err(problem), None) = (&item, &globs) {
            // A path item elsewhere: its operations are unknown, the path is reported.
            kept += 1;
            let (line, column) = lines.line_column(path.at);
            report.push(
                line,
                column,
                template,
                Outcome::LeftOut(problem.located(&lines)),
            );
            first_problem.get_or_insert(problem.clone());
            continue;
        }
        for (method, op) in operations(item.as_ref().map_or(&[][..], |i| i.node.entries())) {
            let label = format!("{} {template}", method.to_ascii_uppercase());
            let id = op.value.str_of("operationId");
            if let Some(globs) = &globs {
                if !globs.is_match(&label) && !id.is_some_and(|id| globs.is_match(id)) {
                    continue;
                }
            }
            kept += 1;
            if kept > MAX_ITEMS {
                return Err(source.limit(op.at, "more operations than", MAX_ITEMS));
            }
            let (line, column) = lines.line_column(op.at);
            let built = item
                .clone()
                .and_then(|item| operation(&doc, template, item.node, method, &op.value));
            match built {
                Ok(built) => {
                    let outcome = match built.notes.is_empty() {
                        true => Outcome::Translated,
                        false => Outcome::Approximated(built.notes.join("; ")),
                    };
                    report.push(line, column, label, outcome);
                    requests.push(built);
                }
                Err(problem) => {
                    report.push(
                        line,
                        column,
                        label,
                        Outcome::LeftOut(problem.located(&lines)),
                    );
                    first_problem.get_or_insert(problem);
                }
            }
        }
    }
    if kept == 0 {
        let at = root.entry("paths").map_or(0, |p| p.at);
        let message = match globs {
            Some(_) => format!(
                "no operation matches --operations {}",
                options.operations.join(", ")
            ),
            None => "the document has no operation under `paths`".to_string(),
        };
        return Err(source.unusable(at, message));
    }
    if requests.is_empty() {
        let problem = first_problem.unwrap_or_else(|| Problem::new(0, "nothing to send"));
        return Err(source.unusable(
            problem.at,
            format!(
                "no operation could be converted; the first: {}",
                problem.message
            ),
        ));
    }
    let yaml = scenario(&doc, &target, requests);
    Ok(Converted { yaml, report })
}

/// The operations of a path item's entries.
fn operations(entries: &[node::Entry]) -> impl Iterator<Item = (&'static str, &node::Entry)> {
    entries.iter().filter_map(|e| {
        METHODS
            .iter()
            .find(|m| e.key.eq_ignore_ascii_case(m))
            .map(|m| (*m, e))
    })
}

/// Refuses what is not an OpenAPI 3 document, saying what it is.
fn check_version(source: &Source<'_>, root: &Node) -> Result<(), ConvertError> {
    if !root.is_map() {
        return Err(source.unusable(
            root.at,
            "not an OpenAPI document: expected a mapping with `openapi: 3.x`",
        ));
    }
    if let Some(swagger) = root.entry("swagger") {
        return Err(source.unusable(
            swagger.at,
            "a Swagger 2.0 document: only OpenAPI 3.0 and 3.1 are read (convert it to OpenAPI 3 first, e.g. with swagger2openapi)",
        ));
    }
    let Some(version) = root.entry("openapi") else {
        return Err(source.unusable(
            root.at,
            "not an OpenAPI document: no `openapi:` version (3.0 and 3.1 are read)",
        ));
    };
    let text = match &version.value.value {
        Value::Str(s) => s.clone(),
        // `openapi: 3.0` unquoted is a number in YAML.
        Value::Float(f) => f.to_string(),
        Value::Int(i) => i.to_string(),
        _ => String::new(),
    };
    if !(text == "3" || text.starts_with("3.")) {
        return Err(source.unusable(
            version.value.at,
            format!("`openapi: {text}`: only OpenAPI 3.0 and 3.1 are read"),
        ));
    }
    Ok(())
}

/// The `--operations` globs (`None` keeps every operation).
fn globs(source: &Source<'_>, patterns: &[String]) -> Result<Option<GlobSet>, ConvertError> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        // `*` crosses `/`, so `GET /pets*` takes `GET /pets/{petId}` too; braces
        // are the path's own (`{petId}`), not glob alternatives.
        let literal_braces = pattern.replace('{', "[{]").replace('}', "[}]");
        let glob = GlobBuilder::new(&literal_braces)
            .case_insensitive(true)
            .literal_separator(false)
            .build()
            .map_err(|e| source.unusable(0, format!("--operations {pattern:?}: {e}")))?;
        set.add(glob);
    }
    set.build()
        .map(Some)
        .map_err(|e| source.unusable(0, format!("--operations: {e}")))
}

/// The target: `--server`, else the first server's URL with its variables' defaults.
fn target(doc: &Doc<'_>, options: &Options) -> Result<String, ConvertError> {
    let absolute = |url: &str| url.starts_with("http://") || url.starts_with("https://");
    if let Some(server) = &options.server {
        if !absolute(server) {
            return Err(doc.source.unusable(
                0,
                format!("--server {server:?}: expected an absolute http:// or https:// URL"),
            ));
        }
        return Ok(server.trim_end_matches('/').to_string());
    }
    let servers = doc.root.entry("servers");
    let Some(first) = servers.and_then(|s| s.value.items().first()) else {
        let at = servers.map_or(0, |s| s.at);
        return Err(doc.source.unusable(
            at,
            "the document names no server: give the target with --server URL",
        ));
    };
    let Some(url) = first.str_of("url") else {
        return Err(doc.source.unusable(
            first.at,
            "the first server has no `url`: give the target with --server URL",
        ));
    };
    let mut resolved = String::new();
    let mut rest = url;
    while let Some(open) = rest.find('{') {
        // An unclosed `{` is text (and the URL check below refuses what it makes).
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            break;
        };
        resolved.push_str(&rest[..open]);
        let name = &rest[open + 1..close];
        let default = first
            .get("variables")
            .and_then(|v| v.get(name))
            .and_then(|v| v.str_of("default"))
            .ok_or_else(|| {
                doc.source.unusable(
                    first.at,
                    format!("server variable `{name}` has no default: give the target with --server URL"),
                )
            })?;
        resolved.push_str(default);
        rest = &rest[close + 1..];
    }
    resolved.push_str(rest);
    if !absolute(&resolved) {
        let at = first.get("url").map_or(first.at, |u| u.at);
        return Err(doc.source.unusable(
            at,
            format!("the first server's URL {resolved:?} is relative: give the target with --server URL (e.g. --server http://127.0.0.1:8080{})",
                if resolved.starts_with('/') { resolved.as_str() } else { "" }),
        ));
    }
    Ok(resolved.trim_end_matches('/').to_string())
}

/// One operation as a request.
struct Built {
    request: Yaml,
    /// Headers of its security requirement, apart so that the scenario can move
    /// them to `defaults.headers` when every request sends the same.
    auth: Vec<(String, String)>,
    env: Vec<String>,
    notes: Vec<String>,
}

fn operation<'a>(
    doc: &Doc<'a>,
    template: &str,
    item: &'a Node,
    method: &str,
    op: &'a Node,
) -> Result<Built, Problem> {
    let mut parts = Parts::default();
    params::apply(doc, template, item, op, &mut parts)?;
    let mut auth = Parts::default();
    let env = security::apply(doc, op, &mut auth)?;
    parts.query.append(&mut auth.query);
    parts.cookies.append(&mut auth.cookies);
    parts.notes.append(&mut auth.notes);
    let body = body::body(doc, op, &mut parts.notes)?;
    if op.get("servers").is_some() || item.get("servers").is_some() {
        parts
            .notes
            .push("its own `servers` are not used: every request goes to the target".into());
    }
    let name = op.str_of("operationId").map_or_else(
        || format!("{} {template}", method.to_ascii_uppercase()),
        str::to_string,
    );
    let mut path = parts.path.clone();
    if !parts.query.is_empty() {
        path.push(if path.contains('?') { '&' } else { '?' });
        path.push_str(&parts.query.join("&"));
    }
    let mut request = Yaml::map()
        .with("name", name)
        .with("method", method.to_ascii_uppercase())
        .with("path", path);
    let mut headers = Yaml::map();
    for (k, v) in &parts.headers {
        headers.set(k, v.as_str());
    }
    if !parts.cookies.is_empty() {
        headers.set("Cookie", parts.cookies.join("; "));
    }
    if let Some(t) = body.as_ref().and_then(|b| b.content_type.as_ref()) {
        headers.set("Content-Type", text::escape_braces(t));
    }
    if headers != Yaml::map() {
        request.set("headers", headers);
    }
    if let Some(body) = body {
        request.set(body.key, body.value);
    }
    if let Some(status) = expect(op) {
        request.set("expect", Yaml::map().with("status", status));
    }
    Ok(Built {
        request,
        auth: auth.headers,
        env,
        notes: parts.notes,
    })
}

/// The documented success statuses: every 2xx code (one, or a list), else `2xx` for a
/// `2XX` range; nothing (the default check: below 400) for `default` alone.
fn expect(op: &Node) -> Option<Yaml> {
    let responses = op.get("responses")?.entries();
    let mut codes: Vec<i64> = responses
        .iter()
        .filter_map(|r| r.key.parse::<i64>().ok())
        .filter(|c| (200..300).contains(c))
        .collect();
    codes.sort_unstable();
    codes.dedup();
    if responses.iter().any(|r| r.key.eq_ignore_ascii_case("2XX")) {
        return Some(Yaml::str("2xx"));
    }
    match codes.as_slice() {
        [] => None,
        [one] => Some(Yaml::Int(*one)),
        many => Some(Yaml::Seq(many.iter().map(|c| Yaml::Int(*c)).collect())),
    }
}

/// The scenario text: comments, name, target, a placeholder load, shared
/// credentials, the requests.
fn scenario(doc: &Doc<'_>, target: &str, mut requests: Vec<Built>) -> String {
    let info = doc.root.get("info");
    let title = info
        .and_then(|i| i.str_of("title"))
        .unwrap_or(doc.source.file);
    let mut env: Vec<String> = Vec::new();
    for r in &requests {
        for e in &r.env {
            if !env.contains(e) {
                env.push(e.clone());
            }
        }
    }
    let mut comments = vec![
        format!("Made by `headroom convert openapi` from {}.", doc.source.file),
        "One request per operation, equal weights: the load below is a placeholder, set it before a real run.".to_string(),
    ];
    if !env.is_empty() {
        comments.push(format!(
            "Reads the environment variables {} when it loads (an unset one is an error).",
            env.join(", ")
        ));
    }
    let mut scenario = Yaml::map().with("name", title).with("target", target).with(
        "load",
        Yaml::map().with("rate", 1i64).with("duration", "10s"),
    );
    // Credentials every request sends alike are written once, as a person would.
    let shared = requests.first().map(|r| r.auth.clone()).unwrap_or_default();
    let all_same = !shared.is_empty() && requests.iter().all(|r| r.auth == shared);
    if all_same {
        let mut headers = Yaml::map();
        for (k, v) in &shared {
            headers.set(k, v.as_str());
        }
        scenario.set("defaults", Yaml::map().with("headers", headers));
    }
    let list = requests
        .iter_mut()
        .map(|r| {
            let mut request = std::mem::replace(&mut r.request, Yaml::Null);
            if !all_same && !r.auth.is_empty() {
                let mut headers = request.get("headers").cloned().unwrap_or_else(Yaml::map);
                for (k, v) in &r.auth {
                    if headers.get(k).is_none() {
                        headers.set(k, v.as_str());
                    }
                }
                request = reorder_headers(request, headers);
            }
            request
        })
        .collect::<Vec<_>>();
    scenario.set("requests", Yaml::Seq(list));
    scenario.document(&comments)
}

/// `request` with `headers` set, placed after `path` as a person writes it.
fn reorder_headers(request: Yaml, headers: Yaml) -> Yaml {
    let Yaml::Map(entries) = request else {
        return request;
    };
    let mut out = Vec::with_capacity(entries.len() + 1);
    for (k, v) in entries {
        if k == "headers" {
            continue;
        }
        let after_path = k == "path";
        out.push((k, v));
        if after_path {
            out.push(("headers".to_string(), headers.clone()));
        }
    }
    Yaml::Map(out)
}
