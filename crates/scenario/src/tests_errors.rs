//! Validation errors: each names `file:line:column`, the field by path, and what was
//! expected.

use super::compile::from_text;
use super::*;

pub(super) const HEAD: &str = "target: http://127.0.0.1:4000\nload: {rate: 10, duration: 1s}\n";

/// Compiles `yaml` and returns the error as displayed.
fn error_with(yaml: &str, overrides: &Overrides) -> String {
    match from_text("scenario.yaml", yaml, overrides) {
        Ok(_) => panic!("expected an error for:\n{yaml}"),
        Err(e) => e.to_string(),
    }
}

fn error(yaml: &str) -> String {
    error_with(yaml, &Overrides::default())
}

/// Asserts the error starts with `scenario.yaml:<at>: ` and contains every `parts`.
pub(super) fn assert_error(yaml: &str, at: &str, parts: &[&str]) {
    let err = error(yaml);
    assert!(
        err.starts_with(&format!("scenario.yaml:{at}: ")),
        "want {at}, got: {err}"
    );
    for part in parts {
        assert!(err.contains(part), "want {part:?} in: {err}");
    }
}

#[test]
fn negative_weight_names_field_line_and_column() {
    let yaml = format!("{HEAD}requests:\n  - path: /a\n  - path: /b\n    weight: -3\n");
    assert_eq!(
        error(&yaml),
        "scenario.yaml:6:13: requests[1].weight: expected a positive integer, found -3"
    );
    let yaml = format!("{HEAD}requests: [{{path: /a, weight: 0}}]\n");
    assert_error(
        &yaml,
        "3:31",
        &["requests[0].weight: expected a positive integer, found 0"],
    );
    let yaml = format!("{HEAD}flows: [{{name: f, weight: x, steps: [{{think: 1s}}]}}]\n");
    assert_error(
        &yaml,
        "3:27",
        &["flows[0].weight: expected a positive integer, found \"x\""],
    );
}

#[test]
fn yaml_syntax_errors_are_located() {
    assert_error(
        &format!("{HEAD}requests: [{{path: /a\n"),
        "3:12",
        &["unclosed"],
    );
    assert_error(
        "target: [http://x]\n",
        "1:9",
        &["target: expected string scalar"],
    );
    assert_error(
        &format!("{HEAD}requests:\n  - path: /a\n   method: GET\n"),
        "5:4",
        &["did not find expected '-'"],
    );
}

#[test]
fn unknown_keys_list_the_known_ones() {
    assert_error(
        &format!("{HEAD}cookies: {{before: x}}\nrequests: [{{path: /}}]\n"),
        "3:1",
        &[
            "unknown field `cookies`",
            "target",
            "load",
            "thresholds",
            "requests",
            "flows",
        ],
    );
    assert_error(
        &format!("{HEAD}requests:\n  - path: /a\n    wieght: 2\n"),
        "5:5",
        &["requests[0]", "unknown field `wieght`", "weight", "expect"],
    );
    assert_error(
        &format!("{HEAD}requests:\n  - path: /a\n    expect: {{staus: 200}}\n"),
        "5:14",
        &[
            "requests[0].expect",
            "unknown field `staus`",
            "body_contains",
            "json_path",
        ],
    );
}

#[test]
fn load_model_consistency() {
    let tail = "requests: [{path: /}]\n";
    let target = "target: http://127.0.0.1:4000\n";
    assert_error(
        &format!("{target}load:\n  model: users\n  users: 5\n  rate: 10\n  duration: 1s\n{tail}"),
        "5:9",
        &["load.rate: not allowed with `model: users`, which takes `users` or `stages`"],
    );
    assert_error(
        &format!("{target}load: {{users: 5, duration: 1s, connections: 2}}\n{tail}"),
        "2:45",
        &["load.connections: not allowed with `model: users`"],
    );
    assert_error(
        &format!("{target}load: {{rate: 5, duration: 1s, connections: 0}}\n{tail}"),
        "2:44",
        &["load.connections: expected a positive integer, found 0"],
    );
    assert_error(
        &format!("{target}load: {{model: arrival-rate, rate: 5, duration: 1s, think: 1s}}\n{tail}"),
        "2:59",
        &["load.think: not allowed with `model: arrival-rate`"],
    );
    assert_error(
        &format!("{target}load: {{model: closed, users: 5}}\n{tail}"),
        "2:15",
        &["load.model: expected `arrival-rate` or `users`, found \"closed\""],
    );
    assert_error(
        &format!("{target}load: {{rate: 5, stages: [{{duration: 1s, target: 5}}]}}\n{tail}"),
        "2:25",
        &["load.stages: give either `rate` (with `duration`) or `stages`, not both"],
    );
    assert_error(
        &format!("{target}load: {{stages: [{{duration: 1s, target: 5}}], duration: 2s}}\n{tail}"),
        "2:55",
        &["load.duration: not allowed with `stages`"],
    );
    assert_error(
        &format!("{target}load: {{duration: 2s}}\n{tail}"),
        "2:7",
        &["load: expected `rate`"],
    );
    assert_error(
        &format!("{target}load: {{rate: 0}}\n{tail}"),
        "2:14",
        &["load.rate: expected a number > 0, found 0"],
    );
    assert_error(
        &format!("{target}load: {{stages: [{{duration: 1s, target: -1}}]}}\n{tail}"),
        "2:40",
        &["load.stages[0].target: expected a number >= 0, found -1"],
    );
    assert_error(
        &format!("{target}load: {{users: 2.5}}\n{tail}"),
        "2:15",
        &["load.users: expected a positive integer, found 2.5"],
    );
    assert_error(&format!("{target}{tail}"), "1:1", &["load: missing"]);
}

#[test]
fn durations_and_think_ranges() {
    let tail = "requests: [{path: /}]\n";
    let target = "target: http://127.0.0.1:4000\n";
    assert_error(
        &format!("{target}load: {{rate: 5, duration: 60}}\n{tail}"),
        "2:27",
        &[
            "load.duration: expected a duration with a unit",
            "bare number 60",
        ],
    );
    assert_error(
        &format!("{target}load: {{users: 5, duration: 1s, think: 2.5s..1.5s}}\n{tail}"),
        "2:39",
        &["load.think: expected a range low..high with low <= high"],
    );
    assert_error(
        &format!("{target}load: {{stages: [{{duration: 3 days, target: 5}}]}}\n{tail}"),
        "2:28",
        &["load.stages[0].duration: expected a duration with a unit"],
    );
    assert_error(
        &format!("{HEAD}defaults: {{timeout: soon}}\n{tail}"),
        "3:21",
        &[
            "defaults.timeout: expected a duration with a unit",
            "\"soon\"",
        ],
    );
    assert_error(
        &format!("{HEAD}flows: [{{name: f, steps: [{{request: {{path: /}}}}, {{think: 5}}]}}]\n"),
        "3:57",
        &["flows[0].steps[1].think: expected a duration with a unit"],
    );
}

#[test]
fn target_urls() {
    let rest = "load: {rate: 10, duration: 1s}\nrequests: [{path: /}]\n";
    assert_error(
        &format!("target: ftp://127.0.0.1:4000\n{rest}"),
        "1:9",
        &[
            "target: expected an absolute http:// or https:// URL",
            "\"ftp\"",
        ],
    );
    assert_error(
        &format!("target: 127.0.0.1:4000\n{rest}"),
        "1:9",
        &["target: expected an absolute http:// or https:// URL"],
    );
    assert_error(rest, "1:1", &["target: missing"]);
    let err = error_with(
        &format!("target: http://x\n{rest}"),
        &Overrides {
            url: Some("ftp://h".into()),
            ..Overrides::default()
        },
    );
    assert!(
        err.starts_with("command line: --url: ") && err.contains("found scheme \"ftp\""),
        "{err}"
    );
}

#[test]
fn client_block_errors() {
    let rest = "load: {rate: 10, duration: 1s}\nrequests: [{path: /}]\n";
    // Paths are relative to the scenario file (here `scenario.yaml` in the working
    // directory), and a file that is not there is named.
    assert_error(
        &format!("target: https://127.0.0.1:4000\nclient: {{cacert: no-such-ca.pem}}\n{rest}"),
        "2:9",
        &["client: cannot read no-such-ca.pem"],
    );
    assert_error(
        &format!("target: https://127.0.0.1:4000\nclient: {{cert: c.pem}}\n{rest}"),
        "2:9",
        &["client: a client certificate needs both"],
    );
    assert_error(
        &format!(
            "target: http://127.0.0.1:4000\nclient: {{resolve: [\"example.com:443\"]}}\n{rest}"
        ),
        "2:20",
        &["client.resolve[0]: expected HOST:PORT:ADDR"],
    );
    let err = error(&format!(
        "target: http://127.0.0.1:4000\nclient: {{verify: false}}\n{rest}"
    ));
    assert!(
        err.starts_with("scenario.yaml:2:") && err.contains("verify") && err.contains("insecure"),
        "{err}"
    );
    let err = error(&format!("target: https://a..b\n{rest}"));
    assert!(
        err.starts_with("scenario.yaml: ") && err.contains("not a valid TLS server name"),
        "{err}"
    );
    // A flag's file is the command line's error.
    let err = error_with(
        &format!("target: https://127.0.0.1:4000\n{rest}"),
        &Overrides {
            client: ClientFlags {
                cacert: Some("flag-ca.pem".into()),
                ..ClientFlags::default()
            },
            ..Overrides::default()
        },
    );
    assert!(
        err.starts_with("command line: cannot read flag-ca.pem"),
        "{err}"
    );
}

#[test]
fn requests_and_expectations() {
    assert_error(
        &format!("{HEAD}requests:\n  - {{path: /, expect: {{status: [200, 6xx]}}}}\n"),
        "4:32",
        &["requests[0].expect.status: expected a status code (100-599), a class such as 2xx, or a list of them, found \"6xx\""],
    );
    assert_error(
        &format!("{HEAD}requests:\n  - {{path: /, expect: {{json_path: \"data\"}}}}\n"),
        "4:35",
        &["requests[0].expect.json_path: expected a JSONPath query such as $.data, found \"data\""],
    );
    assert_error(
        &format!("{HEAD}requests:\n  - {{path: a}}\n"),
        "4:12",
        &["requests[0].path: expected a path starting with `/`"],
    );
    assert_error(
        &format!("{HEAD}requests:\n  - {{path: /, method: \"GE T\"}}\n"),
        "4:23",
        &["requests[0].method: expected an HTTP method"],
    );
    assert_error(
        &format!("{HEAD}requests:\n  - {{path: /, json: {{}}, body: x}}\n"),
        "4:31",
        &["requests[0].body: give either `json` or `body`, not both"],
    );
    assert_error(
        &format!("{HEAD}requests:\n  - {{path: /, timeout: 0s}}\n"),
        "4:24",
        &["requests[0].timeout: a timeout must be longer than zero"],
    );
    assert_error(
        &format!("{HEAD}requests:\n  - {{path: /, headers: {{\"x y\": \"1\"}}}}\n"),
        "4:32",
        &["requests[0].headers.x y: expected a header name"],
    );
    assert_error(
        &format!("{HEAD}defaults: {{headers: {{x: \"a\\r\\nb: c\"}}}}\nrequests: [{{path: /}}]\n"),
        "3:25",
        &["defaults.headers.x: expected a header value on one line"],
    );
    assert_error(
        HEAD,
        "1:1",
        &["requests: expected at least one entry in `requests` or `flows`"],
    );
}

#[test]
fn command_line_errors() {
    let file = format!("{HEAD}requests: [{{path: /}}]\n");
    let both = Overrides {
        rate: Some(1.0),
        users: Some(1),
        ..Overrides::default()
    };
    assert_eq!(
        error_with(&file, &both),
        "command line: give --rate or --users, not both"
    );
    let staged = "target: http://127.0.0.1:1\nload: {stages: [{duration: 1s, target: 1}]}\nrequests: [{path: /}]\n";
    let err = error_with(
        staged,
        &Overrides {
            duration: Some(std::time::Duration::from_secs(1)),
            ..Overrides::default()
        },
    );
    assert!(
        err.starts_with("command line: --duration cannot change a staged load"),
        "{err}"
    );
    let err = error_with(
        &file,
        &Overrides {
            users: Some(2),
            max_in_flight: Some(5),
            ..Overrides::default()
        },
    );
    assert!(
        err.contains("--max-in-flight applies to the arrival-rate model"),
        "{err}"
    );

    let err = error_with(
        &file,
        &Overrides {
            users: Some(2),
            connections: Some(5),
            client: ClientFlags {
                connection: Some(headroom_client::ConnectionModel::PerUser),
                ..ClientFlags::default()
            },
            ..Overrides::default()
        },
    );
    assert_eq!(
        err,
        "command line: --connections sizes a shared pool; --connection is per-user, which opens its own connections"
    );
    let quick = |o: Overrides| load(None, &o).unwrap_err().to_string();
    assert_eq!(
        quick(Overrides::default()),
        "command line: give a scenario file or --url"
    );
    let err = quick(Overrides {
        url: Some("http://127.0.0.1:1/".into()),
        ..Overrides::default()
    });
    assert!(
        err.starts_with("command line: ") && err.contains("--rate/--users"),
        "{err}"
    );
    let err = quick(Overrides {
        url: Some("http://127.0.0.1:1/".into()),
        rate: Some(-1.0),
        ..Overrides::default()
    });
    assert_eq!(err, "command line: --rate: expected a number > 0, found -1");
}

#[test]
fn threshold_scopes_must_name_a_request() {
    let names = vec!["create_task".to_string(), "list".to_string()];
    assert_eq!(
        super::rules::check_scope(Some("create_task"), &names),
        Ok(())
    );
    assert_eq!(super::rules::check_scope(None, &names), Ok(()));
    assert_eq!(
        super::rules::check_scope(Some("create_tsk"), &names).map_err(|e| e.to_string()),
        Err("`create_tsk` is not a request name (known: create_task, list)".to_string())
    );
}

#[test]
fn empty_and_non_mapping_documents() {
    assert_error("", "1:1", &["target: missing: expected a base URL"]);
    assert_error(
        "- a\n",
        "1:1",
        &["expected mapping start: a scenario is a mapping of name, target"],
    );
}

#[test]
fn thresholds_parse_and_their_scope_names_a_request() {
    let file = format!("{HEAD}thresholds: [\"p95 < 1s\", \"create_tsk.p95 < 1s\"]\nrequests: [{{name: create_task, path: /}}]\n");
    assert_error(
        &file,
        "3:26",
        &["thresholds[1]: `create_tsk` is not a request name (known: create_task)"],
    );
    let file = format!("{HEAD}thresholds: [\"p95 <\"]\nrequests: [{{path: /}}]\n");
    assert_error(&file, "3:14", &["thresholds[0]: "]);
    let ok = format!("{HEAD}requests: [{{name: create_task, path: /}}]\n");
    let o = Overrides {
        thresholds: vec!["nope.p95 < 1s".into()],
        ..Overrides::default()
    };
    let err = error_with(&ok, &o);
    assert!(
        err.starts_with(
            "command line: --threshold \"nope.p95 < 1s\": `nope` is not a request name"
        ),
        "{err}"
    );
}

#[test]
fn the_cluster_block_is_read_and_its_mistakes_named() {
    let base = format!("{HEAD}requests: [{{path: /a}}]\n");
    let yaml = format!(
        "{base}cluster:\n  shards: 4\n  coordinator: 0.0.0.0:7400\n  advertise: coord.load.svc:7400\n  kubernetes: {{namespace: load, image: 'r/headroom:1', cpu: '1', memory: 512Mi}}\n"
    );
    let plan = from_text("scenario.yaml", &yaml, &Overrides::default()).unwrap();
    assert_eq!(plan.cluster.shards, Some(4));
    assert_eq!(
        plan.cluster.coordinator,
        Some("0.0.0.0:7400".parse().unwrap())
    );
    assert_eq!(
        plan.cluster.advertise.as_deref(),
        Some("coord.load.svc:7400")
    );
    let k = plan.cluster.kubernetes.expect("kubernetes");
    assert_eq!(
        (k.namespace.as_deref(), k.memory.as_deref()),
        (Some("load"), Some("512Mi"))
    );
    assert_error(
        &format!("{base}cluster:\n  shards: 0\n"),
        "5:11",
        &["cluster.shards", "expected 1 to 1024"],
    );
    assert_error(
        &format!("{base}cluster:\n  coordinator: nowhere\n"),
        "5:16",
        &["cluster.coordinator", "ADDR:PORT"],
    );
    assert_error(
        &format!("{base}cluster:\n  advertise: host-without-port\n"),
        "5:14",
        &["cluster.advertise"],
    );
    let err = error(&format!("{base}cluster:\n  shard: 2\n"));
    assert!(err.contains("shard") && err.contains("shards"), "{err}");
}
