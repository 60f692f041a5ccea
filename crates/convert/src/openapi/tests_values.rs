//! What each kind of schema, parameter style, body type, status and credential
//! becomes, on a small OpenAPI 3.1 document.

use serde_json::json;

use super::tests::{loaded, run};
use super::*;

const DOC: &str = r#"
openapi: 3.1.0
info: {title: values, version: "1"}
servers: [{url: "http://127.0.0.1:1/api/"}]
paths:
  /things/{id}/{tags}/{mx}:
    post:
      operationId: things
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer, enum: [7, 8]}}
        - {name: tags, in: path, required: true, style: label, schema: {type: array, items: {type: string}}, example: [a, b]}
        - {name: mx, in: path, required: true, style: matrix, schema: {type: string, const: m}}
        - {name: ids, in: query, required: true, explode: false, schema: {type: array, minItems: 2, items: {type: integer, minimum: 3}}}
        - {name: filter, in: query, style: deepObject, schema: {type: object}, example: {k: v w}}
        - {name: pipes, in: query, style: pipeDelimited, explode: false, example: [x, y], schema: {type: array}}
        - {name: page, in: query, schema: {type: integer, default: 1}}
        - {name: X-List, in: header, required: true, schema: {type: array, items: {type: string, examples: [h1]}}}
        - {name: Accept, in: header, required: true, schema: {type: string}}
      requestBody:
        content:
          application/merge-patch+json:
            schema:
              type: object
              required: [kind, size, tags]
              properties:
                kind: {type: [string, "null"], examples: [big]}
                size: {type: number, exclusiveMinimum: 0, maximum: 10}
                tags: {type: array, minItems: 2, items: {type: string, format: date}}
                secret: {type: string, writeOnly: true}
                id: {$ref: '#/components/schemas/Id'}
                meta: {type: object, additionalProperties: {type: integer}}
                choice: {anyOf: [{type: boolean}, {type: string}]}
                maybe: {type: "null"}
      responses:
        "201": {description: created}
        2XX: {description: fine}
  /text:
    put:
      operationId: text
      requestBody:
        content:
          text/plain:
            example: "hello {{ world }}"
      responses:
        default: {description: whatever}
  /xml:
    post:
      operationId: xml
      servers: [{url: "http://elsewhere"}]
      requestBody:
        content:
          application/xml:
            schema: {type: object, properties: {a: {type: integer}}}
      responses:
        "302": {description: moved}
  /jsontext:
    post:
      operationId: jsontext
      requestBody:
        content:
          application/json:
            example: '{"a": [1, "{{x}}"]}'
      responses:
        "200": {description: ok}
  /any:
    post:
      operationId: any
      parameters:
        - {name: v, in: path, required: true, schema: {type: string}}
      requestBody:
        content:
          "*/*":
            schema: {type: object, properties: {a: {type: boolean}}}
      responses:
        "200": {description: ok}
components:
  schemas:
    Id: {type: string, format: uuid, readOnly: true}
"#;

#[test]
fn schemas_parameters_and_bodies_take_their_values_and_styles() {
    let c = run("v.yaml", DOC, &Options::default());
    let s = loaded(&c);
    assert_eq!(s["target"], "http://127.0.0.1:1/api");
    let things = &s["requests"][0];
    // enum[0], label and matrix styles; ids: minItems of the minimum, not exploded;
    // deepObject; pipeDelimited; `page` has only a default: not sent.
    assert_eq!(
        things["path"],
        "/things/7/.a,b/;mx=m?ids=3,3&filter%5Bk%5D=v%20w&pipes=x|y"
    );
    // A header array is comma-joined; `Accept` as a parameter is ignored (OpenAPI).
    assert_eq!(
        things["headers"],
        json!({"X-List": "h1", "Content-Type": "application/merge-patch+json"})
    );
    assert_eq!(
        things["json"],
        json!({
            "kind": "big",
            "size": 5.0,
            "tags": ["{{ now_format(\"%Y-%m-%d\") }}", "{{ now_format(\"%Y-%m-%d\") }}"],
            "secret": "string",
            "meta": {"key": 1},
            "choice": true,
            "maybe": null
        })
    );
    assert_eq!(things["expect"], json!({"status": "2xx"}));

    let text = &s["requests"][1];
    assert_eq!(text["body"], "hello {{ '{{' }} world }}");
    assert_eq!(text["headers"], json!({"Content-Type": "text/plain"}));
    assert_eq!(
        text.get("expect"),
        None,
        "`default` alone keeps the default check"
    );

    let xml = &s["requests"][2];
    assert_eq!(xml["body"], "{\"a\":1}");
    assert_eq!(
        xml.get("expect"),
        None,
        "a redirect is followed: no 3xx to expect"
    );

    assert_eq!(
        s["requests"][3]["json"],
        json!({"a": [1, "{{ '{{' }}x}}"]}),
        "a JSON example written as text is sent as JSON"
    );
    let any = &s["requests"][4];
    assert_eq!(any["path"], "/any");
    assert_eq!(any["json"], json!({"a": true}));
    assert_eq!(any.get("headers"), None);

    let report = c.report.to_string();
    for line in [
        "POST /xml: application/xml body generated from the schema; application/xml body: the value is sent as JSON text (headroom does not write application/xml); its own `servers` are not used",
        "PUT /text\n",
        "POST /any: path parameter `v` generated from its schema; */* body generated",
    ] {
        assert!(report.contains(line), "{line}\n{report}");
    }
}

#[test]
fn credentials_of_every_kind_and_broken_ones() {
    let doc = |security: &str, scheme: &str| {
        format!(
            "openapi: 3.0.0\ninfo: {{title: s, version: '1'}}\nservers: [{{url: 'http://127.0.0.1:1'}}]\npaths:\n  /a:\n    get:\n      security: [{security}]\n      responses: {{'200': {{description: ok}}}}\n  /b:\n    get:\n      security: []\n      responses: {{'200': {{description: ok}}}}\ncomponents:\n  securitySchemes:\n    one: {scheme}\n"
        )
    };
    let first = |security: &str, scheme: &str| {
        let c = run("s.yaml", &doc(security, scheme), &Options::default());
        std::env::set_var("ONE", "x");
        let s = loaded(&c);
        (
            s["requests"][0].get("headers").cloned(),
            c.report.items[0].outcome.clone(),
        )
    };
    let (headers, outcome) = first("{one: []}", "{type: http, scheme: Digest}");
    assert_eq!(
        headers,
        Some(json!({"Authorization": "Digest {{ env.ONE }}"}))
    );
    assert!(
        matches!(outcome, Outcome::Approximated(n) if n.contains("HTTP `digest` authentication is not computed"))
    );
    let (headers, outcome) = first("{one: []}", "{type: mutualTLS}");
    assert_eq!(headers, None);
    assert!(matches!(outcome, Outcome::Approximated(n) if n.contains("client: {cert, key}")));
    // An empty first requirement: credentials are optional, none sent.
    let (headers, outcome) = first("{}, {one: []}", "{type: http, scheme: bearer}");
    assert_eq!((headers, outcome), (None, Outcome::Translated));
    let c = run(
        "s.yaml",
        &doc("{two: []}", "{type: http, scheme: bearer}"),
        &Options::default(),
    );
    let Outcome::LeftOut(why) = &c.report.items[0].outcome else {
        panic!("{:?}", c.report)
    };
    assert!(
        why.contains("security scheme `two` is not in components.securitySchemes (at 7:19)"),
        "{why}"
    );
}

#[test]
fn server_variables_need_defaults() {
    let text = "openapi: 3.0.0\ninfo: {title: s, version: '1'}\nservers:\n  - url: 'https://{region}.example.com'\n    variables: {region: {enum: [eu]}}\npaths:\n  /a:\n    get:\n      responses: {'200': {description: ok}}\n";
    let e = convert(
        Source {
            file: "s.yaml",
            text,
        },
        &Options::default(),
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "s.yaml:4:5: server variable `region` has no default: give the target with --server URL"
    );
}
