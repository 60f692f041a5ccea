//! The request of quick mode (`--url` without a scenario file) as curl, hey and oha
//! users shape it: `-X/--method`, `-H/--header` (repeatable), `--body`, `--json` and
//! `--body-file`. [`QuickRequest`] holds the validated flags; [`QuickRequest::build`]
//! turns them into the method, headers and body of the plan's one request.

use super::field_errors::QuickError;
use headroom_template::{Escape, Template};

/// The body of the quick-mode request.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum QuickBody {
    /// `--body TEXT`: sent as given; may hold templates, as `--url` may.
    Text(String),
    /// `--json TEXT`: as `--body`, with `content-type: application/json` and
    /// `accept: application/json` unless `-H` sets them (as curl's `--json`).
    Json(String),
    /// `--body-file FILE`'s content: sent byte for byte as read (no templates).
    File(String),
}

/// Quick mode's request flags; empty (the default) sends a plain GET.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QuickRequest {
    /// `-X/--method`; `None`: POST with a body, else GET (as curl).
    pub method: Option<String>,
    /// `-H/--header NAME: VALUE`, in the order given.
    pub headers: Vec<(String, String)>,
    /// `--body`, `--json` or `--body-file`.
    pub body: Option<QuickBody>,
}

/// The request parts [`QuickRequest::build`] makes.
pub(crate) struct QuickParts {
    pub(crate) method: String,
    pub(crate) headers: Vec<(String, Template)>,
    pub(crate) body: Option<Template>,
}

impl QuickRequest {
    /// Whether no flag was given.
    pub fn is_empty(&self) -> bool {
        self == &QuickRequest::default()
    }

    /// Validates the flags and compiles them; errors name the flag and the value.
    /// Checks the request compiles as a run would compile it (method, headers and
    /// body templates), without building it.
    pub fn check(&self) -> Result<(), QuickError> {
        self.build().map(|_| ())
    }

    pub(crate) fn build(&self) -> Result<QuickParts, QuickError> {
        let method = match &self.method {
            Some(m) if !m.is_empty() && m.chars().all(|c| c.is_ascii_alphabetic()) => {
                m.to_ascii_uppercase()
            }
            Some(m) => return Err(QuickError::Method { method: m.clone() }),
            None if self.body.is_some() => "POST".into(),
            None => "GET".into(),
        };
        let mut headers = Vec::new();
        for (name, value) in &self.headers {
            super::requests::check_header(name, value).map_err(|source| QuickError::Header {
                name: name.clone(),
                source,
            })?;
            let value =
                Template::compile(value, Escape::None).map_err(|e| QuickError::HeaderTemplate {
                    name: name.clone(),
                    reason: e.to_string(),
                })?;
            headers.push((name.clone(), value));
        }
        let has = |headers: &[(String, Template)], name: &str| {
            headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
        };
        let body = match &self.body {
            None => None,
            Some(QuickBody::File(text)) => Some(literal(text)),
            Some(QuickBody::Text(text)) => Some(Template::compile(text, Escape::None).map_err(
                |e| QuickError::Body {
                    reason: e.to_string(),
                },
            )?),
            Some(QuickBody::Json(text)) => {
                // A template may stand where a value goes, so only plain text is
                // checked to be JSON.
                if !text.contains("{{") {
                    serde_json::from_str::<serde_json::Value>(text).map_err(QuickError::NotJson)?;
                }
                for name in ["content-type", "accept"] {
                    if !has(&headers, name) {
                        headers.push((name.into(), literal("application/json")));
                    }
                }
                Some(
                    Template::compile(text, Escape::None).map_err(|e| QuickError::Json {
                        reason: e.to_string(),
                    })?,
                )
            }
        };
        Ok(QuickParts {
            method,
            headers,
            body,
        })
    }
}

/// A template that renders `text` as it is, whatever `{{` it holds.
fn literal(text: &str) -> Template {
    Template::literal(text, Escape::None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &Template) -> &str {
        t.as_static().expect("a static template")
    }

    #[test]
    fn a_body_makes_a_post_and_json_adds_its_headers_unless_given() {
        let parts = QuickRequest {
            body: Some(QuickBody::Json(r#"{"a":1}"#.into())),
            headers: vec![("Accept".into(), "text/plain".into())],
            ..QuickRequest::default()
        }
        .build()
        .unwrap();
        assert_eq!(parts.method, "POST");
        let names: Vec<&str> = parts.headers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["Accept", "content-type"]);
        assert_eq!(text(&parts.headers[1].1), "application/json");
        assert_eq!(text(parts.body.as_ref().unwrap()), r#"{"a":1}"#);
        let get = QuickRequest::default().build().unwrap();
        assert_eq!((get.method.as_str(), get.body.is_none()), ("GET", true));
    }

    #[test]
    fn bad_flags_are_named() {
        let bad = |q: QuickRequest| q.build().err().unwrap().to_string();
        let method = bad(QuickRequest {
            method: Some("GE T".into()),
            ..QuickRequest::default()
        });
        assert!(method.starts_with("--method"), "{method}");
        let header = bad(QuickRequest {
            headers: vec![("X-A".into(), "a\r\nInjected: 1".into())],
            ..QuickRequest::default()
        });
        assert!(header.contains("line break"), "{header}");
        let json = bad(QuickRequest {
            body: Some(QuickBody::Json("{nope".into())),
            ..QuickRequest::default()
        });
        assert!(json.starts_with("--json: not JSON"), "{json}");
    }

    #[test]
    fn a_body_file_is_sent_as_is() {
        let parts = QuickRequest {
            method: Some("put".into()),
            body: Some(QuickBody::File("{{ not a template".into())),
            ..QuickRequest::default()
        }
        .build()
        .unwrap();
        assert_eq!(parts.method, "PUT");
        assert_eq!(text(parts.body.as_ref().unwrap()), "{{ not a template");
    }
}
