//! Hostile and broken documents: each is refused with a located error, or the
//! operation at fault is left out with why, quickly and within bounded memory.

use std::time::{Duration, Instant};

use super::tests::{loaded, run};
use super::*;
use crate::MAX_DEPTH;

pub(super) fn err(text: &str) -> String {
    convert(
        Source {
            file: "h.yaml",
            text,
        },
        &Options::default(),
    )
    .map(|c| c.yaml)
    .expect_err("refused")
    .to_string()
}

/// A document with `paths` and `components` spliced in.
pub(super) fn doc(paths: &str, components: &str) -> String {
    format!(
        "openapi: 3.1.0\ninfo: {{title: h, version: '1'}}\nservers: [{{url: 'http://127.0.0.1:1'}}]\npaths:\n{paths}components:\n{components}"
    )
}

pub(super) const OK_OP: &str =
    "  /ok:\n    get:\n      operationId: ok\n      responses: {'200': {description: ok}}\n";

pub(super) fn post_with_schema(schema: &str) -> String {
    format!(
        "  /x:\n    post:\n      operationId: x\n      requestBody:\n        required: true\n        content:\n          application/json:\n            schema: {schema}\n      responses: {{'201': {{description: ok}}}}\n"
    )
}

#[test]
fn an_alias_bomb_is_refused_cheaply() {
    let mut text = String::from(
        "openapi: 3.0.0\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
    );
    for i in 1..10 {
        let prev = format!("*a{}", i - 1);
        text.push_str(&format!("a{i}: &a{i} [{}]\n", vec![prev; 10].join(", ")));
    }
    let start = Instant::now();
    let e = err(&text);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert!(
        e.starts_with("h.yaml:6:")
            && e.contains("YAML aliases expanding to more events than (limit 100000)")
            && e.ends_with("refused"),
        "{e}"
    );
    // Anchors as documents use them (a shared response) still read.
    let shared = doc(
        "  /a:\n    get:\n      responses: &ok {'200': {description: ok}}\n  /b:\n    get:\n      responses: *ok\n",
        "  {}\n",
    );
    let c = run("h.yaml", &shared, &Options::default());
    assert_eq!(loaded(&c)["requests"][1]["expect"]["status"], 200);
}

#[test]
fn deep_nesting_is_refused_with_its_place() {
    let n = 100_000;
    let yaml = format!("openapi: 3.0.0\nx: {}{}\n", "[".repeat(n), "]".repeat(n));
    let e = err(&yaml);
    assert!(
        e.starts_with("h.yaml:2:")
            && e.contains(&format!("nesting deeper than (limit {MAX_DEPTH})")),
        "{e}"
    );
    let block: String = (0..n)
        .map(|i| format!("{}- \n", " ".repeat(i % 200)))
        .collect();
    assert!(err(&format!("openapi: 3.0.0\nx:\n{block}")).contains("refused"));
    let json = format!(
        "{{\"openapi\": \"3.0.0\", \"x\": {}{}}}",
        "{\"a\":".repeat(n),
        "1".to_string() + &"}".repeat(n)
    );
    let e = err(&json);
    assert!(
        e.starts_with("h.yaml:1:") && e.contains("nesting deeper than"),
        "{e}"
    );
    // Deeper than the limit but within serde_json's own: the scanner refuses it.
    let json = format!(
        "{{\"openapi\": \"3.0.0\", \"x\": {}{}}}",
        "[".repeat(100),
        "]".repeat(100)
    );
    let e = err(&json);
    assert!(
        e.contains(&format!("nesting deeper than (limit {MAX_DEPTH})")),
        "{e}"
    );
}

#[test]
fn syntax_errors_name_file_line_and_column() {
    let e = err("openapi: 3.0.0\npaths:\n  /a: [unclosed\n");
    assert!(
        e.starts_with("h.yaml:") && e.contains("not valid YAML"),
        "{e}"
    );
    let e = err("openapi: 3.0.0\ninfo:\n  title: a\n title: b\n");
    assert!(e.contains("h.yaml:4:") || e.contains("h.yaml:3:"), "{e}");
    let e = err("{\n  \"openapi\": \"3.0.0\",\n  \"paths\": {,}\n}");
    assert_eq!(e, "h.yaml:3:13: not valid JSON: key must be a string");
    assert!(err("").contains("not an OpenAPI document"), "{}", err(""));
}

#[test]
fn only_openapi_3_is_read() {
    let e = err("swagger: '2.0'\ninfo: {title: t, version: '1'}\npaths: {}\n");
    assert_eq!(
        e,
        "h.yaml:1:1: a Swagger 2.0 document: only OpenAPI 3.0 and 3.1 are read (convert it to OpenAPI 3 first, e.g. with swagger2openapi)"
    );
    let e = err("{\"swagger\": \"2.0\"}");
    assert!(e.starts_with("h.yaml:1:2: a Swagger 2.0 document"), "{e}");
    assert!(err("openapi: 4.0.0\n").contains("`openapi: 4.0.0`: only OpenAPI 3.0 and 3.1 are read"));
    assert!(err("info: {title: t}\n").contains("no `openapi:` version"));
    assert!(err("- a list\n").contains("not an OpenAPI document"));
    // `openapi: 3.0` unquoted is a number; still 3.0.
    let text = doc(OK_OP, "  {}\n").replace("openapi: 3.1.0", "openapi: 3.0");
    assert!(convert(
        Source {
            file: "h.yaml",
            text: &text
        },
        &Options::default()
    )
    .is_ok());
}

#[test]
fn a_ref_cycle_leaves_its_operation_out_and_alone_is_an_error() {
    let components = "  schemas:\n    A: {$ref: '#/components/schemas/B'}\n    B: {$ref: '#/components/schemas/A'}\n";
    let cyclic = post_with_schema("{$ref: '#/components/schemas/A'}");
    let c = run(
        "h.yaml",
        &doc(&format!("{cyclic}{OK_OP}"), components),
        &Options::default(),
    );
    loaded(&c);
    assert_eq!(
        c.report.summary(),
        "translated 1 of 2 operations; 0 approximations; 1 left out"
    );
    let item = &c.report.items[0];
    let Outcome::LeftOut(why) = &item.outcome else {
        panic!("{item:?}")
    };
    assert!(
        why.contains("cycle")
            && why.contains(
                "#/components/schemas/A → #/components/schemas/B → #/components/schemas/A"
            ),
        "{why}"
    );
    assert!(
        c.strict("h.yaml").is_err(),
        "--strict refuses a left-out operation"
    );
    let e = err(&doc(&cyclic, components));
    assert!(
        e.starts_with("h.yaml:")
            && e.contains("no operation could be converted")
            && e.contains("cycle"),
        "{e}"
    );
}

#[test]
fn a_schema_that_requires_itself_is_left_out_and_a_tree_is_cut() {
    let components = "  schemas:\n    Node:\n      type: object\n      required: [next]\n      properties:\n        next: {$ref: '#/components/schemas/Node'}\n    Tree:\n      type: object\n      required: [kids]\n      properties:\n        kids: {type: array, items: {$ref: '#/components/schemas/Tree'}}\n        up: {$ref: '#/components/schemas/Tree'}\n        either:\n          oneOf: [{$ref: '#/components/schemas/Tree'}, {type: string}]\n";
    let paths = format!(
        "{}{}",
        post_with_schema("{$ref: '#/components/schemas/Node'}"),
        post_with_schema("{$ref: '#/components/schemas/Tree'}")
            .replace("/x", "/t")
            .replace("operationId: x", "operationId: t")
    );
    let c = run("h.yaml", &doc(&paths, components), &Options::default());
    let s = loaded(&c);
    let Outcome::LeftOut(why) = &c.report.items[0].outcome else {
        panic!("{:?}", c.report)
    };
    assert!(
        why.contains("`#/components/schemas/Node` requires itself"),
        "{why}"
    );
    // The tree: kids empty, the optional `up` omitted, `oneOf` falls to its base case.
    assert_eq!(
        s["requests"][0]["json"],
        serde_json::json!({"kids": [], "either": "string"})
    );
}

#[test]
fn document_text_cannot_become_a_template_or_a_header_line() {
    let paths = r#"  /a/{{id}}/{x}:
    get:
      operationId: '{{ env.HOME }}'
      parameters:
        - name: x
          in: path
          required: true
          schema: {type: string}
          example: 'a/{{b}}'
        - name: X-Note
          in: header
          schema: {type: string}
          example: "a\r\nX-Evil: 1"
        - name: 'bad header'
          in: header
          required: true
          schema: {type: string}
        - name: q
          in: query
          required: true
          content:
            application/json:
              schema:
                type: object
                properties:
                  k: {type: string, example: '{{'}
      responses: {'200': {description: ok}}
"#;
    let c = run("h.yaml", &doc(paths, "  {}\n"), &Options::default());
    let s = loaded(&c);
    let r = &s["requests"][0];
    // Names are not templates: kept as written.
    assert_eq!(r["name"], "{{ env.HOME }}");
    assert_eq!(
        r["path"],
        "/a/%7B%7Bid%7D%7D/a%2F%7B%7Bb%7D%7D?q=%7B%22k%22%3A%22%7B%7B%22%7D"
    );
    assert_eq!(r["headers"], serde_json::json!({"X-Note": "a  X-Evil: 1"}));
}

#[test]
fn remote_and_missing_refs_are_reported_never_fetched() {
    let paths = "  /a:\n    $ref: 'https://example.com/paths.yaml#/a'\n  /b:\n    post:\n      operationId: b\n      requestBody: {$ref: 'bodies.yaml#/B'}\n      parameters:\n        - {name: q, in: query, schema: {$ref: 'other.yaml#/Q'}, example: 1}\n        - {$ref: '#/components/parameters/Missing'}\n      responses: {'200': {description: ok}}\n  /c:\n    post:\n      operationId: c\n      requestBody: {content: {application/json: {schema: {type: object, properties: {r: {$ref: 'r.yaml#/R'}, s: {type: string}}}}}}\n      responses: {'200': {description: ok}}\n";
    let c = run(
        "h.yaml",
        &doc(paths, "  parameters: {}\n"),
        &Options::default(),
    );
    loaded(&c);
    let report = c.report.to_string();
    assert_eq!(
        c.report.summary(),
        "translated 0 of 3 operations; 1 approximation; 2 left out",
        "{report}"
    );
    assert!(
        report.contains("h.yaml:5:3  left out      /a: "),
        "{report}"
    );
    assert!(report.contains("/a: `$ref: https://example.com/paths.yaml#/a` points into another document, which is not fetched"), "{report}");
    assert!(report.contains("POST /b: `$ref: #/components/parameters/Missing` names nothing in the document (no `Missing`)"), "{report}");
    assert!(report.contains("POST /c: application/json body generated from the schema; optional part of the body left out: `$ref: r.yaml#/R` points into another document"), "{report}");
}

#[test]
fn every_truncation_of_the_petstore_is_an_error_or_a_loadable_scenario() {
    super::tests::set_env();
    for (file, text) in [
        ("p.yaml", include_str!("../../tests/openapi/petstore.yaml")),
        ("p.json", include_str!("../../tests/openapi/petstore.json")),
    ] {
        let mut converted = 0;
        for end in (0..text.len())
            .step_by(41)
            .filter(|e| text.is_char_boundary(*e))
        {
            let source = Source {
                file,
                text: &text[..end],
            };
            // Never a panic; an error names the file and a line.
            match convert(source, &Options::default()) {
                Ok(c) => {
                    converted += 1;
                    crate::testing::assert_loads(&c.yaml);
                }
                Err(e) => assert!(e.to_string().starts_with(&format!("{file}:")), "{e}"),
            }
        }
        // YAML is readable cut anywhere after its first operations; JSON never is.
        assert!(
            if file == "p.yaml" {
                converted > 20
            } else {
                converted == 0
            },
            "{file}: {converted}"
        );
    }
}
