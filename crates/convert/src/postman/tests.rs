//! A realistic collection converted, loaded with the scenario compiler, and checked
//! for meaning.

use super::{convert, Options};
use crate::testing::assert_loads;
use crate::{Outcome, Source};

/// One line per step of a plan: `flow | name METHOD path | headers | body | captures
/// | checks`, setup steps under the flow name `setup`.
pub(crate) fn describe(plan: &headroom_plan::Plan) -> Vec<String> {
    use headroom_plan::{Item, Step};
    let mut lines = Vec::new();
    let mut step_line = |flow: &str, step: &Step| {
        let Step::Request { request, captures } = step else {
            lines.push(format!("{flow} | other step"));
            return;
        };
        let headers: Vec<String> = request
            .headers
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        let body = match (&request.body, &request.multipart) {
            (Some(b), _) => b.to_string(),
            (None, Some(m)) => format!("multipart({})", m.pieces.len()),
            (None, None) => String::new(),
        };
        let caps: Vec<String> = captures
            .iter()
            .map(|c| format!("{}={}", c.var, c.source))
            .collect();
        let checks: Vec<&str> = request
            .checks
            .iter()
            .map(|c| plan.checks[c.id].as_str())
            .collect();
        lines.push(format!(
            "{flow} | {} {} {} | {} | {} | {} | {}",
            plan.names[request.name_id],
            request.method,
            request.path,
            headers.join(" "),
            body,
            caps.join(" "),
            checks.join(" ")
        ));
    };
    for step in &plan.journey.setup {
        step_line("setup", step);
    }
    for item in &plan.items {
        if let Item::Flow(flow) = item {
            for step in &flow.steps {
                step_line(&flow.name, step);
            }
        }
    }
    lines
}

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/postman/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn a_realistic_collection_becomes_flows_with_checks_and_captures() {
    // `apiKey` is disabled in the environment: defined nowhere, read from the process
    // environment when the scenario loads.
    std::env::set_var("apiKey", "k-123");
    let file = format!(
        "{}/tests/postman/shop.postman_collection.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = fixture("shop.postman_collection.json");
    let env_text = fixture("shop.postman_environment.json");
    let options = Options {
        environment: Some(Source {
            file: "shop.postman_environment.json",
            text: &env_text,
        }),
    };
    let out = convert(
        Source {
            file: &file,
            text: &text,
        },
        &options,
    )
    .unwrap();
    // The form-data file is read relative to the scenario; here, the fixture's.
    let dir = format!("{}/tests/postman", env!("CARGO_MANIFEST_DIR"));
    let yaml = out
        .yaml
        .replace("\"invoice.txt\"", &format!("\"{dir}/invoice.txt\""));
    let plan = assert_loads(&yaml);
    assert_eq!(plan.name, "Shop API");
    assert_eq!(plan.target.authority, "127.0.0.1:8080");
    let lines = describe(&plan);
    // JSON bodies come back in key order (serde_json's map); the compiler adds the
    // content types and GraphQL's operation name.
    let expected = [
        // The token `Orders` reads was captured in another flow: setup logs in too.
        r#"setup | login POST /api/login | Content-Type=application/json | {"client":{{ uuid() }},"password":"s3cret \"quoted\"","username":"alice"} | token=$.token user_id=$.user.id | "#,
        r#"Auth | login POST /api/login | Content-Type=application/json | {"client":{{ uuid() }},"password":"s3cret \"quoted\"","username":"alice"} | token=$.token user_id=$.user.id | login.status"#,
        "Orders | list orders GET /api/orders?limit=20&user={{ setup.user_id }} | Accept=application/json Authorization=Bearer {{ setup.token }} |  |  | list orders.status list orders.json $.orders[0].state list orders.duration",
        "Orders | create order POST /api/orders | Authorization=Bearer {{ setup.token }} content-type=application/x-www-form-urlencoded | channel=web&item=sku-{{ rand_int(0, 1000) }} | header_Location=header:Location orderId=$.id | create order.status create order.body_contains",
        "Orders | attach invoice PUT /api/orders/{{ orderId }}/invoice | Authorization=Bearer {{ setup.token }} content-type=multipart/form-data; boundary=",
        r#"Orders | search POST /api/graphql | X-Api-Key=k-123 content-type=application/json | {"query":"query orders($state: String) { orders(state: $state) { id } }","operationName":"orders","variables":{"state":"open"}} |  | "#,
    ];
    for (got, want) in lines.iter().zip(expected) {
        assert!(got.starts_with(want), "{got}\n{want}\n{}", out.yaml);
    }
    assert_eq!(lines.len(), expected.len(), "{}", lines.join("\n"));
    // Two text fields... the title and the one file beside the collection.
    assert!(lines[4].contains("multipart("), "{}", lines[4]);
    assert!(out.yaml.contains("file: \"invoice.txt\""), "{}", out.yaml);
    assert!(!out.yaml.contains("scan.pdf"), "{}", out.yaml);

    // The report: every request and script statement, with positions.
    let report = out.report.to_string();
    let find = |needle: &str| {
        out.report
            .items
            .iter()
            .find(|i| i.construct.contains(needle))
            .unwrap_or_else(|| panic!("{needle} not reported:\n{report}"))
    };
    let login = find("pm.test(\"logged in\"): pm.response.to.have.status(200)");
    assert_eq!(login.outcome, Outcome::Translated);
    // Line 30 of the file: 18 spaces, the quote, 4 spaces, then the statement.
    assert_eq!((login.line, login.column), (30, 24), "{report}");
    let console = find("console.log");
    assert!(matches!(console.outcome, Outcome::LeftOut(_)), "{report}");
    assert_eq!((console.line, console.column), (35, 20));
    assert!(matches!(
        find("if (body.orders.length").outcome,
        Outcome::LeftOut(_)
    ));
    assert!(matches!(find("Date.now()").outcome, Outcome::LeftOut(_)));
    assert!(matches!(find("legacy").outcome, Outcome::LeftOut(_)));
    assert!(matches!(
        find("formdata file scan").outcome,
        Outcome::LeftOut(_)
    ));
    assert!(matches!(
        find("formdata file file").outcome,
        Outcome::Approximated(_)
    ));
    assert!(matches!(
        find("{{apiKey}}").outcome,
        Outcome::Approximated(_)
    ));
    assert!(matches!(
        find("header(\"Location\")").outcome,
        Outcome::Approximated(_)
    ));
    let list = find("list orders");
    assert_eq!(list.outcome, Outcome::Translated);
    let summary = out.report.summary();
    let c = out.report.counts();
    assert_eq!(
        summary,
        format!(
            "translated {} of {} requests; {} approximations; {} left out",
            c.translated,
            c.total(),
            c.approximated,
            c.left_out
        )
    );
    // 6 requests, 16 script statements and 3 notes: every one counted.
    assert_eq!(c.total(), out.report.items.len());
    assert_eq!(c.left_out, 5, "{report}");
    assert_eq!(
        summary,
        "translated 17 of 25 requests; 3 approximations; 5 left out"
    );
    assert!(
        out.yaml.contains(
            "# Defined nowhere, read from the environment when the scenario loads: apiKey"
        ),
        "{}",
        out.yaml
    );
}

#[test]
fn top_level_requests_form_one_flow_and_a_bare_url_is_a_get() {
    let text = r#"{"info": {"name": "tiny", "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json"},
      "item": [
        {"name": "home", "request": "https://example.test/"},
        {"name": "ping", "request": {"method": "post", "url": "https://example.test/ping?x={{$timestamp}}",
          "auth": {"type": "basic", "basic": [{"key": "username", "value": "u"}, {"key": "password", "value": "p\"w"}]},
          "body": {"mode": "raw", "raw": "hello {{ $isoTimestamp }} {not json"}}}
      ]}"#;
    let out = convert(
        Source {
            file: "t.json",
            text,
        },
        &Options::default(),
    )
    .unwrap();
    let plan = assert_loads(&out.yaml);
    assert_eq!(plan.target.scheme, "https");
    let lines = describe(&plan);
    assert_eq!(
        lines,
        [
            "tiny | home GET / |  |  |  | ",
            r#"tiny | ping POST /ping?x={{ now_unix() }} | Authorization=Basic dTpwInc= | hello {{ now_iso(0) }} {not json |  | "#,
        ],
        "{}",
        out.yaml
    );
    assert_eq!(
        out.report.summary(),
        "translated 2 of 3 requests; 1 approximation; 0 left out"
    );
}

#[test]
fn a_host_without_a_value_is_a_placeholder_target() {
    let text = r#"{"info": {"name": "p"}, "item": [
        {"name": "a", "request": {"url": "{{host}}/a/{{orderNo}}"}},
        {"name": "b", "request": {"url": "{{host}}/b"}}]}"#;
    std::env::set_var("orderNo", "7");
    let out = convert(
        Source {
            file: "p.json",
            text,
        },
        &Options::default(),
    )
    .unwrap();
    let plan = assert_loads(&out.yaml);
    assert_eq!(plan.target.authority, "127.0.0.1:8080");
    assert!(
        out.yaml.contains("placeholder; run with --url"),
        "{}",
        out.yaml
    );
    assert_eq!(
        describe(&plan),
        ["p | a GET /a/7 |  |  |  | ", "p | b GET /b |  |  |  | "]
    );
    assert_eq!(
        out.report.summary(),
        "translated 2 of 5 requests; 3 approximations; 0 left out"
    );
}
