//! Tests of the k6 converter: one per shape real scripts have. Each parses the YAML
//! back (and loads it with the scenario compiler) and checks the report's items.

use super::*;
use crate::testing::assert_loads;
use serde_json::{json, Value as J};

/// Converts `text` as `name` with `env`.
pub(super) fn run_env(name: &str, text: &str, env: &[(&str, &str)]) -> Converted {
    let options = Options {
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        data_prefix: None,
    };
    convert(Source { file: name, text }, &options).unwrap_or_else(|e| panic!("{e}"))
}

/// Converts, loads with the scenario compiler, and returns the YAML as JSON.
pub(super) fn loads(c: &Converted) -> J {
    assert_loads(&c.yaml);
    serde_saphyr::from_str(&c.yaml).unwrap_or_else(|e| panic!("{e}\n{}", c.yaml))
}

/// The outcome word of the first report item whose construct starts with `what`.
pub(super) fn outcome(c: &Converted, what: &str) -> String {
    let item = c
        .report
        .items
        .iter()
        .find(|i| i.construct.starts_with(what))
        .unwrap_or_else(|| panic!("no item {what:?} in\n{}", c.report));
    match &item.outcome {
        Outcome::Translated => "translated".into(),
        Outcome::Approximated(n) => format!("approximated: {n}"),
        Outcome::LeftOut(n) => format!("left out: {n}"),
    }
}

const PROFILES: &str = r#"
import http from 'k6/http';
import { sleep } from 'k6';

const profiles = {
  smoke: { vus: 1, duration: '10s' },
  load: { stages: [ { duration: '30s', target: 20 }, { duration: '1m', target: 20 }, { duration: '10s', target: 0 } ] },
};
export const options = profiles[__ENV.PROFILE || 'smoke'];
const BASE = __ENV.BASE_URL || 'http://localhost:8080';

export default function () {
  http.get(`${BASE}/api/items?limit=10`);
  sleep(1);
}
"#;

#[test]
fn options_are_chosen_by_the_env_profile_and_urls_built_from_base_url() {
    let smoke = run_env("profiles.js", PROFILES, &[]);
    let y = loads(&smoke);
    assert_eq!(y["target"], "http://localhost:8080");
    assert_eq!(
        y["load"],
        json!({"model": "users", "users": 1, "duration": "10s"})
    );
    let steps = &y["flows"][0]["steps"];
    assert_eq!(steps[0]["request"]["path"], "/api/items?limit=10");
    assert_eq!(steps[1]["think"], "1s");
    assert!(outcome(&smoke, "__ENV.PROFILE").starts_with("approximated"));

    let load = run_env(
        "profiles.js",
        PROFILES,
        &[
            ("PROFILE", "load"),
            ("BASE_URL", "https://api.example.test:8443"),
        ],
    );
    let y = loads(&load);
    assert_eq!(y["target"], "https://api.example.test:8443");
    assert_eq!(
        y["load"]["stages"][1],
        json!({"duration": "1m", "target": 20})
    );
    assert_eq!(y["load"]["model"], "users");
    assert_eq!(outcome(&load, "http.get"), "translated");
    assert_eq!(outcome(&load, "sleep"), "translated");
    let summary = load.report.summary();
    assert!(
        summary.ends_with("0 left out"),
        "{summary}\n{}",
        load.report
    );
}

const HELPERS: &str = r#"
import http from 'k6/http';
import { check } from 'k6';

const BASE = __ENV.BASE_URL || 'http://127.0.0.1:8080';
const token = 'abc';

function api(method, path, body) {
  return http.request(method, `${BASE}${path}`, JSON.stringify(body), {
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
    tags: { name: path },
    timeout: '5s',
  });
}

export const options = {
  vus: 2,
  stages: [{ duration: '10s', target: 4 }],
  thresholds: { 'http_req_duration{name:/api/items}': ['p(95)<300', 'med<100'], 'http_req_duration{expected_response:true}': ['p(90)<200'] },
};

export default function () {
  const created = api('POST', '/api/items', { title: 'first', user: __VU });
  check(created, {
    'status is 201': (r) => r.status === 201,
    'has items': (r) => r.json('items').length > 0,
    'id set': (r) => r.json().id !== undefined,
    'title echoed': (r) => r.json('data.title') === 'first',
    'fast': (r) => r.timings.duration < 800,
    'json type': (r) => r.headers['Content-Type'] === 'application/json',
  });
  const id = created.json('id');
  api('PUT', `/api/items/${id}`, { title: 'second' });
  const res = api('DELETE', `/api/items/${id}`);
  check(res, { 'deleted': (r) => r.body.includes('ok') });
}
"#;

#[test]
fn helpers_are_inlined_with_their_arguments_and_checks_become_matchers() {
    let c = run_env("helpers.js", HELPERS, &[]);
    let y = loads(&c);
    let steps = y["flows"][0]["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 3, "{}", c.yaml);
    assert_eq!(
        y["load"],
        json!({"model": "users", "stages": [{"duration": "10s", "target": 4}], "start": 2})
    );
    assert_eq!(
        y["thresholds"],
        json!([
            "/api/items.p95 < 300ms",
            "/api/items.p50 < 100ms",
            "success_p90 < 200ms"
        ])
    );
    let first = &steps[0]["request"];
    assert_eq!(first["name"], "/api/items");
    assert_eq!(first["method"], "POST");
    assert_eq!(first["timeout"], "5s");
    assert_eq!(first["headers"]["Authorization"], "Bearer abc");
    assert_eq!(
        first["json"],
        json!({"title": "first", "user": "{{ user() }}"})
    );
    assert_eq!(
        first["check"],
        json!({"status": 201, "json_path": "$.items[0]", "json": {"$.data.title": "first"}, "duration": "<800ms"})
    );
    // `id set` needs json_path too, which `has items` took: it is left out, naming what was kept.
    assert!(
        outcome(&c, "check 'id set'").starts_with("left out"),
        "{}",
        c.report
    );
    let header = outcome(&c, "check 'json type'");
    assert!(
        header.contains("no header matcher")
            && header.contains("kept of this check: status is 201"),
        "{header}"
    );
    assert_eq!(steps[0]["capture"], json!({"id": "$.id"}));
    assert_eq!(steps[1]["request"]["path"], "/api/items/{{ id }}");
    assert_eq!(steps[1]["request"]["name"], "/api/items/{{ id }}");
    assert_eq!(steps[2]["request"]["method"], "DELETE");
    // JSON.stringify(undefined) sends no body.
    assert!(steps[2]["request"].get("json").is_none() && steps[2]["request"].get("body").is_none());
    assert_eq!(steps[2]["request"]["check"], json!({"body_contains": "ok"}));
    assert_eq!(outcome(&c, "check 'status is 201'"), "translated");
    assert!(outcome(&c, "check 'has items'").starts_with("approximated"));
    // One report item per construct, however often the helper ran.
    let requests = c
        .report
        .items
        .iter()
        .filter(|i| i.construct == "http.request")
        .count();
    assert_eq!(requests, 1, "{}", c.report);
}

const SETUP: &str = r#"
import http from 'k6/http';
import { check, sleep } from 'k6';
const BASE = 'http://127.0.0.1:8000';
export const options = { vus: 5, duration: '30s' };

export function setup() {
  const res = http.post(`${BASE}/api/login`, JSON.stringify({ username: 'alice', password: 's3cret' }), {
    headers: { 'Content-Type': 'application/json' },
  });
  check(res, { 'logged in': (r) => r.status === 200 });
  return { token: res.json('token') };
}

export default function (data) {
  http.get(`${BASE}/api/me`, { headers: { Authorization: `Bearer ${data.token}` } });
  sleep(Math.random() * 3);
}

export function handleSummary(data) {
  return { 'summary.json': JSON.stringify(data) };
}
"#;

#[test]
fn a_setup_login_becomes_setup_steps_whose_captures_flows_read() {
    let c = run_env("setup.js", SETUP, &[]);
    let y = loads(&c);
    let setup = &y["setup"][0];
    assert_eq!(setup["request"]["path"], "/api/login");
    assert_eq!(
        setup["request"]["json"],
        json!({"username": "alice", "password": "s3cret"})
    );
    assert_eq!(setup["request"]["check"], json!({"status": 200}));
    assert_eq!(setup["capture"], json!({"token": "$.token"}));
    let steps = &y["flows"][0]["steps"];
    assert_eq!(
        steps[0]["request"]["headers"]["Authorization"],
        "Bearer {{ setup.token }}"
    );
    assert_eq!(steps[1]["think"], "0s..3s");
    assert_eq!(
        y["load"],
        json!({"model": "users", "users": 5, "duration": "30s"})
    );
    assert!(outcome(&c, "handleSummary").starts_with("left out: headroom writes its own reports"));
    assert_eq!(outcome(&c, "setup()"), "translated");
    let s = c.report.summary();
    assert!(
        s.ends_with("; 0 approximations; 1 left out"),
        "{s}\n{}",
        c.report
    );
}

const CSV: &str = r#"
import http from 'k6/http';
import { SharedArray } from 'k6/data';
import papaparse from 'https://jslib.k6.io/papaparse/5.1.1/index.js';
import { randomItem } from 'https://jslib.k6.io/k6-utils/1.2.0/index.js';

const users = new SharedArray('users', function () {
  return papaparse.parse(open('./users.csv'), { header: true }).data;
});
const products = JSON.parse(open('./products.json'));

export default function () {
  const user = users[__VU % users.length];
  const product = randomItem(products);
  http.post('http://127.0.0.1:8080/login', { username: user.username, password: user.password });
  http.get(`http://127.0.0.1:8080/products/${product.sku}`);
}
"#;

#[test]
fn shared_arrays_of_csv_and_json_files_become_data_files() {
    let options = Options {
        env: Default::default(),
        data_prefix: Some(PathBuf::from("../scripts")),
    };
    let c = convert(
        Source {
            file: "csv.js",
            text: CSV,
        },
        &options,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let y: J = serde_saphyr::from_str(&c.yaml).unwrap_or_else(|e| panic!("{e}\n{}", c.yaml));
    assert_eq!(
        y["data"]["users"],
        json!({"file": "../scripts/users.csv", "pick": "unique"})
    );
    assert_eq!(
        y["data"]["products"],
        json!({"file": "../scripts/products.json", "pick": "random"})
    );
    let steps = &y["flows"][0]["steps"];
    assert_eq!(
        steps[0]["request"]["form"],
        json!({"username": "{{ data.users.username }}", "password": "{{ data.users.password }}"})
    );
    assert_eq!(
        steps[1]["request"]["path"],
        "/products/{{ data.products.sku }}"
    );
    assert!(outcome(&c, "a row per VU").starts_with("approximated"));
    assert_eq!(outcome(&c, "SharedArray"), "translated");
    // Loading needs the files: write them where the scenario says.
    let dir = std::env::temp_dir().join(format!("k6-csv-{}", std::process::id()));
    let scripts = dir.join("scripts");
    let out = dir.join("out");
    std::fs::create_dir_all(&scripts).expect("dir");
    std::fs::create_dir_all(&out).expect("dir");
    std::fs::write(scripts.join("users.csv"), "username,password\na,b\nc,d\n").expect("csv");
    std::fs::write(
        scripts.join("products.json"),
        r#"[{"sku": "x1"}, {"sku": "x2"}]"#,
    )
    .expect("json");
    let file = out.join("csv.yaml");
    std::fs::write(&file, &c.yaml).expect("yaml");
    let loaded = headroom_scenario::load(Some(&file), &Default::default());
    let _ = std::fs::remove_dir_all(&dir);
    loaded.unwrap_or_else(|e| panic!("{e}\n{}", c.yaml));
}

#[test]
fn durations_read_as_k6_writes_them_and_write_as_a_person_would() {
    use super::value::{parse_duration, seconds_text};
    assert_eq!(parse_duration("1m30s"), Some(90.0));
    assert_eq!(parse_duration("500ms"), Some(0.5));
    assert_eq!(
        parse_duration("1500"),
        Some(1.5),
        "a bare number is milliseconds"
    );
    assert_eq!(parse_duration("2h"), Some(7200.0));
    for bad in ["", "10 parsecs", "m", "1.2.3s"] {
        assert_eq!(parse_duration(bad), None, "{bad:?}");
    }
    let written: Vec<String> = [0.0, 0.25, 1.5, 45.0, 90.0, 120.0, 3600.0, 3661.0]
        .into_iter()
        .map(seconds_text)
        .collect();
    assert_eq!(
        written,
        ["0s", "250ms", "1.5s", "45s", "1m30s", "2m", "1h", "1h1m1s"]
    );
}
