use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::*;

pub(super) fn render_with(t: &Template, vars: &Vars, rng: &mut SmallRng) -> String {
    let mut out = Vec::new();
    t.render(
        &mut RenderContext {
            rng,
            vars,
            user: 1,
            iteration: 0,
        },
        &mut out,
    );
    String::from_utf8(out).unwrap()
}

pub(super) fn render(source: &str, escape: Escape) -> String {
    let t = Template::compile(source, escape).unwrap();
    render_with(&t, &Vars::default(), &mut SmallRng::seed_from_u64(7))
}

pub(super) fn compile_err(source: &str) -> String {
    Template::compile(source, Escape::None)
        .unwrap_err()
        .to_string()
}

#[test]
fn literal_text_is_static() {
    let t = Template::compile("/api/tasks?limit=50", Escape::None).unwrap();
    assert_eq!(t.as_static(), Some("/api/tasks?limit=50"));
    assert_eq!(
        Template::compile("", Escape::None).unwrap().as_static(),
        Some("")
    );
    assert_eq!(render("a}}b{ c", Escape::None), "a}}b{ c");
}

#[test]
fn rand_int_stays_in_its_inclusive_range_and_reaches_both_ends() {
    let t = Template::compile("{{ rand_int(-2, 2) }}", Escape::None).unwrap();
    assert_eq!(t.as_static(), None);
    let mut rng = SmallRng::seed_from_u64(1);
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..500 {
        let n: i64 = render_with(&t, &Vars::default(), &mut rng).parse().unwrap();
        seen.insert(n);
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![-2, -1, 0, 1, 2]);
    assert_eq!(render("x{{rand_int(5,5)}}y", Escape::None), "x5y");
}

#[test]
fn rand_choice_picks_each_option() {
    let t = Template::compile(r#"{{ rand_choice("a", 'b', "c,d") }}"#, Escape::None).unwrap();
    let mut rng = SmallRng::seed_from_u64(3);
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..200 {
        seen.insert(render_with(&t, &Vars::default(), &mut rng));
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec!["a", "b", "c,d"]);
}

#[test]
fn uuid_is_version_4_with_variant_bits() {
    let out = render("{{ uuid() }}", Escape::None);
    let groups: Vec<&str> = out.split('-').collect();
    assert_eq!(
        groups.iter().map(|g| g.len()).collect::<Vec<_>>(),
        vec![8, 4, 4, 4, 12]
    );
    assert!(out
        .chars()
        .all(|c| c == '-' || c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    assert!(groups[2].starts_with('4'), "{out}");
    assert!(
        matches!(groups[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'),
        "{out}"
    );
    let t = Template::compile("{{ uuid() }}", Escape::None).unwrap();
    let mut rng = SmallRng::seed_from_u64(9);
    let (a, b) = (
        render_with(&t, &Vars::default(), &mut rng),
        render_with(&t, &Vars::default(), &mut rng),
    );
    assert_ne!(a, b);
}

#[test]
fn seq_increases_across_renders() {
    let t = Template::compile("{{ seq() }}", Escape::None).unwrap();
    let mut rng = SmallRng::seed_from_u64(0);
    let a: u64 = render_with(&t, &Vars::default(), &mut rng).parse().unwrap();
    let b: u64 = render_with(&t, &Vars::default(), &mut rng).parse().unwrap();
    assert!(b > a, "{a} then {b}");
}

#[test]
fn now_functions_follow_the_clock() {
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let unix: u64 = render("{{ now_unix() }}", Escape::None).parse().unwrap();
    assert!(unix >= before && unix <= before + 2);

    let iso = render("{{ now_iso(300) }}", Escape::None);
    let parsed = humantime::parse_rfc3339(&iso).unwrap();
    let secs = parsed
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(secs >= before + 300 && secs <= before + 302, "{iso}");
    assert!(iso.ends_with('Z'));

    let past = render("{{ now_iso(-60) }}", Escape::None);
    let secs = humantime::parse_rfc3339(&past)
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(secs + 60 >= before && secs + 60 <= before + 2, "{past}");
}

#[test]
fn env_is_resolved_at_compile_time_and_escaped_for_json() {
    std::env::set_var("HEADROOM_TEMPLATE_TEST", "k\"e\\y");
    let t = Template::compile("Bearer {{ env.HEADROOM_TEMPLATE_TEST }}", Escape::None).unwrap();
    assert_eq!(t.as_static(), Some("Bearer k\"e\\y"));
    let t = Template::compile(r#"{"k":"{{env.HEADROOM_TEMPLATE_TEST}}"}"#, Escape::Json).unwrap();
    assert_eq!(t.as_static(), Some(r#"{"k":"k\"e\\y"}"#));
    let err = compile_err("{{ env.HEADROOM_SURELY_UNSET_VAR }}");
    assert!(
        err.contains("environment variable HEADROOM_SURELY_UNSET_VAR is not set"),
        "{err}"
    );
}

#[test]
fn variables_are_listed_and_rendered_with_escaping() {
    let t = Template::compile(
        r#"{"a":"{{ id }}","b":"{{ name }}/{{ id }}"}"#,
        Escape::Json,
    )
    .unwrap();
    assert_eq!(t.variables(), vec!["id", "name", "id"]);
    let mut vars = Vars::default();
    vars.set("id", "4\"2".into());
    vars.set("name", "line\nnext\u{1}".into());
    let out = render_with(&t, &vars, &mut SmallRng::seed_from_u64(0));
    assert_eq!(out, r#"{"a":"4\"2","b":"line\nnext\u0001/4\"2"}"#);
    let parsed: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(parsed["b"], "line\nnext\u{1}/4\"2");

    let raw = Template::compile("/tasks/{{id}}", Escape::None).unwrap();
    assert_eq!(
        render_with(&raw, &vars, &mut SmallRng::seed_from_u64(0)),
        "/tasks/4\"2"
    );
    assert_eq!(
        render_with(&raw, &Vars::default(), &mut SmallRng::seed_from_u64(0)),
        "/tasks/"
    );
}

#[test]
fn rand_choice_options_are_json_escaped() {
    assert_eq!(
        render(r#"{{ rand_choice("a\"b") }}"#, Escape::Json),
        r#"a\"b"#
    );
    assert_eq!(
        render(r#"{{ rand_choice("a\"b") }}"#, Escape::None),
        r#"a"b"#
    );
}

#[test]
fn errors_name_the_placeholder_and_what_was_expected() {
    let cases = [
        ("{{ nope() }}", "unknown function `nope` (known: rand_int"),
        (
            "{{ rand_int(1) }}",
            "rand_int expects 2 integer arguments (lo, hi), found (integer)",
        ),
        ("{{ rand_int(5, 1) }}", "needs lo <= hi, found 5 > 1"),
        (
            "{{ rand_int(1, x) }}",
            "expected an integer or a quoted string argument, found `x`",
        ),
        (
            "{{ rand_choice() }}",
            "rand_choice expects at least one string argument",
        ),
        (
            "{{ rand_choice(1) }}",
            "rand_choice expects string arguments",
        ),
        ("{{ uuid(1) }}", "uuid() takes no arguments, found 1"),
        (
            "{{ now_iso(\"x\") }}",
            "now_iso expects one integer argument",
        ),
        ("{{ rand_choice(\"a) }}", "unterminated string argument"),
        ("{{ seq( }}", "expected `)`"),
        ("a {{ id", "unclosed `{{`"),
        ("{{ }}", "empty placeholder"),
        (
            "{{ a-b }}",
            "expected a variable name, `env.NAME` or a function call",
        ),
        ("{{ env.1X }}", "expected an environment variable name"),
    ];
    for (source, want) in cases {
        let err = compile_err(source);
        assert!(err.contains(want), "{source}: {err}");
    }
}

#[test]
fn now_iso_offsets_are_bounded_and_the_date_is_clamped_not_panicking() {
    let err = compile_err("{{ now_iso(-9223372036854775808) }}");
    assert!(err.contains("at most 3153600000 seconds"), "{err}");
    assert!(compile_err("{{ now_iso(3153600001) }}").contains("100 years"));
    // 100 years back from now is before 1970: clamped to the epoch (the formatter
    // would panic on it).
    assert_eq!(
        render("{{ now_iso(-3153600000) }}", Escape::None),
        "1970-01-01T00:00:00Z"
    );
    let mut out = Vec::new();
    super::render::write_iso_at(u64::MAX, i64::MAX, &mut out);
    assert_eq!(String::from_utf8(out).unwrap(), "9999-12-31T23:59:59Z");
}

#[test]
fn a_template_shows_in_its_source_syntax() {
    std::env::set_var("HEADROOM_TEMPLATE_SHOWN", "v1");
    let source = "/a/{{rand_int(1,100)}}/{{ id }}?c={{ rand_choice(\"x\", \"y\") }}&u={{ uuid() }}\
                  &s={{ seq() }}&t={{ now_unix() }}&i={{ now_iso(-60) }}&e={{ env.HEADROOM_TEMPLATE_SHOWN }}";
    let shown = Template::compile(source, Escape::None).unwrap().to_string();
    assert_eq!(
        shown,
        "/a/{{ rand_int(1, 100) }}/{{ id }}?c={{ rand_choice(\"x\", \"y\") }}&u={{ uuid() }}\
         &s={{ seq() }}&t={{ now_unix() }}&i={{ now_iso(-60) }}&e=v1"
    );
    // Shown again, it compiles to the same template.
    assert_eq!(
        Template::compile(&shown, Escape::None).unwrap(),
        Template::compile(source, Escape::None).unwrap()
    );
    let typed = Template::compile(
        &json_source(&serde_json::json!({"n": "{{ seq() }}"})),
        Escape::Json,
    );
    assert_eq!(typed.unwrap().to_string(), "{\"n\":{{ seq() }}}");
}
