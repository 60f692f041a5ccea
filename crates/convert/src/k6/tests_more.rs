//! Scenarios with several executors, thresholds, logic and responses read back, and
//! hostile inputs.

use super::tests::{loads, outcome, run_env};
use super::*;
use serde_json::{json, Value as J};

const SCENARIOS: &str = r#"
import http from 'k6/http';
import { sleep } from 'k6';
import { Trend, Counter } from 'k6/metrics';

const loginTrend = new Trend('login_duration');
const errors = new Counter('errors');

export const options = {
  scenarios: {
    api: { executor: 'constant-arrival-rate', rate: 600, timeUnit: '1m', duration: '2m', preAllocatedVUs: 20, maxVUs: 50, exec: 'login' },
    browse: { executor: 'ramping-vus', startVUs: 0, stages: [{ duration: '1m', target: 10 }, { duration: '30s', target: 0 }], exec: 'browse', startTime: '10s' },
    steady: { executor: 'constant-vus', vus: 3, duration: '1m', exec: 'browse' },
    each: { executor: 'per-vu-iterations', vus: 2, iterations: 5, exec: 'login' },
    total: { executor: 'shared-iterations', vus: 4, iterations: 100, maxDuration: '5m', exec: 'browse' },
  },
  thresholds: {
    http_req_duration: ['p(95)<500', 'p(99)<1500'],
    http_req_failed: ['rate<0.01'],
    checks: ['rate>0.99'],
    'http_req_duration{name:login}': ['p(95)<300'],
    'http_req_duration{scenario:browse}': [{ threshold: 'p(95)<200', abortOnFail: true }],
    login_duration: ['avg<250'],
    errors: ['count<10'],
  },
};

export function login() {
  const res = http.post('http://127.0.0.1:8080/login', JSON.stringify({ u: 'a' }), { tags: { name: 'login' } });
  loginTrend.add(res.timings.duration);
  errors.add(1);
}

export function browse() {
  http.get('http://127.0.0.1:8080/items');
  sleep(1);
}
"#;

#[test]
fn scenarios_become_workloads_and_thresholds_are_placed() {
    let c = run_env("scenarios.js", SCENARIOS, &[]);
    let y = loads(&c);
    let w = y["workloads"].as_array().expect("workloads");
    assert_eq!(w.len(), 5, "{}", c.yaml);
    assert_eq!(w[0]["name"], "api");
    assert_eq!(
        w[0]["load"],
        json!({"model": "arrival-rate", "rate": 10, "duration": "2m", "max_in_flight": 50})
    );
    assert_eq!(w[0]["flows"][0]["steps"][0]["request"]["name"], "login");
    assert_eq!(
        w[1]["load"]["stages"],
        json!([{"duration": "1m", "target": 10}, {"duration": "30s", "target": 0}])
    );
    assert_eq!(w[1]["load"]["start"], 0);
    assert_eq!(w[1]["start"], "10s");
    assert_eq!(w[1]["thresholds"], json!(["p95 < 200ms"]));
    assert_eq!(
        w[2]["load"],
        json!({"model": "users", "users": 3, "duration": "1m"})
    );
    assert_eq!(w[3]["load"]["iterations"], json!({"per_user": 5}));
    assert_eq!(w[4]["load"]["iterations"], json!({"shared": 100}));
    assert_eq!(w[4]["load"]["duration"], "5m");
    // The same function in two workloads: the copy's requests are renamed, since
    // request names are unique across workloads.
    assert_eq!(
        w[3]["flows"][0]["steps"][0]["request"]["name"],
        "login (each)"
    );
    assert_eq!(
        w[2]["flows"][0]["steps"][0]["request"]["name"],
        "GET /items (steady)"
    );
    let th: Vec<&str> = y["thresholds"]
        .as_array()
        .expect("thresholds")
        .iter()
        .filter_map(|t| t.as_str())
        .collect();
    assert_eq!(
        th,
        [
            "p95 < 500ms",
            "p99 < 1500ms",
            "errors < 1%",
            "checks > 99%",
            "login.p95 < 300ms",
            "login.avg < 250ms"
        ]
    );
    assert!(outcome(&c, "abortOnFail").contains("--abort-on-fail"));
    assert!(
        c.yaml.contains("--abort-on-fail"),
        "a comment says how to abort"
    );
    assert!(outcome(&c, "threshold errors: count<10").starts_with("left out: a custom metric"));
    assert!(outcome(&c, "new Counter('errors')").starts_with("left out"));
    assert!(outcome(&c, "errors.add").starts_with("left out"));
    assert!(outcome(&c, "login_duration.add").starts_with("approximated"));
    assert!(outcome(&c, "threshold http_req_failed").contains("status of 400 or more"));
    assert!(outcome(&c, "options.scenarios.api").contains("max_in_flight"));
}

const LOGIC: &str = r#"
import http from 'k6/http';
import { group, sleep } from 'k6';
import { randomIntBetween, randomString, uuidv4 } from 'https://jslib.k6.io/k6-utils/1.4.0/index.js';

const BASE = 'http://127.0.0.1:8080';

export default function () {
  group('checkout', () => {
    const page = http.get(`${BASE}/form`);
    const csrf = page.html().find('input[name=csrf]').attr('value');
    const title = page.html().find('h1').text();
    const res = http.post(`${BASE}/submit`, { csrf: csrf, title: title, ref: uuidv4(), note: randomString(8) }, { redirects: 0 });
    const next = res.headers['Location'];
    http.get(`${BASE}${next}?sid=${http.cookieJar().cookiesForURL(BASE).sessionid[0]}&vu=${__VU}&it=${__ITER}`);
    if (res.status === 302) {
      http.get(`${BASE}/done`);
    }
    if (Math.random() > 0.9) {
      http.get(`${BASE}/survey`);
    } else {
      http.get(`${BASE}/no-survey`);
    }
  });
  sleep(randomIntBetween(1, 5));
  if (Math.random() < 0.3) {
    http.get(`${BASE}/rare`);
    http.get(`${BASE}/rarer`);
  } else {
    http.get(`${BASE}/usual`);
  }
  const responses = http.batch([
    ['GET', `${BASE}/a`],
    { method: 'POST', url: `${BASE}/b`, body: JSON.stringify({ n: randomIntBetween(1, 9) }) },
  ]);
  for (let i = 0; i < 3; i++) {
    http.get(`${BASE}/page/${i}`);
  }
}
"#;

#[test]
fn groups_sleeps_random_branches_batches_and_reads_of_responses() {
    let c = run_env("logic.js", LOGIC, &[]);
    let y = loads(&c);
    let steps = y["flows"][0]["steps"].as_array().expect("steps");
    let group = &steps[0]["group"];
    assert_eq!(group["name"], "checkout");
    let inner = group["steps"].as_array().expect("group steps");
    assert_eq!(
        inner[0]["capture"],
        json!({"value": "css:input[name=csrf]@value", "text": "css:h1"})
    );
    assert_eq!(
        inner[1]["request"]["form"],
        json!({"csrf": "{{ value }}", "title": "{{ text }}", "ref": "{{ uuid() }}", "note": "{{ rand_string(8) }}"})
    );
    assert_eq!(inner[1]["request"]["redirects"], 0);
    assert_eq!(
        inner[1]["capture"],
        json!({"location": "header:Location", "status": "status"})
    );
    assert_eq!(
        inner[2]["request"]["path"],
        "{{ location }}?sid={{ cookie.sessionid }}&vu={{ user() }}&it={{ iteration() }}"
    );
    assert_eq!(inner[3]["if"], "status == 302");
    assert_eq!(inner[3]["request"]["path"], "/done");
    assert_eq!(outcome(&c, "cookiesForURL"), "translated");
    // Inside the group, the branches draw separately: an approximation.
    assert_eq!(inner[4]["if"], "chance(0.1)");
    assert_eq!(inner[4]["request"]["path"], "/survey");
    assert_eq!(inner[5]["if"], "chance(0.9)");
    assert!(outcome(&c, "if (Math.random()").contains("draw separately"));
    assert_eq!(steps[1]["think"], "1s..5s");
    assert!(outcome(&c, "sleep").contains("whole number of seconds"));
    // At the top of the function, one draw picks a branch: two weighted flows.
    let flows = y["flows"].as_array().expect("flows");
    assert_eq!(flows.len(), 2);
    assert_eq!(
        (&flows[0]["weight"], &flows[1]["weight"]),
        (&json!(3), &json!(7))
    );
    let paths = |f: &J| -> Vec<String> {
        f["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .filter_map(|s| s["request"]["path"].as_str().map(String::from))
            .collect()
    };
    assert_eq!(
        paths(&flows[0]),
        ["/rare", "/rarer", "/page/0", "/page/1", "/page/2"]
    );
    assert_eq!(
        paths(&flows[1]),
        ["/usual", "/page/0", "/page/1", "/page/2"]
    );
    assert_eq!(
        flows[1]["steps"][0]["group"]["name"], "checkout",
        "what comes before the branch is in both"
    );
    let parallel = flows[1]["steps"][3]["parallel"]
        .as_array()
        .expect("parallel");
    assert_eq!(parallel[0]["path"], "/a");
    assert_eq!(parallel[1]["json"], json!({"n": "{{ rand_int(1, 9) }}"}));
    let random_items: Vec<&Outcome> = c
        .report
        .items
        .iter()
        .filter(|i| i.construct.starts_with("if (Math.random()"))
        .map(|i| &i.outcome)
        .collect();
    assert_eq!(random_items.len(), 2);
    assert!(random_items.contains(&&Outcome::Translated));
    assert_eq!(outcome(&c, "http.batch"), "translated");
}

#[test]
fn hostile_scripts_are_refused_with_file_line_and_column() {
    let options = Options::default();
    let conv = |text: &str| {
        convert(
            Source {
                file: "bad.js",
                text,
            },
            &options,
        )
    };
    // A syntax error names the file, line and column.
    let e = conv("import http from 'k6/http';\nexport default function () {\n  http.get('http://h/' +);\n}\n").unwrap_err();
    assert!(matches!(e, ConvertError::Syntax { line: 3, .. }), "{e}");
    assert!(e.to_string().starts_with("bad.js:3:"), "{e}");
    // Deeply nested brackets: refused before the parser recurses into them.
    let deep = format!("const x = {}1{};", "(".repeat(200_000), ")".repeat(200_000));
    let e = conv(&deep).unwrap_err();
    assert!(matches!(e, ConvertError::Limit { .. }), "{e}");
    // Nesting the parser takes but the walk refuses: an expression 100 deep.
    let nested = format!("import http from 'k6/http';\nconst x = {}1{};\nexport default function () {{ http.get('http://h/' + x); }}", "-(".repeat(100), ")".repeat(100));
    let e = conv(&nested).unwrap_err();
    assert!(
        matches!(
            e,
            ConvertError::Limit {
                what: "nesting deeper than",
                ..
            }
        ),
        "{e}"
    );
    // A function calling itself is not inlined forever: reported, the rest converted.
    let rec = "import http from 'k6/http';\nfunction f(n) { http.get('http://h/x'); return f(n + 1); }\nexport default function () { f(0); }\n";
    let c = conv(rec).expect("converted");
    assert!(
        c.report
            .items
            .iter()
            .any(|i| i.construct == "recursive call"),
        "{}",
        c.report
    );
    loads(&c);
    // A loop of 10^9 is unrolled up to the bound, then reported.
    let looped = "import http from 'k6/http';\nexport default function () {\n  for (let i = 0; i < 1e9; i++) { http.get('http://h/x'); }\n  http.get('http://h/after');\n}\n";
    let c = conv(looped).expect("converted");
    let y = loads(&c);
    assert_eq!(
        y["flows"][0]["steps"],
        json!([{"request": {"path": "/after"}}]),
        "none of the loop is kept"
    );
    assert!(outcome(&c, "loop").contains("not unrolled"), "{}", c.report);
    let idle = "import http from 'k6/http';\nexport default function () {\n  let n = 0; while (true) { n++; }\n  http.get('http://h/x');\n}\n";
    let c = conv(idle).expect("converted");
    assert!(outcome(&c, "loop").contains("not unrolled"), "{}", c.report);
    // 10,000 requests are more than a conversion writes.
    let many = format!(
        "import http from 'k6/http';\nexport default function () {{\n{}}}\n",
        "  http.get('http://h/x');\n".repeat(10_000)
    );
    let e = conv(&many).unwrap_err();
    assert!(
        matches!(
            e,
            ConvertError::Limit {
                what: "more requests than",
                ..
            }
        ),
        "{e}"
    );
    // Inlining that doubles at each level runs out of work, not of memory.
    let mut blowup = String::from("import http from 'k6/http';\nfunction f0() { return 1; }\n");
    for i in 1..8 {
        let p = i - 1;
        blowup.push_str(&format!("function f{i}() {{ let s = 0; for (let j = 0; j < 10; j++) {{ s += f{p}(); }} return s; }}\n"));
    }
    blowup.push_str("export default function () { http.get('http://h/' + f7()); }\n");
    let e = conv(&blowup).unwrap_err();
    assert!(
        matches!(
            e,
            ConvertError::Limit {
                what: "more evaluation steps than",
                ..
            }
        ),
        "{e}"
    );
    // Nesting without brackets, within the parser's own bounds or refused cleanly.
    for op in ["-", "!", "typeof ", "void ", "x => "] {
        let text = format!("const y = {}1;", op.repeat(50_000));
        let r = std::thread::Builder::new()
            .stack_size(8 << 20)
            .spawn(move || {
                convert(
                    Source {
                        file: "bad.js",
                        text: &text,
                    },
                    &Options::default(),
                )
                .map(|_| ())
                .map_err(|e| e.to_string())
            })
            .expect("thread")
            .join();
        let r = r.unwrap_or_else(|_| panic!("{op:?} nested 50,000 deep panicked"));
        assert!(r.is_err(), "{op:?}");
    }
    // Just under the parser's bound: parsed on the converter's own stack, then refused
    // by the walk's bound, never a crash.
    for text in [
        format!("const x = {}1{};", "(".repeat(990), ")".repeat(990)),
        format!("{}1;", "a = ".repeat(990)),
        format!("x = {}1;", "- ".repeat(990)),
    ] {
        let e = conv(&text).unwrap_err();
        assert!(
            matches!(
                e,
                ConvertError::Limit { .. } | ConvertError::Unusable { .. }
            ),
            "{e}"
        );
    }
    // Every URL built from an unset variable: the error says which to set.
    let e = conv("import http from 'k6/http';\nexport default function () { http.get(`${__ENV.BASE_URL}/x`); }\n").unwrap_err();
    assert!(
        e.to_string()
            .contains("line 2: its origin is the environment variable BASE_URL"),
        "{e}"
    );
    // No request at all: unusable, not an empty scenario.
    let e = conv("export default function () {}\n").unwrap_err();
    assert!(matches!(e, ConvertError::Unusable { .. }), "{e}");
    // Bytes that are not a script.
    assert!(conv("\u{0}\u{1}<<>>").is_err());
}

#[test]
fn typescript_and_unknown_constructs_still_produce_a_scenario() {
    let ts = r#"
import http from 'k6/http';
import { Options } from 'k6/options';
import crypto from 'k6/crypto';
export const options: Options = { vus: 2, iterations: 10, hosts: { 'a.test': '127.0.0.1' } };
interface Item { id: number }
export default function (): void {
  const sig = crypto.sha256('x', 'hex');
  http.get(`http://127.0.0.1:9000/items?sig=${sig}`);
  const res = http.get('http://127.0.0.1:9000/items', { headers: { 'X-Token': __ENV.PATH } });
  http.get('http://other.test/elsewhere');
}
"#;
    let c = convert(
        Source {
            file: "script.ts",
            text: ts,
        },
        &Options::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let y = loads(&c);
    assert_eq!(
        y["load"],
        json!({"model": "users", "users": 2, "iterations": {"shared": 10}})
    );
    assert_eq!(y["target"], "http://127.0.0.1:9000");
    let steps = y["flows"][0]["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 1, "{}", c.yaml);
    assert_eq!(steps[0]["request"]["headers"]["X-Token"], "{{ env.PATH }}");
    assert!(outcome(&c, "import k6/crypto").starts_with("left out"));
    assert!(outcome(&c, "options.hosts").starts_with("left out"));
    let left: Vec<&str> = c
        .report
        .items
        .iter()
        .filter(|i| matches!(i.outcome, Outcome::LeftOut(_)))
        .map(|i| i.construct.as_str())
        .collect();
    assert!(left.contains(&"http.get"), "{}", c.report);
    let strict = c.strict("script.ts").unwrap_err();
    assert!(matches!(strict, ConvertError::Strict { .. }));
}

#[test]
fn cookies_bodies_parsed_as_json_and_html_become_captures() {
    let script = r#"
import http from 'k6/http';
import { check } from 'k6';
import { parseHTML } from 'k6/html';
export const options = { vus: 1, iterations: 1 };
export default function () {
  const login = http.post('http://127.0.0.1:8080/login', { user: 'a' });
  const sid = login.cookies.sessionid[0].value;
  const body = JSON.parse(login.body);
  const doc = parseHTML(login.body);
  console.log(`logged in as ${body.user.name}`);
  http.get(`http://127.0.0.1:8080/me?sid=${sid}&name=${body.user.name}&first=${body.items[0].id}&t=${doc.find('meta[name=t]').attr('content')}`);
  check(login, { 'ok': (r) => r.status === 200 || r.status === 201 });
}
"#;
    let c = run_env("cookies.js", script, &[]);
    let y = loads(&c);
    let steps = &y["flows"][0]["steps"];
    assert_eq!(
        steps[0]["capture"],
        json!({"sessionid": "cookie:sessionid", "name": "$.user.name", "id": "$.items[0].id", "content": "css:meta[name=t]@content"})
    );
    assert_eq!(
        steps[1]["request"]["path"],
        "/me?sid={{ sessionid }}&name={{ name }}&first={{ id }}&t={{ content }}"
    );
    assert!(outcome(&c, "console.log").starts_with("left out"));
    assert_eq!(steps[0]["request"]["check"], json!({"status": [200, 201]}));
    assert_eq!(outcome(&c, "check 'ok'"), "translated");
    let counts = c.report.counts();
    assert_eq!(
        c.report.summary(),
        format!(
            "translated {} of {} calls; 0 approximations; 1 left out",
            counts.translated,
            counts.total()
        )
    );
}

#[test]
fn the_length_of_a_json_value_is_never_a_capture() {
    let c = run_env(
        "len.js",
        r#"
import http from 'k6/http';
export default function () {
  const res = http.get('http://127.0.0.1:8080/items');
  if (res.json('items').length > 0) {
    http.get('http://127.0.0.1:8080/first');
  }
}
"#,
        &[],
    );
    let doc = loads(&c);
    // No capture reads a member named `length` (which would fail the request where
    // the array has none): the branch it decides is left out, and reported.
    assert!(!c.yaml.contains(".length"), "{}", c.yaml);
    assert!(doc.to_string().contains("/items"), "{}", c.yaml);
    assert!(
        c.report
            .items
            .iter()
            .any(|i| matches!(&i.outcome, Outcome::LeftOut(n) | Outcome::Approximated(n) if n.contains("length"))),
        "{}",
        c.report
    );
}
