//! The `graphql:` request form: body, names, and its errors with file:line:column.

use rand::rngs::SmallRng;
use rand::SeedableRng;
use serde_json::{json, Value};

use super::tests::{plan, request};
use super::tests_errors::{assert_error, HEAD};
use headroom_plan::{Item, Step};
use headroom_template::{RenderContext, Template, Vars};

fn body(t: &Template, vars: &Vars) -> Value {
    let mut out = Vec::new();
    let mut rng = SmallRng::seed_from_u64(1);
    t.render(
        &mut RenderContext {
            rng: &mut rng,
            vars,
            user: 1,
            iteration: 0,
        },
        &mut out,
    );
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn a_graphql_request_posts_query_operation_and_typed_variables() {
    let yaml = format!(
        "{HEAD}requests:\n  - graphql:\n      query: 'query queryVenues($limit: Int!, $offset: Int!) {{ venues(limit: $limit, offset: $offset) {{ id }} }}'\n      variables: {{limit: 50, offset: \"{{{{ rand_int(7, 7) }}}}\", tag: \"t-{{{{ rand_int(1, 1) }}}}\"}}\n  - {{graphql: {{query: '{{ a {{ b }} }}'}}, path: /api/gql}}\n  - {{name: mine, graphql: {{query: 'query Q {{ a }}', operation: Other}}}}\n"
    );
    let p = plan(&yaml);
    let r = request(&p, 0);
    assert_eq!(r.method, "POST");
    assert_eq!(r.path.as_static(), Some("/graphql"));
    assert!(r.expect.graphql && r.needs_body(&[]));
    assert!(r
        .headers
        .iter()
        .any(|(n, v)| n == "content-type" && v.as_static() == Some("application/json")));
    assert_eq!(p.names[r.name_id], "queryVenues");
    let b = body(r.body.as_ref().unwrap(), &Vars::default());
    assert_eq!(b["operationName"], "queryVenues");
    assert_eq!(
        b["variables"],
        json!({"limit": 50, "offset": 7, "tag": "t-1"})
    );
    assert!(b["query"]
        .as_str()
        .unwrap()
        .starts_with("query queryVenues("));

    let anon = request(&p, 1);
    assert_eq!(anon.path.as_static(), Some("/api/gql"));
    assert_eq!(p.names[anon.name_id], "POST /api/gql");
    // `{{` inside the query is sent as written, never a placeholder.
    let b = body(anon.body.as_ref().unwrap(), &Vars::default());
    assert_eq!(b, json!({"query": "{ a { b } }", "variables": {}}));

    let named = request(&p, 2);
    assert_eq!(p.names[named.name_id], "mine");
    assert_eq!(
        body(named.body.as_ref().unwrap(), &Vars::default())["operationName"],
        "Other"
    );
}

#[test]
fn a_flow_step_uses_captures_in_variables_and_its_own_name_first() {
    let yaml = format!(
        "{HEAD}flows:\n  - name: f\n    steps:\n      - request: {{graphql: {{query: 'mutation Make {{ createTask(input: {{}}) {{ id }} }}'}}}}\n        capture: {{id: $.data.createTask.id}}\n      - name: read\n        request: {{graphql: {{query: 'query Get($id: Int!) {{ task(id: $id) {{ id }} }}', variables: {{id: \"{{{{ id }}}}\"}}}}}}\n"
    );
    let p = plan(&yaml);
    let Item::Flow(flow) = &p.items[0] else {
        panic!()
    };
    let [Step::Request { request: make, .. }, Step::Request { request: read, .. }] =
        flow.steps.as_slice()
    else {
        panic!("{:?}", flow.steps)
    };
    assert_eq!(p.names[make.name_id], "Make");
    assert_eq!(p.names[read.name_id], "read");
    let mut vars = Vars::default();
    vars.set_json("id", "12".into());
    assert_eq!(
        body(read.body.as_ref().unwrap(), &vars)["variables"],
        json!({"id": 12})
    );
}

#[test]
fn bad_graphql_requests_are_scenario_errors_with_locations() {
    assert_error(
        &format!("{HEAD}requests:\n  - graphql: {{file: missing.graphql}}\n"),
        "4:21",
        &[
            "requests[0].graphql.file",
            "cannot read the query file",
            "missing.graphql",
        ],
    );
    assert_error(
        &format!("{HEAD}requests:\n  - {{graphql: {{query: '{{ a }}'}}, json: {{a: 1}}}}\n"),
        "4:39",
        &["requests[0].json", "no `json` or `body`"],
    );
    assert_error(
        &format!("{HEAD}requests:\n  - {{graphql: {{query: '{{ a }}'}}, body: x}}\n"),
        "4:39",
        &["requests[0].body", "no `json` or `body`"],
    );
    assert_error(
        &format!("{HEAD}requests:\n  - graphql: {{variables: {{a: 1}}}}\n"),
        "4:14",
        &["requests[0].graphql", "expected `query:`"],
    );
    assert_error(
        &format!("{HEAD}requests:\n  - graphql: {{query: q, variables: [1]}}\n"),
        "4:36",
        &["requests[0].graphql.variables", "expected a mapping"],
    );
    assert_error(
        &format!("{HEAD}requests:\n  - {{method: GET, graphql: {{query: q}}}}\n"),
        "4:14",
        &["requests[0].method", "sent as POST"],
    );
    assert_error(
        &format!("{HEAD}requests:\n  - graphql: {{query: q, operation: 'a b'}}\n"),
        "4:36",
        &["requests[0].graphql.operation"],
    );
    assert_error(
        &format!("{HEAD}requests:\n  - {{name: x}}\n"),
        "4:5",
        &["requests[0]", "expected `path:`"],
    );
}

#[test]
fn a_query_file_is_read_relative_to_the_scenario() {
    let dir = std::env::temp_dir().join(format!("headroom-gql-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("q.graphql"), "# venues\nquery fromFile { a }\n").unwrap();
    let file = dir.join("s.yaml");
    let yaml = format!("{HEAD}requests:\n  - graphql: {{file: q.graphql}}\n");
    let p = super::compile::from_text(file.to_str().unwrap(), &yaml, &Default::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.names[request(&p, 0).name_id], "fromFile");
    // A file over the limit is refused before it is read.
    let big = vec![b'#'; super::graphql::MAX_QUERY_BYTES as usize + 1];
    std::fs::write(dir.join("q.graphql"), big).unwrap();
    let err = match super::compile::from_text(file.to_str().unwrap(), &yaml, &Default::default()) {
        Ok(_) => panic!("an oversized query file is an error"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("at most 1048576 bytes"), "{err}");
    // Hostile text for the operation-name scanner: unbalanced, unterminated, deep.
    let hostile = format!("query {}\"{}", "(".repeat(100_000), "\\".repeat(10_001));
    assert_eq!(super::graphql::operation_name(&hostile), None);
    assert_eq!(super::graphql::operation_name(&"}".repeat(1000)), None);
    std::fs::remove_dir_all(&dir).unwrap();
}
