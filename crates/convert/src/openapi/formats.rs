//! Scalars generated from a schema's `type`, `format` and bounds: the smallest valid
//! number near 1, a string of the format (a template for `uuid` and times, so each
//! request sends a fresh one) or of `minLength`.

use super::node::{Node, Value};
use super::val::{Val, MAX_GENERATED_LEN};

/// The schema's type: `type` (the first that is not `null` of a 3.1 list), else
/// guessed from its keys.
pub(crate) fn kind(s: &Node) -> &str {
    match s.get("type").map(|t| &t.value) {
        Some(Value::Str(t)) => return t,
        Some(Value::Seq(types)) => {
            let names: Vec<&str> = types.iter().filter_map(Node::as_str).collect();
            if let Some(t) = names.iter().find(|t| **t != "null") {
                return t;
            }
            if !names.is_empty() {
                return "null";
            }
        }
        _ => {}
    }
    if s.get("properties").is_some() || s.get("additionalProperties").is_some() {
        "object"
    } else if s.get("items").is_some() {
        "array"
    } else {
        "string"
    }
}

/// A non-negative count (`minItems`, `maxLength`) of a schema.
pub(crate) fn count(s: &Node, key: &str) -> Option<usize> {
    s.get(key).and_then(Node::as_f64).map(|f| {
        if f > 0.0 {
            f.min(usize::MAX as f64) as usize
        } else {
            0
        }
    })
}

/// A bound of a schema: `minimum`/`maximum` with 3.0's `exclusiveMinimum: true`, or
/// 3.1's `exclusiveMinimum: 5`; `(value, exclusive)`.
fn bound(s: &Node, inclusive: &str, exclusive: &str) -> Option<(f64, bool)> {
    let flagged = matches!(s.get(exclusive).map(|v| &v.value), Some(Value::Bool(true)));
    match (
        s.get(inclusive).and_then(Node::as_f64),
        s.get(exclusive).and_then(Node::as_f64),
    ) {
        (_, Some(x)) if x.is_finite() => Some((x, true)),
        (Some(v), _) if v.is_finite() => Some((v, flagged)),
        _ => None,
    }
}

/// The valid integer nearest 1: the lowest allowed when there is a lower bound, else
/// 1 unless the upper bound is below it; rounded up to `multipleOf`.
pub(crate) fn integer(s: &Node) -> i64 {
    let low =
        bound(s, "minimum", "exclusiveMinimum")
            .map(|(v, x)| if x { v.floor() + 1.0 } else { v.ceil() });
    let high =
        bound(s, "maximum", "exclusiveMaximum")
            .map(|(v, x)| if x { v.ceil() - 1.0 } else { v.floor() });
    let mut n = match (low, high) {
        (Some(low), _) => low,
        (None, Some(high)) if high < 1.0 => high,
        _ => 1.0,
    };
    if let Some(m) = s
        .get("multipleOf")
        .and_then(Node::as_f64)
        .filter(|m| *m >= 1.0 && m.fract() == 0.0)
    {
        n = (n / m).ceil() * m;
    }
    n.clamp(-9e15, 9e15) as i64
}

/// A valid number: the lower bound (or between the bounds when one is exclusive),
/// else 1.5 unless the upper bound is below it.
pub(crate) fn number(s: &Node) -> Val {
    let low = bound(s, "minimum", "exclusiveMinimum");
    let high = bound(s, "maximum", "exclusiveMaximum");
    Val::Float(match (low, high) {
        (Some((l, false)), _) => l,
        (Some((l, true)), Some((h, _))) => (l + h) / 2.0,
        (Some((l, true)), None) => l + 1.0,
        (None, Some((h, x))) if h <= 1.5 => {
            if x {
                h - 1.0
            } else {
                h
            }
        }
        _ => 1.5,
    })
}

/// A string for `format`, or of `minLength` (within `maxLength`).
pub(crate) fn string(s: &Node) -> Val {
    match s.str_of("format").unwrap_or("") {
        "uuid" => return Val::Tpl("uuid()"),
        "date-time" => return Val::Tpl("now_iso()"),
        "date" => return Val::Tpl("now_format(\"%Y-%m-%d\")"),
        "time" => return Val::Tpl("now_format(\"%H:%M:%SZ\")"),
        "email" => return Val::Str("user@example.com".into()),
        // Addresses point at loopback: a service may call back what it is sent (a
        // webhook URL), and a load test must never make it reach out elsewhere.
        "uri" | "url" | "iri" => return Val::Str("http://127.0.0.1/".into()),
        "hostname" => return Val::Str("localhost".into()),
        "ipv4" => return Val::Str("127.0.0.1".into()),
        "ipv6" => return Val::Str("::1".into()),
        "byte" => return Val::Str("aGVhZHJvb20=".into()),
        _ => {}
    }
    let min = count(s, "minLength").unwrap_or(0).min(MAX_GENERATED_LEN);
    let max = count(s, "maxLength").unwrap_or(usize::MAX);
    let mut text = String::from("string");
    while text.len() < min {
        text.push('x');
    }
    text.truncate(max.max(min));
    Val::Str(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openapi::read::parse;
    use crate::Source;

    fn schema(text: &str) -> Node {
        parse(&Source {
            file: "s.yaml",
            text,
        })
        .unwrap()
    }

    #[test]
    fn numbers_respect_their_bounds_in_both_dialects() {
        for (text, want) in [
            ("{type: integer}", 1),
            ("{type: integer, minimum: 5}", 5),
            ("{type: integer, minimum: 5, exclusiveMinimum: true}", 6),
            ("{type: integer, exclusiveMinimum: 5}", 6),
            ("{type: integer, maximum: -3}", -3),
            ("{type: integer, exclusiveMaximum: 0}", -1),
            ("{type: integer, maximum: 100}", 1),
            ("{type: integer, minimum: 1, multipleOf: 25}", 25),
            ("{type: integer, minimum: 1e300}", 9_000_000_000_000_000),
        ] {
            assert_eq!(integer(&schema(text)), want, "{text}");
        }
        assert_eq!(number(&schema("{type: number}")), Val::Float(1.5));
        assert_eq!(number(&schema("{minimum: 0.25}")), Val::Float(0.25));
        assert_eq!(
            number(&schema("{exclusiveMinimum: 0, maximum: 1}")),
            Val::Float(0.5)
        );
        assert_eq!(number(&schema("{maximum: 0.5}")), Val::Float(0.5));
    }

    #[test]
    fn strings_follow_format_and_length() {
        assert_eq!(string(&schema("{format: uuid}")), Val::Tpl("uuid()"));
        assert_eq!(
            string(&schema("{format: date-time}")),
            Val::Tpl("now_iso()")
        );
        assert_eq!(
            string(&schema("{format: email}")),
            Val::Str("user@example.com".into())
        );
        assert_eq!(
            string(&schema("{minLength: 9}")),
            Val::Str("stringxxx".into())
        );
        assert_eq!(string(&schema("{maxLength: 3}")), Val::Str("str".into()));
        let Val::Str(long) = string(&schema("{minLength: 1000000}")) else {
            panic!()
        };
        assert_eq!(long.len(), MAX_GENERATED_LEN);
        assert_eq!(kind(&schema("{type: [\"null\", integer]}")), "integer");
        assert_eq!(kind(&schema("{type: [\"null\"]}")), "null");
        assert_eq!(kind(&schema("{properties: {}}")), "object");
        assert_eq!(kind(&schema("{items: {}}")), "array");
        assert_eq!(kind(&schema("{}")), "string");
    }
}
