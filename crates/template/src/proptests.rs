//! Arbitrary and hostile template sources: compiling never panics, and a template that
//! compiles renders without panicking into output bounded by its source's length.

use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::{Condition, Escape, RenderContext, Template, Vars};

/// Most bytes a template renders per byte of source with no captured variables: JSON
/// escaping turns a control character into `\u00XX` (6 bytes); a placeholder is never
/// shorter than 9 bytes (`{{seq()}}`) and renders at most 36 (a UUID).
const GROWTH: usize = 6;

/// What `{{ env.NAME }}` may add beyond that: the value comes from the environment,
/// whose size (not the template's) bounds it; JSON escaping can grow it sixfold.
fn env_allowance(text: &str) -> usize {
    let longest = std::env::vars_os().map(|(_, v)| v.len()).max().unwrap_or(0);
    text.matches("env.").count() * longest * GROWTH
}

/// The most a template may render: [`GROWTH`] per byte, plus what the environment,
/// `rand_string` (4096 characters from a short call) and `now_format` specifiers
/// (`%c` writes 24 characters) add, times what nested encodings multiply (at most 3
/// each, at most 4 nested).
fn bound(text: &str) -> usize {
    let base = GROWTH * text.len()
        + env_allowance(text)
        + 4096 * text.matches("rand_string").count()
        + 64 * text.matches('%').count();
    let encodings = text.matches("base64").count() + text.matches("urlencode").count();
    base * 3usize.pow(encodings.min(4) as u32)
}

fn escape() -> impl Strategy<Value = Escape> {
    prop_oneof![Just(Escape::None), Just(Escape::Json)]
}

/// Sources made of the pieces a template has, in any order: braces, calls, huge
/// integers, quotes, escapes and control characters.
fn source() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-z/ ?=&\"\\\\\n\t\u{1}é]{0,8}",
        Just("{{".to_string()),
        Just("}}".to_string()),
        Just("{{ ".to_string()),
        prop::sample::select(vec![
            "rand_int",
            "rand_choice",
            "uuid",
            "seq",
            "now_unix",
            "now_iso",
            "rand_float",
            "rand_string",
            "now_format",
            "base64",
            "urlencode",
            "user",
            "iteration",
            "cookie.a-b",
            "data.set.col",
            "setup.x",
            "foo.bar",
            "%c",
            "%Y",
            "%Q",
            "4096",
            "0.5",
            "-1.25",
            "env.PATH",
            "env.",
            "env.NO_SUCH_VAR_HERE",
            "x",
            "(",
            ")",
            ",",
            "\"",
            "'",
            "\\",
        ])
        .prop_map(str::to_string),
        prop::sample::select(vec![
            i64::MIN,
            i64::MAX,
            -1,
            0,
            1,
            3_153_600_000,
            3_153_600_001,
            -3_153_600_000,
        ])
        .prop_map(|n| n.to_string()),
        Just("18446744073709551615".to_string()),
        Just("{{ rand_int(0, 18446744073709551615) }}".to_string()),
        Just("{{ rand_int(-9223372036854775808, 9223372036854775807) }}".to_string()),
        Just("{{ rand_choice(\"a\\\"\", '\u{0}') }}".to_string()),
        Just("{{ now_iso(-3153600000) }}".to_string()),
        Just("{{ rand_string(4096) }}".to_string()),
        Just("{{ urlencode(base64(urlencode(base64(rand_string(4096))))) }}".to_string()),
        Just("{{ now_format(\"%c%c%+\", -3153600000) }}".to_string()),
        Just("{{ rand_float(-1000000000000, 1000000000000) }}".to_string()),
    ];
    prop::collection::vec(piece, 0..16).prop_map(|p| p.concat())
}

fn render(t: &Template, seed: u64) -> Vec<u8> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let vars = Vars::default();
    let mut out = Vec::new();
    t.render(
        &mut RenderContext {
            rng: &mut rng,
            vars: &vars,
            user: 1,
            iteration: 0,
        },
        &mut out,
    );
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn any_text_compiles_or_fails_without_panicking(text in ".{0,80}", esc in escape()) {
        if let Ok(t) = Template::compile(&text, esc) {
            let out = render(&t, 1);
            let bound = bound(&text);
            prop_assert!(out.len() <= bound, "{text:?} → {} bytes", out.len());
        }
    }

    #[test]
    fn hostile_sources_render_within_a_bound(text in source(), esc in escape(), seed in any::<u64>()) {
        if let Ok(t) = Template::compile(&text, esc) {
            let out = render(&t, seed);
            let bound = bound(&text);
            prop_assert!(out.len() <= bound, "{text:?} → {} bytes", out.len());
        }
    }

    #[test]
    fn a_json_escaped_choice_decodes_to_one_of_the_options(
        // A placeholder ends at the first `}}`, quoted or not (the template syntax has
        // no escape for it), so options are drawn without one.
        options in prop::collection::vec(".{0,12}".prop_filter("no }}", |o| !o.contains("}}")), 1..4),
        seed in any::<u64>(),
    ) {
        // Each option quoted for the template's argument syntax (backslash escapes).
        let args: Vec<String> = options
            .iter()
            .map(|o| format!("\"{}\"", o.replace('\\', "\\\\").replace('"', "\\\"")))
            .collect();
        let source = format!("{{{{ rand_choice({}) }}}}", args.join(", "));
        let t = Template::compile(&source, Escape::Json).unwrap();
        let quoted = format!("\"{}\"", String::from_utf8(render(&t, seed)).unwrap());
        let decoded: String = serde_json::from_str(&quoted).unwrap();
        prop_assert!(options.contains(&decoded), "{source} → {quoted}");
    }

    #[test]
    fn rand_int_stays_in_its_inclusive_range(lo in any::<i64>(), span in any::<u64>(), seed in any::<u64>()) {
        let hi = lo.saturating_add_unsigned(span);
        let t = Template::compile(&format!("{{{{ rand_int({lo}, {hi}) }}}}"), Escape::None).unwrap();
        let n: i64 = String::from_utf8(render(&t, seed)).unwrap().parse().unwrap();
        prop_assert!((lo..=hi).contains(&n));
    }

    #[test]
    fn any_condition_compiles_or_fails_and_shows_back_to_itself(
        text in prop_oneof![condition(), grammatical()],
        seed in any::<u64>(),
    ) {
        if let Ok(c) = Condition::compile(&text) {
            let vars = Vars::default();
            let mut rng = SmallRng::seed_from_u64(seed);
            c.eval(&mut RenderContext { rng: &mut rng, vars: &vars, user: 2, iteration: 3 });
            let shown = c.to_string();
            let again = Condition::compile(&shown);
            prop_assert_eq!(again.as_ref().ok(), Some(&c), "{:?} → {:?} → {:?}", text, shown, again);
        }
    }

    #[test]
    fn rand_float_stays_in_its_range(lo in -1e6f64..1e6, span in 0f64..1e6, seed in any::<u64>()) {
        let hi = lo + span;
        let (lo, hi) = (format!("{lo:.3}"), format!("{hi:.3}"));
        let source = format!("{{{{ rand_float({lo}, {hi}) }}}}");
        let t = Template::compile(&source, Escape::None).unwrap();
        let text = String::from_utf8(render(&t, seed)).unwrap();
        let x: f64 = text.parse().unwrap();
        let (lo, hi): (f64, f64) = (lo.parse().unwrap(), hi.parse().unwrap());
        prop_assert!(lo <= x && x <= hi, "{source} → {text}");
    }
}

/// Conditions made of the pieces the grammar has, in any order.
fn condition() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-z_. ]{0,6}",
        "-?[0-9]{1,3}(\\.[0-9]{1,3})?",
        "'[a-z\"\\\\]{0,4}'",
        prop::sample::select(vec![
            "(",
            ")",
            "!",
            "&&",
            "||",
            "==",
            "!=",
            "<",
            "<=",
            ">",
            ">=",
            " ",
            ",",
            "'",
            "\"",
            "true",
            "false",
            "a",
            "cookie.s",
            "data.a.b",
            "setup.t",
            "env.PATH",
            "x.y",
            "user()",
            "iteration()",
            "chance(",
            "chance(0.5)",
            "rand_int(1, 3)",
            "rand_float(0, 1)",
            "base64(",
            "urlencode(",
            "uuid()",
            "now_format('%Y')",
            "-0.0",
            "5.0",
            "99999999999999999999",
        ])
        .prop_map(str::to_string),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|p| p.concat())
}

/// Conditions built by the grammar (so most compile), with the operands' spelling,
/// spacing and parentheses varied.
fn grammatical() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        "-?[0-9]{1,4}(\\.[0-9]{1,8})?",
        "'[a-z0-9 \"\\\\]{0,4}'",
        "\"[a-z0-9' ]{0,4}\"",
        "[a-z_][a-z0-9_]{0,3}",
        prop::sample::select(vec![
            "true",
            "false",
            "cookie.sid",
            "data.a.b-c",
            "setup.t",
            "user()",
            "iteration()",
            "rand_int(1, 3)",
            "rand_float(0.5, 1.25)",
            "base64(x)",
            "urlencode('a b')",
            "rand_choice('a', \"b\")",
            "now_format('%Y')",
            "rand_string(2)",
        ])
        .prop_map(str::to_string),
    ];
    let op = prop::sample::select(vec!["==", "!=", "<", "<=", ">", ">="]);
    let leaf = prop_oneof![
        value.clone(),
        (value.clone(), op, value).prop_map(|(a, op, b)| format!("{a} {op} {b}")),
        "chance\\((0|1|0\\.[0-9]{1,3})\\)",
    ];
    leaf.prop_recursive(6, 48, 4, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} && {b}")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a}||{b}")),
            inner.clone().prop_map(|a| format!("!({a})")),
            inner.clone().prop_map(|a| format!("!{a}")),
            inner.prop_map(|a| format!("( {a} )")),
        ]
    })
}
