//! A realistic `.http` file, and hostile ones.

use std::collections::BTreeMap;

use super::{convert, Options, MAX_INCLUDE};
use crate::postman::tests::describe;
use crate::testing::assert_loads;
use crate::{ConvertError, Outcome, Source, MAX_ITEMS};

fn dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/http")
}

#[test]
fn a_realistic_file_becomes_one_flow_with_captures() {
    let text = std::fs::read_to_string(dir().join("shop.http")).unwrap();
    let options = Options {
        base_dir: Some(dir()),
        env_vars: BTreeMap::from([("password".to_string(), "pw".to_string())]),
    };
    let out = convert(
        Source {
            file: "shop.http",
            text: &text,
        },
        &options,
    )
    .unwrap();
    let plan = assert_loads(&out.yaml);
    assert_eq!(plan.target.authority, "127.0.0.1:8080");
    let lines = describe(&plan);
    let expected = [
        r#"shop | login POST /api/login | Content-Type=application/json | {"id":{{ uuid() }},"password":"pw","username":"alice"} | login_X_Trace=header:X-Trace login_token=$.token session=$.session | "#,
        "shop | List orders, paged GET /api/orders?limit=20&state=open | Authorization=Bearer {{ login_token }} X-Session={{ session }} |  |  | ",
        "shop | POST /api/orders POST /api/orders | X-Trace={{ login_X_Trace }} content-type=application/x-www-form-urlencoded | item=sku%20{{ rand_int(1, 99) }}&note=a%26b |  | ",
        r#"shop | PUT /api/orders/1 PUT /api/orders/1 | Content-Type=application/json | {"literal":"{{not a var}}","state":"closed"} |  | "#,
    ];
    for (got, want) in lines.iter().zip(expected) {
        assert!(got.starts_with(want), "{got}\n{want}\n{}", out.yaml);
    }
    assert_eq!(lines.len(), 4);
    assert!(out.yaml.contains("redirects: 0"), "{}", out.yaml);
    let report = out.report.to_string();
    assert!(
        report.contains("shop.http:12:59  left out      client.test"),
        "{report}"
    );
    assert_eq!(
        out.report.summary(),
        "translated 5 of 6 requests; 0 approximations; 1 left out",
        "{report}"
    );
}

fn run(text: &str, base: Option<std::path::PathBuf>) -> Result<crate::Converted, ConvertError> {
    let options = Options {
        base_dir: base,
        env_vars: BTreeMap::new(),
    };
    convert(
        Source {
            file: "h.http",
            text,
        },
        &options,
    )
}

#[test]
fn ten_thousand_requests_are_refused() {
    let text = "GET http://127.0.0.1:9/x\n\n###\n".repeat(10_000);
    match run(&text, None).unwrap_err() {
        ConvertError::Limit { line, limit, .. } => {
            assert_eq!(limit, MAX_ITEMS);
            assert_eq!(line, MAX_ITEMS * 3 + 1);
        }
        e => panic!("{e}"),
    }
}

#[test]
fn a_one_mib_line_and_undefined_variables() {
    let long = "a".repeat(1 << 20);
    let text = format!("POST http://127.0.0.1:9/x?t={{{{apiToken}}}}\n\n{long}\n");
    std::env::set_var("apiToken", "t");
    let out = run(&text, None).unwrap();
    let plan = assert_loads(&out.yaml);
    assert!(describe(&plan)[0].contains(&long));
    assert!(
        out.yaml.contains("{{ env.apiToken }}"),
        "{}",
        &out.yaml[..300]
    );
    let item = &out.report.items[1];
    assert_eq!(item.construct, "{{apiToken}}");
    assert!(matches!(item.outcome, Outcome::Approximated(_)));
}

#[test]
fn includes_outside_the_directory_or_too_large_are_refused() {
    let tmp = std::env::temp_dir().join(format!("headroom-http-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(tmp.join("big.json"), vec![b'x'; MAX_INCLUDE as usize + 1]).unwrap();
    for (path, why) in [
        ("/etc/passwd", "refused"),
        ("../../x", "refused"),
        ("./big.json", "larger than"),
    ] {
        let text = format!("POST http://127.0.0.1:9/x\n\n< {path}\n");
        let out = run(&text, Some(tmp.clone())).unwrap();
        assert_loads(&out.yaml);
        assert!(!out.yaml.contains("root:"), "{}", out.yaml);
        let item = &out.report.items[1];
        assert!(
            matches!(&item.outcome, Outcome::LeftOut(w) if w.contains(why)),
            "{path}: {item:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
    let e = run("just text\n", None).unwrap_err().to_string();
    assert!(e.contains("no absolute") || e.contains("no request"), "{e}");
}
