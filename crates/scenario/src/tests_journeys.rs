//! Journeys in the scenario format (issue 29): bodies, captures, checks, redirects,
//! logic, `once:`, `data:`, `setup:`; what compiles into the plan, and bad or hostile
//! input refused at load with the field named.

use super::compile::from_text;
use super::tests_errors::HEAD;
use super::*;
use headroom_plan::journey::{CaptureFrom, CapturePick, CheckRule};
use headroom_plan::{Item, Step};

fn flow(steps: &str) -> String {
    format!("{HEAD}flows:\n  - name: f\n    steps:\n{steps}")
}

fn error(yaml: &str) -> String {
    match from_text("scenario.yaml", yaml, &Overrides::default()) {
        Ok(_) => panic!("expected an error for:\n{yaml}"),
        Err(e) => e.to_string(),
    }
}

fn steps(plan: &Plan) -> &[Step] {
    match &plan.items[0] {
        Item::Flow(f) => &f.steps,
        Item::Request(_) => panic!("not a flow"),
    }
}

#[test]
fn captures_of_every_source_and_the_object_form() {
    let yaml = flow(
        r##"      - request: {name: page, path: /}
        capture:
          a: "$.id"
          b: "header:Location"
          c: "cookie:sessionid"
          d: "regex:id=(\\d+)"
          e: "css:input[name=csrf]@value"
          f: "css:h1"
          g: status
          h: {from: "css:a@href", pick: random, default: none}
          i: {from: "$.items", pick: all}
      - request: {path: "/x/{{ a }}/{{ h }}"}
"##,
    );
    let plan = super::tests::plan(&yaml);
    let Step::Request { captures, .. } = &steps(&plan)[0] else {
        panic!("a request step")
    };
    let kinds: Vec<(&str, &str)> = captures
        .iter()
        .map(|c| {
            let kind = match &c.from {
                CaptureFrom::Json(_) => "json",
                CaptureFrom::Header(h) => {
                    assert_eq!(h, "location");
                    "header"
                }
                CaptureFrom::Cookie(_) => "cookie",
                CaptureFrom::Regex(_) => "regex",
                CaptureFrom::Css { attr: Some(_), .. } => "css@",
                CaptureFrom::Css { attr: None, .. } => "css",
                CaptureFrom::Status => "status",
            };
            (c.var.as_str(), kind)
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("a", "json"),
            ("b", "header"),
            ("c", "cookie"),
            ("d", "regex"),
            ("e", "css@"),
            ("f", "css"),
            ("g", "status"),
            ("h", "css@"),
            ("i", "json")
        ]
    );
    assert_eq!(captures[7].pick, CapturePick::Random);
    assert_eq!(captures[7].default.as_deref(), Some("none"));
    assert_eq!(captures[8].pick, CapturePick::All);
}

#[test]
fn bad_captures_name_their_field() {
    for (capture, want) in [
        (r#"{x: "css:"}"#, "expected a CSS selector"),
        (r#"{x: "css:a[["}"#, "bad CSS selector"),
        (r#"{x: "css:a@"}"#, "expected an attribute name"),
        (r#"{x: "regex:(unclosed"}"#, "bad regex"),
        (r#"{x: "header:"}"#, "expected a header name"),
        (r#"{x: "cookie:a=b"}"#, "expected a cookie name"),
        (r#"{x: "nope"}"#, "expected a source such as $.id"),
        (
            r#"{x: {from: "$.a", pick: some}}"#,
            "expected first, random or all",
        ),
        (r#"{x: {pick: all}}"#, "expected `from:`"),
        (r#"{x: {from: "$.a", also: 1}}"#, "unknown key"),
        (r#"{data: "$.a"}"#, "expected a variable name"),
    ] {
        let yaml = flow(&format!(
            "      - request: {{path: /}}\n        capture: {capture}\n"
        ));
        let err = error(&yaml);
        assert!(err.starts_with("scenario.yaml:7:"), "{err}");
        assert!(
            err.contains("flows[0].steps[0].capture.") && err.contains(want),
            "{want}: {err}"
        );
    }
    // A regex whose compiled form would be huge, and one too long, are refused at load.
    let huge = format!(
        "      - request: {{path: /}}\n        capture: {{x: \"regex:{}\"}}\n",
        "(a{1000}){1000}".replace('\\', "")
    );
    assert!(error(&flow(&huge)).contains("bad regex"));
    let long = format!(
        "      - request: {{path: /}}\n        capture: {{x: \"regex:{}\"}}\n",
        "a".repeat(5000)
    );
    assert!(error(&flow(&long)).contains("a regex of at most 4096 bytes"));
}

#[test]
fn form_multipart_check_and_redirects_compile() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("doc.bin"), [0u8, 159, 146, 150]).unwrap();
    let yaml = flow(
        r#"      - request:
          name: login
          method: POST
          path: /login
          redirects: 3
          form: {user: "u{{ user() }}", "pass word": "a&b"}
          check: {status: 200, body_contains: "Hello u{{ user() }}", duration: "<500ms", json: {"$.id": 7}}
      - request:
          name: up
          method: POST
          path: /up
          multipart: {title: "t", doc: {file: doc.bin, filename: d.bin, content_type: application/x-bin}}
"#,
    );
    let path = dir.path().join("s.yaml");
    std::fs::write(&path, &yaml).unwrap();
    let plan = from_text(path.to_str().unwrap(), &yaml, &Overrides::default()).unwrap();
    let Step::Request { request: login, .. } = &steps(&plan)[0] else {
        panic!()
    };
    assert_eq!(login.redirects, Some(3));
    let ct = login
        .headers
        .iter()
        .find(|(n, _)| n == "content-type")
        .unwrap();
    assert_eq!(ct.1.as_static(), Some("application/x-www-form-urlencoded"));
    let names: Vec<&str> = login
        .checks
        .iter()
        .map(|c| plan.checks[c.id].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "login.status",
            "login.body_contains",
            "login.json $.id",
            "login.duration"
        ]
    );
    assert!(matches!(login.checks[3].rule, CheckRule::Duration(d) if d.as_millis() == 500));
    let Step::Request { request: up, .. } = &steps(&plan)[1] else {
        panic!()
    };
    let m = up.multipart.as_ref().unwrap();
    let body = m.as_static().unwrap();
    let needle = [0u8, 159, 146, 150];
    assert!(
        body.windows(4).any(|w| w == needle),
        "the file's bytes as they are"
    );
    let text = String::from_utf8_lossy(&body);
    assert!(text.contains("filename=\"d.bin\"\r\nContent-Type: application/x-bin"));
    assert!(text.ends_with(&format!("--{}--\r\n", m.boundary)));
}

#[test]
fn bodies_and_redirects_refuse_what_cannot_be_sent() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.bin");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(journey::MAX_UPLOAD + 1)
        .unwrap();
    let cases = [
        (
            "      - request: {path: /, method: POST, form: {a: b}, body: x}\n",
            "give one body",
        ),
        (
            "      - request: {path: /, method: POST, multipart: {f: {file: big.bin}}}\n",
            "larger than 16 MiB",
        ),
        (
            "      - request: {path: /, method: POST, multipart: {f: {file: missing.bin}}}\n",
            "cannot read",
        ),
        (
            "      - request: {path: /, method: POST, multipart: {f: 3}}\n",
            "expected text or {file: PATH}",
        ),
        (
            "      - request: {path: /, redirects: 1000}\n",
            "at most 100 redirects",
        ),
        (
            "      - request: {path: /, check: {}}\n",
            "expected at least one of",
        ),
        (
            "      - request: {path: /, check: {duration: 500ms}}\n",
            "expected a bound such as <500ms",
        ),
    ];
    for (step, want) in cases {
        let yaml = flow(step);
        let path = dir.path().join("s.yaml");
        std::fs::write(&path, &yaml).unwrap();
        let err = from_text(path.to_str().unwrap(), &yaml, &Overrides::default())
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("flows[0].steps[0]") && err.contains(want),
            "{want}: {err}"
        );
    }
}

#[test]
fn logic_steps_compile_into_blocks_and_check_their_variables() {
    let yaml = flow(
        r#"      - request: {name: a, path: /}
        capture: {n: "$.n"}
      - if: "n > 2 && chance(0.5)"
        request: {name: b, path: /b}
      - repeat: "{{ n }}"
        request: {name: c, path: /c}
      - group:
          name: g
          steps:
            - parallel: [{name: d, path: /d}, {name: e, path: /e}]
"#,
    );
    let plan = super::tests::plan(&yaml);
    let s = steps(&plan);
    assert!(matches!(&s[1], Step::Block(b) if b.when.is_some() && b.repeat.is_none()));
    assert!(matches!(&s[2], Step::Block(b) if b.repeat.is_some()));
    assert!(matches!(&s[3], Step::Block(b) if b.group == Some(0)));
    assert_eq!(plan.groups, ["g"]);
    for (step, want) in [
        (
            "      - if: \"m > 1\"\n        request: {path: /}\n",
            "`m` is not known here",
        ),
        (
            "      - if: \"(((\"\n        request: {path: /}\n",
            "flows[0].steps[0].if",
        ),
        (
            "      - repeat: many\n        request: {path: /}\n",
            "expected a count",
        ),
        (
            "      - group: {name: g, steps: [{ws: {name: s, url: /ws}}]}\n",
            "stream steps run at the top",
        ),
        ("      - parallel: []\n", "expected 1 to 64 requests"),
        (
            "      - request: {path: /}\n        think: 1s\n",
            "`request` and `think` were both given",
        ),
    ] {
        let err = match from_text("scenario.yaml", &flow(step), &Overrides::default()) {
            Ok(_) => panic!("{step}"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(want), "{want}: {err}");
    }
}

#[test]
fn data_setup_and_once_give_users_their_variables() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.csv"), "user,pass\nu1,p1\nu2,p2\nu3,p3\n").unwrap();
    let yaml = "target: http://127.0.0.1:4000
load: {model: users, users: 3, duration: 1s}
data:
  accounts: {file: a.csv, pick: unique}
setup:
  - request: {name: token, path: /token}
    capture: {token: \"$.token\"}
flows:
  - name: f
    once:
      - request: {name: login, method: POST, path: /login, form: {u: \"{{ data.accounts.user }}\", t: \"{{ setup.token }}\"}}
        capture: {session: \"cookie:sid\"}
    steps:
      - request: {name: home, path: \"/home?s={{ session }}\"}
";
    let path = dir.path().join("s.yaml");
    std::fs::write(&path, yaml).unwrap();
    let file = path.to_str().unwrap();
    let plan = from_text(file, yaml, &Overrides::default()).unwrap();
    assert_eq!(plan.journey.data.sets.len(), 1);
    assert_eq!(plan.journey.data.sets[0].set().len(), 3);
    assert_eq!(plan.journey.setup.len(), 1);
    assert_eq!(plan.journey.setup_captures, ["token"]);
    let Item::Flow(f) = &plan.items[0] else {
        panic!()
    };
    assert_eq!(f.once.len(), 1);
    assert_eq!(plan.journey.data_sets_of(&plan.items[0]), [0]);

    // Four users for three rows; an unknown column; a setup value nobody captured.
    for (from, to, want) in [
        ("users: 3", "users: 4", "3 rows"),
        (
            "data.accounts.user",
            "data.accounts.nope",
            "data.accounts.nope",
        ),
        ("setup.token", "setup.other", "setup.other"),
        (
            "pick: unique",
            "pick: sometimes",
            "expected unique, sequential or random",
        ),
        ("file: a.csv", "file: none.csv", "cannot read"),
    ] {
        let bad = yaml.replace(from, to);
        std::fs::write(&path, &bad).unwrap();
        let err = match from_text(file, &bad, &Overrides::default()) {
            Ok(_) => panic!("{to}"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(want), "{want}: {err}");
    }
}

#[test]
fn secrets_name_headers_and_values_the_scenario_has_else_the_line_is_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.csv"), "user,pass\nu1,p1\n").unwrap();
    // An environment variable every test process has (setting one here would race
    // with the other tests reading theirs).
    let path_env = std::env::var("PATH").expect("PATH is set");
    let yaml = "target: http://127.0.0.1:4000
load: {model: users, users: 1, duration: 1s}
secrets:
  headers: [X-Session, x-tenant]
  values: [data.accounts.pass, setup.token, session, env.PATH]
data:
  accounts: {file: a.csv}
setup:
  - request: {name: token, path: /token}
    capture: {token: \"$.token\"}
flows:
  - name: f
    steps:
      - request: {name: login, method: POST, path: /login}
        capture: {session: \"cookie:sid\"}
      - request: {name: home, path: /home}
";
    let path = dir.path().join("s.yaml");
    std::fs::write(&path, yaml).unwrap();
    let file = path.to_str().unwrap();
    let plan = from_text(file, yaml, &Overrides::default()).unwrap();
    let s = &plan.journey.secrets;
    assert_eq!(s.headers, ["x-session", "x-tenant"]);
    assert_eq!(s.vars, ["data.accounts.pass", "setup.token", "session"]);
    assert_eq!(s.literals, [path_env]);
    assert!(s.is_header("X-SESSION") && s.is_header("cookie") && !s.is_header("accept"));

    for (from, to, want) in [
        (
            "data.accounts.pass",
            "data.accounts.pwd",
            "no data column of that name",
        ),
        (
            "setup.token,",
            "setup.tok,",
            "no `setup:` step captures that name",
        ),
        (
            " session,",
            " sesion,",
            "the name of a variable a flow step captures",
        ),
        ("env.PATH", "env.HEADROOM_TEST_UNSET_9", "is not set"),
        ("[X-Session,", "[\"X Session\",", "secrets.headers[0]"),
        ("  values:", "  value:", "unknown field"),
    ] {
        let bad = yaml.replace(from, to);
        assert_ne!(bad, yaml, "{from}");
        let err = match from_text(file, &bad, &Overrides::default()) {
            Ok(_) => panic!("{to}"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(want), "{want}: {err}");
        assert!(
            err.contains("s.yaml:"),
            "the file and line are named: {err}"
        );
    }
}
