//! Conditions: truth tables, precedence, numeric and text comparison, `chance`,
//! functions, the canonical form and errors.

use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::*;

fn eval_with(source: &str, vars: &Vars, user: u64, iteration: u64, rng: &mut SmallRng) -> bool {
    let c = Condition::compile(source).unwrap_or_else(|e| panic!("{source}: {e}"));
    c.eval(&mut RenderContext {
        rng,
        vars,
        user,
        iteration,
    })
}

fn eval(source: &str, vars: &Vars) -> bool {
    eval_with(source, vars, 1, 0, &mut SmallRng::seed_from_u64(1))
}

fn vars(pairs: &[(&str, &str)]) -> Vars {
    let mut vars = Vars::default();
    for (name, value) in pairs {
        vars.set(name, value.to_string());
    }
    vars
}

fn error(source: &str) -> String {
    Condition::compile(source).unwrap_err().to_string()
}

#[test]
fn truth_tables_and_precedence() {
    for bits in 0..8u8 {
        let (a, b, c) = (bits & 4 != 0, bits & 2 != 0, bits & 1 != 0);
        let v = vars(&[
            ("a", &a.to_string()),
            ("b", &b.to_string()),
            ("c", &c.to_string()),
        ]);
        let cases = [
            ("a || b && c", a || b && c),
            ("a && b || c", a && b || c),
            ("(a || b) && c", (a || b) && c),
            ("a && (b || c)", a && (b || c)),
            ("!a || b", !a || b),
            ("!(a || b)", !(a || b)),
            ("!!a && !b", a && !b),
            ("a && b && c", a && b && c),
            ("a || b || c", a || b || c),
            ("!a == true", !a),
        ];
        for (source, want) in cases {
            assert_eq!(eval(source, &v), want, "{source} with a={a} b={b} c={c}");
        }
    }
    assert!(eval("true", &Vars::default()));
    assert!(!eval("false", &Vars::default()));
    assert!(eval("true && !false", &Vars::default()));
}

#[test]
fn a_bare_value_is_false_when_unset_empty_false_zero_or_null() {
    let v = vars(&[
        ("empty", ""),
        ("f", "false"),
        ("zero", "0"),
        ("null", "null"),
        ("yes", "yes"),
        ("one", "1"),
        ("space", " "),
    ]);
    for (source, want) in [
        ("unset", false),
        ("empty", false),
        ("f", false),
        ("zero", false),
        ("null", false),
        ("yes", true),
        ("one", true),
        ("space", true),
        ("0", false),
        ("0.0", false),
        ("-2", true),
        ("''", false),
        ("'0'", false),
        ("'x'", true),
        ("rand_int(0, 0)", false),
        ("rand_int(3, 3)", true),
    ] {
        assert_eq!(eval(source, &v), want, "{source}");
    }
    let mut json = Vars::default();
    json.set_json("n", "null".into());
    json.set_json("b", "false".into());
    json.set_json("t", "true".into());
    assert!(!eval("n", &json) && !eval("b", &json) && eval("t", &json));
    assert!(eval("b == false && t == true", &json));
}

#[test]
fn numbers_compare_numerically_and_text_lexicographically() {
    let v = vars(&[
        ("n", "9"),
        ("f", "5.0"),
        ("s", "abc"),
        ("code", "007"),
        ("big", "2e3"),
    ]);
    for (source, want) in [
        ("n < 10", true),
        ("n < '10'", true),
        ("'9' < '10'", true),
        ("f == 5", true),
        ("f >= 5 && f <= 5.0", true),
        ("code == 7", true),
        ("code == '7'", true),
        ("big == 2000", true),
        ("-1.5 < -1", true),
        ("s == 'abc'", true),
        ("s != \"abc\"", false),
        ("s < 'abd'", true),
        ("'b' > 'abc'", true),
        ("s > 1", true),
        ("s == 0", false),
        ("unset == ''", true),
        ("unset != ''", false),
        ("unset == 0", false),
        ("9223372036854775807 > 9223372036854775806", true),
        ("99999999999999999999 > 9223372036854775807", true),
        ("n == 9 && n != 8 && n > 8 && n >= 9 && n <= 9", true),
    ] {
        assert_eq!(eval(source, &v), want, "{source}");
    }
}

#[test]
fn user_iteration_and_functions_are_values() {
    let mut rng = SmallRng::seed_from_u64(3);
    let v = Vars::default();
    assert!(eval_with(
        "user() == 7 && iteration() == 0",
        &v,
        7,
        0,
        &mut rng
    ));
    assert!(eval_with(
        "user() <= 10 && iteration() > 2",
        &v,
        10,
        3,
        &mut rng
    ));
    assert!(!eval_with("user() > 10", &v, 10, 3, &mut rng));
    for source in [
        "rand_int(1, 1) == 1",
        "rand_int(1, 6) >= 1 && rand_int(1, 6) <= 6",
        "rand_float(0.5, 0.5) == 0.5",
        "base64('x') == 'eA=='",
        "urlencode('a b') == 'a%20b'",
        "uuid() != ''",
        "rand_string(3) != ''",
        "now_unix() > 1600000000",
        "now_format('%Y') >= '2024'",
        "seq() >= 0",
        "rand_choice('a', 'a') == 'a'",
    ] {
        assert!(eval_with(source, &v, 1, 0, &mut rng), "{source}");
    }
    std::env::set_var("HEADROOM_COND_ENV", "prod");
    assert!(eval("env.HEADROOM_COND_ENV == 'prod'", &v));
    let names = vars(&[
        ("cookie.session", "s"),
        ("data.accounts.role", "admin"),
        ("setup.ok", "1"),
    ]);
    assert!(eval(
        "cookie.session && data.accounts.role == 'admin' && setup.ok",
        &names
    ));
    assert!(eval("base64(cookie.session) == 'cw=='", &names));
}

#[test]
fn chance_draws_from_the_rng() {
    let v = Vars::default();
    let mut rng = SmallRng::seed_from_u64(8);
    for _ in 0..1000 {
        assert!(!eval_with("chance(0)", &v, 1, 0, &mut rng));
        assert!(eval_with("chance(1)", &v, 1, 0, &mut rng));
        assert!(eval_with("chance(1.0) && !chance(0.0)", &v, 1, 0, &mut rng));
    }
    let c = Condition::compile("chance(0.25)").unwrap();
    let hits = (0..10_000)
        .filter(|_| {
            c.eval(&mut RenderContext {
                rng: &mut rng,
                vars: &v,
                user: 1,
                iteration: 0,
            })
        })
        .count();
    assert!((2200..2800).contains(&hits), "{hits}");
    for (source, want) in [
        (
            "chance(1.5)",
            "chance expects one number argument from 0 to 1 (the probability), found (1.5)",
        ),
        ("chance(-0.1)", "found (-0.1)"),
        ("chance()", "found none"),
        ("chance(x)", "found (x)"),
        ("chance(0.5, 1)", "found (0.5, 1)"),
        ("chance(0.5) == true", "chance(p) is a condition on its own"),
    ] {
        let err = error(source);
        assert!(err.contains(want), "{source}: {err}");
    }
    let err = Template::compile("{{ chance(0.5) }}", Escape::None).unwrap_err();
    assert!(
        err.to_string().contains("chance(p) is a condition"),
        "{err}"
    );
}

#[test]
fn the_canonical_form_compiles_back_to_the_same_condition() {
    std::env::set_var("HEADROOM_COND_SHOWN", "v\"1");
    for (source, shown) in [
        ("a||b&&c", "a || b && c"),
        ("(a || b) && c", "(a || b) && c"),
        ("a || (b || c)", "a || b || c"),
        ("(a && b) && (c)", "a && b && c"),
        ("!a==1", "!(a == 1)"),
        ("!(a)", "!a"),
        ("!!a", "!!a"),
        ("!(a && b) || c", "!(a && b) || c"),
        ("x=='s\\'q'", "x == \"s'q\""),
        ("x != \"a\\\\b\"", "x != \"a\\\\b\""),
        ("n >= -1.50", "n >= -1.5"),
        ("n < 007", "n < 7"),
        ("true && !false", "true && !false"),
        ("user()>iteration( )", "user() > iteration()"),
        ("chance(0.50) || chance(1)", "chance(0.5) || chance(1)"),
        ("rand_int(1,6)==6", "rand_int(1, 6) == 6"),
        (
            "base64(urlencode(cookie.sid)) == 'x'",
            "base64(urlencode(cookie.sid)) == \"x\"",
        ),
        ("env.HEADROOM_COND_SHOWN", "\"v\\\"1\""),
        ("data.a.b <= setup.c", "data.a.b <= setup.c"),
    ] {
        let c = Condition::compile(source).unwrap();
        assert_eq!(c.to_string(), shown, "{source}");
        assert_eq!(Condition::compile(shown).unwrap(), c, "{source}");
    }
}

#[test]
fn variables_are_listed_in_order() {
    let c = Condition::compile(
        "a && (cookie.s == b || !base64(data.x.y)) && chance(0.5) && user() > 1",
    )
    .unwrap();
    assert_eq!(c.variables(), ["a", "cookie.s", "b", "data.x.y"]);
}

#[test]
fn errors_name_the_condition_and_what_was_expected() {
    for (source, want) in [
        (
            "",
            "expected a value, `!` or `(`, found the end at column 1",
        ),
        (
            "a ==",
            "expected a value after the comparison, found the end at column 5",
        ),
        (
            "a = b",
            "expected `==`, `&&` or `||`, found `=` at column 3",
        ),
        ("a & b", "found `&` at column 3"),
        ("a | b", "found `|` at column 3"),
        (
            "(a || b",
            "expected `&&`, `||` or `)`, found the end at column 8",
        ),
        (
            "a) ",
            "expected `&&`, `||` or the end of the condition, found `)` at column 2",
        ),
        ("a b", "found `b` at column 3"),
        (
            "a == b == c",
            "comparisons do not chain: join them with `&&` (column 8)",
        ),
        ("a < b > c", "comparisons do not chain"),
        ("(a) == b", "found `==` at column 5"),
        ("foo.bar", "unknown prefix `foo.`"),
        ("nope() == 1", "unknown function `nope`"),
        ("rand_int(5, 1) > 2", "needs lo <= hi"),
        ("x == 'abc", "unterminated string argument"),
        (
            "x == 1x",
            "expected a value after the comparison, found `1x`",
        ),
        ("a && || b", "found `||` at column 6"),
        ("é == 1", "found `é` at column 1"),
        ("rand_int(1, 2", "expected `)`"),
        ("uuid(1)", "uuid() takes no arguments"),
        ("a-b", "expected a variable name"),
    ] {
        let err = error(source);
        assert!(err.starts_with("condition `"), "{source}: {err}");
        assert!(err.contains(want), "{source}: {err}");
    }
    // A long condition is shown by its first 80 characters.
    let long = format!("{} ==", "a".repeat(200));
    let err = error(&long);
    assert!(
        err.contains(&format!("condition `{}…`", "a".repeat(80))),
        "{err}"
    );
    assert!(err.len() < 300, "{err}");
}

#[test]
fn compiled_conditions_and_templates_are_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Condition>();
    send_sync::<Template>();
}
