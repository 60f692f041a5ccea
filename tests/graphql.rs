//! GraphQL requests end to end: `headroom run` against the built-in target's
//! `/graphql` (and, in `graphql_peer`, against a published GraphQL server).

use std::path::Path;
use std::time::Duration;

use headroom::metrics::summary::Summary;
use headroom::target::{self, RunningTarget, TargetOptions};

use crate::support::{assert_clean, assert_exit, run_with_summary};

/// Runs `yaml` (written into a temporary directory) with extra `args`; returns the
/// exit status output and the summary (whose accounting `read_summary` asserts).
pub(crate) fn run_yaml(yaml: &str, args: &[&str]) -> (std::process::Output, Summary) {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("gql.yaml");
    std::fs::write(&scenario, yaml).unwrap();
    run_in(dir.path(), &scenario, args)
}

fn run_in(dir: &Path, scenario: &Path, args: &[&str]) -> (std::process::Output, Summary) {
    let mut all = vec![scenario.to_str().unwrap()];
    all.extend_from_slice(args);
    run_with_summary(dir, &all, Duration::from_secs(30))
}

fn spawn(share: f64) -> RunningTarget {
    target::spawn(TargetOptions::loopback().with_graphql_error_share(share)).expect("target starts")
}

const LIST: &str = "query queryTasks($limit: Int!, $offset: Int!) { tasks(limit: $limit, offset: $offset) { id created_at } }";

#[test]
fn graphql_errors_are_failures_of_their_kind_with_an_exact_share_and_a_message() {
    error_share(&[]);
}

#[test]
fn graphql_errors_over_http2_are_counted_alike() {
    error_share(&["--http2"]);
}

/// The target fails exactly ⌊n·0.2⌋ of its first n requests (deterministic), so the
/// count is exact, not a tolerance. Every other request succeeds only because `offset`
/// arrives as a JSON number: as a string, `Int!` would reject all of them.
fn error_share(args: &[&str]) {
    let t = spawn(0.2);
    let yaml = format!(
        "name: gql\ntarget: http://{}\nload: {{rate: 40, duration: 2s}}\nrequests:\n  - graphql:\n      query: '{LIST}'\n      variables: {{limit: 5, offset: \"{{{{ rand_int(0, 100000) }}}}\"}}\n",
        t.addr()
    );
    let (out, s) = run_yaml(&yaml, args);
    assert_exit(&out, 0);
    assert!(s.requests >= 60, "{} requests", s.requests);
    let graphql = s.errors.by_kind.get("graphql").copied().unwrap_or(0);
    assert_eq!(graphql, s.requests / 5, "{:?}", s.errors);
    assert_eq!(
        s.errors.count, graphql,
        "no other kind: {:?}",
        s.errors.by_kind
    );
    assert!(
        s.errors.first_message["graphql"].starts_with("injected error"),
        "{:?}",
        s.errors.first_message
    );
    // Named by the operation.
    assert_eq!(s.by_name["queryTasks"].requests, s.requests);
}

#[test]
fn a_string_where_the_schema_wants_an_int_is_a_graphql_failure_with_the_servers_message() {
    // The same request with text around the placeholder: a string, which `Int!` refuses.
    let t = spawn(0.0);
    let yaml = format!(
        "name: gql\ntarget: http://{}\nload: {{rate: 20, duration: 1s}}\nrequests:\n  - graphql:\n      query: '{LIST}'\n      variables: {{limit: 5, offset: \" {{{{ rand_int(0, 9) }}}}\"}}\n",
        t.addr()
    );
    let (_, s) = run_yaml(&yaml, &[]);
    assert!(s.requests >= 15, "{} requests", s.requests);
    assert_eq!(
        s.errors.by_kind.get("graphql"),
        Some(&s.requests),
        "{:?}",
        s.errors
    );
    let message = &s.errors.first_message["graphql"];
    assert!(message.contains("offset"), "{message}");
}

#[test]
fn a_body_that_is_not_json_is_a_graphql_failure() {
    let t = spawn(0.0);
    let yaml = format!(
        "name: gql\ntarget: http://{}\nload: {{rate: 20, duration: 1s}}\nrequests:\n  - {{path: /status/200, graphql: {{query: '{{ tasks {{ id }} }}'}}}}\n",
        t.addr()
    );
    let (_, s) = run_yaml(&yaml, &[]);
    assert!(s.requests >= 15, "{} requests", s.requests);
    assert_eq!(s.errors.by_kind.get("graphql"), Some(&s.requests));
    assert_eq!(
        s.errors.first_message["graphql"],
        "response body is not JSON"
    );
}

#[test]
fn flows_capture_from_graphql_and_typed_values_reach_the_server_in_json_bodies_too() {
    let t = spawn(0.0);
    // Step 1 creates a task by mutation with a typed number; step 2 captures its id (a
    // number) and reads it back by `task(id: Int!)`, expecting the number; step 3 posts
    // a `json:` body to /tasks whose typed values the target stores and returns.
    let yaml = format!(
        r#"name: gql-flow
target: http://{}
load: {{model: users, users: 4, duration: 2s, think: 50ms}}
flows:
  - name: f
    steps:
      - request:
          graphql:
            query: 'mutation make($input: JSON!) {{ createTask(input: $input) {{ id }} }}'
            variables: {{input: {{n: "{{{{ rand_int(5, 5) }}}}", tag: "t-{{{{ rand_int(1, 1) }}}}"}}}}
        capture: {{id: $.data.createTask.id}}
      - request:
          graphql:
            query: 'query get($id: Int!) {{ task(id: $id) {{ id fields }} }}'
            variables: {{id: "{{{{ id }}}}"}}
          expect: {{json: {{"$.data.task.fields.n": 5, "$.data.task.fields.tag": "t-1"}}}}
        capture: {{fields: $.data.task.fields}}
      - request:
          method: POST
          path: /tasks
          json: {{copy: "{{{{ fields }}}}", id_was: "{{{{ id }}}}", text: "id {{{{ id }}}}"}}
          expect: {{status: 201, json: {{"$.copy.n": 5, "$.id_was": 1, "$.text": "id 1"}}}}
"#,
        t.addr()
    );
    let (out, s) = run_yaml(&yaml, &[]);
    // `$.id_was: 1` holds for the first iteration only; later ones fail `check`.
    // So the flow ran, and exactly the posts after the first failed the check.
    assert_exit(&out, 0);
    assert_eq!(s.errors.by_kind.get("graphql"), None, "{:?}", s.errors);
    assert_eq!(s.by_name["make"].errors.count, 0);
    assert_eq!(s.by_name["get"].errors.count, 0);
    let posts = &s.by_name["f[2]"];
    assert!(posts.requests >= 10, "{} posts", posts.requests);
    assert_eq!(
        posts.errors.count,
        posts.requests - 1,
        "only the first has id 1"
    );
}

#[test]
fn the_seed_001_example_runs_clean_against_the_target() {
    let t = spawn(0.0);
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/seed-001-graphql.yaml");
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://{}", t.addr());
    let (out, s) = run_in(
        dir.path(),
        &example,
        &["--url", &url, "--users", "40", "--duration", "2s"],
    );
    assert_clean(&out, &s);
    for name in ["queryTasks", "queryTasksWithFields", "queryTaskById"] {
        assert!(
            s.by_name.contains_key(name),
            "{name}: {:?}",
            s.by_name.keys()
        );
    }
}

#[test]
fn headroom_target_takes_the_error_share_from_its_command_line() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    use crate::support::{free_port, headroom_bin};

    // A share outside 0..=1 is refused.
    let out = Command::new(headroom_bin())
        .args(["target", "--graphql-error-share", "1.5"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("between 0 and 1"));

    let port = free_port();
    let mut child = Command::new(headroom_bin())
        .args(["target", "--graphql-error-share", "0.5"])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("listening") {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "target did not start"
        );
    }
    let yaml = format!(
        "name: gql\ntarget: http://127.0.0.1:{port}\nload: {{rate: 20, duration: 1s}}\nrequests:\n  - graphql: {{query: '{{ tasks {{ id }} }}'}}\n"
    );
    let (_, s) = run_yaml(&yaml, &[]);
    let _ = child.kill();
    let _ = child.wait();
    assert!(s.requests >= 15, "{} requests", s.requests);
    assert_eq!(s.errors.by_kind.get("graphql"), Some(&(s.requests / 2)));
}
