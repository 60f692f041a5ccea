//! Single fields every part of a scenario compiles the same way: a template (its
//! variables checked against what earlier flow steps capture), a JSONPath query, a
//! `capture:` map, an expected status. A leaf of the scenario module: requests, GraphQL, gRPC, flows and
//! streams all import it, and it imports none of them.

use serde_json_path::JsonPath;
use serde_saphyr::Spanned;

use super::errors::{found, ScenarioError, Source};
use super::format::Node;
use headroom_plan::{Capture, StatusRange};
use headroom_template::{Escape, Template};
use serde_json::Value;

/// Compiles a template and checks the captured variables it uses: `vars` is `None` for
/// a plain request (no variables), else the variables captured by earlier flow steps.
pub(crate) fn template<T>(
    src: Source<'_>,
    node: &Spanned<T>,
    path: &str,
    source: &str,
    escape: Escape,
    vars: Option<&[String]>,
) -> Result<Template, ScenarioError> {
    let t = Template::compile(source, escape).map_err(|e| src.of(node, path, e))?;
    for var in t.variables() {
        // A cookie the user holds, or empty: never known before the run.
        if var.starts_with("cookie.") {
            continue;
        }
        match vars {
            None => {
                return Err(src.of(node, path, format!(
                    "`{{{{ {var} }}}}` uses the variable `{var}`, but only flow steps after a `capture` have variables"
                )))
            }
            Some(known) if !known.iter().any(|k| k == var) => {
                let have = if known.is_empty() { "none".to_string() } else { known.join(", ") };
                return Err(src.of(node, path, format!(
                    "`{{{{ {var} }}}}` uses the variable `{var}`, which no earlier step captures (captured so far: {have})"
                )));
            }
            Some(_) => {}
        }
    }
    Ok(t)
}

/// Compiles a JSONPath query.
pub(crate) fn json_path<T>(
    src: Source<'_>,
    node: &Spanned<T>,
    path: &str,
    query: &str,
) -> Result<JsonPath, ScenarioError> {
    JsonPath::parse(query).map_err(|e| {
        src.of(
            node,
            path,
            format!("expected a JSONPath query such as $.data, found {query:?} ({e})"),
        )
    })
}

/// Compiles the `capture:` map at `path` (variable name → JSONPath query).
pub(crate) fn captures_of(
    src: Source<'_>,
    capture: &std::collections::BTreeMap<String, Spanned<String>>,
    path: &str,
) -> Result<Vec<Capture>, ScenarioError> {
    let mut out = Vec::with_capacity(capture.len());
    for (var, query) in capture {
        let var_path = format!("{path}.capture.{var}");
        let mut chars = var.chars();
        let identifier = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !identifier || var == "env" {
            return Err(src.of(
                query,
                &var_path,
                format!(
                    "expected a variable name (letters, digits, `_`; not `env`), found {var:?}"
                ),
            ));
        }
        let compiled = json_path(src, query, &var_path, &query.value)?;
        out.push(Capture {
            var: var.clone(),
            path: compiled,
            source: query.value.clone(),
        });
    }
    Ok(out)
}

/// Reads `status`: a code, a class (`2xx`), or a list of them.
pub(crate) fn status(
    src: Source<'_>,
    node: &Node,
    path: &str,
) -> Result<Vec<StatusRange>, ScenarioError> {
    let err = |v: &Value| {
        src.of(
            node,
            path,
            format!(
            "expected a status code (100-599), a class such as 2xx, or a list of them, found {}",
            found(v)
        ),
        )
    };
    let one = |v: &Value| -> Result<StatusRange, ScenarioError> {
        let range = match v {
            Value::Number(n) => n.as_u64().map(|c| (c, c)),
            Value::String(s) => match s.strip_suffix("xx").or_else(|| s.strip_suffix("XX")) {
                Some(d) if d.len() == 1 => d.parse::<u64>().ok().map(|d| (d * 100, d * 100 + 99)),
                Some(_) => None,
                None => s.parse::<u64>().ok().map(|c| (c, c)),
            },
            _ => None,
        };
        match range {
            Some((lo, hi)) if (100..=599).contains(&lo) && hi <= 599 => Ok(StatusRange {
                lo: lo as u16,
                hi: hi as u16,
            }),
            _ => Err(err(v)),
        }
    };
    match &node.value {
        Value::Array(items) if !items.is_empty() => items.iter().map(one).collect(),
        other => Ok(vec![one(other)?]),
    }
}
