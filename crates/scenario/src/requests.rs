//! Compiling one request (top-level or a flow step) into a [`RequestTemplate`]:
//! method, path (the client adds the target's base path), headers merged with the defaults,
//! a JSON or raw body, and expectations. Templates compile here, so their errors and
//! the variables they use are checked at load time.

use std::sync::Arc;

use serde_saphyr::Spanned;

use super::field_errors::HeaderError;

use super::errors::{ScenarioError, Source};
use super::fields::{json_path, template};
use super::format::{ExpectSpec, RequestSpec};
use super::values::duration;
use headroom_plan::{Expect, JsonExpect, RequestTemplate};
use headroom_template::{Escape, Template};

/// What every request compiles against.
pub(crate) struct Context<'a> {
    pub(crate) src: Source<'a>,
    /// `defaults.headers`, compiled.
    pub(crate) headers: Vec<(String, Template)>,
    /// Request names; `name_id`s index it.
    pub(crate) names: Vec<String>,
    /// Whether the scenario has a `sink:` (then `{{ sink_url }}` is a variable).
    pub(crate) sink: bool,
    /// Stream names and protocols; `stream_id`s index it.
    pub(crate) streams: Vec<headroom_plan::StreamName>,
    /// `--proto-path`: import paths of every `grpc:` step's `.proto` files.
    pub(crate) proto_paths: &'a [std::path::PathBuf],
    /// Check names (`REQUEST.MATCHER`); a check's `id` indexes it.
    pub(crate) checks: Vec<String>,
    /// Group names (`group:` steps); a block's `group` indexes it.
    pub(crate) groups: Vec<String>,
    /// What every user may read besides captures: `data.SET.COLUMN`, `setup.NAME`.
    pub(crate) user_vars: Vec<String>,
    /// Every variable a flow step captures, in any flow (for `secrets.values`).
    pub(crate) captured: Vec<String>,
}

impl Context<'_> {
    /// The id of `name`, added if new (requests with the same name share statistics).
    pub(crate) fn intern(&mut self, name: &str) -> usize {
        match self.names.iter().position(|n| n == name) {
            Some(i) => i,
            None => {
                self.names.push(name.to_string());
                self.names.len() - 1
            }
        }
    }
}

/// Compiles a header value after checking its name (an HTTP token) and that its
/// value cannot break the request head (no line breaks).
pub(crate) fn header(
    src: Source<'_>,
    name: &str,
    value: &Spanned<String>,
    path: &str,
    vars: Option<&[String]>,
) -> Result<Template, ScenarioError> {
    check_header(name, &value.value).map_err(|e| src.of(value, path, e))?;
    template(src, value, path, &value.value, Escape::None, vars)
}

/// Checks that `name` is an HTTP token and `value` cannot break the request head (no
/// line breaks); says what was expected when not.
pub(crate) fn check_header(name: &str, value: &str) -> Result<(), HeaderError> {
    const SEPARATORS: &str = "\"(),/:;<=>?@[\\]{}";
    let token = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_graphic() && !SEPARATORS.contains(c));
    if !token {
        return Err(HeaderError::Name {
            name: name.to_string(),
        });
    }
    if value.contains(['\r', '\n']) {
        return Err(HeaderError::LineBreak);
    }
    Ok(())
}

/// Compiles a request. `default_name` is its name when it has none of its own, with
/// whether the user wrote it (a flow step's `name:`): a GraphQL operation name comes
/// after a written name and before a made-up one.
pub(crate) fn compile(
    cx: &mut Context<'_>,
    spec: &Spanned<RequestSpec>,
    path: &str,
    default_name: Option<(String, bool)>,
    vars: Option<&[String]>,
) -> Result<RequestTemplate, ScenarioError> {
    let src = cx.src;
    let req = &spec.value;
    // The sink's variables: `sink_url` with a `sink:`, `correlation_id` with `correlate:`.
    let mut known: Vec<String> = match vars {
        Some(v) => v.to_vec(),
        None => cx.user_vars.clone(),
    };
    if cx.sink {
        known.push("sink_url".into());
    }
    let correlate = match &req.correlate {
        Some(c) if !cx.sink => {
            return Err(src.of(
                c,
                &format!("{path}.correlate"),
                "`correlate` needs a `sink:` block to register ids with",
            ))
        }
        Some(c) => {
            let t = template(
                src,
                c,
                &format!("{path}.correlate"),
                &c.value,
                Escape::None,
                Some(&known),
            )?;
            known.push("correlation_id".into());
            Some(t)
        }
        None => None,
    };
    let vars = if vars.is_some() || !known.is_empty() {
        Some(known.as_slice())
    } else {
        None
    };
    let method = match &req.method {
        Some(m) if !m.value.is_empty() && m.value.chars().all(|c| c.is_ascii_alphabetic()) => {
            m.value.to_ascii_uppercase()
        }
        Some(m) => {
            return Err(src.of(
                m,
                &format!("{path}.method"),
                format!(
                    "expected an HTTP method such as GET or POST, found {:?}",
                    m.value
                ),
            ))
        }
        None if req.graphql.is_some() => "POST".to_string(),
        None => "GET".to_string(),
    };
    let graphql = match &req.graphql {
        Some(g) => {
            let json = req.json.as_ref().map(|j| (j.referenced, "json"));
            let body = req.body.as_ref().map(|b| (b.referenced, "body"));
            if let Some((at, field)) = json.or(body) {
                return Err(src.at(
                    at,
                    &format!("{path}.{field}"),
                    "give `graphql` alone: it makes the JSON body itself, so no `json` or `body` beside it",
                ));
            }
            if method != "POST" {
                let m = req
                    .method
                    .as_ref()
                    .expect("a method other than the default POST was given");
                return Err(src.of(
                    m,
                    &format!("{path}.method"),
                    format!("a `graphql` request is sent as POST, found {method}"),
                ));
            }
            Some(super::graphql::compile(
                src,
                g,
                &format!("{path}.graphql"),
                vars,
            )?)
        }
        None => None,
    };
    let default_path;
    let path_node = match (&req.path, &graphql) {
        (Some(p), _) => p,
        (None, Some(_)) => {
            // The usual endpoint; `path:` beside `graphql:` names another one.
            default_path = Spanned::new("/graphql".to_string(), spec.referenced, spec.defined);
            &default_path
        }
        (None, None) => {
            return Err(src.of(
                spec,
                path,
                "expected `path:` (such as /api/tasks) or `graphql:` in a request",
            ))
        }
    };
    // A path may be a captured one (`{{ next }}`, a `Location` read earlier).
    if !path_node.value.starts_with('/') && !path_node.value.starts_with("{{") {
        let msg = format!(
            "expected a path starting with `/`, found {:?}",
            path_node.value
        );
        return Err(src.of(path_node, &format!("{path}.path"), msg));
    }
    // As written: the client puts the target's base path in front when it sends.
    let path_t = template(
        src,
        path_node,
        &format!("{path}.path"),
        &path_node.value,
        Escape::None,
        vars,
    )?;

    let mut headers = cx.headers.clone();
    for (name, value) in &req.headers {
        let t = header(src, name, value, &format!("{path}.headers.{name}"), vars)?;
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        headers.push((name.clone(), t));
    }

    let form_body = match &req.form {
        Some(f) => Some(super::journey::form(src, f, &format!("{path}.form"), vars)?),
        None => None,
    };
    let multipart = match &req.multipart {
        Some(m) => Some(Arc::new(super::journey::multipart(
            src,
            m,
            &format!("{path}.multipart"),
            vars,
        )?)),
        None => None,
    };
    {
        let given: Vec<(&str, serde_saphyr::Location)> = [
            req.json.as_ref().map(|j| ("json", j.referenced)),
            req.body.as_ref().map(|b| ("body", b.referenced)),
            req.form.as_ref().map(|f| ("form", f.referenced)),
            req.multipart.as_ref().map(|m| ("multipart", m.referenced)),
        ]
        .into_iter()
        .flatten()
        .collect();
        if given.len() > 1 && (req.form.is_some() || req.multipart.is_some()) {
            let (field, at) = given[1];
            return Err(src.at(
                at,
                &format!("{path}.{field}"),
                format!(
                    "give one body: `{}` and `{field}` were both given",
                    given[0].0
                ),
            ));
        }
    }
    let content_type = match (&form_body, &multipart) {
        (Some(_), _) => Some("application/x-www-form-urlencoded".to_string()),
        (_, Some(m)) => Some(format!("multipart/form-data; boundary={}", m.boundary)),
        _ => None,
    };
    if let Some(ct) = content_type {
        if !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
        {
            headers.push((
                "content-type".to_string(),
                Template::literal(&ct, Escape::None),
            ));
        }
    }
    let json_body = req.json.is_some() || graphql.is_some();
    if json_body
        && !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
    {
        let ct = Template::compile("application/json", Escape::None)
            .map_err(|e| src.of(spec, path, e))?;
        headers.push(("content-type".to_string(), ct));
    }
    let body = match (&req.json, &req.body) {
        _ if graphql.is_some() => graphql.as_ref().map(|g| g.body.clone()),
        (Some(_), Some(body)) => {
            return Err(src.of(
                body,
                &format!("{path}.body"),
                "give either `json` or `body`, not both",
            ));
        }
        (Some(json), None) => {
            // Serialized once; placeholders inside JSON strings render JSON-escaped,
            // a string that is exactly one placeholder renders as a typed JSON value.
            let text = headroom_template::json_source(&json.value);
            Some(template(
                src,
                json,
                &format!("{path}.json"),
                &text,
                Escape::Json,
                vars,
            )?)
        }
        (None, Some(body)) => Some(template(
            src,
            body,
            &format!("{path}.body"),
            &body.value,
            Escape::None,
            vars,
        )?),
        (None, None) => form_body,
    };

    let timeout = match &req.timeout {
        Some(node) => {
            let own = duration(src, node, &format!("{path}.timeout"))?;
            if own.is_zero() {
                return Err(src.of(
                    node,
                    &format!("{path}.timeout"),
                    "a timeout must be longer than zero",
                ));
            }
            Some(own)
        }
        None => None,
    };

    let mut expect = match &req.expect {
        Some(e) => expect(src, e, &format!("{path}.expect"), vars)?,
        None => Expect::default(),
    };
    let redirects = match &req.redirects {
        Some(node) => Some(super::journey::redirects(
            src,
            node,
            &format!("{path}.redirects"),
        )?),
        None => None,
    };
    expect.graphql = graphql.is_some();
    // A GraphQL request is named by its operation unless it has a name of its own.
    let operation = graphql.and_then(|g| g.operation);
    let name = match (&req.name, default_name, operation) {
        (Some(n), _, _) => n.value.clone(),
        (None, Some((n, true)), _) => n,
        (None, _, Some(op)) => op,
        (None, Some((n, false)), None) => n,
        (None, None, None) => format!("{method} {}", path_node.value),
    };
    let checks = match &req.check {
        Some(c) => super::journey::checks(
            src,
            c,
            &format!("{path}.check"),
            &name,
            vars,
            &mut cx.checks,
        )?,
        None => Vec::new(),
    };
    Ok(RequestTemplate {
        name_id: cx.intern(&name),
        method,
        path: path_t,
        headers,
        body,
        multipart,
        expect,
        checks,
        redirects,
        timeout,
        correlate,
    })
}

/// Compiles an `expect` section.
fn expect(
    src: Source<'_>,
    spec: &ExpectSpec,
    path: &str,
    vars: Option<&[String]>,
) -> Result<Expect, ScenarioError> {
    let status = match &spec.status {
        Some(node) => super::fields::status(src, node, &format!("{path}.status"))?,
        None => Vec::new(),
    };
    let mut json = Vec::new();
    if let Some(q) = &spec.json_path {
        json.push(JsonExpect {
            path: json_path(src, q, &format!("{path}.json_path"), &q.value)?,
            source: q.value.clone(),
            equals: None,
        });
    }
    for (query, value) in &spec.json {
        let field = format!("{path}.json.{query}");
        let compiled = json_path(src, value, &field, query)?;
        json.push(JsonExpect {
            path: compiled,
            source: query.clone(),
            equals: Some(super::journey::expected(src, value, &field, vars)?),
        });
    }
    let body_contains = match &spec.body_contains {
        Some(text) => Some(template(
            src,
            text,
            &format!("{path}.body_contains"),
            &text.value,
            Escape::None,
            vars,
        )?),
        None => None,
    };
    Ok(Expect {
        status,
        body_contains,
        json,
        graphql: false,
    })
}
