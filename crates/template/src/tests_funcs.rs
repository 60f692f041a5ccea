//! The functions added beside the first ones: `user`, `iteration`, `rand_float`,
//! `rand_string`, `now_format`, `base64`, `urlencode`.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use serde_json::json;

use super::tests::{compile_err, render, render_with};
use super::*;

fn render_as(t: &Template, vars: &Vars, user: u64, iteration: u64) -> String {
    let mut rng = SmallRng::seed_from_u64(5);
    let mut out = Vec::new();
    t.render(
        &mut RenderContext {
            rng: &mut rng,
            vars,
            user,
            iteration,
        },
        &mut out,
    );
    String::from_utf8(out).unwrap()
}

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[test]
fn user_and_iteration_come_from_the_context() {
    let t = Template::compile("/u/{{ user() }}/i/{{iteration()}}", Escape::None).unwrap();
    assert_eq!(t.as_static(), None);
    assert_eq!(render_as(&t, &Vars::default(), 42, 7), "/u/42/i/7");
    assert_eq!(
        render_as(&t, &Vars::default(), u64::MAX, 0),
        format!("/u/{}/i/0", u64::MAX)
    );
    let typed = Template::compile(
        &json_source(&json!({"u": "{{ user() }}", "i": "{{ iteration() }}"})),
        Escape::Json,
    )
    .unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&render_as(&typed, &Vars::default(), 3, 9)).unwrap();
    assert_eq!(v, json!({"u": 3, "i": 9}));
    assert!(compile_err("{{ user(1) }}").contains("user() takes no arguments, found 1"));
    assert!(compile_err("{{ iteration(\"x\") }}").contains("iteration() takes no arguments"));
}

#[test]
fn rand_float_stays_in_range_with_at_most_six_decimals() {
    let t = Template::compile("{{ rand_float(-1.5, 2) }}", Escape::None).unwrap();
    let mut rng = SmallRng::seed_from_u64(11);
    for _ in 0..2000 {
        let text = render_with(&t, &Vars::default(), &mut rng);
        assert!(!text.contains(['e', 'E']), "{text}");
        let decimals = text.split_once('.').map_or(0, |(_, d)| d.len());
        assert!(
            decimals <= 6 && !text.ends_with('0') || !text.contains('.'),
            "{text}"
        );
        let x: f64 = text.parse().unwrap();
        assert!((-1.5..=2.0).contains(&x), "{text}");
    }
    // A range of three millionths: each is reached, both ends included.
    let t = Template::compile("{{ rand_float(0.5, 0.500002) }}", Escape::None).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..300 {
        seen.insert(render_with(&t, &Vars::default(), &mut rng));
    }
    let seen: Vec<String> = seen.into_iter().collect();
    assert_eq!(seen, ["0.5", "0.500001", "0.500002"]);
    assert_eq!(render("{{ rand_float(3, 3) }}", Escape::None), "3");
    assert_eq!(
        render("{{ rand_float(-0.25, -0.25) }}", Escape::None),
        "-0.25"
    );
    // Bounds with more than six decimals round inwards.
    assert_eq!(
        render("{{ rand_float(0.1234561, 0.1234579) }}", Escape::None),
        "0.123457"
    );
}

#[test]
fn rand_float_errors_and_shows() {
    let cases = [
        ("{{ rand_float(2, 1) }}", "needs lo <= hi"),
        (
            "{{ rand_float(0.1234561, 0.1234562) }}",
            "multiple of 0.000001",
        ),
        (
            "{{ rand_float(1) }}",
            "rand_float expects 2 number arguments (lo, hi), found (integer)",
        ),
        ("{{ rand_float(\"a\", 1) }}", "found (string, integer)"),
        (
            "{{ rand_float(0, 1000000000000.5) }}",
            "at most 1000000000000 either way",
        ),
        (
            "{{ rand_float(-99999999999999, 0) }}",
            "found -99999999999999",
        ),
        ("{{ rand_float(0, 1e3) }}", "found `1e3`"),
        ("{{ rand_float(x, 1) }}", "found `x`"),
    ];
    for (source, want) in cases {
        let err = compile_err(source);
        assert!(err.contains(want), "{source}: {err}");
    }
    let t = Template::compile("{{ rand_float(-0.50, 1000000000000) }}", Escape::None).unwrap();
    assert_eq!(t.to_string(), "{{ rand_float(-0.5, 1000000000000) }}");
    assert_eq!(Template::compile(&t.to_string(), Escape::None).unwrap(), t);
    // Integer arguments of rand_int stay integers only.
    assert!(compile_err("{{ rand_int(0, 1.5) }}").contains("found (integer, decimal)"));
}

#[test]
fn rand_float_is_a_json_number_when_typed() {
    let t = Template::compile(
        &json_source(
            &json!({"x": "{{ rand_float(0.25, 0.75) }}", "s": "at {{ rand_float(1, 1) }}"}),
        ),
        Escape::Json,
    )
    .unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&render_as(&t, &Vars::default(), 1, 0)).unwrap();
    let x = v["x"].as_f64().unwrap();
    assert!((0.25..=0.75).contains(&x), "{v}");
    assert_eq!(v["s"], json!("at 1"));
}

#[test]
fn rand_string_is_n_alphanumerics_and_bounded() {
    let t = Template::compile("{{ rand_string(32) }}", Escape::Json).unwrap();
    let mut rng = SmallRng::seed_from_u64(2);
    let a = render_with(&t, &Vars::default(), &mut rng);
    let b = render_with(&t, &Vars::default(), &mut rng);
    assert_eq!(a.len(), 32);
    assert!(a.bytes().all(|c| c.is_ascii_alphanumeric()), "{a}");
    assert_ne!(a, b);
    let mut kinds = [false; 3];
    for _ in 0..20 {
        for c in render_with(&t, &Vars::default(), &mut rng).bytes() {
            kinds[if c.is_ascii_uppercase() {
                0
            } else if c.is_ascii_lowercase() {
                1
            } else {
                2
            }] = true;
        }
    }
    assert_eq!(kinds, [true; 3]);
    assert_eq!(render("{{ rand_string(4096) }}", Escape::None).len(), 4096);
    assert_eq!(render("{{ rand_string(1) }}", Escape::None).len(), 1);
    for (source, want) in [
        (
            "{{ rand_string(4097) }}",
            "from 1 to 4096 (the length), found 4097",
        ),
        ("{{ rand_string(0) }}", "found 0"),
        ("{{ rand_string(-1) }}", "found -1"),
        ("{{ rand_string() }}", "found none"),
        ("{{ rand_string(\"8\") }}", "found (string)"),
    ] {
        let err = compile_err(source);
        assert!(err.contains(want), "{source}: {err}");
    }
    assert_eq!(
        Template::compile("{{rand_string(8)}}", Escape::None)
            .unwrap()
            .to_string(),
        "{{ rand_string(8) }}"
    );
}

#[test]
fn now_format_writes_the_current_time_in_the_format() {
    let before = now_s();
    let out = render("{{ now_format(\"%s\") }}", Escape::None);
    let secs: i64 = out.parse().unwrap();
    assert!(secs >= before && secs <= before + 2, "{out}");
    let out = render("{{ now_format('%s', -3600) }}", Escape::None);
    let secs: i64 = out.parse().unwrap();
    assert!(secs + 3600 >= before && secs + 3600 <= before + 2, "{out}");

    let day = render("{{ now_format(\"%Y-%m-%d\") }}", Escape::None);
    let today = chrono::DateTime::from_timestamp(now_s(), 0).unwrap();
    assert_eq!(day, today.format("%Y-%m-%d").to_string());
    let stamp = render(
        "{{ now_format(\"%Y-%m-%dT%H:%M:%S%.3fZ\", 86400) }}",
        Escape::None,
    );
    assert_eq!(stamp.len(), "2025-01-01T00:00:00.000Z".len(), "{stamp}");
}

#[test]
fn now_format_escapes_its_literal_text_and_checks_the_format() {
    let t = Template::compile(r#"{"d":"{{ now_format("a\"b%n%Y") }}"}"#, Escape::Json).unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&render_as(&t, &Vars::default(), 1, 0)).unwrap();
    let d = v["d"].as_str().unwrap();
    assert!(d.starts_with("a\"b\n") && d.len() == 8, "{d:?}");
    let typed = Template::compile(
        &json_source(&json!({"d": "{{ now_format(\"%H:%M\") }}"})),
        Escape::Json,
    )
    .unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&render_as(&typed, &Vars::default(), 1, 0)).unwrap();
    assert_eq!(v["d"].as_str().unwrap().len(), 5);

    for (source, want) in [
        (
            "{{ now_format(\"%Q\") }}",
            "\"%Q\" is not a valid strftime format",
        ),
        (
            "{{ now_format(\"%Y-%\") }}",
            "\"%Y-%\" is not a valid strftime format",
        ),
        (
            "{{ now_format() }}",
            "now_format expects a quoted format and an optional integer offset",
        ),
        ("{{ now_format(1) }}", "found (integer)"),
        ("{{ now_format(\"%Y\", \"1\") }}", "found (string, string)"),
        (
            "{{ now_format(\"%Y\", 3153600001) }}",
            "now_format's offset is at most 3153600000",
        ),
    ] {
        let err = compile_err(source);
        assert!(err.contains(want), "{source}: {err}");
    }
    let t = Template::compile(
        "{{now_format('%Y \"q\"', -5)}}/{{ now_format(\"%F\") }}",
        Escape::None,
    )
    .unwrap();
    assert_eq!(
        t.to_string(),
        "{{ now_format(\"%Y \\\"q\\\"\", -5) }}/{{ now_format(\"%F\") }}"
    );
    assert_eq!(Template::compile(&t.to_string(), Escape::None).unwrap(), t);
}

#[test]
fn encodings_of_constants_are_folded_at_compile_time() {
    std::env::set_var("HEADROOM_ENCODE_TEST", "a b&c");
    let cases = [
        ("{{ base64(\"hello\") }}", "aGVsbG8="),
        ("{{ base64('') }}", ""),
        ("{{ base64(\"ab\") }}", "YWI="),
        ("{{ urlencode(\"a b&c/é~-._\") }}", "a%20b%26c%2F%C3%A9~-._"),
        ("{{ urlencode(env.HEADROOM_ENCODE_TEST) }}", "a%20b%26c"),
        ("{{ base64(urlencode(\"a b\")) }}", "YSUyMGI="),
        ("{{ urlencode(base64(\"\u{fb}\u{ff}\")) }}", "w7vDvw%3D%3D"),
    ];
    for (source, want) in cases {
        for escape in [Escape::None, Escape::Json] {
            let t = Template::compile(source, escape).unwrap();
            assert_eq!(t.as_static(), Some(want), "{source}");
        }
    }
}

#[test]
fn encodings_of_variables_and_calls_render_per_request() {
    let t = Template::compile(
        "q={{ urlencode(name) }}&b={{ base64(data.accounts.username) }}&n={{ base64(urlencode(name)) }}",
        Escape::Json,
    )
    .unwrap();
    assert_eq!(t.variables(), ["name", "data.accounts.username", "name"]);
    let mut vars = Vars::default();
    vars.set("name", "Zoë \"Q\"+1".into());
    vars.set("data.accounts.username", "user:pa\nss".into());
    let out = render_as(&t, &vars, 1, 0);
    let encoded = "Zo%C3%AB%20%22Q%22%2B1";
    assert_eq!(
        out,
        format!(
            "q={encoded}&b={}&n={}",
            STANDARD.encode("user:pa\nss"),
            STANDARD.encode(encoded)
        )
    );
    // Unset: an empty value encodes to nothing.
    assert_eq!(render_as(&t, &Vars::default(), 1, 0), "q=&b=&n=");

    // A random value encoded: base64 of a uuid decodes back to one.
    let t = Template::compile("x{{ base64(uuid()) }}y", Escape::None).unwrap();
    let out = render_as(&t, &Vars::default(), 1, 0);
    let inner = out.strip_prefix('x').unwrap().strip_suffix('y').unwrap();
    let decoded = String::from_utf8(STANDARD.decode(inner).unwrap()).unwrap();
    assert_eq!(decoded.len(), 36, "{decoded}");
    let t = Template::compile(
        "{{ urlencode(now_format(\"%Y-%m-%d %H:%M\")) }}",
        Escape::None,
    )
    .unwrap();
    assert!(render_as(&t, &Vars::default(), 1, 0).contains("%20"));
    let t = Template::compile("{{ base64(user()) }}", Escape::None).unwrap();
    assert_eq!(
        render_as(&t, &Vars::default(), 12, 0),
        STANDARD.encode("12")
    );
}

#[test]
fn encodings_are_strings_when_typed_and_show_in_source_form() {
    let mut vars = Vars::default();
    vars.set_json("n", "42".into());
    let t = Template::compile(
        &json_source(&json!({"a": "{{ base64(n) }}", "b": "{{ urlencode('x y') }}"})),
        Escape::Json,
    )
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&render_as(&t, &vars, 1, 0)).unwrap();
    assert_eq!(v, json!({"a": STANDARD.encode("42"), "b": "x%20y"}));
    let t = Template::compile("{{base64( urlencode( cookie.sid ) )}}", Escape::None).unwrap();
    assert_eq!(t.to_string(), "{{ base64(urlencode(cookie.sid)) }}");
    assert_eq!(Template::compile(&t.to_string(), Escape::None).unwrap(), t);
}

#[test]
fn encoding_errors_name_what_was_wrong() {
    for (source, want) in [
        (
            "{{ base64() }}",
            "base64 expects one argument (a variable, a call or a quoted string), found 0",
        ),
        ("{{ urlencode(a, b) }}", "urlencode expects one argument"),
        ("{{ base64(5) }}", "expected a variable name"),
        ("{{ base64(rand_int(2, 1)) }}", "needs lo <= hi"),
        ("{{ base64(foo.bar) }}", "unknown prefix `foo.`"),
        ("{{ base64(chance(0.5)) }}", "chance(p) is a condition"),
        (
            "{{ base64(base64(base64(base64(base64(x))))) }}",
            "at most 4 base64/urlencode",
        ),
        ("{{ base64(x }}", "expected `)`"),
    ] {
        let err = compile_err(source);
        assert!(err.contains(want), "{source}: {err}");
        assert!(
            err.contains(&source[3..source.len() - 3]),
            "{source}: {err}"
        );
    }
    assert!(Template::compile("{{ base64(base64(base64(base64(x)))) }}", Escape::None).is_ok());
}

#[test]
fn quoted_strings_are_placeholders_too() {
    assert_eq!(render("a{{ \"}\" }}b{{ '{{' }}", Escape::None), "a}b{{");
    assert_eq!(render(r#"{{ "q\"" }}"#, Escape::Json), r#"q\""#);
    assert!(compile_err("{{ 5 }}").contains("expected a variable name"));
}

#[test]
fn form_values_are_encoded_as_written_and_as_rendered() {
    use crate::{Escape, RenderContext, Template, Vars};
    use rand::SeedableRng;
    let mut vars = Vars::default();
    vars.set("user", "a b&c=d".into());
    let value = Template::compile("x y/{{ user }}+", Escape::Form).unwrap();
    let sep = Template::literal("n=", Escape::None);
    let body = Template::concat(vec![sep, value], Escape::Form);
    let mut out = Vec::new();
    body.render(
        &mut RenderContext {
            rng: &mut rand::rngs::SmallRng::seed_from_u64(1),
            vars: &vars,
            user: 1,
            iteration: 0,
        },
        &mut out,
    );
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "n=x%20y%2Fa%20b%26c%3Dd%2B"
    );
    assert_eq!(crate::form_encode("a&b"), "a%26b");
}
