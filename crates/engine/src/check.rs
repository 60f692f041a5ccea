//! Response checks: judge a response against a request's [`Expect`], then take its
//! captures (`capture.rs`).
//!
//! The engine calls [`judge`] once per final response. The body is parsed as JSON at
//! most once, and only when a JSONPath expectation or a capture needs it.

use serde_json::Value;

use crate::capture::{Captured, Heads};
use headroom_client::session::Reply;
use headroom_metrics::ErrorKind;
use headroom_plan::journey::{Expected, ResponseCapture};
use headroom_plan::Expect;
use headroom_template::RenderContext;

/// Judges a response against `expect` and takes `captures` from it. `reply.body` is
/// the complete body when the request needs it (see
/// [`headroom_plan::RequestTemplate::needs_body`]), else empty. On success, captures
/// are stored in `vars`. Returns the error kind of the first failed expectation:
///
/// - status: with no `expect.status`, a status of 400 or more is `status_4xx`/`status_5xx`;
///   with one, a status outside it is `status_4xx`/`status_5xx` when ≥ 400, else `check`;
/// - `body_contains`, JSONPath expectations (a body that is not JSON fails them) and
///   captures (one that matches nothing and has no `default`) fail with `check`;
/// - a GraphQL request whose status passed fails with `graphql` when its body is not
///   JSON or has a non-empty `errors` array ([`graphql_message`] says why).
///
/// Returns the captured values, for the caller to store once nothing failed.
pub(crate) fn judge(
    expect: &Expect,
    captures: &[ResponseCapture],
    reply: &Reply<'_>,
    heads: &Heads,
    ctx: &mut RenderContext<'_>,
) -> Result<Captured, ErrorKind> {
    let body = reply.body;
    check_status(expect, reply.status)?;
    if let Some(needle) = &expect.body_contains {
        let mut text = Vec::new();
        needle.render(ctx, &mut text);
        if !contains(body, &text) {
            return Err(ErrorKind::Check);
        }
    }
    let wants_json = !expect.json.is_empty()
        || captures
            .iter()
            .any(|c| matches!(c.from, headroom_plan::journey::CaptureFrom::Json(_)));
    if !wants_json {
        if expect.graphql {
            graphql_only(body)?;
        }
        return crate::capture::take(captures, reply, heads, None, ctx);
    }
    let json: Option<Value> = serde_json::from_slice(body).ok();
    if expect.graphql {
        match &json {
            Some(j) if j.is_object() && !failed(j.get("errors")) => {}
            _ => return Err(ErrorKind::Graphql),
        }
    }
    if !expect.json.is_empty() {
        let json = json.as_ref().ok_or(ErrorKind::Check)?;
        for rule in &expect.json {
            let found = rule.path.query(json).first().ok_or(ErrorKind::Check)?;
            if let Some(want) = &rule.equals {
                if !expected_equal(found, want, ctx) {
                    return Err(ErrorKind::Check);
                }
            }
        }
    }
    crate::capture::take(captures, reply, heads, json.as_ref(), ctx)
}

/// Whether `found` equals what the scenario expects: a literal JSON value (numbers by
/// value), or a template's rendering, compared with a string or a number's text.
pub(crate) fn expected_equal(found: &Value, want: &Expected, ctx: &mut RenderContext<'_>) -> bool {
    match want {
        Expected::Value(v) => json_equal(found, v),
        Expected::Template(t) => {
            let mut text = Vec::new();
            t.render(ctx, &mut text);
            match found {
                Value::String(s) => s.as_bytes() == text.as_slice(),
                other => other.to_string().as_bytes() == text.as_slice(),
            }
        }
    }
}

/// The GraphQL verdict alone, without building the body's JSON tree: serde skips
/// every other field (still checking it is JSON) and counts the `errors`.
fn graphql_only(body: &[u8]) -> Result<(), ErrorKind> {
    #[derive(serde::Deserialize)]
    struct Probe {
        // `errors` is absent in a success: built only when there is one. Other
        // fields are skipped (serde's default), still checked to be JSON.
        errors: Option<Value>,
    }
    // A derived struct would also accept a JSON array (`[null]`): only an object is
    // a GraphQL response.
    if body.trim_ascii_start().first() != Some(&b'{') {
        return Err(ErrorKind::Graphql);
    }
    match serde_json::from_slice::<Probe>(body) {
        Ok(probe) if !failed(probe.errors.as_ref()) => Ok(()),
        _ => Err(ErrorKind::Graphql),
    }
}

/// Whether a GraphQL response's `errors` member makes it a failure: anything but
/// absent, `null` or an empty array (a non-array is a malformed response).
fn failed(errors: Option<&Value>) -> bool {
    match errors {
        None | Some(Value::Null) => false,
        Some(Value::Array(a)) => !a.is_empty(),
        Some(_) => true,
    }
}

/// The non-empty `errors` array of a GraphQL response.
fn graphql_errors(json: &Value) -> Option<&Vec<Value>> {
    json.get("errors")
        .and_then(Value::as_array)
        .filter(|e| !e.is_empty())
}

/// Longest GraphQL error message kept for the report, in characters.
pub(crate) const MAX_MESSAGE_CHARS: usize = 300;

/// Why a body failed the GraphQL check, for the report: the first error's `message`
/// passed through `scrub` (which masks secrets) and then cut to at most
/// [`MAX_MESSAGE_CHARS`] (raw text: renderers escape it), or that the body is not
/// JSON. Scrubbed before it is cut, so a cut never leaves half a secret to be found.
/// Called only for the run's first `graphql` failure, so it may parse again.
pub(crate) fn graphql_message(body: &[u8], scrub: impl FnOnce(&str) -> String) -> String {
    let Ok(json) = serde_json::from_slice::<Value>(body) else {
        return "response body is not JSON".into();
    };
    let first = graphql_errors(&json).and_then(|e| e.first());
    let text = match first.map(|e| e.get("message").unwrap_or(e)) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "errors without a message".into(),
    };
    let text = scrub(&text);
    let mut kept: String = text.chars().take(MAX_MESSAGE_CHARS).collect();
    if kept.len() < text.len() {
        kept.push('…');
    }
    kept
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
/// JSON equality where numbers compare by value (`1` equals `1.0`).
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
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

    use rand::SeedableRng;

    use super::*;
    use headroom_plan::journey::{CaptureFrom, CapturePick};
    use headroom_plan::{JsonExpect, StatusRange};
    use headroom_template::{Escape, Template, Vars};

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
            equals: equals.map(Expected::Value),
        }
    }

    fn capture(var: &str, path: &str) -> ResponseCapture {
        ResponseCapture {
            var: var.into(),
            from: CaptureFrom::Json(JsonPath::parse(path).unwrap()),
            pick: CapturePick::First,
            default: None,
            source: path.into(),
        }
    }

    fn run(
        expect: &Expect,
        captures: &[ResponseCapture],
        status: u16,
        body: &str,
    ) -> (Result<(), ErrorKind>, Vars) {
        let mut vars = Vars::default();
        let reply = Reply {
            status,
            headers: &[],
            body: body.as_bytes(),
        };
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let empty = Vars::default();
        let mut ctx = RenderContext {
            rng: &mut rng,
            vars: &empty,
            user: 1,
            iteration: 0,
        };
        let result = judge(expect, captures, &reply, &Heads::default(), &mut ctx);
        let result = result.map(|captured| crate::capture::store(captured, &mut vars));
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
            body_contains: Some(Template::literal("\"ok\"", Escape::None)),
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
            body_contains: Some(Template::literal("x", Escape::None)),
            ..expect_status(&[(200, 200)])
        };
        assert_eq!(run(&e, &[], 500, "x").0, Err(ErrorKind::Status5xx));
    }

    #[test]
    fn graphql_errors_and_non_json_bodies_fail_with_graphql() {
        let e = Expect {
            graphql: true,
            ..Expect::default()
        };
        let id = [capture("id", "$.data.t.id")];
        let ok = r#"{"data": {"t": {"id": 7}}, "errors": []}"#;
        let (result, vars) = run(&e, &id, 200, ok);
        assert_eq!(result, Ok(()));
        assert_eq!(vars.get("id"), Some("7"));
        let failed = r#"{"data": null, "errors": [{"message": "no <task>"}, {"message": "b"}]}"#;
        assert_eq!(run(&e, &id, 200, failed).0, Err(ErrorKind::Graphql));
        assert_eq!(
            graphql_message(failed.as_bytes(), str::to_string),
            "no <task>"
        );
        assert_eq!(run(&e, &[], 200, "<html>").0, Err(ErrorKind::Graphql));
        // Without captures, the same verdicts from the lighter probe.
        assert_eq!(run(&e, &[], 200, ok).0, Ok(()));
        assert_eq!(
            run(&e, &[], 200, r#"{"data": {}, "errors": null}"#).0,
            Ok(())
        );
        assert_eq!(run(&e, &[], 200, failed).0, Err(ErrorKind::Graphql));
        assert_eq!(
            run(&e, &[], 200, r#"{"data": {}} x"#).0,
            Err(ErrorKind::Graphql)
        );
        assert_eq!(run(&e, &[], 200, "[1]").0, Err(ErrorKind::Graphql));
        assert_eq!(run(&e, &[], 200, "[null]").0, Err(ErrorKind::Graphql));
        assert_eq!(run(&e, &[], 200, " {}").0, Ok(()));
        for (body, want) in [
            (r#"{"errors": "oops"}"#, Err(ErrorKind::Graphql)),
            (r#"{"data": {"errors": [1]}}"#, Ok(())),
            ("[null]", Err(ErrorKind::Graphql)),
        ] {
            assert_eq!(run(&e, &[], 200, body).0, want, "{body}");
            assert_eq!(run(&e, &id[..0], 200, body).0, want, "{body}");
            let mut with_json = e.clone();
            with_json.json.push(json_rule("$", None));
            assert_eq!(run(&with_json, &[], 200, body).0, want, "{body}");
        }
        assert_eq!(
            graphql_message(b"<html>", str::to_string),
            "response body is not JSON"
        );
        // The status is judged first: a 500 stays a 5xx.
        assert_eq!(run(&e, &[], 500, failed).0, Err(ErrorKind::Status5xx));
        // A message without `message`, and a long one, cut at the limit.
        assert_eq!(
            graphql_message(br#"{"errors": [{"code": 1}]}"#, str::to_string),
            r#"{"code":1}"#
        );
        let long = format!(r#"{{"errors": [{{"message": "{}"}}]}}"#, "é".repeat(1000));
        let kept = graphql_message(long.as_bytes(), str::to_string);
        assert_eq!(kept.chars().count(), MAX_MESSAGE_CHARS + 1);
        assert!(kept.ends_with('…'));
    }
}
