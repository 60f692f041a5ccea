//! Response checks and flow captures: judge a response against a request's
//! [`Expect`] and pull captured variables out of its JSON body.
//!
//! The engine calls [`judge`] once per response. The body is parsed as JSON at most
//! once, and only when a JSONPath expectation or a capture needs it.

use serde_json::Value;

use crate::metrics::ErrorKind;
use crate::plan::{Capture, Expect};
use crate::template::Vars;

/// Judges a response. `body` is the complete body when the request needs it (see
/// [`crate::plan::RequestTemplate::needs_body`]), else empty. On success, captures are
/// stored in `vars`. Returns the error kind of the first failed expectation:
///
/// - status: with no `expect.status`, a status of 400 or more is `status_4xx`/`status_5xx`;
///   with one, a status outside it is `status_4xx`/`status_5xx` when ≥ 400, else `check`;
/// - `body_contains`, JSONPath expectations (a body that is not JSON fails them) and
///   captures (a query that matches nothing) fail with `check`.
///
/// A capture stores the first match: a string without its quotes, anything else as
/// compact JSON text. Nothing is stored unless every check and capture succeeds.
pub fn judge(
    expect: &Expect,
    captures: &[Capture],
    status: u16,
    body: &[u8],
    vars: &mut Vars,
) -> Result<(), ErrorKind> {
    check_status(expect, status)?;
    if let Some(needle) = &expect.body_contains {
        if !contains(body, needle.as_bytes()) {
            return Err(ErrorKind::Check);
        }
    }
    if expect.json.is_empty() && captures.is_empty() {
        return Ok(());
    }
    let json: Value = serde_json::from_slice(body).map_err(|_| ErrorKind::Check)?;
    for rule in &expect.json {
        let found = rule.path.query(&json).first().ok_or(ErrorKind::Check)?;
        if let Some(want) = &rule.equals {
            if !json_equal(found, want) {
                return Err(ErrorKind::Check);
            }
        }
    }
    let mut values = Vec::with_capacity(captures.len());
    for capture in captures {
        let found = capture.path.query(&json).first().ok_or(ErrorKind::Check)?;
        let text = match found {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        values.push(text);
    }
    for (capture, value) in captures.iter().zip(values) {
        vars.set(&capture.var, value);
    }
    Ok(())
}

fn check_status(expect: &Expect, status: u16) -> Result<(), ErrorKind> {
    if expect.status.is_empty() {
        return ErrorKind::for_status(status).map_or(Ok(()), Err);
    }
    if expect
        .status
        .iter()
        .any(|r| r.lo <= status && status <= r.hi)
    {
        Ok(())
    } else {
        Err(ErrorKind::for_status(status).unwrap_or(ErrorKind::Check))
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

/// Equality where numbers compare by value (`5` equals `5.0`), as a scenario author
/// writing `count: 5` means.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use serde_json_path::JsonPath;

    use super::*;
    use crate::plan::{JsonExpect, StatusRange};

    fn expect_status(ranges: &[(u16, u16)]) -> Expect {
        Expect {
            status: ranges
                .iter()
                .map(|&(lo, hi)| StatusRange { lo, hi })
                .collect(),
            ..Expect::default()
        }
    }

    fn json_rule(path: &str, equals: Option<Value>) -> JsonExpect {
        JsonExpect {
            path: JsonPath::parse(path).unwrap(),
            source: path.into(),
            equals,
        }
    }

    fn capture(var: &str, path: &str) -> Capture {
        Capture {
            var: var.into(),
            path: JsonPath::parse(path).unwrap(),
            source: path.into(),
        }
    }

    fn run(
        expect: &Expect,
        captures: &[Capture],
        status: u16,
        body: &str,
    ) -> (Result<(), ErrorKind>, Vars) {
        let mut vars = Vars::default();
        let result = judge(expect, captures, status, body.as_bytes(), &mut vars);
        (result, vars)
    }

    #[test]
    fn without_expected_status_only_errors_fail() {
        let e = Expect::default();
        for (status, want) in [
            (200, Ok(())),
            (302, Ok(())),
            (404, Err(ErrorKind::Status4xx)),
            (503, Err(ErrorKind::Status5xx)),
        ] {
            assert_eq!(run(&e, &[], status, "").0, want, "status {status}");
        }
    }

    #[test]
    fn expected_status_mismatch_is_check_below_400() {
        let e = expect_status(&[(201, 201), (300, 399)]);
        for (status, want) in [
            (201, Ok(())),
            (304, Ok(())),
            (200, Err(ErrorKind::Check)),
            (409, Err(ErrorKind::Status4xx)),
            (500, Err(ErrorKind::Status5xx)),
        ] {
            assert_eq!(run(&e, &[], status, "").0, want, "status {status}");
        }
        // An expected 404 is a success.
        assert_eq!(run(&expect_status(&[(404, 404)]), &[], 404, "").0, Ok(()));
    }

    #[test]
    fn body_contains() {
        let e = Expect {
            body_contains: Some("\"ok\"".into()),
            ..Expect::default()
        };
        assert_eq!(run(&e, &[], 200, r#"{"status":"ok"}"#).0, Ok(()));
        assert_eq!(
            run(&e, &[], 200, r#"{"status":"bad"}"#).0,
            Err(ErrorKind::Check)
        );
        assert_eq!(run(&e, &[], 200, "").0, Err(ErrorKind::Check));
    }

    #[test]
    fn json_path_exists_and_equals() {
        let e = Expect {
            json: vec![
                json_rule("$.data", None),
                json_rule("$.count", Some(json!(2))),
            ],
            ..Expect::default()
        };
        assert_eq!(run(&e, &[], 200, r#"{"data":[],"count":2}"#).0, Ok(()));
        assert_eq!(run(&e, &[], 200, r#"{"data":null,"count":2.0}"#).0, Ok(()));
        assert_eq!(run(&e, &[], 200, r#"{"count":2}"#).0, Err(ErrorKind::Check));
        assert_eq!(
            run(&e, &[], 200, r#"{"data":1,"count":3}"#).0,
            Err(ErrorKind::Check)
        );
        assert_eq!(run(&e, &[], 200, "not json").0, Err(ErrorKind::Check));
        let nested = Expect {
            json: vec![json_rule("$.a", Some(json!({"b": [1, "x"]})))],
            ..Expect::default()
        };
        assert_eq!(run(&nested, &[], 200, r#"{"a":{"b":[1.0,"x"]}}"#).0, Ok(()));
        assert_eq!(
            run(&nested, &[], 200, r#"{"a":{"b":[1,"y"]}}"#).0,
            Err(ErrorKind::Check)
        );
    }

    #[test]
    fn captures_store_first_match_as_text() {
        let caps = [
            capture("id", "$.items[*].id"),
            capture("name", "$.name"),
            capture("obj", "$.obj"),
        ];
        let (result, vars) = run(
            &Expect::default(),
            &caps,
            201,
            r#"{"items":[{"id":7},{"id":8}],"name":"a\"b","obj":{"k": [1, true]}}"#,
        );
        assert_eq!(result, Ok(()));
        assert_eq!(vars.get("id"), Some("7"));
        assert_eq!(vars.get("name"), Some("a\"b"));
        assert_eq!(vars.get("obj"), Some(r#"{"k":[1,true]}"#));
    }

    #[test]
    fn a_capture_that_finds_nothing_fails_and_stores_nothing() {
        let caps = [capture("id", "$.id"), capture("missing", "$.nope")];
        let (result, vars) = run(&Expect::default(), &caps, 200, r#"{"id":"x"}"#);
        assert_eq!(result, Err(ErrorKind::Check));
        assert_eq!(vars.get("id"), None);
        let (result, _) = run(&Expect::default(), &caps[..1], 200, "<html>");
        assert_eq!(result, Err(ErrorKind::Check));
    }

    #[test]
    fn status_failure_comes_before_body_checks() {
        let e = Expect {
            body_contains: Some("x".into()),
            ..expect_status(&[(200, 200)])
        };
        assert_eq!(run(&e, &[], 500, "x").0, Err(ErrorKind::Status5xx));
    }
}
