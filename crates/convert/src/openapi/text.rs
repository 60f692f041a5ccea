//! Values as the scenario writes them: in a `json:` body (typed), and as text in a
//! path, a query string, a header or a form field, where literal data is
//! percent-encoded now and a template expression is wrapped in `urlencode(…)` to be
//! encoded as it renders. Every literal `{{` is written as `{{ '{{' }}`, so nothing
//! the document holds can become a placeholder.

use super::sample::Val;
use crate::Yaml;

/// A piece of a text value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Piece {
    /// Data (encoded where the place needs it).
    Lit(String),
    /// Punctuation of a serialization style (`,`, `=`, `&`), never encoded.
    Raw(&'static str),
    /// A template expression.
    Expr(String),
}

/// How a text is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Enc {
    /// Percent-encoded (parameter values in paths, query strings, cookies).
    Url,
    /// The document's own path text: what a path may hold kept (`/`, `:`, `@`,
    /// sub-delimiters, existing `%XX`), anything else percent-encoded.
    Path,
    /// As is (headers, form and multipart fields, raw bodies).
    Plain,
}

/// The pieces as template text.
pub(crate) fn render(pieces: &[Piece], enc: Enc) -> String {
    let mut out = String::new();
    for piece in pieces {
        match (piece, enc) {
            (Piece::Lit(s), Enc::Url) => out.push_str(&percent_encode(s)),
            (Piece::Lit(s), Enc::Path) => out.push_str(&path_encode(s)),
            (Piece::Lit(s), Enc::Plain) => out.push_str(&escape_braces(&single_line(s))),
            (Piece::Raw(s), _) => out.push_str(s),
            // The generators render URL-safe text (a UUID, digits, an RFC 3339 time);
            // only an environment variable's value can hold anything.
            (Piece::Expr(e), Enc::Url | Enc::Path) if e.starts_with("env.") => {
                out.push_str("{{ urlencode(");
                out.push_str(e);
                out.push_str(") }}");
            }
            (Piece::Expr(e), _) => {
                out.push_str("{{ ");
                out.push_str(e);
                out.push_str(" }}");
            }
        }
    }
    out
}

/// A scalar value as pieces; a collection in a scalar's place as its JSON text.
pub(crate) fn scalar(v: &Val) -> Piece {
    match v {
        Val::Null => Piece::Lit(String::new()),
        Val::Bool(b) => Piece::Lit(b.to_string()),
        Val::Int(i) => Piece::Lit(i.to_string()),
        Val::Float(f) => Piece::Lit(float_text(*f)),
        Val::Str(s) => Piece::Lit(s.clone()),
        Val::Tpl(e) => Piece::Expr((*e).to_string()),
        Val::Seq(_) | Val::Map(_) => Piece::Lit(json_text(v)),
    }
}

fn float_text(f: f64) -> String {
    serde_json::Number::from_f64(f).map_or_else(|| "0".into(), |n| n.to_string())
}

/// A value as compact JSON text (templates as their placeholder).
pub(crate) fn json_text(v: &Val) -> String {
    let json = plain_json(v);
    json.to_string()
}

fn plain_json(v: &Val) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Val::Null => Value::Null,
        Val::Bool(b) => Value::Bool(*b),
        Val::Int(i) => Value::from(*i),
        Val::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        Val::Str(s) => Value::String(s.clone()),
        Val::Tpl(e) => Value::String(format!("{{{{ {e} }}}}")),
        Val::Seq(items) => Value::Array(items.iter().map(plain_json).collect()),
        Val::Map(entries) => Value::Object(
            entries
                .iter()
                .map(|(k, v)| (k.clone(), plain_json(v)))
                .collect(),
        ),
    }
}

/// A value for a `json:` body: literal strings (and keys) with `{{` escaped, an
/// expression as a string that is exactly its placeholder (so `uuid()` stays a
/// string and a number generator a number).
pub(crate) fn json_yaml(v: &Val) -> Yaml {
    match v {
        Val::Null => Yaml::Null,
        Val::Bool(b) => Yaml::Bool(*b),
        Val::Int(i) => Yaml::Int(*i),
        Val::Float(f) => Yaml::Float(*f),
        Val::Str(s) => Yaml::Str(escape_braces(s)),
        Val::Tpl(e) => Yaml::Str(format!("{{{{ {e} }}}}")),
        Val::Seq(items) => Yaml::Seq(items.iter().map(json_yaml).collect()),
        Val::Map(entries) => Yaml::Map(
            entries
                .iter()
                .map(|(k, v)| (escape_braces(k), json_yaml(v)))
                .collect(),
        ),
    }
}

/// `{{` written so that the template reads it as text: a quoted string expression, in
/// single quotes because a JSON body's text escapes double ones.
pub(crate) fn escape_braces(s: &str) -> String {
    s.replace("{{", "{{ '{{' }}")
}

/// Control characters (a line break in a header) as spaces.
fn single_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// What RFC 3986 allows in a path kept, every other byte percent-encoded (`{` among
/// them, so no template can start).
fn path_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/%".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Every byte but RFC 3986's unreserved ones percent-encoded (as `urlencode` does).
pub(crate) fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_are_encoded_and_expressions_wrapped() {
        let pieces = [
            Piece::Lit("a b/{{x}}".into()),
            Piece::Raw(","),
            Piece::Expr("uuid()".into()),
            Piece::Expr("env.KEY".into()),
        ];
        assert_eq!(
            render(&pieces, Enc::Url),
            "a%20b%2F%7B%7Bx%7D%7D,{{ uuid() }}{{ urlencode(env.KEY) }}"
        );
        assert_eq!(
            render(&pieces, Enc::Plain),
            "a b/{{ '{{' }}x}},{{ uuid() }}{{ env.KEY }}"
        );
        assert_eq!(
            render(&[Piece::Lit("a\r\nX: y".into())], Enc::Plain),
            "a  X: y"
        );
        assert_eq!(scalar(&Val::Float(2.5)), Piece::Lit("2.5".into()));
        assert_eq!(
            render(&[Piece::Lit("/café/{{a}} b/%20;x=1".into())], Enc::Path),
            "/caf%C3%A9/%7B%7Ba%7D%7D%20b/%20;x=1"
        );
        assert_eq!(
            json_yaml(&Val::Map(vec![("{{k".into(), Val::Tpl("now_iso()"))])),
            Yaml::Map(vec![("{{ '{{' }}k".into(), Yaml::str("{{ now_iso() }}"))])
        );
    }
}
