//! The `graphql:` request form: a POST of `{"query", "operationName", "variables"}` as
//! JSON. The query is sent as written (never templated); the variables are a JSON
//! template whose lone placeholders keep their type (`offset: "{{ rand_int(0, 9) }}"`
//! is a number). The operation name, given or read from the query, names the request.

use std::path::Path;

use serde_json::Value;
use serde_saphyr::Spanned;

use super::errors::{found, ScenarioError, Source};
use super::fields::template;
use super::format::GraphqlSpec;
use headroom_template::{json_source, Escape, Template};

/// Largest query accepted (inline or from a file): a query this size is a mistake
/// (a wrong file), and it is sent with every request.
pub(crate) const MAX_QUERY_BYTES: u64 = 1024 * 1024;

/// A compiled GraphQL form.
pub(crate) struct Graphql {
    /// The whole JSON body.
    pub(crate) body: Template,
    /// The operation name, if given or found in the query.
    pub(crate) operation: Option<String>,
}

/// Compiles `spec` (at field `path`); `vars` as for every template.
pub(crate) fn compile(
    src: Source<'_>,
    spec: &Spanned<GraphqlSpec>,
    path: &str,
    vars: Option<&[String]>,
) -> Result<Graphql, ScenarioError> {
    let g = &spec.value;
    let query = match (&g.query, &g.file) {
        (Some(_), Some(file)) => {
            return Err(src.of(
                file,
                &format!("{path}.file"),
                "give either `query` or `file`, not both",
            ))
        }
        (Some(q), None) => {
            if q.value.len() as u64 > MAX_QUERY_BYTES {
                return Err(src.of(q, &format!("{path}.query"), too_long(q.value.len() as u64)));
            }
            q.value.clone()
        }
        (None, Some(file)) => read_query(src, file, &format!("{path}.file"))?,
        (None, None) => {
            return Err(src.of(
                spec,
                path,
                "expected `query:` (the query text) or `file:` (a .graphql file)",
            ))
        }
    };
    if query.trim().is_empty() {
        return Err(src.of(spec, path, "expected a GraphQL query, found empty text"));
    }
    let operation = match &g.operation {
        Some(op) if is_name(&op.value) => Some(op.value.clone()),
        Some(op) => {
            return Err(src.of(
                op,
                &format!("{path}.operation"),
                format!(
                    "expected an operation name such as GetTask, found {:?}",
                    op.value
                ),
            ))
        }
        None => operation_name(&query),
    };
    let variables = match &g.variables {
        None => Value::Object(Default::default()),
        Some(node) if node.value.is_object() => node.value.clone(),
        Some(node) => {
            return Err(src.of(
                node,
                &format!("{path}.variables"),
                format!(
                    "expected a mapping of variable names to values, found {}",
                    found(&node.value)
                ),
            ))
        }
    };
    // The query and name are literal text: `{{` in them is hidden from the template
    // parser as `\u007b{` (the same JSON string to the server).
    let literal = |s: &str| {
        Value::String(s.to_string())
            .to_string()
            .replace("{{", "\\u007b{")
    };
    let mut text = format!("{{\"query\":{}", literal(&query));
    if let Some(op) = &operation {
        text.push_str(&format!(",\"operationName\":{}", literal(op)));
    }
    text.push_str(",\"variables\":");
    text.push_str(&json_source(&variables));
    text.push('}');
    let node = g
        .variables
        .as_ref()
        .map_or(spec.referenced, |n| n.referenced);
    let at = Spanned {
        value: (),
        referenced: node,
        defined: node,
    };
    let body = template(
        src,
        &at,
        &format!("{path}.variables"),
        &text,
        Escape::Json,
        vars,
    )?;
    Ok(Graphql { body, operation })
}

fn too_long(len: u64) -> String {
    format!("expected a query of at most {MAX_QUERY_BYTES} bytes, found {len} bytes")
}

/// Reads a query file, relative to the scenario's directory.
fn read_query(
    src: Source<'_>,
    file: &Spanned<String>,
    path: &str,
) -> Result<String, ScenarioError> {
    let dir = Path::new(src.file).parent().unwrap_or(Path::new(""));
    let full = dir.join(&file.value);
    let shown = full.display();
    let meta = std::fs::metadata(&full).map_err(|e| {
        src.of(
            file,
            path,
            format!("cannot read the query file {shown}: {e}"),
        )
    })?;
    if meta.len() > MAX_QUERY_BYTES {
        return Err(src.of(file, path, format!("{shown}: {}", too_long(meta.len()))));
    }
    std::fs::read_to_string(&full).map_err(|e| {
        src.of(
            file,
            path,
            format!("cannot read the query file {shown}: {e}"),
        )
    })
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The name of the query's first named operation (`query Name`, `mutation Name`,
/// `subscription Name` at the top level), skipping comments and strings.
pub(crate) fn operation_name(query: &str) -> Option<String> {
    let mut depth = 0usize;
    let mut expect_name = false;
    let mut chars = query.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '#' => while chars.next_if(|(_, c)| *c != '\n').is_some() {},
            '"' => {
                // A string (block strings are strings of strings: skipped alike).
                while let Some((_, c)) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
                expect_name = false;
            }
            '{' | '(' | '[' => {
                depth += 1;
                expect_name = false;
            }
            '}' | ')' | ']' => depth = depth.saturating_sub(1),
            c if c.is_ascii_alphabetic() || c == '_' => {
                let mut end = i + c.len_utf8();
                while let Some((j, c)) =
                    chars.next_if(|(_, c)| c.is_ascii_alphanumeric() || *c == '_')
                {
                    end = j + c.len_utf8();
                }
                let word = &query[i..end];
                if expect_name {
                    return Some(word.to_string());
                }
                expect_name = depth == 0 && matches!(word, "query" | "mutation" | "subscription");
            }
            c if c.is_whitespace() || c == ',' => {}
            _ => expect_name = false,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::operation_name;

    #[test]
    fn operation_names_come_from_the_first_named_operation() {
        let name = |q: &str| operation_name(q);
        assert_eq!(
            name("query queryVenues($limit: Int!) { venues { id } }").as_deref(),
            Some("queryVenues")
        );
        assert_eq!(
            name("# query Commented\nmutation  Make { a }").as_deref(),
            Some("Make")
        );
        assert_eq!(name("{ task(id: 1) { query } }"), None);
        assert_eq!(name("query { a }"), None);
        assert_eq!(
            name("fragment F on T { query } query Q { ...F }").as_deref(),
            Some("Q")
        );
        assert_eq!(name("query(\"query X\")"), None);
        assert_eq!(name(""), None);
    }
}
