//! `POST /graphql` over a real socket: the schema over the tasks, variable types, the
//! injected error share, and hostile queries.

use serde_json::{json, Value};

use super::test_client::send;
use super::*;

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

async fn gql(t: &RunningTarget, body: &Value, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut h = vec![("content-type", "application/json")];
    h.extend_from_slice(headers);
    let r = send(
        t.addr(),
        "POST",
        "/graphql",
        &h,
        body.to_string().as_bytes(),
    )
    .await
    .expect("request");
    let json = if r.status == 200 {
        r.json()
    } else {
        Value::String(r.text())
    };
    (r.status, json)
}

const CREATE: &str =
    "mutation Make($input: JSON!) { createTask(input: $input) { id created_at fields } }";
const LIST: &str = "query List($limit: Int!, $offset: Int!) { tasks(limit: $limit, offset: $offset) { id fields } }";

#[test]
fn tasks_are_created_read_and_listed_with_typed_variables() {
    let t = spawn(TargetOptions::loopback()).unwrap();
    block_on(async {
        for i in 0..3 {
            let (status, r) = gql(
                &t,
                &json!({"query": CREATE, "variables": {"input": {"n": i, "tag": "x"}}}),
                &[],
            )
            .await;
            assert_eq!(status, 200);
            assert_eq!(
                r["data"]["createTask"]["fields"],
                json!({"n": i, "tag": "x"}),
                "{r}"
            );
            assert!(r["data"]["createTask"]["created_at"]
                .as_str()
                .unwrap()
                .ends_with('Z'));
        }
        let (_, r) = gql(&t, &json!({"query": LIST, "operationName": "List", "variables": {"limit": 2, "offset": 1}}), &[]).await;
        assert_eq!(
            r["data"]["tasks"],
            json!([{"id": 2, "fields": {"n": 1, "tag": "x"}}, {"id": 3, "fields": {"n": 2, "tag": "x"}}]),
            "{r}"
        );
        let (_, r) = gql(&t, &json!({"query": "query One($id: Int!) { task(id: $id) { id } }", "variables": {"id": 1}}), &[]).await;
        assert_eq!(r, json!({"data": {"task": {"id": 1}}}));
        // A string where the schema says Int! is rejected, as by any GraphQL server.
        let (_, r) = gql(
            &t,
            &json!({"query": LIST, "variables": {"limit": 2, "offset": "1"}}),
            &[],
        )
        .await;
        assert!(
            r["errors"][0]["message"]
                .as_str()
                .unwrap()
                .contains("offset"),
            "{r}"
        );
    });
}

#[test]
fn the_error_share_is_exact_and_the_header_forces_one() {
    let t = spawn(TargetOptions::loopback().with_graphql_error_share(0.2)).unwrap();
    block_on(async {
        let mut failed = 0;
        for _ in 0..50 {
            let (status, r) = gql(&t, &json!({"query": "{ tasks { id } }"}), &[]).await;
            assert_eq!(status, 200);
            if let Some(e) = r.get("errors") {
                assert_eq!(e[0]["message"], graphql::INJECTED);
                failed += 1;
            }
        }
        assert_eq!(failed, 10, "20 % of 50, exactly");
    });
    let t = spawn(TargetOptions::loopback()).unwrap();
    block_on(async {
        let (_, r) = gql(
            &t,
            &json!({"query": "{ tasks { id } }"}),
            &[("x-graphql-error", "1")],
        )
        .await;
        assert_eq!(r["errors"][0]["message"], graphql::INJECTED);
        let (_, r) = gql(&t, &json!({"query": "{ tasks { id } }"}), &[]).await;
        assert_eq!(r, json!({"data": {"tasks": []}}));
    });
}

#[test]
fn hostile_queries_are_refused_within_limits() {
    let t = spawn(TargetOptions::loopback()).unwrap();
    block_on(async {
        // Too long.
        let long = format!(
            "{{ tasks {{ id }} }} #{}",
            "x".repeat(graphql::MAX_QUERY_BYTES)
        );
        let (status, _) = gql(&t, &json!({"query": long}), &[]).await;
        assert_eq!(status, 413);
        // Nested deeper than the parser follows: an error, not a stack overflow.
        let deep = format!(
            "{{ tasks {} id {} }}",
            "{ fields ".repeat(5_000),
            "}".repeat(5_000)
        );
        let (status, r) = gql(&t, &json!({"query": deep}), &[]).await;
        assert_eq!(status, 200);
        assert!(r["errors"].as_array().is_some_and(|e| !e.is_empty()), "{r}");
        let deep_value = format!(
            "query {{ task(id: {}1{}) {{ id }} }}",
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        let (_, r) = gql(&t, &json!({"query": deep_value}), &[]).await;
        assert!(r["errors"].as_array().is_some_and(|e| !e.is_empty()), "{r}");
        // Many aliases: over the complexity limit.
        let wide: String = (0..2_000)
            .map(|i| format!("a{i}: tasks {{ id }} "))
            .collect();
        let (_, r) = gql(&t, &json!({"query": format!("{{ {wide} }}")}), &[]).await;
        assert!(r["errors"].as_array().is_some_and(|e| !e.is_empty()), "{r}");
        // Not JSON, or no query: 400.
        let r = test_client::send(t.addr(), "POST", "/graphql", &[], b"{\"query\": 1")
            .await
            .unwrap();
        assert_eq!(r.status, 400);
        // The target still answers.
        let (_, r) = gql(&t, &json!({"query": "{ tasks { id } }"}), &[]).await;
        assert_eq!(r, json!({"data": {"tasks": []}}));
    });
}
