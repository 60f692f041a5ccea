//! Issue 12: `headroom convert`. A curl command round-trips its method, headers and
//! body into a scenario; a HAR recorded from real exchanges with the built-in target
//! becomes a flow that runs against it without an error; hostile inputs are refused.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use headroom::plan::Item;
use headroom::target::{self, TargetOptions};

use crate::support::{assert_exit, http_get, run_headroom, run_with_summary, stderr};

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn a_curl_command_round_trips_method_headers_and_body() {
    let command = r#"curl 'http://127.0.0.1:8080/tasks?src=curl' -X PUT -H 'Content-Type: application/json' -H "X-Token: a b:c" --data-raw '{"name":"from curl","n":1}' --compressed"#;
    let exchange = headroom::convert::curl::parse(command).unwrap();
    let yaml = headroom::convert::scenario("curl", &[exchange], false).unwrap();
    let plan = headroom::scenario::load_text("c.yaml", &yaml, &Default::default())
        .unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    let Item::Request(request) = &plan.items[0] else {
        panic!("a request: {yaml}")
    };
    assert_eq!(request.method, "PUT");
    assert_eq!(request.path.as_static(), Some("/tasks?src=curl"));
    let headers: Vec<(&str, &str)> = request
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_static().unwrap()))
        .collect();
    assert!(
        headers.contains(&("Content-Type", "application/json")),
        "{headers:?}"
    );
    assert!(headers.contains(&("X-Token", "a b:c")), "{headers:?}");
    let body: serde_json::Value =
        serde_json::from_str(request.body.as_ref().unwrap().as_static().unwrap()).unwrap();
    assert_eq!(body, serde_json::json!({"name": "from curl", "n": 1}));
}

#[test]
fn a_converted_curl_command_runs_against_the_target() {
    let target = target::spawn(TargetOptions::loopback()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("curl.yaml");
    let command = format!(
        "curl -H 'Content-Type: application/json' -d '{{\"name\":\"converted\"}}' {}/tasks",
        target.url()
    );
    let out = run_headroom(
        [
            "convert",
            "curl",
            &command,
            "-o",
            &file.display().to_string(),
        ],
        LIMIT,
    );
    assert_exit(&out, 0);
    let (out, summary) = run_with_summary(
        dir.path(),
        &[
            &file.display().to_string(),
            "--rate",
            "10",
            "--duration",
            "1s",
            "--threads",
            "1",
        ],
        LIMIT,
    );
    assert_exit(&out, 0);
    assert!(
        summary.requests > 0 && summary.errors.count == 0,
        "{summary:?}"
    );
    let (_, body) = http_get(target.addr(), "/tasks?limit=1000");
    let listed: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(listed["total"].as_u64(), Some(summary.completed));
    assert_eq!(listed["data"][0]["name"], "converted");
    target.shutdown();
}

/// Sends one request to `addr` as a browser would record it and returns its HAR
/// entry, with the status the target really answered.
fn exchange(addr: SocketAddr, method: &str, path: &str, body: Option<&str>) -> serde_json::Value {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let headers = [
        ("Host", addr.to_string()),
        (
            "User-Agent",
            "Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome".to_string(),
        ),
        ("Accept", "*/*".to_string()),
        ("Connection", "close".to_string()),
    ];
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    for (n, v) in &headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    let mut har_headers: Vec<serde_json::Value> = headers
        .iter()
        .map(|(n, v)| serde_json::json!({"name": n, "value": v}))
        .collect();
    if let Some(b) = body {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            b.len()
        ));
        har_headers.push(serde_json::json!({"name": "Content-Type", "value": "application/json"}));
        har_headers
            .push(serde_json::json!({"name": "Content-Length", "value": b.len().to_string()}));
    }
    head.push_str("\r\n");
    head.push_str(body.unwrap_or(""));
    stream.write_all(head.as_bytes()).unwrap();
    let mut response = String::new();
    stream.take(1 << 20).read_to_string(&mut response).unwrap();
    let status: u16 = response.split(' ').nth(1).unwrap().parse().unwrap();
    assert!(status < 400, "{method} {path}: {response}");
    let mut request = serde_json::json!({
        "method": method,
        "url": format!("http://{addr}{path}"),
        "httpVersion": "HTTP/1.1",
        "headers": har_headers,
        "queryString": [],
        "cookies": [],
        "headersSize": -1,
        "bodySize": body.map_or(0, str::len),
    });
    if let Some(b) = body {
        request["postData"] = serde_json::json!({"mimeType": "application/json", "text": b});
    }
    serde_json::json!({
        "startedDateTime": "2026-01-01T00:00:00.000Z",
        "time": 1.0,
        "request": request,
        "response": {"status": status, "statusText": "", "httpVersion": "HTTP/1.1",
                     "headers": [], "cookies": [], "content": {"size": 0, "mimeType": "text/plain"},
                     "redirectURL": "", "headersSize": -1, "bodySize": -1},
        "cache": {},
        "timings": {"send": 0, "wait": 1, "receive": 0},
    })
}

fn write_har(path: &Path, entries: Vec<serde_json::Value>) {
    let har = serde_json::json!({"log": {
        "version": "1.2",
        "creator": {"name": "headroom tests", "version": "1"},
        "pages": [],
        "entries": entries,
    }});
    std::fs::write(path, serde_json::to_vec_pretty(&har).unwrap()).unwrap();
}

#[test]
fn a_recorded_har_becomes_a_flow_that_runs_against_the_target() {
    let target = target::spawn(TargetOptions::loopback()).unwrap();
    let addr = target.addr();
    let dir = tempfile::tempdir().unwrap();
    let mut entries = vec![
        exchange(addr, "GET", "/health", None),
        exchange(addr, "POST", "/tasks", Some(r#"{"name":"recorded"}"#)),
        exchange(addr, "GET", "/tasks/1", None),
        exchange(addr, "GET", "/work?ms=1", None),
    ];
    // What a browser also records: a data: URL, and a request to another origin.
    let mut data = entries[0].clone();
    data["request"]["url"] = "data:image/png;base64,iVBORw0KGgo=".into();
    let mut other = entries[0].clone();
    other["request"]["url"] = "http://127.0.0.1:9/elsewhere".into();
    entries.insert(1, data);
    entries.push(other);
    let har = dir.path().join("session.har");
    write_har(&har, entries);
    let scenario = dir.path().join("session.yaml");
    let out = run_headroom(
        [
            "convert",
            "har",
            &har.display().to_string(),
            "-o",
            &scenario.display().to_string(),
        ],
        LIMIT,
    );
    assert_exit(&out, 0);
    let yaml = std::fs::read_to_string(&scenario).unwrap();
    assert!(yaml.contains("1 request(s) to other origins"), "{yaml}");
    assert!(
        !yaml.to_ascii_lowercase().contains("content-length"),
        "{yaml}"
    );

    let (out, summary) = run_with_summary(
        dir.path(),
        &[
            &scenario.display().to_string(),
            "--rate",
            "5",
            "--duration",
            "1s",
            "--threads",
            "1",
        ],
        LIMIT,
    );
    assert_exit(&out, 0);
    assert_eq!(summary.errors.count, 0, "{:?}\n{yaml}", summary.errors);
    let names: Vec<&str> = summary.by_name.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        ["GET /health", "GET /tasks/1", "GET /work", "POST /tasks"],
        "{yaml}"
    );
    assert!(summary.by_name.values().all(|n| n.requests > 0));
    target.shutdown();
}

#[test]
fn hostile_inputs_to_convert_are_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let huge = dir.path().join("huge.har");
    let file = std::fs::File::create(&huge).unwrap();
    file.set_len(headroom::convert::MAX_INPUT + 1).unwrap();
    let deep = dir.path().join("deep.har");
    std::fs::write(
        &deep,
        format!("{}{}", "[".repeat(200_000), "]".repeat(200_000)),
    )
    .unwrap();
    let injected = dir.path().join("injected.har");
    write_har(
        &injected,
        vec![
            serde_json::json!({"request": {"method": "GET", "url": "http://127.0.0.1:9/",
            "headers": [{"name": "X-A", "value": "1\r\nHost: evil"}]}}),
        ],
    );
    for (args, said) in [
        (
            vec!["convert", "har", huge.to_str().unwrap()],
            "larger than 32 MiB",
        ),
        (
            vec!["convert", "har", deep.to_str().unwrap()],
            "not a HAR file",
        ),
        (
            vec!["convert", "har", injected.to_str().unwrap()],
            "line break",
        ),
        (vec!["convert", "curl"], "no URL"),
        (
            vec!["convert", "curl", "curl 'http://h/"],
            "unbalanced quotes",
        ),
        (
            vec!["convert", "curl", "curl --upload-file x http://h/"],
            "--upload-file",
        ),
    ] {
        let out = run_headroom(&args, LIMIT);
        assert_exit(&out, 2);
        assert!(stderr(&out).contains(said), "{args:?}: {}", stderr(&out));
    }
}
