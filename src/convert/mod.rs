//! `headroom convert`: scenarios from what people already have. [`curl::parse`] reads
//! a curl command line and [`har::parse`] a HAR file (a browser's recording) into
//! [`Exchange`]s; [`scenario`] writes them as scenario YAML: one request from curl,
//! or one flow whose steps replay a recording in order.
//!
//! Both parsers take untrusted bytes: the input is refused above [`MAX_INPUT`], a
//! recording holds at most [`MAX_REQUESTS`] requests and a body at most
//! [`MAX_BODY`], and nothing is written that could break out of its YAML scalar
//! (every string is emitted JSON-quoted, which YAML reads back unchanged).

pub mod curl;
mod error;
pub mod fronts;
pub mod har;

use std::fmt::Write;

use crate::scenario::QuickRequest;

pub use error::{ConvertError, CurlError, ExchangeError, HarError};

/// The largest input read (a HAR file, a curl command line), bytes.
pub const MAX_INPUT: u64 = 32 << 20;
/// The most requests one scenario is made of.
pub const MAX_REQUESTS: usize = 1_000;
/// The largest request body converted, bytes.
pub const MAX_BODY: usize = 1 << 20;

/// Headers a scenario never carries: the client writes them itself (`host`,
/// `content-length`), they belong to one hop, or they are HTTP/2 pseudo-headers.
const DROPPED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "upgrade",
    "trailer",
];

/// One request to replay: what a curl command or a recorded entry sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// HTTP method, upper case.
    pub method: String,
    /// Absolute `http://` or `https://` URL.
    pub url: String,
    /// Headers in order, without [`DROPPED_HEADERS`].
    pub headers: Vec<(String, String)>,
    /// The body, when there is one.
    pub body: Option<String>,
    /// The status a recording says the server answered, when it was an error (400 or
    /// more): the replay then expects it (a browser's `favicon.ico` that was a 404
    /// stays a 404, not a failure). `None` for curl and for successes.
    pub recorded_error: Option<u16>,
}

/// Reads `input` to its end, refusing more than [`MAX_INPUT`] bytes.
pub fn read_limited(input: impl std::io::Read) -> Result<String, ConvertError> {
    use std::io::Read;
    let mut text = String::new();
    input.take(MAX_INPUT + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_INPUT {
        return Err(ConvertError::TooLarge);
    }
    Ok(text)
}

/// Whether a header is kept in a scenario.
fn kept(name: &str) -> bool {
    !name.starts_with(':') && !DROPPED_HEADERS.iter().any(|d| d.eq_ignore_ascii_case(name))
}

/// Splits an absolute URL into its origin (`scheme://host[:port]`) and its path and
/// query (`/` at least).
pub fn split_url(url: &str) -> Option<(String, String)> {
    let uri: http::Uri = url.parse().ok()?;
    let scheme = uri.scheme_str()?;
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = uri.authority()?;
    let path = uri
        .path_and_query()
        .map_or("/".to_string(), |p| p.as_str().to_string());
    let path = if path.starts_with('/') {
        path
    } else {
        format!("/{path}")
    };
    Some((format!("{scheme}://{authority}"), path))
}

/// Checks an exchange holds nothing a scenario would misread: every header valid on
/// one line, and no `{{` (scenarios read it as the start of a template).
fn check(exchange: &Exchange, request: usize) -> Result<(), ExchangeError> {
    let quick = QuickRequest {
        method: Some(exchange.method.clone()),
        headers: exchange.headers.clone(),
        body: None,
    };
    quick
        .check()
        .map_err(|source| ExchangeError::Request { request, source })?;
    let texts = std::iter::once(exchange.url.as_str())
        .chain(exchange.headers.iter().map(|(_, v)| v.as_str()))
        .chain(exchange.body.as_deref());
    for text in texts {
        if text.contains("{{") {
            return Err(ExchangeError::Braces { request });
        }
    }
    if exchange.body.as_ref().is_some_and(|b| b.len() > MAX_BODY) {
        return Err(ExchangeError::BodyTooLarge { request });
    }
    Ok(())
}

/// A string as a YAML scalar: JSON-quoted (YAML is a superset of JSON).
fn q(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

/// Writes one request's keys, each line indented by `indent`.
fn request_yaml(out: &mut String, e: &Exchange, path: &str, indent: &str) {
    let name = format!("{} {}", e.method, path.split('?').next().unwrap_or("/"));
    let _ = writeln!(out, "{indent}name: {}", q(&name));
    let _ = writeln!(out, "{indent}method: {}", e.method);
    let _ = writeln!(out, "{indent}path: {}", q(path));
    if !e.headers.is_empty() {
        let _ = writeln!(out, "{indent}headers:");
        for (n, v) in &e.headers {
            let _ = writeln!(out, "{indent}  {}: {}", q(n), q(v));
        }
    }
    if let Some(status) = e.recorded_error {
        let _ = writeln!(out, "{indent}expect: {{status: {status}}}");
    }
    if let Some(body) = &e.body {
        let is_json = e.headers.iter().any(|(n, v)| {
            n.eq_ignore_ascii_case("content-type") && v.to_ascii_lowercase().contains("json")
        });
        match serde_json::from_str::<serde_json::Value>(body) {
            Ok(value) if is_json => {
                let _ = writeln!(out, "{indent}json: {value}");
            }
            _ => {
                let _ = writeln!(out, "{indent}body: {}", q(body));
            }
        }
    }
}

/// The scenario YAML of `exchanges`: one request (`flow: false`) or a flow replaying
/// them in order, against the origin of the first; exchanges to another origin are
/// left out and counted in a comment. Errors name the request at fault.
pub fn scenario(name: &str, exchanges: &[Exchange], flow: bool) -> Result<String, ConvertError> {
    let wrap = |e: ExchangeError| -> ConvertError {
        if flow {
            HarError::from(e).into()
        } else {
            CurlError::from(e).into()
        }
    };
    let first = exchanges
        .first()
        .ok_or_else(|| wrap(ExchangeError::Empty))?;
    let (origin, _) = split_url(&first.url).ok_or_else(|| {
        wrap(ExchangeError::NotHttp {
            url: first.url.clone(),
        })
    })?;
    let mut kept_requests = Vec::new();
    let mut other_origins = 0;
    for (i, e) in exchanges.iter().enumerate() {
        check(e, i + 1).map_err(wrap)?;
        match split_url(&e.url) {
            Some((o, path)) if o == origin => kept_requests.push((e, path)),
            _ => other_origins += 1,
        }
    }
    let mut out = String::from("# Made by `headroom convert`; set the load before a real run.\n");
    if other_origins > 0 {
        let _ = writeln!(
            out,
            "# {other_origins} request(s) to other origins than {origin} were left out."
        );
    }
    let _ = writeln!(out, "name: {}", q(name));
    let _ = writeln!(out, "target: {}", q(&origin));
    out.push_str("load:\n  rate: 1\n  duration: 10s\n");
    if flow {
        let _ = writeln!(out, "flows:\n  - name: {}\n    steps:", q(name));
        for (e, path) in &kept_requests {
            out.push_str("      - request:\n");
            request_yaml(&mut out, e, path, "          ");
        }
    } else {
        out.push_str("requests:\n");
        for (e, path) in &kept_requests {
            let mut one = String::new();
            request_yaml(&mut one, e, path, "    ");
            out.push_str("  - ");
            out.push_str(one.trim_start());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange(url: &str) -> Exchange {
        Exchange {
            method: "POST".into(),
            url: url.into(),
            headers: vec![("content-type".into(), "application/json".into())],
            body: Some(r#"{"a": "x: \"y\""}"#.into()),
            recorded_error: None,
        }
    }

    #[test]
    fn a_flow_keeps_one_origin_and_parses_as_a_scenario() {
        let yaml = scenario(
            "rec",
            &[
                exchange("http://127.0.0.1:9/tasks?x=1"),
                exchange("http://other.example/x"),
            ],
            true,
        )
        .unwrap();
        assert!(yaml.contains("1 request(s) to other origins"), "{yaml}");
        assert!(yaml.contains(r#"json: {"a":"x: \"y\""}"#), "{yaml}");
        let plan =
            crate::scenario::load_text("rec.yaml", &yaml, &crate::scenario::Overrides::default());
        let plan = plan.unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        assert_eq!(plan.names, ["POST /tasks"]);
    }

    #[test]
    fn template_braces_and_header_injection_are_refused() {
        let mut braces = exchange("http://127.0.0.1:9/");
        braces.body = Some("{{ uuid() }}".into());
        let e = scenario("x", &[braces], false).unwrap_err().to_string();
        assert!(e.contains("request 1") && e.contains("template"), "{e}");
        let mut crlf = exchange("http://127.0.0.1:9/");
        crlf.headers.push(("x-a".into(), "1\r\nHost: evil".into()));
        assert!(scenario("x", &[crlf], false).is_err());
        let not_http = exchange("file:///etc/passwd");
        assert!(scenario("x", &[not_http], false).is_err());
    }

    #[test]
    fn urls_split_into_origin_and_path() {
        assert_eq!(
            split_url("https://h:8443/a/b?c=d").unwrap(),
            ("https://h:8443".into(), "/a/b?c=d".into())
        );
        assert_eq!(
            split_url("http://h").unwrap(),
            ("http://h".into(), "/".into())
        );
        assert!(split_url("ftp://h/x").is_none());
    }
}
