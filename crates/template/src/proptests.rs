//! Arbitrary and hostile template sources: compiling never panics, and a template that
//! compiles renders without panicking into output bounded by its source's length.

use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::{Escape, RenderContext, Template, Vars};

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
            let bound = GROWTH * text.len() + env_allowance(&text);
            prop_assert!(out.len() <= bound, "{text:?} → {} bytes", out.len());
        }
    }

    #[test]
    fn hostile_sources_render_within_a_bound(text in source(), esc in escape(), seed in any::<u64>()) {
        if let Ok(t) = Template::compile(&text, esc) {
            let out = render(&t, seed);
            let bound = GROWTH * text.len() + env_allowance(&text);
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
}
