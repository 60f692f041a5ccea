//! Hostile conditions and placeholders: each is refused quickly with a clear error, on
//! a small stack (no recursion deeper than the nesting limit), holding memory within a
//! bound (counted by the test allocator).

use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::*;

#[path = "../../../tests/support/alloc.rs"]
mod alloc;

const MIB: usize = 1 << 20;

/// Runs `f` on a thread with a 256 KiB stack, far less than a parser recursing once
/// per character of these inputs would need.
fn on_small_stack<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

/// Compiles the condition `source`: its error, the most bytes held at once, the time.
fn refused(source: String) -> (String, usize, Duration) {
    on_small_stack(move || {
        let start = Instant::now();
        let (result, peak) = alloc::peak_during(|| Condition::compile(&source));
        let err = result.expect_err("refused").to_string();
        (err, peak, start.elapsed())
    })
}

#[test]
fn oversized_conditions_are_refused_before_parsing() {
    let sources = [
        "(".repeat(100_000),
        "!".repeat(100_000),
        format!("x == \"{}\"", "a".repeat(MIB)),
        format!("x == \"{}", "\\".repeat(MIB)),
        "a || ".repeat(100_000) + "a",
        "a".repeat(MIB),
    ];
    for source in sources {
        let len = source.len();
        let (err, peak, took) = refused(source);
        assert!(
            err.contains(&format!("a condition is at most 4096 bytes, found {len}")),
            "{err}"
        );
        assert!(err.len() < 400, "{err}");
        assert!(peak < 4096, "held {peak} bytes");
        assert!(took < Duration::from_secs(1), "{took:?}");
    }
}

#[test]
fn nesting_beyond_32_is_refused_within_the_size_limit() {
    let sources = [
        "(".repeat(4000),
        format!("{}a{}", "(".repeat(2000), ")".repeat(2000)),
        format!("{}a", "!".repeat(4000)),
        format!("{}a", "!(".repeat(2000)),
        format!("{}x{} == 1", "base64(".repeat(500), ")".repeat(500)),
        format!("x == {}1{}", "rand_int(".repeat(300), ")".repeat(300)),
        format!("{}a", "(!".repeat(17)),
    ];
    for source in sources {
        let (err, peak, took) = refused(source);
        assert!(err.contains("nested more than 32 levels deep"), "{err}");
        assert!(peak < 64 * 1024, "held {peak} bytes");
        assert!(took < Duration::from_secs(1), "{took:?}");
    }
}

#[test]
fn nesting_up_to_32_compiles_and_evaluates() {
    let c = on_small_stack(|| {
        let parens = format!("{}a{}", "(".repeat(32), ")".repeat(32));
        let nots = format!("{}a", "!".repeat(32));
        let mixed = format!("{}a{}", "!(".repeat(16), ")".repeat(16));
        let calls = format!("{}'x'{} != ''", "base64(".repeat(4), ")".repeat(4));
        let vars = Vars::default();
        let mut rng = SmallRng::seed_from_u64(0);
        [parens, nots, mixed, calls]
            .iter()
            .map(|source| {
                let c = Condition::compile(source).unwrap_or_else(|e| panic!("{e}"));
                c.eval(&mut RenderContext {
                    rng: &mut rng,
                    vars: &vars,
                    user: 1,
                    iteration: 0,
                })
            })
            .collect::<Vec<bool>>()
    });
    assert_eq!(c, [false, false, false, true]);
    let deeper = format!("{}a{}", "(".repeat(33), ")".repeat(33));
    assert!(Condition::compile(&deeper).is_err());
    let nots = format!("{}a", "!".repeat(33));
    assert!(Condition::compile(&nots).is_err());
}

#[test]
fn long_flat_chains_stay_flat() {
    // Some 800 operands in 4 KiB: a list, not a tree 800 deep.
    let source = format!("{}a", "b || ".repeat(818));
    assert!(source.len() <= 4096);
    let c = Condition::compile(&source).unwrap();
    let mut vars = Vars::default();
    vars.set("a", "1".into());
    let result = on_small_stack(move || {
        let mut rng = SmallRng::seed_from_u64(0);
        let shown = c.to_string();
        let ok = c.eval(&mut RenderContext {
            rng: &mut rng,
            vars: &vars,
            user: 1,
            iteration: 0,
        });
        (ok, shown == source)
    });
    assert_eq!(result, (true, true));
}

#[test]
fn unterminated_strings_are_refused() {
    for source in [
        "\"abc".to_string(),
        "x == 'abc".to_string(),
        "x == \"abc\\".to_string(),
        "x == \"ab\\\"".to_string(),
        format!("x == \"{}", "é".repeat(1500)),
        "'".to_string(),
    ] {
        let (err, _, took) = refused(source.clone());
        assert!(err.contains("unterminated string"), "{source}: {err}");
        assert!(took < Duration::from_secs(1));
    }
}

/// Compiles the template `source`: its error, the most bytes held at once, the time.
fn template_refused(source: String) -> (String, usize, Duration) {
    on_small_stack(move || {
        let start = Instant::now();
        let (result, peak) = alloc::peak_during(|| Template::compile(&source, Escape::Json));
        let err = result.expect_err("refused").to_string();
        (err, peak, start.elapsed())
    })
}

#[test]
fn hostile_placeholders_are_refused_quickly_on_a_small_stack() {
    let n = 100_000;
    let cases = [
        (
            format!("{{{{ {}x{} }}}}", "base64(".repeat(n), ")".repeat(n)),
            "nested more than 32 levels deep",
        ),
        (
            format!("{{{{ {}1{} }}}}", "rand_int(".repeat(n), ")".repeat(n)),
            "nested more than 32 levels deep",
        ),
        (
            format!("{{{{ {} }}}}", "(".repeat(n)),
            "expected a value, found `(`",
        ),
        (
            format!("{{{{ {} }}}}", "!".repeat(n)),
            "expected a value, found `!`",
        ),
        (
            format!("{{{{ \"{} }}}}", "a".repeat(MIB)),
            "unterminated string",
        ),
        (
            format!("{{{{ urlencode(\"{}) }}}}", "\\\\".repeat(MIB / 2)),
            "unterminated string",
        ),
        (
            format!("{{{{ rand_choice({}) }}}}", "'a',".repeat(n)),
            "expected an argument after `,`",
        ),
    ];
    for (source, want) in cases {
        let len = source.len();
        let (err, peak, took) = template_refused(source);
        assert!(
            err.contains(want),
            "{}",
            err.chars().take(200).collect::<String>()
        );
        // Linear in the source: the error quotes the placeholder, and 100,000
        // arguments are parsed before the missing one is found.
        assert!(peak < 32 * len, "held {peak} bytes for {len}");
        assert!(took < Duration::from_secs(2), "{took:?}");
    }
}

#[test]
fn a_large_constant_is_encoded_once_in_linear_space() {
    let text = "é".repeat(MIB / 2);
    let source = format!("{{{{ urlencode(base64(\"{text}\")) }}}}");
    let (t, peak) = alloc::peak_during(|| Template::compile(&source, Escape::Json).unwrap());
    let out = t.as_static().unwrap();
    assert!(out.len() >= MIB * 4 / 3, "{}", out.len());
    assert!(peak < 16 * MIB, "held {peak} bytes");
    let err = Template::compile(
        "{{ base64(urlencode(base64(urlencode(base64('x'))))) }}",
        Escape::None,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("at most 4 base64/urlencode"),
        "{err}"
    );
}
