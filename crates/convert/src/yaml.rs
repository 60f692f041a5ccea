//! A scenario document as converters build it ([`Yaml`]: mappings keep the order keys
//! were inserted in, so the output reads in the order a person writes a scenario) and
//! its YAML text. Every string is written JSON-quoted (YAML is a superset of JSON), so
//! no value can break out of its scalar, whatever bytes the input held.

use std::fmt::Write;

/// One node of a scenario document.
#[derive(Debug, Clone, PartialEq)]
pub enum Yaml {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A number with a fraction (written as JSON writes it; non-finite values as `null`).
    Float(f64),
    /// A string, always quoted.
    Str(String),
    /// A sequence.
    Seq(Vec<Yaml>),
    /// A mapping, in insertion order.
    Map(Vec<(String, Yaml)>),
}

impl Yaml {
    /// An empty mapping.
    pub fn map() -> Yaml {
        Yaml::Map(Vec::new())
    }

    /// A string node.
    pub fn str(text: impl Into<String>) -> Yaml {
        Yaml::Str(text.into())
    }

    /// Sets `key` in a mapping (replacing an earlier value in its place, or appending);
    /// returns the mapping, for chaining. On another node it does nothing.
    pub fn with(mut self, key: &str, value: impl Into<Yaml>) -> Yaml {
        self.set(key, value);
        self
    }

    /// Sets `key` in a mapping, replacing an earlier value in its place, or appending.
    pub fn set(&mut self, key: &str, value: impl Into<Yaml>) {
        if let Yaml::Map(entries) = self {
            let value = value.into();
            match entries.iter_mut().find(|(k, _)| k == key) {
                Some((_, v)) => *v = value,
                None => entries.push((key.to_string(), value)),
            }
        }
    }

    /// The value of `key` in a mapping.
    pub fn get(&self, key: &str) -> Option<&Yaml> {
        match self {
            Yaml::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value of `key` in a mapping, mutable.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Yaml> {
        match self {
            Yaml::Map(entries) => entries.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Appends to a sequence (on another node it does nothing).
    pub fn push(&mut self, value: impl Into<Yaml>) {
        if let Yaml::Seq(items) = self {
            items.push(value.into());
        }
    }

    /// A JSON value as a node (object keys in the JSON value's own order).
    pub fn from_json(value: &serde_json::Value) -> Yaml {
        use serde_json::Value;
        match value {
            Value::Null => Yaml::Null,
            Value::Bool(b) => Yaml::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Yaml::Int(i),
                None => Yaml::Float(n.as_f64().unwrap_or(0.0)),
            },
            Value::String(s) => Yaml::Str(s.clone()),
            Value::Array(a) => Yaml::Seq(a.iter().map(Yaml::from_json).collect()),
            Value::Object(o) => Yaml::Map(
                o.iter()
                    .map(|(k, v)| (k.clone(), Yaml::from_json(v)))
                    .collect(),
            ),
        }
    }

    /// The document as YAML text, with `comments` (one per line, without `#`) above it.
    pub fn document(&self, comments: &[String]) -> String {
        let mut out = String::new();
        for c in comments {
            for line in c.lines() {
                let _ = writeln!(out, "# {line}");
            }
        }
        match self {
            Yaml::Map(entries) if !entries.is_empty() => write_map(&mut out, entries, 0),
            Yaml::Seq(items) if !items.is_empty() => write_seq(&mut out, items, 0),
            other => {
                write_inline(&mut out, other);
                out.push('\n');
            }
        }
        out
    }
}

impl From<&str> for Yaml {
    fn from(s: &str) -> Yaml {
        Yaml::Str(s.to_string())
    }
}

impl From<String> for Yaml {
    fn from(s: String) -> Yaml {
        Yaml::Str(s)
    }
}

impl From<bool> for Yaml {
    fn from(b: bool) -> Yaml {
        Yaml::Bool(b)
    }
}

impl From<i64> for Yaml {
    fn from(i: i64) -> Yaml {
        Yaml::Int(i)
    }
}

impl From<u64> for Yaml {
    fn from(i: u64) -> Yaml {
        i64::try_from(i).map_or(Yaml::Float(i as f64), Yaml::Int)
    }
}

impl From<usize> for Yaml {
    fn from(i: usize) -> Yaml {
        Yaml::from(i as u64)
    }
}

impl From<f64> for Yaml {
    fn from(f: f64) -> Yaml {
        if f.fract() == 0.0 && f.abs() < 9e15 {
            Yaml::Int(f as i64)
        } else {
            Yaml::Float(f)
        }
    }
}

impl From<Vec<Yaml>> for Yaml {
    fn from(items: Vec<Yaml>) -> Yaml {
        Yaml::Seq(items)
    }
}

/// A string as a YAML scalar: JSON-quoted.
fn quote(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

/// A mapping key as a person writes it: bare when it is a plain word YAML reads back as
/// that same string (`name`, `x-api-key`, `json_path`), JSON-quoted otherwise (`$.id`,
/// `Content-Type: x`, `true`, `on`, a number...).
fn key(text: &str) -> String {
    const RESERVED: &[&str] = &["true", "false", "null", "yes", "no", "on", "off", "y", "n"];
    let bare = text.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !RESERVED.iter().any(|r| r.eq_ignore_ascii_case(text));
    if bare {
        text.to_string()
    } else {
        quote(text)
    }
}

/// Whether a node is written on its key's line (scalars, empty collections).
fn is_inline(node: &Yaml) -> bool {
    match node {
        Yaml::Seq(items) => items.is_empty(),
        Yaml::Map(entries) => entries.is_empty(),
        _ => true,
    }
}

fn write_inline(out: &mut String, node: &Yaml) {
    match node {
        Yaml::Null => out.push_str("null"),
        Yaml::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Yaml::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Yaml::Float(f) if f.is_finite() => {
            let _ = write!(out, "{}", serde_json::Value::from(*f));
        }
        Yaml::Float(_) => out.push_str("null"),
        Yaml::Str(s) => out.push_str(&quote(s)),
        Yaml::Seq(_) => out.push_str("[]"),
        Yaml::Map(_) => out.push_str("{}"),
    }
}

fn write_map(out: &mut String, entries: &[(String, Yaml)], indent: usize) {
    for (i, (key, value)) in entries.iter().enumerate() {
        // The first key of a mapping inside a sequence sits on the `- ` line.
        if i > 0 || !out.ends_with("- ") {
            out.push_str(&" ".repeat(indent));
        }
        out.push_str(&self::key(key));
        out.push(':');
        write_value(out, value, indent);
    }
}

fn write_seq(out: &mut String, items: &[Yaml], indent: usize) {
    for item in items {
        out.push_str(&" ".repeat(indent));
        out.push_str("- ");
        match item {
            Yaml::Map(entries) if !entries.is_empty() => write_map(out, entries, indent + 2),
            Yaml::Seq(inner) if !inner.is_empty() => {
                out.push('\n');
                write_seq(out, inner, indent + 2);
            }
            other => {
                write_inline(out, other);
                out.push('\n');
            }
        }
    }
}

/// A mapping's value after `key:`.
fn write_value(out: &mut String, value: &Yaml, indent: usize) {
    if is_inline(value) {
        out.push(' ');
        write_inline(out, value);
        out.push('\n');
        return;
    }
    out.push('\n');
    match value {
        Yaml::Map(entries) => write_map(out, entries, indent + 2),
        Yaml::Seq(items) => write_seq(out, items, indent + 2),
        _ => unreachable!("scalars are inline"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_reads_back_as_the_same_tree() {
        let doc = Yaml::map()
            .with("name", "a \"quoted\": name\n# not a comment")
            .with("target", "http://127.0.0.1:9")
            .with(
                "load",
                Yaml::map().with("users", 2i64).with("duration", "10s"),
            )
            .with(
                "requests",
                Yaml::Seq(vec![
                    Yaml::map()
                        .with("path", "/a")
                        .with("headers", Yaml::map().with("x-a", "1")),
                    Yaml::map().with("path", "/b").with(
                        "json",
                        Yaml::from_json(
                            &serde_json::json!({"k": [1, 2.5, null, {"z": true}], "e": {}}),
                        ),
                    ),
                ]),
            )
            .with("empty", Yaml::Seq(vec![]))
            .with(
                "nested",
                Yaml::Seq(vec![Yaml::Seq(vec![Yaml::from(1i64)]), Yaml::str("x")]),
            );
        let text = doc.document(&["made by a test".into(), "two\nlines".into()]);
        assert!(
            text.starts_with("# made by a test\n# two\n# lines\n"),
            "{text}"
        );
        let back: serde_json::Value =
            serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(
            back,
            serde_json::json!({
                "name": "a \"quoted\": name\n# not a comment",
                "target": "http://127.0.0.1:9",
                "load": {"users": 2, "duration": "10s"},
                "requests": [
                    {"path": "/a", "headers": {"x-a": "1"}},
                    {"path": "/b", "json": {"k": [1, 2.5, null, {"z": true}], "e": {}}}
                ],
                "empty": [],
                "nested": [[1], "x"]
            })
        );
    }

    #[test]
    fn plain_keys_are_bare_and_the_rest_quoted() {
        let doc = Yaml::map()
            .with("name", "a")
            .with("x-api-key", "b")
            .with("Content-Type", "c")
            .with("$.id", "d")
            .with("on", "e")
            .with("NO", "f")
            .with("1st", "g")
            .with("a b", "h")
            .with("", "i");
        let text = doc.document(&[]);
        assert_eq!(
            text,
            "name: \"a\"\nx-api-key: \"b\"\nContent-Type: \"c\"\n\"$.id\": \"d\"\n\"on\": \"e\"\n\"NO\": \"f\"\n\"1st\": \"g\"\n\"a b\": \"h\"\n\"\": \"i\"\n"
        );
        let back: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(back["on"], "e");
        assert_eq!(back["NO"], "f");
        assert_eq!(back["x-api-key"], "b");
    }

    #[test]
    fn set_replaces_in_place() {
        let mut m = Yaml::map().with("a", 1i64).with("b", 2i64);
        m.set("a", 3i64);
        assert_eq!(
            m,
            Yaml::Map(vec![("a".into(), Yaml::Int(3)), ("b".into(), Yaml::Int(2))])
        );
        assert_eq!(m.get("b"), Some(&Yaml::Int(2)));
    }
}
