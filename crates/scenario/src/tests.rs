//! Format and compilation tests: the documented examples parse into the expected plan.
//! Validation errors are tested in `tests_errors.rs`, overrides in `tests_overrides.rs`.

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::compile::from_text;
use super::*;
use headroom_client::ConnectionModel;
use headroom_plan::{Item, Load, Schedule, Stage, StatusRange, Step, Think};
use headroom_template::{RenderContext, Template, Vars};

pub(super) fn plan(yaml: &str) -> Plan {
    plan_with(yaml, &Overrides::default())
}

pub(super) fn plan_with(yaml: &str, overrides: &Overrides) -> Plan {
    match from_text("scenario.yaml", yaml, overrides) {
        Ok(plan) => plan,
        Err(e) => panic!("{e}"),
    }
}

fn render(t: &Template, vars: &Vars) -> String {
    let mut out = Vec::new();
    t.render(
        &mut RenderContext {
            rng: &mut SmallRng::seed_from_u64(1),
            vars,
            user: 1,
            iteration: 0,
        },
        &mut out,
    );
    String::from_utf8(out).unwrap()
}

pub(super) fn request(plan: &Plan, i: usize) -> &headroom_plan::RequestTemplate {
    match &plan.items[i] {
        Item::Request(r) => r,
        Item::Flow(_) => panic!("item {i} is a flow"),
    }
}

pub(super) fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

const EXAMPLE: &str = r#"
name: tasks-api
target: http://127.0.0.1:4000
defaults: {headers: {authorization: "Bearer {{ env.HEADROOM_TEST_API_KEY }}"}, timeout: 10s}
load:
  model: arrival-rate
  rate: 1000
  duration: 60s
  max_in_flight: 5000
thresholds: ["p95 < 500ms", "errors < 1%", "create_task.p99 < 800ms", "rate > 990/s"]
requests:
  - {name: create_task, weight: 70, method: POST, path: /api/tasks, json: {run_at: "{{ now_iso(300) }}"}, expect: {status: 201}}
  - {name: list_tasks, weight: 15, path: "/api/tasks?limit=50&offset={{ rand_int(0, 100000) }}", expect: {status: 200, json_path: "$.data"}}
flows:
  - name: create_then_read
    weight: 15
    steps:
      - request: {method: POST, path: /api/tasks, json: {url: "http://127.0.0.1:9/hook"}}
        capture: {id: "$.id"}
      - request: {path: "/api/tasks/{{ id }}"}
      - think: 100ms
"#;

#[test]
fn the_documented_example_compiles_into_the_expected_plan() {
    std::env::set_var("HEADROOM_TEST_API_KEY", "s3cret");
    let plan = plan(EXAMPLE);
    assert_eq!(plan.name, "tasks-api");
    assert_eq!(
        (
            plan.target.host.as_str(),
            plan.target.port,
            plan.target.base_path.as_str()
        ),
        ("127.0.0.1", 4000, "")
    );
    assert_eq!(plan.weights, vec![70, 15, 15]);
    assert_eq!(
        plan.names,
        vec![
            "create_task",
            "list_tasks",
            "create_then_read[0]",
            "create_then_read[1]"
        ]
    );
    assert_eq!(plan.timeout, secs(10.0));
    assert_eq!(plan.thresholds.len(), 4);
    assert_eq!(plan.thresholds[2].expr, "create_task.p99 < 800ms");
    assert_eq!(
        plan.threads,
        std::thread::available_parallelism().unwrap().get()
    );
    match &plan.load {
        Load::ArrivalRate {
            schedule,
            max_in_flight,
        } => {
            assert_eq!(*schedule, Schedule::constant(1000.0, secs(60.0)));
            assert_eq!(*max_in_flight, 5000);
            assert_eq!(plan.client.connection, ConnectionModel::Shared(None));
        }
        other => panic!("{other:?}"),
    }

    let create = request(&plan, 0);
    assert_eq!((create.name_id, create.method.as_str()), (0, "POST"));
    assert_eq!(create.path.as_static(), Some("/api/tasks"));
    let headers: Vec<(&str, String)> = create
        .headers
        .iter()
        .map(|(n, t)| (n.as_str(), render(t, &Vars::default())))
        .collect();
    assert_eq!(
        headers,
        vec![
            ("authorization", "Bearer s3cret".into()),
            ("content-type", "application/json".into())
        ]
    );
    let body: serde_json::Value =
        serde_json::from_str(&render(create.body.as_ref().unwrap(), &Vars::default())).unwrap();
    let run_at = humantime::parse_rfc3339(body["run_at"].as_str().unwrap()).unwrap();
    assert!(run_at > std::time::SystemTime::now() + secs(290.0));
    assert_eq!(create.expect.status, vec![StatusRange { lo: 201, hi: 201 }]);

    let list = request(&plan, 1);
    assert_eq!(list.method, "GET");
    let path = render(&list.path, &Vars::default());
    let offset: u32 = path
        .strip_prefix("/api/tasks?limit=50&offset=")
        .unwrap()
        .parse()
        .unwrap();
    assert!(offset <= 100_000);
    assert_eq!(list.expect.json.len(), 1);
    assert_eq!(
        (
            list.expect.json[0].source.as_str(),
            list.expect.json[0].equals.is_none()
        ),
        ("$.data", true)
    );

    let Item::Flow(flow) = &plan.items[2] else {
        panic!("item 2 is not a flow")
    };
    assert_eq!(flow.name, "create_then_read");
    let [Step::Request {
        request: first,
        captures,
    }, Step::Request {
        request: second,
        captures: none,
    }, Step::Think(think)] = flow.steps.as_slice()
    else {
        panic!("{:?}", flow.steps)
    };
    assert_eq!(first.name_id, 2);
    assert_eq!(
        render(first.body.as_ref().unwrap(), &Vars::default()),
        r#"{"url":"http://127.0.0.1:9/hook"}"#
    );
    assert_eq!(captures.len(), 1);
    assert_eq!(
        (captures[0].var.as_str(), captures[0].source.as_str()),
        ("id", "$.id")
    );
    assert!(none.is_empty());
    let mut vars = Vars::default();
    vars.set("id", "42".into());
    assert_eq!(render(&second.path, &vars), "/api/tasks/42");
    assert_eq!(second.name_id, 3);
    assert_eq!(*think, Think::Fixed(secs(0.1)));
}

#[test]
fn users_model_with_stages_and_a_think_range() {
    let plan = plan(
        "target: http://127.0.0.1:4000/base/\nload:\n  model: users\n  start: 5\n  stages: [{duration: 30s, target: 50}, {duration: 1m, target: 50}]\n  think: 1.5s..2.5s\nrequests:\n  - path: /graphql\n    method: post\n    body: '{\"query\": \"{ tasks }\"}'\n",
    );
    assert_eq!(plan.name, "scenario");
    match &plan.load {
        Load::Users {
            schedule, think, ..
        } => {
            let stages = vec![
                Stage {
                    duration: secs(30.0),
                    target: 50.0,
                },
                Stage {
                    duration: secs(60.0),
                    target: 50.0,
                },
            ];
            assert_eq!(*schedule, Schedule::new(5.0, stages));
            assert_eq!(*think, Think::Uniform(secs(1.5), secs(2.5)));
        }
        other => panic!("{other:?}"),
    }
    let r = request(&plan, 0);
    assert_eq!(plan.names, vec!["POST /graphql"]);
    assert_eq!(r.method, "POST");
    assert_eq!(r.path.as_static(), Some("/graphql"));
    assert_eq!(
        plan.target.base_path, "/base",
        "the client adds the base path"
    );
    assert_eq!(
        r.body.as_ref().unwrap().as_static(),
        Some("{\"query\": \"{ tasks }\"}")
    );
    assert!(r.headers.is_empty(), "a raw body gets no content type");
    assert_eq!(plan.weights, vec![1]);
    assert_eq!(plan.timeout, secs(30.0));
}

#[test]
fn users_are_implied_and_arrival_stages_ramp_from_zero() {
    let plan = plan("target: http://127.0.0.1:1\nload: {users: 3, duration: 5s, think: 2s}\nrequests: [{path: /}]\n");
    match &plan.load {
        Load::Users {
            schedule, think, ..
        } => {
            assert_eq!(*schedule, Schedule::constant(3.0, secs(5.0)));
            assert_eq!(*think, Think::Fixed(secs(2.0)));
        }
        other => panic!("{other:?}"),
    }
    let plan = plan_with(
        "target: http://127.0.0.1:1\nload: {stages: [{duration: 10s, target: 100}, {duration: 5s, target: 20.5}], connections: 4}\nrequests: [{path: /}]\n",
        &Overrides::default(),
    );
    assert_eq!(plan.client.connection, ConnectionModel::Shared(Some(4)));
    match &plan.load {
        Load::ArrivalRate {
            schedule,
            max_in_flight,
        } => {
            assert_eq!(schedule.start(), 0.0);
            assert_eq!(
                schedule.stages()[1],
                Stage {
                    duration: secs(5.0),
                    target: 20.5
                }
            );
            assert_eq!(*max_in_flight, 10_000);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn expectations_headers_and_bodies() {
    std::env::set_var("HEADROOM_TEST_TOKEN", "t\"k");
    let plan = plan(
        r#"
target: http://127.0.0.1:4000
defaults: {headers: {x-a: "1", Content-Type: text/plain}}
load: {rate: 10, duration: 1s}
requests:
  - path: /a
    method: PUT
    headers: {x-a: "2", x-b: "{{ seq() }}"}
    json: {token: "{{ env.HEADROOM_TEST_TOKEN }}", n: [1, 2.5, true, null]}
    timeout: 30s
    expect:
      status: [200, 2xx, "404"]
      body_contains: ok
      json: {"$.n": 5, "$.s": "x"}
"#,
    );
    let r = request(&plan, 0);
    let names: Vec<&str> = r.headers.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, vec!["Content-Type", "x-a", "x-b"]);
    assert_eq!(
        r.headers[0].1.as_static(),
        Some("text/plain"),
        "an explicit content type is kept"
    );
    assert_eq!(
        r.headers[1].1.as_static(),
        Some("2"),
        "the request's header wins"
    );
    assert_eq!(r.headers[2].1.as_static(), None);
    let body = render(r.body.as_ref().unwrap(), &Vars::default());
    assert_eq!(body, r#"{"n":[1,2.5,true,null],"token":"t\"k"}"#);
    let statuses: Vec<(u16, u16)> = r.expect.status.iter().map(|s| (s.lo, s.hi)).collect();
    assert_eq!(statuses, vec![(200, 200), (200, 299), (404, 404)]);
    assert_eq!(
        r.expect.body_contains.as_ref().and_then(|t| t.as_static()),
        Some("ok")
    );
    let json: Vec<(&str, Option<serde_json::Value>)> = r
        .expect
        .json
        .iter()
        .map(|j| {
            (
                j.source.as_str(),
                j.equals.as_ref().and_then(|e| e.value().cloned()),
            )
        })
        .collect();
    assert_eq!(
        json,
        vec![
            ("$.n", Some(serde_json::json!(5))),
            ("$.s", Some(serde_json::json!("x")))
        ]
    );
    assert!(r.needs_body(&[]));
}

#[test]
fn flow_step_names_and_repeated_names_share_an_id() {
    let plan = plan(
        r#"
target: http://127.0.0.1:4000
load: {rate: 10, duration: 1s}
requests: [{path: /x}, {path: /x, weight: 2}]
flows:
  - name: f
    steps:
      - {name: login, request: {method: POST, path: /login}, capture: {tok: "$.token", user: "$.user.id"}}
      - think: 1s..2s
      - request: {name: me, path: "/users/{{ user }}", headers: {authorization: "{{ tok }}"}}
      - request: {path: /end}
"#,
    );
    assert_eq!(plan.names, vec!["GET /x", "login", "me", "f[3]"]);
    assert_eq!(request(&plan, 1).name_id, 0);
    assert_eq!(plan.weights, vec![1, 2, 1]);
}

#[test]
fn a_request_keeps_its_own_timeout_and_the_longest_bounds_the_drain() {
    let p = plan(
        "target: http://127.0.0.1:4000\n\
         defaults: {timeout: 10s}\n\
         load: {rate: 10, duration: 1s}\n\
         requests:\n  - {path: /quick, timeout: 250ms}\n  - {path: /plain}\n\
         flows:\n  - name: f\n    steps:\n      - request: {path: /export, timeout: 45s}\n",
    );
    assert_eq!(p.timeout, secs(10.0));
    assert_eq!(request(&p, 0).timeout_in(&p), secs(0.25));
    assert_eq!(request(&p, 1).timeout_in(&p), secs(10.0));
    assert_eq!(p.longest_timeout(), secs(45.0));
}
