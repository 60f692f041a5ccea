//! Hostile collections: deep, wide, huge, not collections at all, broken scripts.

use super::tests::describe;
use super::{convert, Options};
use crate::testing::assert_loads;
use crate::{ConvertError, Outcome, Source, MAX_ITEMS};

fn run(text: &str) -> Result<crate::Converted, ConvertError> {
    convert(
        Source {
            file: "h.json",
            text,
        },
        &Options::default(),
    )
}

fn request(i: usize) -> String {
    format!(r#"{{"name": "r{i}", "request": "http://127.0.0.1:9/r/{i}"}}"#)
}

#[test]
fn folders_nested_100000_deep_are_a_limit_not_a_crash() {
    let depth = 100_000;
    let mut text = String::from(r#"{"info": {"name": "deep"}, "item": ["#);
    for _ in 0..depth {
        text.push_str(r#"{"name": "f", "item": ["#);
    }
    text.push_str(&request(0));
    for _ in 0..depth {
        text.push_str("]}");
    }
    text.push_str("]}");
    let e = run(&text).unwrap_err();
    assert!(matches!(e, ConvertError::Limit { line: 1, .. }), "{e}");
    assert!(e.to_string().starts_with("h.json:1:"), "{e}");
    assert!(e.to_string().contains("nested deeper than"), "{e}");

    // Within serde's limit but deeper than MAX_DEPTH folders: refused by the walk.
    let depth = 62;
    let mut text = String::from(r#"{"info": {"name": "deep"}, "item": ["#);
    for _ in 0..depth {
        text.push_str(r#"{"name": "f", "item": ["#);
    }
    text.push_str(&request(0));
    for _ in 0..depth {
        text.push_str("]}");
    }
    text.push_str("]}");
    match run(&text) {
        Err(ConvertError::Limit { what, .. }) => assert!(what.contains("nested"), "{what}"),
        Ok(out) => {
            // 62 folders are within both limits: then it converts.
            assert_loads(&out.yaml);
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn ten_thousand_requests_are_refused_at_the_first_past_the_limit() {
    let items: Vec<String> = (0..10_000).map(request).collect();
    let text = format!(
        r#"{{"info": {{"name": "wide"}}, "item": [{}]}}"#,
        items.join(",\n")
    );
    let e = run(&text).unwrap_err();
    match e {
        ConvertError::Limit { line, limit, .. } => {
            assert_eq!(limit, MAX_ITEMS);
            // The first request past the limit is on its own line.
            assert_eq!(line, MAX_ITEMS + 1);
        }
        other => panic!("{other}"),
    }
    // At the limit it converts.
    let items: Vec<String> = (0..MAX_ITEMS).map(request).collect();
    let text = format!(
        r#"{{"info": {{"name": "wide"}}, "item": [{}]}}"#,
        items.join(",\n")
    );
    let out = run(&text).unwrap();
    assert_eq!(out.report.items.len(), MAX_ITEMS);
}

#[test]
fn a_huge_string_is_carried_without_harm() {
    // 3 MiB of text whose every `{{` must be escaped: the name is cut, the body
    // (over MAX_TEXT once escaped) left out, and what is written still loads.
    let big = "a{{".repeat(1 << 20);
    let text = format!(
        r#"{{"info": {{"name": "big"}}, "item": [{{"name": "{big}", "request": {{"method": "POST", "url": "http://127.0.0.1:9/x", "body": {{"mode": "raw", "raw": "{big}"}}}}}}]}}"#
    );
    let out = run(&text).unwrap();
    let plan = assert_loads(&out.yaml);
    assert_eq!(plan.names[0], "a{{".repeat(67)[..200].to_string());
    let lines = describe(&plan);
    assert!(lines[0].contains("POST /x |  |  |"), "{}", lines[0]);
    assert!(
        matches!(&out.report.items[1].outcome, Outcome::LeftOut(why) if why.contains("larger than"))
    );
    // A body under the bound keeps its braces as text.
    let body = "{{x".repeat(1000);
    let text = format!(
        r#"{{"info": {{"name": "b"}}, "item": [{{"name": "n", "request": {{"method": "POST", "url": "http://127.0.0.1:9/x", "body": {{"mode": "raw", "raw": "{body}"}}}}}}]}}"#
    );
    let out = run(&text).unwrap();
    let plan = assert_loads(&out.yaml);
    assert!(describe(&plan)[0].contains(&body));
}

#[test]
fn variables_that_explode_are_refused() {
    let mut vars = Vec::new();
    for i in 0..30 {
        let value = format!("{{{{v{n}}}}}", n = i + 1).repeat(4);
        vars.push(format!(r#"{{"key": "v{i}", "value": "{value}"}}"#));
    }
    vars.push(r#"{"key": "v30", "value": "xxxxxxxxxxxxxxxx"}"#.into());
    let text = format!(
        r#"{{"info": {{"name": "boom"}}, "variable": [{}], "item": [{{"name": "r", "request": "http://127.0.0.1:9/{{{{v0}}}}"}}]}}"#,
        vars.join(",")
    );
    let e = run(&text).unwrap_err();
    assert!(
        e.to_string()
            .contains("variables expanding to more bytes than"),
        "{e}"
    );
}

#[test]
fn what_is_not_a_v2_collection_is_refused_clearly() {
    let v1 =
        r#"{"id": "x", "name": "old", "order": [], "requests": [{"id": "1", "url": "http://h/"}]}"#;
    let e = run(v1).unwrap_err().to_string();
    assert!(e.contains("v1 collection") && e.contains("v2.1"), "{e}");
    let e = run("[1, 2]").unwrap_err().to_string();
    assert!(e.contains("not a Postman collection"), "{e}");
    let e = run(r#"{"openapi": "3.0.0"}"#).unwrap_err().to_string();
    assert!(e.contains("not a Postman collection"), "{e}");
    let e = run(r#"{"info": {"name": "empty"}, "item": []}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no request"), "{e}");
}

#[test]
fn invalid_json_names_file_line_and_column() {
    let e = run("{\n  \"info\": {\"name\": \"x\"},\n  \"item\": [,]\n}").unwrap_err();
    match &e {
        ConvertError::Syntax {
            file, line, column, ..
        } => {
            assert_eq!((file.as_str(), *line, *column), ("h.json", 3, 12), "{e}");
        }
        other => panic!("{other}"),
    }
    let env = Source {
        file: "env.json",
        text: "{\"values\": [",
    };
    let text = format!(r#"{{"info": {{"name": "x"}}, "item": [{}]}}"#, request(0));
    let e = convert(
        Source {
            file: "c.json",
            text: &text,
        },
        &Options {
            environment: Some(env),
        },
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("env.json:1:"), "{e}");
}

#[test]
fn broken_and_hostile_scripts_are_reported_not_fatal() {
    let script = |exec: &str| {
        format!(
            r#"{{"info": {{"name": "s"}}, "item": [{{"name": "r", "event": [{{"listen": "test", "script": {{"exec": {exec}}}}}], "request": "http://127.0.0.1:9/"}}]}}"#
        )
    };
    let broken =
        script(r#"["pm.test(\"x\", function () {", "  pm.response.to.have.status(200;", "});"]"#);
    let out = run(&broken).unwrap();
    assert_loads(&out.yaml);
    let item = &out.report.items[1];
    assert!(
        matches!(&item.outcome, Outcome::LeftOut(why) if why.contains("syntax error")),
        "{item:?}"
    );
    assert_eq!(item.line, 1);

    // Nesting the parser would recurse on: refused before parsing, or parsed on the
    // big stack; either way no crash.
    let parens = format!(r#"["{}1{}"]"#, "(".repeat(20_000), ")".repeat(20_000));
    let out = run(&script(&parens)).unwrap();
    assert!(
        matches!(&out.report.items[1].outcome, Outcome::LeftOut(why) if why.contains("brackets")),
        "{}",
        out.report
    );
    let nots = format!(r#"["var x = {}1;"]"#, "!".repeat(60_000));
    let out = run(&script(&nots)).unwrap();
    assert!(matches!(&out.report.items[1].outcome, Outcome::LeftOut(_)));
    let long = format!(r#"["// {}"]"#, "x".repeat(100_000));
    let out = run(&script(&long)).unwrap();
    assert!(
        matches!(&out.report.items[1].outcome, Outcome::LeftOut(why) if why.contains("longer than"))
    );
}
