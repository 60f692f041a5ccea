//! `http.get/post/put/patch/del/head/options/request` and `http.batch`: one request
//! step each, with the URL split into the target's origin and a path, the body as
//! `json:`/`form:`/`body:`, and the params (headers, `tags.name`, timeout,
//! redirects).

use oxc_ast::ast::CallExpression;
use oxc_span::Span;

use super::value::{parse_duration, seconds_text, Value};
use super::{Body, Interp, Phase, Req, Step};
use crate::ConvertError;

impl<'a> Interp<'a, '_> {
    /// `http.METHOD(...)`: a request step; its value is the response.
    pub(crate) fn http_call(
        &mut self,
        method: &str,
        args: Vec<Value<'a>>,
        span: Span,
    ) -> Result<Value<'a>, ConvertError> {
        let construct = format!("http.{method}");
        let mut args = args.into_iter();
        let mut next = || args.next().unwrap_or(Value::Undefined);
        let (verb, url, body, params) = match method {
            "request" => {
                let verb = match next() {
                    Value::Str(m) => m.to_ascii_uppercase(),
                    v => {
                        self.left(span, construct, format!("the method is {}", v.kind()));
                        return Ok(Value::Unknown("a request left out".into()));
                    }
                };
                (verb, next(), next(), next())
            }
            "get" | "head" => (
                method.to_ascii_uppercase(),
                next(),
                Value::Undefined,
                next(),
            ),
            "del" => ("DELETE".to_string(), next(), next(), next()),
            other => (other.to_ascii_uppercase(), next(), next(), next()),
        };
        match self.request(&construct, verb, url, body, params, false, span)? {
            Some(id) => {
                self.emit(Step::Request(id));
                Ok(Value::Resp(id))
            }
            None => Ok(Value::Unknown(format!(
                "the response of a {construct} left out"
            ))),
        }
    }

    /// `http.batch([...])`: the requests sent together (`parallel:`).
    pub(crate) fn batch(
        &mut self,
        call: &'a CallExpression<'a>,
    ) -> Result<Value<'a>, ConvertError> {
        let span = call.span;
        let args = self.args(&call.arguments)?;
        let items = match args.into_iter().next() {
            Some(Value::Array(items)) => items,
            Some(Value::Object(entries)) => entries.into_iter().map(|(_, v)| v).collect(),
            other => {
                let why = other.map_or_else(|| "nothing".to_string(), |v| v.why());
                self.left(
                    span,
                    "http.batch",
                    format!("its requests are not a list known statically ({why})"),
                );
                return Ok(Value::Unknown("a batch left out".into()));
            }
        };
        let mut ids = Vec::new();
        let mut out = Vec::new();
        for item in items {
            let (verb, url, body, params) = match item {
                Value::Array(parts) => {
                    let mut parts = parts.into_iter();
                    let verb = match parts.next() {
                        Some(Value::Str(m)) => m.to_ascii_uppercase(),
                        _ => "GET".into(),
                    };
                    let url = parts.next().unwrap_or(Value::Undefined);
                    (
                        verb,
                        url,
                        parts.next().unwrap_or(Value::Undefined),
                        parts.next().unwrap_or(Value::Undefined),
                    )
                }
                Value::Object(entries) => {
                    let get = |k: &str| {
                        entries
                            .iter()
                            .find(|(n, _)| n == k)
                            .map_or(Value::Undefined, |(_, v)| v.clone())
                    };
                    let verb = match get("method") {
                        Value::Str(m) => m.to_ascii_uppercase(),
                        _ => "GET".into(),
                    };
                    (verb, get("url"), get("body"), get("params"))
                }
                url => ("GET".to_string(), url, Value::Undefined, Value::Undefined),
            };
            match self.request("http.batch request", verb, url, body, params, true, span)? {
                Some(id) => {
                    ids.push(id);
                    out.push(Value::Resp(id));
                }
                None => out.push(Value::Unknown("a request of a batch left out".into())),
            }
        }
        if !ids.is_empty() {
            self.ok(span, "http.batch");
            self.emit(Step::Parallel(ids));
        }
        Ok(Value::Array(out))
    }

    /// Builds one request; None (reported) when it cannot be one.
    #[allow(clippy::too_many_arguments)]
    fn request(
        &mut self,
        construct: &str,
        method: String,
        url: Value<'a>,
        body: Value<'a>,
        params: Value<'a>,
        parallel: bool,
        span: Span,
    ) -> Result<Option<usize>, ConvertError> {
        if self.phase == Phase::Init {
            self.left(
                span,
                construct,
                "k6 sends no request in the init context (module scope)",
            );
            return Ok(None);
        }
        if self.reqs.len() >= crate::MAX_ITEMS {
            return Err(self.src.limit(
                span.start as usize,
                "more requests than",
                crate::MAX_ITEMS,
            ));
        }
        let url = match self.text(url, span) {
            Ok(u) => self.fix_env_origin(u, span),
            Err(why) => {
                self.left(span, construct, format!("its URL is not known: {}", why.0));
                return Ok(None);
            }
        };
        let Some((origin, path)) = split_url(&url) else {
            if let Some(name) = url
                .strip_prefix("{{ env.")
                .and_then(|r| r.split_once(" }}"))
                .map(|(n, _)| n)
            {
                self.left(span, construct, format!("its origin is the environment variable {name}, unset at conversion: set it (or pass `-e {name}=URL`) so the target can be written"));
                return Ok(None);
            }
            self.left(span, construct, format!("its URL {url:?} has no origin known before the run (http:// or https://, host and port)"));
            return Ok(None);
        };
        match &self.target {
            None => self.target = Some(origin.clone()),
            Some(t) if *t != origin => {
                self.left(
                    span,
                    construct,
                    format!(
                        "{origin} is another origin than the target {t}; a scenario has one target"
                    ),
                );
                return Ok(None);
            }
            Some(_) => {}
        }
        let mut req = Req {
            method,
            path,
            parallel,
            ..Req::default()
        };
        let mut notes = Vec::new();
        req.body = match body {
            Value::Undefined | Value::Null => Body::None,
            Value::JsonText(inner) => match self.yaml(*inner, span) {
                Ok(y) => Body::Json(y),
                Err(why) => {
                    self.left(span, construct, format!("its body: {}", why.0));
                    return Ok(None);
                }
            },
            Value::Object(entries) => {
                let mut form = Vec::new();
                for (k, v) in entries {
                    match self.text(v, span) {
                        Ok(t) => form.push((k, t)),
                        Err(why) => notes.push(format!("form field {k} left out: {}", why.0)),
                    }
                }
                Body::Form(form)
            }
            other => match self.text(other, span) {
                Ok(t) => Body::Raw(t),
                Err(why) => {
                    self.left(span, construct, format!("its body: {}", why.0));
                    return Ok(None);
                }
            },
        };
        self.params(&mut req, params, &mut notes, span);
        let id = self.reqs.len();
        self.reqs.push(req);
        match notes.is_empty() {
            true => self.ok(span, construct),
            false => self.approx(span, construct, notes.join("; ")),
        }
        Ok(Some(id))
    }

    /// A URL starting with `{{ env.NAME }}` whose value is known at conversion: the
    /// origin must be known to write the target, so the value is used.
    fn fix_env_origin(&mut self, url: String, span: Span) -> String {
        let Some(rest) = url.strip_prefix("{{ env.") else {
            return url;
        };
        let Some((name, tail)) = rest.split_once(" }}") else {
            return url;
        };
        match self.options.env.get(name) {
            Some(v) => {
                self.approx(
                    span,
                    format!("__ENV.{name}"),
                    format!("the target is its value at conversion, {v:?} (`--url` changes it)"),
                );
                format!("{v}{tail}")
            }
            None => url,
        }
    }

    /// Applies the params object of a request.
    fn params(&mut self, req: &mut Req, params: Value<'a>, notes: &mut Vec<String>, span: Span) {
        let entries = match params {
            Value::Object(entries) => entries,
            Value::Undefined | Value::Null => return,
            other => {
                notes.push(format!("params left out: {}", other.why()));
                return;
            }
        };
        for (key, v) in entries {
            match key.as_str() {
                "headers" => match v {
                    Value::Object(headers) => {
                        for (name, value) in headers {
                            match self.text(value, span) {
                                Ok(t) => req.headers.push((name, t)),
                                Err(why) => {
                                    notes.push(format!("header {name} left out: {}", why.0))
                                }
                            }
                        }
                    }
                    Value::Undefined => {}
                    other => notes.push(format!("headers left out: {}", other.why())),
                },
                "tags" => {
                    if let Value::Object(tags) = v {
                        for (tag, value) in tags {
                            match (tag.as_str(), value) {
                                ("name", Value::Str(n)) => req.name = Some(n),
                                // A name built at run time groups every request it
                                // names, as k6's tag does: its template text is the name.
                                ("name", Value::Tpl(n)) => req.name = Some(n),
                                (tag, _) => notes.push(format!(
                                    "tag {tag} dropped (headroom groups figures by request name)"
                                )),
                            }
                        }
                    }
                }
                "timeout" => match v {
                    Value::Str(s) => match parse_duration(&s) {
                        Some(secs) => req.timeout = Some(seconds_text(secs)),
                        None => notes.push(format!("timeout {s:?} is not a duration")),
                    },
                    Value::Num(ms) => req.timeout = Some(seconds_text(ms / 1000.0)),
                    other => notes.push(format!("timeout left out: {}", other.why())),
                },
                "redirects" => match v {
                    Value::Num(n) if n >= 0.0 => req.redirects = Some(n as i64),
                    other => notes.push(format!("redirects left out: {}", other.why())),
                },
                "responseType" | "responseCallback" => {
                    notes.push(format!("{key} dropped (headroom reads a body only for checks and captures, and counts a status of 400 or more as failed)"));
                }
                other => notes.push(format!("param {other} left out")),
            }
        }
    }
}

/// Splits `scheme://host[:port]/path?query` into the origin and the path (`/` when
/// empty). None when the origin is not plain text known now.
pub(crate) fn split_url(url: &str) -> Option<(String, String)> {
    let scheme_end = if url.starts_with("http://") {
        7
    } else if url.starts_with("https://") {
        8
    } else {
        return None;
    };
    let rest = &url[scheme_end..];
    // The host ends where the path, query or a run-time value (`{{ next }}`) begins.
    let host_end = [rest.find(['/', '?', '#']), rest.find("{{")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(rest.len());
    let host = &rest[..host_end];
    if host.is_empty() || host.contains("{{") || host.contains('@') {
        return None;
    }
    let origin = format!("{}{}", &url[..scheme_end], host);
    let mut path = rest[host_end..].to_string();
    if let Some(hash) = path.find('#') {
        path.truncate(hash);
    }
    // A path that is a value read at run time (a `Location` header) is used as it is.
    if !path.starts_with('/') && !path.starts_with("{{") {
        path.insert(0, '/');
    }
    Some((origin, path))
}
