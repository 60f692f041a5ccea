//! Issue 30: an OpenAPI document, a Postman collection and a `.http` file, each
//! converted by `headroom convert` and the scenario run against the journey app (a
//! Django API on loopback); each test checks on the server's side what the converted
//! requests did (requests per route, bodies and headers received) against what the
//! input says, and that the summary adds up.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use headroom::metrics::summary::Summary;

use crate::support::journey::{exchange, JourneyApp};
use crate::support::{headroom_bin, read_summary, run_command, stderr, stdout};

const LIMIT: Duration = Duration::from_secs(90);

/// A file of `tests/fixtures/convert/`.
fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/convert")
        .join(name)
}

/// The fixture `name` copied into `dir` with the app's address where it says
/// `127.0.0.1:8000`.
fn pointed_at(app: &JourneyApp, name: &str, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    let addr = app.addr().to_string();
    let path = dir.join(name);
    std::fs::write(&path, text.replace("127.0.0.1:8000", &addr)).unwrap();
    path
}

/// `headroom ARGS...` with `env` set, at most [`LIMIT`].
fn headroom(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(headroom_bin());
    command.args(args).envs(env.iter().copied());
    run_command(command, LIMIT)
}

/// `headroom convert ARGS... -o DIR/converted.yaml`: exit 0 and a closing line counting
/// `noun`, the scenario's path returned.
#[track_caller]
fn convert(dir: &Path, args: &[&str], noun: &str) -> (PathBuf, String) {
    let out_path = dir.join("converted.yaml");
    let mut all = vec!["convert"];
    all.extend_from_slice(args);
    all.extend(["-o", out_path.to_str().unwrap()]);
    let out = headroom(&all, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}\n{}", stdout(&out));
    let closing = err
        .lines()
        .find(|l| l.starts_with("translated ") && l.contains(&format!(" {noun}; ")))
        .unwrap_or_else(|| panic!("no closing line counting {noun}:\n{err}"));
    assert!(closing.ends_with(" left out"), "{closing}");
    (out_path, err)
}

/// `headroom run SCENARIO ARGS... --quiet --out DIR/s.json` with `env`.
fn run(dir: &Path, scenario: &Path, args: &[&str], env: &[(&str, &str)]) -> (Output, Summary) {
    let out_file = dir.join("s.json");
    let mut all = vec!["run", scenario.to_str().unwrap()];
    all.extend_from_slice(args);
    all.extend(["--quiet", "--out", out_file.to_str().unwrap()]);
    let out = headroom(&all, env);
    assert!(out_file.is_file(), "no summary; stderr:\n{}", stderr(&out));
    (out, read_summary(&out_file))
}

/// A token of `user`, from the API's own login.
fn token_of(app: &JourneyApp, user: &str) -> String {
    let body = format!(r#"{{"username": "{user}", "password": "pw-{user}"}}"#);
    let reply = exchange(
        app.addr(),
        "POST",
        "/api/login",
        &[("content-type", "application/json")],
        body.as_bytes(),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    let v: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
    v["token"].as_str().unwrap().to_string()
}

#[test]
fn an_openapi_document_hits_every_operation_as_documented() {
    let Some(app) = JourneyApp::start(2) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let spec = fixture("journey-api.openapi.yaml");
    let (scenario, report) = convert(
        dir.path(),
        &["openapi", spec.to_str().unwrap(), "--server", &app.url()],
        "operations",
    );
    // The scenario reads the bearer token and the API key from the environment, and
    // says so.
    assert!(report.contains("BEARER_AUTH"), "{report}");
    // (A reset forgets the API's tokens too: it comes first.)
    app.reset_stats();
    let token = token_of(&app, "user0002");
    let env = [("BEARER_AUTH", token.as_str()), ("API_KEY", "key-123")];
    let (out, s) = run(
        dir.path(),
        &scenario,
        &["--rate", "60", "--duration", "1s"],
        &env,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{:?}",
        stderr(&out),
        s.errors
    );
    assert_eq!(s.errors.count, 0, "{:?}", s.errors.by_kind);
    let got = app.requests();
    for route in [
        "POST /api/login",
        "GET /api/items",
        "POST /api/items",
        "GET /api/whoami",
        "GET /echo/books",
        "PUT /echo/books",
    ] {
        assert!(got.count(route) >= 1, "{route}: {:?}", got.counts);
    }
    // The login's body is the document's example; the new item's is generated from
    // its schema (required and example values, read-only fields left out).
    // The first login is the test's own, for the token.
    for r in got.to("POST", "/api/login").into_iter().skip(1) {
        let body: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(body["username"], "user0001", "{}", r.body);
        assert!(
            r.header("authorization").is_none(),
            "security: [] sends none"
        );
    }
    for r in got.to("POST", "/api/items") {
        let body: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(body["name"], "widget", "{}", r.body);
        assert_eq!(body["tags"], serde_json::json!(["blue"]), "{}", r.body);
        assert!(
            body.get("id").is_none() && body.get("owner").is_none(),
            "{}",
            r.body
        );
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {token}").as_str())
        );
    }
    // Parameters: the path's example, the query's default, the header's example; the
    // API key in its header; the form body's enum's first value.
    for r in got.to("GET", "/echo/books") {
        assert_eq!(r.query, "page=2", "{:?}", r);
        assert_eq!(r.header("x-request-tag"), Some("tagged"));
    }
    for r in got.to("PUT", "/echo/books") {
        assert_eq!(r.header("x-api-key"), Some("key-123"));
        assert!(r.body.contains("colour=red"), "{}", r.body);
    }
    // --operations keeps what its globs match.
    let (only_echo, report) = convert(
        dir.path(),
        &[
            "openapi",
            spec.to_str().unwrap(),
            "--server",
            &app.url(),
            "--operations",
            "echo*",
        ],
        "operations",
    );
    assert!(
        report.contains("translated") && report.contains(" of 2 operations"),
        "{report}"
    );
    let text = std::fs::read_to_string(only_echo).unwrap();
    assert!(
        text.contains("echoGet") && !text.contains("listItems"),
        "{text}"
    );
}

#[test]
fn a_postman_collection_logs_in_and_uses_the_token_its_script_set() {
    let Some(app) = JourneyApp::start(3) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let collection = pointed_at(&app, "journey.postman_collection.json", dir.path());
    let environment = fixture("journey.postman_environment.json");
    let (scenario, report) = convert(
        dir.path(),
        &[
            "postman",
            collection.to_str().unwrap(),
            "--environment",
            environment.to_str().unwrap(),
        ],
        "requests",
    );
    // The console.log line is reported, not run.
    assert!(
        report
            .lines()
            .any(|l| l.contains("left out") && l.contains("console.log")),
        "{report}"
    );
    let (out, s) = run(
        dir.path(),
        &scenario,
        &["--users", "1", "--duration", "2s"],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{:?}",
        stderr(&out),
        s.errors
    );
    assert_eq!(s.errors.count, 0, "{:?}", s.errors.by_kind);
    let got = app.requests();
    // The environment's account logged in, as the raw JSON body says.
    let logins = got.to("POST", "/api/login");
    assert!(!logins.is_empty(), "{:?}", got.counts);
    for r in &logins {
        let body: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(body["username"], "user0002", "{}", r.body);
        assert!(
            r.header("authorization").is_none(),
            "noauth: {:?}",
            r.headers
        );
    }
    // Items: the collection's bearer auth with the token the login's script set, the
    // collection variable in the body, a fresh uuid per request.
    let created = got.to("POST", "/api/items");
    assert!(!created.is_empty(), "{:?}", got.counts);
    let mut refs = std::collections::BTreeSet::new();
    for r in &created {
        let auth = r.header("authorization").unwrap_or_default();
        assert!(
            auth.starts_with("Bearer ") && auth.len() == 7 + 32,
            "{auth}"
        );
        let body: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(body["name"], "postman-widget", "{}", r.body);
        refs.insert(body["ref"].as_str().unwrap().to_string());
    }
    assert_eq!(refs.len(), created.len(), "one uuid per request");
    // The item read back by the id the create's script captured.
    let read_back: u64 = (1..=created.len())
        .map(|id| got.count(&format!("GET /api/items/{id}")))
        .sum();
    assert!(read_back >= 1, "{:?}", got.counts);
    // The search's enabled query parameters only, and the folder's API key.
    for r in got.to("GET", "/echo/search") {
        assert_eq!(r.query, "q=widgets&limit=5", "{r:?}");
    }
    for r in got.to("POST", "/echo/form") {
        assert_eq!(r.header("x-api-key"), Some("key-from-environment"));
        assert!(r.body.starts_with("colour=green&stamp="), "{}", r.body);
    }
    for r in got.to("POST", "/echo/graphql") {
        let body: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        assert!(
            body["query"]
                .as_str()
                .unwrap()
                .contains("items(first: $first)"),
            "{}",
            r.body
        );
        assert_eq!(body["variables"]["first"], 3, "{}", r.body);
    }
    // The pm.test checks ran and passed.
    assert_eq!(s.checks.failed, 0, "{:?}", s.checks);
    assert!(s.checks.passed >= 2, "{:?}", s.checks);
}

#[test]
fn a_http_file_runs_in_order_with_its_named_responses() {
    let Some(app) = JourneyApp::start(3) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = pointed_at(&app, "journey.http", dir.path());
    let (scenario, _) = convert(dir.path(), &["http", file.to_str().unwrap()], "requests");
    let (out, s) = run(
        dir.path(),
        &scenario,
        &["--users", "1", "--duration", "2s"],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{:?}",
        stderr(&out),
        s.errors
    );
    assert_eq!(s.errors.count, 0, "{:?}", s.errors.by_kind);
    let got = app.requests();
    let logins = got.to("POST", "/api/login");
    assert!(!logins.is_empty(), "{:?}", got.counts);
    assert_eq!(
        app.stats().api_logins.get("user0003").copied(),
        Some(logins.len() as u64)
    );
    // Each whoami and create carried a token a login returned (the capture).
    for r in got
        .to("GET", "/api/whoami")
        .iter()
        .chain(got.to("POST", "/api/items").iter())
    {
        let auth = r.header("authorization").unwrap_or_default();
        assert!(auth.starts_with("Bearer ") && auth.len() == 7 + 32, "{r:?}");
    }
    let created = got.to("POST", "/api/items");
    for r in &created {
        let body: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(body["name"], "from-http-file", "{}", r.body);
    }
    // Each item read back by the id its create answered.
    let read_back: u64 = (1..=created.len())
        .map(|id| got.count(&format!("GET /api/items/{id}")))
        .sum();
    assert!(read_back + 1 >= created.len() as u64, "{:?}", got.counts);
    // The form, with the query written on continuation lines.
    let forms = got.to("POST", "/echo/form");
    assert!(!forms.is_empty(), "{:?}", got.counts);
    for r in forms {
        assert_eq!(r.query, "source=http&n=2", "{r:?}");
        assert_eq!(r.body, "colour=blue&size=4");
    }
    // In file order: no request comes before the first login.
    assert_eq!(got.requests[0].path, "/api/login", "{:?}", got.requests[0]);
}

#[test]
fn broken_inputs_are_bad_input_naming_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &str, &str); 4] = [
        ("k6", "broken.js", "import http from 'k6/http';\nexport default function () {\n  http.get('http://127.0.0.1:9/' +;\n}\n"),
        ("openapi", "broken.yaml", "openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths:\n  /a: [unclosed\n"),
        ("postman", "broken.json", "{\"info\": {\"name\": \"x\",\n  \"schema\": \"https://schema.getpostman.com/json/collection/v2.1.0/collection.json\"},\n  \"item\": [,]}\n"),
        ("http", "broken.http", "GET http://127.0.0.1:9/a\nthis is not a header\n\n###\nNOTAMETHOD\n"),
    ];
    for (kind, name, text) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let out = headroom(&["convert", kind, path.to_str().unwrap()], &[]);
        let err = stderr(&out);
        if kind == "http" {
            // A .http file has no syntax to break: a request line that is not one is
            // reported, located, and left out.
            assert_eq!(out.status.code(), Some(0), "{err}");
            let line = err
                .lines()
                .find(|l| l.contains("left out") && l.contains("NOTAMETHOD"))
                .unwrap_or_else(|| panic!("{err}"));
            assert!(line.contains(&format!("{name}:5:1")), "{line}");
            continue;
        }
        assert_eq!(out.status.code(), Some(2), "{kind}: {err}");
        let located = err.contains(&format!("{name}:")) && err.chars().any(|c| c.is_ascii_digit());
        assert!(located, "{kind}: {err}");
    }
}
