//! Dotted names: `cookie.NAME`, `data.SET.COLUMN` and `setup.NAME` are variables the
//! engine fills under their full name; any other prefix but `env.` is an error.

use rand::rngs::SmallRng;
use rand::SeedableRng;
use serde_json::json;

use super::tests::{compile_err, render_with};
use super::*;

#[test]
fn dotted_names_render_from_vars_under_their_full_name() {
    let t = Template::compile(
        "/a/{{ data.accounts.username }}?s={{cookie.session}}&t={{ setup.token }}&c={{ cookie.__Host-id }}&k={{ data.rows.col-2 }}",
        Escape::None,
    )
    .unwrap();
    assert_eq!(
        t.variables(),
        [
            "data.accounts.username",
            "cookie.session",
            "setup.token",
            "cookie.__Host-id",
            "data.rows.col-2"
        ]
    );
    let mut vars = Vars::default();
    vars.set("data.accounts.username", "ann".into());
    vars.set("cookie.session", "s1".into());
    vars.set("setup.token", "tok".into());
    vars.set("cookie.__Host-id", "h".into());
    vars.set("data.rows.col-2", "2".into());
    let out = render_with(&t, &vars, &mut SmallRng::seed_from_u64(0));
    assert_eq!(out, "/a/ann?s=s1&t=tok&c=h&k=2");
    assert_eq!(
        t.to_string(),
        "/a/{{ data.accounts.username }}?s={{ cookie.session }}&t={{ setup.token }}\
         &c={{ cookie.__Host-id }}&k={{ data.rows.col-2 }}"
    );
    assert_eq!(Template::compile(&t.to_string(), Escape::None).unwrap(), t);
}

#[test]
fn dotted_names_are_typed_and_escaped_like_variables() {
    let t = Template::compile(
        &json_source(&json!({"id": "{{ setup.id }}", "who": "{{ data.users.name }}", "none": "{{ cookie.x }}",
                             "in": "s={{ cookie.sid }}"})),
        Escape::Json,
    )
    .unwrap();
    let mut vars = Vars::default();
    vars.set_json("setup.id", "17".into());
    vars.set("data.users.name", "Al \"B\"".into());
    vars.set("cookie.sid", "a\\b".into());
    let out = render_with(&t, &vars, &mut SmallRng::seed_from_u64(0));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v,
        json!({"id": 17, "who": "Al \"B\"", "none": null, "in": "s=a\\b"})
    );
}

#[test]
fn other_prefixes_and_malformed_names_are_errors() {
    for (source, want) in [
        (
            "{{ foo.bar }}",
            "unknown prefix `foo.` in `foo.bar`: dotted names are cookie.NAME, data.SET.COLUMN, setup.NAME, env.NAME",
        ),
        ("{{ Cookie.x }}", "unknown prefix `Cookie.`"),
        ("{{ a.b.c }}", "unknown prefix `a.`"),
        ("{{ cookie. }}", "`cookie.` is not a valid name: expected cookie.NAME"),
        ("{{ cookie.a.b }}", "expected cookie.NAME"),
        ("{{ data.accounts }}", "expected data.SET.COLUMN"),
        ("{{ data.accounts.a.b }}", "expected data.SET.COLUMN"),
        ("{{ data.acc-ounts.a }}", "expected data.SET.COLUMN"),
        ("{{ data..a }}", "expected data.SET.COLUMN"),
        ("{{ setup.a-b }}", "expected setup.NAME"),
        ("{{ setup.x.y }}", "expected setup.NAME"),
        ("{{ env.A.B }}", "expected an environment variable name"),
    ] {
        let err = compile_err(source);
        assert!(err.contains(want), "{source}: {err}");
    }
    // env. keeps its compile-time meaning.
    std::env::set_var("HEADROOM_DOTTED_ENV", "v");
    let t = Template::compile("{{ env.HEADROOM_DOTTED_ENV }}", Escape::None).unwrap();
    assert_eq!(t.as_static(), Some("v"));
    assert!(t.variables().is_empty());
}
