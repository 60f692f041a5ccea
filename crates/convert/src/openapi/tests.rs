//! The petstore in YAML and JSON, converted and loaded by the scenario compiler, and
//! what each operation became.

use serde_json::{json, Value as Json};

use super::*;
use crate::testing::assert_loads;

const PETSTORE_YAML: &str = include_str!("../../tests/openapi/petstore.yaml");
const PETSTORE_JSON: &str = include_str!("../../tests/openapi/petstore.json");

/// The credentials the petstore reads, set so the scenario compiles (`env.NAME` is
/// read when it loads).
pub(super) fn set_env() {
    for name in ["BEARER_AUTH", "API_KEY", "BASIC_AUTH", "PETSTORE_AUTH"] {
        std::env::set_var(name, "secret");
    }
}

pub(super) fn run(file: &str, text: &str, options: &Options) -> Converted {
    convert(Source { file, text }, options).unwrap_or_else(|e| panic!("{e}"))
}

/// The scenario as JSON, after checking that it loads.
pub(super) fn loaded(converted: &Converted) -> Json {
    set_env();
    assert_loads(&converted.yaml);
    serde_saphyr::from_str(&converted.yaml).unwrap_or_else(|e| panic!("{e}\n{}", converted.yaml))
}

fn request<'a>(scenario: &'a Json, name: &str) -> &'a Json {
    scenario["requests"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["name"] == name))
        .unwrap_or_else(|| panic!("no request {name}: {scenario:#}"))
}

fn check_petstore(file: &str, text: &str) {
    let converted = run(file, text, &Options::default());
    let s = loaded(&converted);
    let yaml = &converted.yaml;
    assert_eq!(s["name"], "Swagger Petstore");
    // The first server, its variables' defaults substituted, its path kept as the
    // target's base path.
    assert_eq!(s["target"], "http://127.0.0.1:8080/v1");
    assert_eq!(s["load"], json!({"rate": 1, "duration": "10s"}));
    assert!(yaml.contains("# Reads the environment variables BEARER_AUTH, API_KEY, BASIC_AUTH, PETSTORE_AUTH when it loads"), "{yaml}");
    assert!(yaml.contains("set it before a real run"), "{yaml}");

    let list = request(&s, "listPets");
    assert_eq!(list["method"], "GET");
    // The required limit at its minimum; the example array exploded and encoded;
    // the optional offset without an example left out.
    assert_eq!(
        list["path"],
        "/pets?limit=1&tags=dog&tags=cat%20%26%20mouse"
    );
    // The path-level header parameter, its `{{` kept as text.
    assert_eq!(list["headers"]["X-Trace-Id"], "trace-{{ '{{' }}1}}");
    assert_eq!(
        list["headers"]["Authorization"],
        "Bearer {{ env.BEARER_AUTH }}"
    );
    assert_eq!(list["expect"], json!({"status": 200}));

    let create = request(&s, "createPet");
    assert_eq!(
        (&create["method"], &create["path"]),
        (&json!("POST"), &json!("/pets"))
    );
    // allOf merged, readOnly `id` left out, examples and formats used, the recursive
    // category cut at its first repetition (children empty, optional parent omitted).
    assert_eq!(
        create["json"],
        json!({
            "name": "doggie",
            "tag": "string",
            "birthday": "{{ now_iso() }}",
            "owner": "user@example.com",
            "category": {"name": "stringxx", "children": []}
        })
    );
    assert_eq!(create["expect"], json!({"status": 201}));

    let search = request(&s, "searchPets");
    assert_eq!(search["json"], json!({"name": "doggie", "limit": 5}));

    let show = request(&s, "showPetById");
    assert_eq!(show["path"], "/pets/{{ uuid() }}");
    assert_eq!(show["expect"], json!({"status": 200}));

    // No operationId: named `METHOD /path`; the operation's own petId (with its
    // example) replaces the path item's; its own security replaces the document's.
    let put = request(&s, "PUT /pets/{petId}");
    assert_eq!(put["path"], "/pets/42");
    assert_eq!(put["headers"], json!({"X-API-Key": "{{ env.API_KEY }}"}));
    assert_eq!(
        put["form"],
        json!({"name": "string", "status": "available"})
    );
    assert_eq!(put["expect"], json!({"status": [200, 204]}));

    let delete = request(&s, "deletePet");
    assert_eq!(
        delete.get("headers"),
        None,
        "security: [] sends no credentials"
    );
    assert_eq!(delete["expect"], json!({"status": "2xx"}));

    let upload = request(&s, "uploadPhoto");
    assert_eq!(
        upload["headers"]["Authorization"],
        "Basic {{ base64(env.BASIC_AUTH) }}"
    );
    assert_eq!(
        upload["multipart"],
        json!({"caption": "on the beach", "file": "string"})
    );

    let category = request(&s, "createCategory");
    assert_eq!(category["headers"]["Cookie"], "session={{ uuid() }}");
    assert_eq!(
        category["headers"]["Authorization"],
        "Bearer {{ env.PETSTORE_AUTH }}"
    );
    assert_eq!(
        category["json"],
        json!({"name": "stringxx", "children": []})
    );

    // The remote $ref is reported where it is and the operation left out.
    assert!(s["requests"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["name"] != "getOrder"));
    let report = converted.report.to_string();
    assert_eq!(
        converted.report.summary(),
        "translated 1 of 9 operations; 7 approximations; 1 left out",
        "{report}"
    );
    let line = report
        .lines()
        .find(|l| l.contains("GET /orders/{orderId}"))
        .unwrap();
    assert!(
        line.contains("left out")
            && line.contains("common.yaml#/components/schemas/OrderId")
            && line.contains("not fetched"),
        "{line}"
    );
    let line = report.lines().find(|l| l.contains("POST /pets:")).unwrap();
    assert!(
        line.contains("approximated") && line.contains("body generated from the schema"),
        "{line}"
    );
    let line = report.lines().find(|l| l.contains("GET /pets:")).unwrap();
    assert!(
        line.contains("query parameter `limit` generated from its schema"),
        "{line}"
    );
    let line = report
        .lines()
        .find(|l| l.contains("POST /pets/{petId}/photo"))
        .unwrap();
    assert!(
        line.contains("multipart file `file` is sent as a text part"),
        "{line}"
    );
    let line = report
        .lines()
        .find(|l| l.contains("POST /pets/search"))
        .unwrap();
    assert!(line.contains("translated"), "{line}");
}

#[test]
fn the_petstore_in_yaml_becomes_one_request_per_operation() {
    check_petstore("petstore.yaml", PETSTORE_YAML);
    let c = run("petstore.yaml", PETSTORE_YAML, &Options::default());
    let report = c.report.to_string();
    // Items point at the operation's key in the YAML (`    get:` of /pets is line 23).
    assert!(
        report.contains("petstore.yaml:23:5  approximated  GET /pets: "),
        "{report}"
    );
}

#[test]
fn the_petstore_in_json_means_the_same() {
    check_petstore("petstore.json", PETSTORE_JSON);
    let yaml = run("a.yaml", PETSTORE_YAML, &Options::default());
    let json = run("a.yaml", PETSTORE_JSON, &Options::default());
    assert_eq!(yaml.yaml, json.yaml);
    let json_lines: Vec<_> = json
        .report
        .items
        .iter()
        .map(|i| (i.line, &i.construct))
        .collect();
    assert!(
        json_lines.iter().all(|(line, _)| *line > 1),
        "JSON items are located: {json_lines:?}"
    );
}

#[test]
fn operations_are_picked_by_id_or_by_method_and_path() {
    let pick = |globs: &[&str]| {
        let options = Options {
            operations: globs.iter().map(|g| g.to_string()).collect(),
            server: None,
        };
        let c = run("p.yaml", PETSTORE_YAML, &options);
        let s = loaded(&c);
        let names: Vec<String> = s["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap().to_string())
            .collect();
        (names, c.report.items.len())
    };
    assert_eq!(pick(&["showPetById"]), (vec!["showPetById".to_string()], 1));
    // `*` crosses `/`: every GET under /pets, and nothing else is counted.
    assert_eq!(
        pick(&["GET /pets*"]),
        (vec!["listPets".to_string(), "showPetById".to_string()], 2)
    );
    assert_eq!(
        pick(&["create*", "delete /pets/{petId}"]),
        (
            vec![
                "createPet".to_string(),
                "deletePet".to_string(),
                "createCategory".to_string()
            ],
            3
        )
    );
    let options = Options {
        operations: vec!["nothing*".into()],
        server: None,
    };
    let e = convert(
        Source {
            file: "p.yaml",
            text: PETSTORE_YAML,
        },
        &options,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("no operation matches --operations nothing*"),
        "{e}"
    );
    let options = Options {
        operations: vec!["[".into()],
        server: None,
    };
    let e = convert(
        Source {
            file: "p.yaml",
            text: PETSTORE_YAML,
        },
        &options,
    )
    .unwrap_err();
    assert!(
        e.to_string().starts_with("p.yaml:1:1: --operations \"[\""),
        "{e}"
    );
}

#[test]
fn the_server_option_replaces_the_documents_and_relative_servers_need_it() {
    let options = Options {
        operations: vec![],
        server: Some("http://127.0.0.1:9/base/".into()),
    };
    let c = run("p.yaml", PETSTORE_YAML, &options);
    assert_eq!(loaded(&c)["target"], "http://127.0.0.1:9/base");

    let relative = "openapi: 3.1.0\ninfo: {title: t, version: '1'}\nservers:\n  - url: /api/v3\npaths:\n  /a:\n    get:\n      responses: {'200': {description: ok}}\n";
    let e = convert(
        Source {
            file: "r.yaml",
            text: relative,
        },
        &Options::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("r.yaml:4:10: ")
            && e.contains("relative")
            && e.contains("--server http://127.0.0.1:8080/api/v3"),
        "{e}"
    );
    let none = relative.replace("servers:\n  - url: /api/v3\n", "");
    let e = convert(
        Source {
            file: "r.yaml",
            text: &none,
        },
        &Options::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("names no server") && e.contains("--server"),
        "{e}"
    );
    let options = Options {
        operations: vec![],
        server: Some("http://127.0.0.1:9/api/v3".into()),
    };
    let c = run("r.yaml", &none, &options);
    let s = loaded(&c);
    assert_eq!(
        (&s["target"], &s["requests"][0]["path"]),
        (&json!("http://127.0.0.1:9/api/v3"), &json!("/a"))
    );
    assert_eq!(s["requests"][0]["name"], "GET /a");
    let options = Options {
        operations: vec![],
        server: Some("/relative".into()),
    };
    assert!(convert(
        Source {
            file: "r.yaml",
            text: &none
        },
        &options
    )
    .is_err());
}

#[test]
fn shared_credentials_go_to_defaults_and_api_keys_to_queries_and_cookies() {
    let doc = r#"
openapi: "3.1.0"
info: {title: keys, version: "1"}
servers: [{url: "http://127.0.0.1:1"}]
security: [{ApiToken: []}]
components:
  securitySchemes:
    ApiToken: {type: apiKey, in: header, name: X-Token}
    qkey: {type: apiKey, in: query, name: api key}
    ckey: {type: apiKey, in: cookie, name: sid}
paths:
  /a:
    get:
      operationId: a
      responses: {"204": {description: ok}}
  /b:
    get:
      operationId: b
      responses: {"200": {description: ok}}
"#;
    let c = run("k.yaml", doc, &Options::default());
    std::env::set_var("API_TOKEN", "t");
    let s = loaded(&c);
    assert_eq!(
        s["defaults"],
        json!({"headers": {"X-Token": "{{ env.API_TOKEN }}"}})
    );
    assert_eq!(s["requests"][0].get("headers"), None);
    assert_eq!(
        c.report.summary(),
        "translated 2 of 2 operations; 0 approximations; 0 left out"
    );

    let both = doc.replace(
        "      operationId: b\n",
        "      operationId: b\n      security: [{qkey: [], ckey: []}]\n",
    );
    let c = run("k.yaml", &both, &Options::default());
    std::env::set_var("QKEY", "a&b");
    std::env::set_var("CKEY", "c");
    let s = loaded(&c);
    assert_eq!(s.get("defaults"), None);
    assert_eq!(
        s["requests"][0]["headers"],
        json!({"X-Token": "{{ env.API_TOKEN }}"})
    );
    assert_eq!(
        s["requests"][1]["path"],
        "/b?api%20key={{ urlencode(env.QKEY) }}"
    );
    assert_eq!(
        s["requests"][1]["headers"],
        json!({"Cookie": "sid={{ urlencode(env.CKEY) }}"})
    );
}
