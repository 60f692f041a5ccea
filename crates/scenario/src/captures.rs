//! Compiling a flow step's `capture:`: where each variable's value is found in the
//! response (JSONPath, `header:`, `cookie:`, `regex:`, `css:`, `status`) and the object
//! form `{from, pick, default}`. Patterns and selectors are bounded at load.

use std::collections::BTreeMap;

use serde_json::Value;

use super::errors::{found, ScenarioError, Source};
use super::format::Node;
use headroom_plan::journey::{CaptureFrom, CapturePick, ResponseCapture};

/// Longest `regex:` pattern, and the most memory its compiled form may take.
const MAX_REGEX: usize = 4096;
const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// Longest `css:` selector.
const MAX_SELECTOR: usize = 4096;

/// Why a capture source does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CaptureError {
    /// `header:` without a usable name.
    #[error("expected a header name after `header:`, found {0:?}")]
    HeaderName(String),
    /// `cookie:` without a usable name.
    #[error("expected a cookie name after `cookie:`, found {0:?}")]
    CookieName(String),
    /// A pattern over [`MAX_REGEX`] bytes.
    #[error("a regex of at most {MAX_REGEX} bytes, found {0}")]
    RegexTooLong(usize),
    /// A pattern that does not compile (or would be too large compiled).
    #[error("bad regex {pattern:?}: {why}")]
    Regex {
        /// The pattern.
        pattern: String,
        /// The regex crate's reason.
        why: String,
    },
    /// A selector over [`MAX_SELECTOR`] bytes.
    #[error("a selector of at most {MAX_SELECTOR} bytes, found {0}")]
    SelectorTooLong(usize),
    /// `@` with no attribute after it.
    #[error("expected an attribute name after `@` in {0:?}")]
    Attribute(String),
    /// `css:` with nothing after it.
    #[error("expected a CSS selector after `css:`, such as css:h1 or css:input[name=csrf]@value")]
    NoSelector,
    /// A selector that does not parse.
    #[error("bad CSS selector {selector:?}: {why}")]
    Selector {
        /// The selector.
        selector: String,
        /// The parser's reason, on one line.
        why: String,
    },
    /// A JSONPath query that does not parse.
    #[error("expected a JSONPath query such as $.data, found {query:?} ({why})")]
    JsonPath {
        /// The query.
        query: String,
        /// The parser's reason.
        why: String,
    },
    /// None of the sources.
    #[error("expected a source such as $.id, header:NAME, cookie:NAME, regex:PATTERN, css:SELECTOR[@ATTR] or status, found {0:?}")]
    Unknown(String),
}

/// Compiles a step's `capture:` map: variable → source, or `{from, pick, default}`.
pub(crate) fn captures(
    src: Source<'_>,
    capture: &BTreeMap<String, Node>,
    path: &str,
) -> Result<Vec<ResponseCapture>, ScenarioError> {
    let mut out = Vec::with_capacity(capture.len());
    for (var, node) in capture {
        let var_path = format!("{path}.capture.{var}");
        let mut chars = var.chars();
        let identifier = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !identifier || ["env", "cookie", "data", "setup"].contains(&var.as_str()) {
            return Err(src.of(
                node,
                &var_path,
                format!(
                    "expected a variable name (letters, digits, `_`; not `env`, `cookie`, \
                     `data` or `setup`), found {var:?}"
                ),
            ));
        }
        let (from, pick, default) = match &node.value {
            Value::String(s) => (s.clone(), CapturePick::First, None),
            Value::Object(o) => {
                if let Some(key) = o
                    .keys()
                    .find(|k| !["from", "pick", "default"].contains(&k.as_str()))
                {
                    return Err(src.of(
                        node,
                        &format!("{var_path}.{key}"),
                        "unknown key: a capture has `from`, `pick` and `default`",
                    ));
                }
                let Some(Value::String(from)) = o.get("from") else {
                    return Err(src.of(
                        node,
                        &format!("{var_path}.from"),
                        "expected `from:` with a source such as $.id or header:Location",
                    ));
                };
                let pick = match o.get("pick") {
                    None => CapturePick::First,
                    Some(Value::String(p)) if p == "first" => CapturePick::First,
                    Some(Value::String(p)) if p == "random" => CapturePick::Random,
                    Some(Value::String(p)) if p == "all" => CapturePick::All,
                    Some(other) => {
                        return Err(src.of(
                            node,
                            &format!("{var_path}.pick"),
                            format!("expected first, random or all, found {}", found(other)),
                        ))
                    }
                };
                let default = match o.get("default") {
                    None => None,
                    Some(Value::String(s)) => Some(s.clone()),
                    Some(other) => Some(other.to_string()),
                };
                (from.clone(), pick, default)
            }
            other => {
                return Err(src.of(
                    node,
                    &var_path,
                    format!(
                        "expected a source such as $.id, header:NAME, cookie:NAME, regex:P, \
                         css:SELECTOR or status, or {{from, pick, default}}; found {}",
                        found(other)
                    ),
                ))
            }
        };
        let compiled = source(&from).map_err(|e| src.of(node, &var_path, e))?;
        out.push(ResponseCapture {
            var: var.clone(),
            from: compiled,
            pick,
            default,
            source: from,
        });
    }
    Ok(out)
}

/// Compiles one capture source.
fn source(text: &str) -> Result<CaptureFrom, CaptureError> {
    if text == "status" {
        return Ok(CaptureFrom::Status);
    }
    if let Some(name) = text.strip_prefix("header:") {
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_graphic() && c != ':') {
            return Err(CaptureError::HeaderName(name.to_string()));
        }
        return Ok(CaptureFrom::Header(name.to_ascii_lowercase()));
    }
    if let Some(name) = text.strip_prefix("cookie:") {
        let name = name.trim();
        if name.is_empty() || name.contains([';', '=', ' ']) {
            return Err(CaptureError::CookieName(name.to_string()));
        }
        return Ok(CaptureFrom::Cookie(name.to_string()));
    }
    if let Some(pattern) = text.strip_prefix("regex:") {
        if pattern.len() > MAX_REGEX {
            return Err(CaptureError::RegexTooLong(pattern.len()));
        }
        return regex::RegexBuilder::new(pattern)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map(CaptureFrom::Regex)
            .map_err(|e| CaptureError::Regex {
                pattern: pattern.to_string(),
                why: e.to_string(),
            });
    }
    if let Some(css) = text.strip_prefix("css:") {
        return css_source(css);
    }
    if text.starts_with('$') {
        return serde_json_path::JsonPath::parse(text)
            .map(CaptureFrom::Json)
            .map_err(|e| CaptureError::JsonPath {
                query: text.to_string(),
                why: e.to_string(),
            });
    }
    Err(CaptureError::Unknown(text.to_string()))
}

/// Compiles `css:SELECTOR[@ATTR]` (what follows `css:`).
fn css_source(css: &str) -> Result<CaptureFrom, CaptureError> {
    if css.len() > MAX_SELECTOR {
        return Err(CaptureError::SelectorTooLong(css.len()));
    }
    // `@ATTR` after the selector reads an attribute; an `@` inside brackets
    // (`[href^="mailto:a@b"]`) is part of the selector.
    let (selector, attr) = match css.rfind('@') {
        Some(at) if !css[at..].contains(']') => {
            (&css[..at], Some(css[at + 1..].trim().to_string()))
        }
        _ => (css, None),
    };
    if attr.as_deref() == Some("") {
        return Err(CaptureError::Attribute(css.to_string()));
    }
    if selector.trim().is_empty() {
        return Err(CaptureError::NoSelector);
    }
    let parsed = scraper::Selector::parse(selector.trim()).map_err(|e| CaptureError::Selector {
        selector: selector.to_string(),
        why: e.to_string().replace('\n', " "),
    })?;
    Ok(CaptureFrom::Css {
        selector: Box::new(parsed),
        attr,
    })
}
