//! Arbitrary and hostile threshold text: parsing never panics, and what it accepts has
//! a finite, non-negative limit in the metric's unit.

use proptest::prelude::*;

use super::{Metric, Threshold};

/// Numbers as a hostile user writes them: empty, dots, hundreds of digits.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..1_000_000).prop_map(|n| n.to_string()),
        (0.0f64..1e6).prop_map(|x| x.to_string()),
        "[0-9.]{0,12}",
        (300usize..420).prop_map(|n| "9".repeat(n)),
        Just("18446744073709551615".to_string()),
    ]
}

fn rule() -> impl Strategy<Value = String> {
    let metric = prop::sample::select(vec![
        "p50",
        "p90",
        "p95",
        "p99",
        "p99.9",
        "min",
        "avg",
        "max",
        "errors",
        "error_rate",
        "rate",
        "dropped",
        "P95",
        "p9",
        "xp95",
    ]);
    let scope = prop::option::of("[a-z_ .]{0,6}");
    let op = prop::sample::select(vec!["<", "<=", ">", ">=", "==", "!=", "<<", "=", "=>"]);
    let unit = prop::sample::select(vec!["", "ms", "s", "us", "µs", "%", "/s", "h", " ms"]);
    (scope, metric, " *", op, " *", number(), unit).prop_map(|(scope, m, s1, op, s2, n, u)| {
        let scope = scope.map_or(String::new(), |s| format!("{s}."));
        format!("{scope}{m}{s1}{op}{s2}{n}{u}")
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn any_text_parses_or_fails_without_panicking(text in ".{0,64}") {
        let _ = Threshold::parse(&text);
    }

    #[test]
    fn an_accepted_rule_has_a_finite_limit_in_its_unit(text in rule()) {
        if let Ok(t) = Threshold::parse(&text) {
            prop_assert!(t.limit.is_finite() && t.limit >= 0.0, "{text}: {t:?}");
            if t.metric == Metric::Dropped {
                prop_assert_eq!(t.limit.fract(), 0.0);
            }
        }
    }

    #[test]
    fn latency_in_seconds_is_read_in_ms(n in 0u32..1_000_000) {
        let t = Threshold::parse(&format!("p95 < {n}s")).unwrap();
        prop_assert_eq!(t.limit, f64::from(n) * 1000.0);
    }
}

#[test]
fn a_limit_that_overflows_once_scaled_is_refused() {
    // 1e308 is a finite f64; in ms (× 1000) it is not. It used to be accepted as inf.
    let huge = format!("1{}", "0".repeat(308));
    let err = Threshold::parse(&format!("p95 < {huge}s"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("too large"), "{err}");
    assert!(Threshold::parse(&format!("rate > {huge}/s")).is_ok());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Hostile text after `over`: never a panic, and an accepted window is 1s to a week.
    #[test]
    fn any_window_parses_or_fails_without_panicking(text in ".{0,40}", n in number()) {
        for rule in [format!("p95 < 5ms over {text}"), format!("errors < 1% over {n}s")] {
            if let Ok(t) = Threshold::parse(&rule) {
                let w = t.window_s.unwrap_or(1);
                prop_assert!((1..=super::parse::MAX_WINDOW_S).contains(&w), "{rule}: {t:?}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Any text after `checks` and any name in braces: never a panic, and an accepted
    /// rule is a percentage from 0 to 100 with the name as written, trimmed.
    #[test]
    fn any_checks_rule_parses_or_fails_without_panicking(
        tail in ".{0,40}",
        name in "[^}]{0,40}",
        op in prop::sample::select(vec!["<", "<=", ">", ">=", "==", "=", "!="]),
        n in number(),
        unit in prop::sample::select(vec!["%", "", " %", "/s", "ms"]),
    ) {
        let _ = Threshold::parse(&format!("checks{tail}"));
        let rule = format!("checks{{{name}}} {op} {n}{unit}");
        if let Ok(t) = Threshold::parse(&rule) {
            prop_assert_eq!(t.metric, Metric::Checks);
            prop_assert!((0.0..=100.0).contains(&t.limit), "{rule}: {t:?}");
            prop_assert_eq!(t.scope.as_deref(), Some(name.trim()));
        }
    }
}
