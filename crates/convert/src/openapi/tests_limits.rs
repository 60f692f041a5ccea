//! Documents at and past the bounds: sizes, counts, costly schemas and large files,
//! refused or cut quickly.

use std::time::{Duration, Instant};

use super::node::MAX_NODES;
use super::tests::{loaded, run};
use super::tests_hostile::{doc, err, post_with_schema, OK_OP};
use super::*;
use crate::{MAX_INPUT, MAX_ITEMS};

#[test]
fn too_many_values_or_bytes_are_refused() {
    let many = format!(
        "{{\"openapi\": \"3.0.0\", \"x\": [{}1]}}",
        "1,".repeat(MAX_NODES)
    );
    assert!(
        err(&many).contains("more JSON values than (limit 2000000)"),
        "{}",
        err(&many)
    );
    let many = format!("openapi: 3.0.0\nx: [{}1]\n", "1,".repeat(MAX_NODES));
    assert!(
        err(&many).contains("more YAML values than"),
        "{}",
        err(&many)
    );
    let big = format!("openapi: 3.0.0\nx: '{}'\n", "a".repeat(MAX_INPUT));
    assert!(matches!(
        convert(
            Source {
                file: "h.yaml",
                text: &big
            },
            &Options::default()
        ),
        Err(ConvertError::TooLarge { .. })
    ));
}

#[test]
fn ten_thousand_operations_are_refused_unless_filtered() {
    let mut paths = String::new();
    for i in 0..10_000 {
        paths.push_str(&format!(
            "  /p{i}:\n    get:\n      responses: {{'200': {{description: ok}}}}\n"
        ));
    }
    let text = doc(&paths, "  {}\n");
    let e = err(&text);
    // The 5,001st operation is the one refused, where it is.
    assert!(
        e.starts_with("h.yaml:15006:5: more operations than (limit 5000)"),
        "{e}"
    );
    let options = Options {
        operations: vec!["GET /p9999".into()],
        server: None,
    };
    let c = convert(
        Source {
            file: "h.yaml",
            text: &text,
        },
        &options,
    )
    .unwrap();
    assert_eq!(
        c.report.summary(),
        "translated 1 of 1 operations; 0 approximations; 0 left out"
    );
    loaded(&c);
}

#[test]
fn generated_bodies_are_bounded() {
    // Ten required properties of ten required properties… ten levels deep: 10^10
    // leaves if nothing stopped it.
    let mut components = String::from("  schemas:\n");
    for level in 0..10 {
        let props: String = (0..10)
            .map(|p| format!("p{p}: {{$ref: '#/components/schemas/L{}'}}, ", level + 1))
            .collect();
        let required: Vec<String> = (0..10).map(|p| format!("p{p}")).collect();
        components.push_str(&format!(
            "    L{level}: {{type: object, required: [{}], properties: {{{props}}}}}\n",
            required.join(", ")
        ));
    }
    components.push_str("    L10: {type: string}\n");
    // The same, optional: the body is cut under the bound and says so.
    let optional = components
        .replace("required: [p0, p1, p2, p3, p4, p5, p6, p7, p8, p9], ", "")
        .replace("L", "O");
    let paths = format!(
        "{}{}",
        post_with_schema("{$ref: '#/components/schemas/L0'}"),
        post_with_schema("{$ref: '#/components/schemas/O0'}")
            .replace("/x", "/o")
            .replace("operationId: x", "operationId: o")
    );
    let start = Instant::now();
    let c = run(
        "h.yaml",
        &doc(
            &paths,
            &format!(
                "{components}{}",
                optional.trim_start_matches("  schemas:\n")
            ),
        ),
        &Options::default(),
    );
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    let s = loaded(&c);
    let Outcome::LeftOut(why) = &c.report.items[0].outcome else {
        panic!("{:?}", c.report)
    };
    assert!(why.contains("larger than 64 KiB"), "{why}");
    let Outcome::Approximated(note) = &c.report.items[1].outcome else {
        panic!("{:?}", c.report)
    };
    assert!(
        note.contains("optional properties left out to keep the body under 64 KiB"),
        "{note}"
    );
    let body = serde_json::to_string(&s["requests"][0]["json"]).unwrap();
    assert!(
        body.len() < 64 << 10 && body.len() > 16 << 10,
        "{}",
        body.len()
    );
    // A huge example is refused, not copied.
    let example = format!("{{type: string, example: '{}'}}", "e".repeat(100_000));
    let c = run(
        "h.yaml",
        &doc(&format!("{}{OK_OP}", post_with_schema(&example)), "  {}\n"),
        &Options::default(),
    );
    let Outcome::LeftOut(why) = &c.report.items[0].outcome else {
        panic!("{:?}", c.report)
    };
    assert!(why.contains("larger than 64 KiB"), "{why}");
}

#[test]
fn locating_thousands_of_operations_deep_in_a_large_minified_file_is_fast() {
    // 30 MB on line 1 before 5,000 operations: 4,999 left out (two locations each)
    // and one kept.
    let ops: Vec<String> = (1..MAX_ITEMS)
        .map(|i| format!("\"/p{i}/{{x}}\":{{\"get\":{{\"parameters\":[{{\"$ref\":\"other.json#/x\"}}],\"responses\":{{}}}}}}"))
        .collect();
    let text = format!(
        "{{\"openapi\":\"3.0.0\",\"x-pad\":\"{}\",\"servers\":[{{\"url\":\"http://h\"}}],\"paths\":{{{},\"/ok\":{{\"get\":{{\"responses\":{{}}}}}}}}}}",
        "p".repeat(30 << 20),
        ops.join(",")
    );
    assert!(text.len() < MAX_INPUT);
    let options = Options {
        operations: vec!["GET /p*".into()],
        server: None,
    };
    let start = Instant::now();
    let e = convert(
        Source {
            file: "big.json",
            text: &text,
        },
        &options,
    )
    .unwrap_err()
    .to_string();
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    assert!(
        e.starts_with("big.json:1:31457") && e.contains("no operation could be converted"),
        "{}",
        &e[..200.min(e.len())]
    );
    let c = convert(
        Source {
            file: "big.json",
            text: &text,
        },
        &Options::default(),
    )
    .unwrap();
    assert_eq!(
        c.report.summary(),
        "translated 1 of 5000 operations; 0 approximations; 4999 left out"
    );
    let last = &c.report.items[MAX_ITEMS - 2];
    assert_eq!(last.line, 1);
    assert!(last.column > 30 << 20, "{last:?}");
}

#[test]
fn huge_mappings_and_costly_schemas_stay_fast() {
    // A schema of 50,000 keys, generated 4,096 times (an array's `minItems`): every
    // lookup in it is indexed.
    let keys: String = (0..50_000).map(|i| format!("x{i}: 1, ")).collect();
    let components = format!("  schemas:\n    Big: {{{keys}type: integer}}\n");
    let schema = "{type: array, minItems: 5000, items: {$ref: '#/components/schemas/Big'}}";
    let start = Instant::now();
    let c = run(
        "h.yaml",
        &doc(&post_with_schema(schema), &components),
        &Options::default(),
    );
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    let s = loaded(&c);
    assert_eq!(
        s["requests"][0]["json"].as_array().map(Vec::len),
        Some(4096)
    );

    // Operations whose values each take almost the most steps one may (890 items,
    // each trying 100 recursive alternatives before its base case): the document's
    // total is bounded too, and the operations past it are left out saying so.
    let alternatives = vec!["{$ref: '#/components/schemas/R'}"; 100].join(", ");
    let components = format!("  schemas:\n    R: {{oneOf: [{alternatives}, {{type: integer}}]}}\n");
    let paths: String = (0..300)
        .map(|i| {
            post_with_schema(
                "{type: array, minItems: 890, items: {$ref: '#/components/schemas/R'}}",
            )
            .replace("/x", &format!("/x{i}"))
            .replace("operationId: x", &format!("operationId: x{i}"))
        })
        .collect();
    let start = Instant::now();
    let c = run("h.yaml", &doc(&paths, &components), &Options::default());
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "{:?}",
        start.elapsed()
    );
    let last = c.report.items.last().unwrap();
    let Outcome::LeftOut(why) = &last.outcome else {
        panic!("{last:?}")
    };
    assert!(why.contains("steps in all"), "{why}");
}
