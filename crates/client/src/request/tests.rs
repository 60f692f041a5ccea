//! Request rendering for HTTP/2 (the HTTP/1.1 rendering is exercised through the
//! connection and engine tests).

use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::*;
use headroom_plan::Expect;
use headroom_template::{Escape, Template, Vars};

fn template(
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> RequestTemplate {
    RequestTemplate {
        name_id: 0,
        method: method.into(),
        path: Template::compile(path, Escape::None).unwrap(),
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), Template::compile(v, Escape::None).unwrap()))
            .collect(),
        body: body.map(|b| Template::compile(b, Escape::None).unwrap()),
        expect: Expect::default(),
        timeout: None,
        correlate: None,
        multipart: None,
        checks: Vec::new(),
        redirects: None,
    }
}

fn target(scheme: &str, base_path: &str) -> Target {
    Target {
        scheme: scheme.into(),
        host: "127.0.0.1".into(),
        port: 8443,
        authority: "127.0.0.1:8443".into(),
        base_path: base_path.into(),
    }
}

fn names(request: &http::Request<()>) -> Vec<String> {
    let mut names: Vec<_> = request.headers().keys().map(|n| n.to_string()).collect();
    names.sort();
    names
}

#[test]
fn connection_specific_headers_are_dropped_and_host_becomes_the_authority() {
    let t = template(
        "POST",
        "/items?x=1",
        &[
            ("Host", "example.org:9000"),
            ("Connection", "close"),
            ("Keep-Alive", "timeout=5"),
            ("Proxy-Connection", "keep-alive"),
            ("Transfer-Encoding", "chunked"),
            ("Upgrade", "h2c"),
            ("TE", "gzip"),
            ("Content-Length", "999"),
            ("X-Trace", "a"),
            ("x-trace", "b"),
        ],
        Some("hello"),
    );
    let prebuilt = h2_static(&t, &target("https", "/api")).unwrap().unwrap();
    let (request, body) = prebuilt.request();
    assert_eq!(request.method(), Method::POST);
    assert_eq!(
        request.uri().to_string(),
        "https://example.org:9000/api/items?x=1"
    );
    assert_eq!(names(&request), ["content-length", "user-agent", "x-trace"]);
    assert_eq!(
        request.headers()["content-length"],
        "5",
        "the body's real length"
    );
    let traces: Vec<_> = request.headers().get_all("x-trace").iter().collect();
    assert_eq!(traces, ["a", "b"], "repeated headers are all sent");
    assert_eq!(request.headers()["user-agent"], USER_AGENT);
    assert_eq!(body.as_deref(), Some(&b"hello"[..]));
    // Each send gets an equal, independent request.
    let (again, _) = prebuilt.request();
    assert_eq!(again.uri(), request.uri());
    assert_eq!(again.headers(), request.headers());
}

#[test]
fn te_trailers_is_kept_and_a_user_agent_replaces_ours() {
    let t = template(
        "GET",
        "x",
        &[("TE", "Trailers"), ("User-Agent", "probe/1")],
        None,
    );
    let (request, body) = h2_static(&t, &target("http", ""))
        .unwrap()
        .unwrap()
        .request();
    assert_eq!(
        request.uri().to_string(),
        "http://127.0.0.1:8443/x",
        "authority from the target"
    );
    assert_eq!(
        names(&request),
        ["te", "user-agent"],
        "no content-length without a body"
    );
    assert_eq!(request.headers()["user-agent"], "probe/1");
    assert_eq!(body, None);
}

#[test]
fn a_templated_request_is_rendered_per_send() {
    let t = template(
        "PUT",
        "/users/{{ rand_int(7, 7) }}",
        &[
            ("X-Id", "{{ rand_int(3, 3) }}"),
            ("Host", "h{{ rand_int(1, 1) }}.test"),
        ],
        Some(r#"{"n": {{ rand_int(42, 42) }}}"#),
    );
    let target = target("http", "/v1");
    assert!(
        h2_static(&t, &target).is_none(),
        "placeholders: not prebuilt"
    );
    let mut rng = SmallRng::seed_from_u64(1);
    let vars = Vars::default();
    let mut ctx = RenderContext {
        rng: &mut rng,
        vars: &vars,
        user: 1,
        iteration: 0,
    };
    let mut scratch = Vec::new();
    let (request, body) = h2_request(&t, &target, &mut ctx, &[], &mut scratch).unwrap();
    assert_eq!(request.method(), Method::PUT);
    assert_eq!(request.uri().to_string(), "http://h1.test/v1/users/7");
    assert_eq!(request.headers()["x-id"], "3");
    assert_eq!(request.headers()["content-length"], "9");
    assert_eq!(body.as_deref(), Some(&br#"{"n": 42}"#[..]));
}

#[test]
fn what_http2_cannot_carry_is_an_error() {
    let bad = [
        (template("GE T", "/", &[], None), "method"),
        (
            template("GET", "/", &[("X-A", "line\nbreak")], None),
            "header",
        ),
        (template("GET", "/", &[(":path", "/x")], None), "header"),
        (template("GET", "/a b", &[], None), "uri"),
    ];
    for (t, what) in bad {
        let e = h2_static(&t, &target("http", "")).unwrap().unwrap_err();
        let matches = match what {
            "method" => matches!(e, H2RequestError::Method { .. }),
            "header" => matches!(e, H2RequestError::Header { .. }),
            _ => matches!(e, H2RequestError::Uri { .. }),
        };
        assert!(matches, "{what}: {e}");
    }
}
