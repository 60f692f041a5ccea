//! Arbitrary and hostile scenario text: parsing and compiling never panic, never hold
//! more than a bounded amount of memory (alias bombs, deep nesting, huge scalars and
//! files), and what they accept stays within the limits the engine relies on (a
//! duration it can add to a clock, counts it can allocate for).

use std::time::Duration;

use proptest::prelude::*;

use super::compile::{from_text, MAX_FILE_BYTES};
use super::duration::{parse_duration, parse_think};
use super::{load, Overrides, MAX_CONCURRENCY, MAX_DURATION, MAX_RATE};
use crate::test_alloc::peak_during;
use headroom_plan::{Load, Plan, Think};

/// Most bytes compiling any scenario may hold at once: the YAML budgets allow a few
/// MiB of nodes and text, and a file is at most 4 MiB.
const MAX_HELD: usize = 48 << 20;

/// Compiles `text`, checking the memory it held, and the accepted plan's limits.
fn compile_bounded(text: &str) -> Result<Plan, String> {
    let (result, peak) = peak_during(|| from_text("s.yaml", text, &Overrides::default()));
    assert!(
        peak <= MAX_HELD,
        "held {peak} bytes for {} bytes of YAML",
        text.len()
    );
    let plan = result.map_err(|e| e.to_string())?;
    let (schedule, counts) = match &plan.load {
        Load::ArrivalRate {
            schedule,
            max_in_flight,
        } => {
            assert!(schedule.peak() <= MAX_RATE, "{schedule:?}");
            let pool = match plan.client.connection {
                headroom_client::ConnectionModel::Shared(Some(n)) => n,
                _ => 1,
            };
            (schedule, vec![*max_in_flight, pool])
        }
        Load::Users {
            schedule, think, ..
        } => {
            if let Think::Fixed(d) | Think::Uniform(_, d) = think {
                assert!(*d <= MAX_DURATION);
            }
            (schedule, vec![schedule.peak() as usize])
        }
    };
    let d = schedule.duration();
    assert!(d > Duration::ZERO && d <= MAX_DURATION, "{d:?}");
    assert!(
        counts.iter().all(|&n| n as u64 <= MAX_CONCURRENCY),
        "{counts:?}"
    );
    assert!(plan.timeout <= MAX_DURATION);
    Ok(plan)
}

/// Values as a hostile (or careless) author writes them.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        14 => (1u64..2_000).prop_map(|n| n.to_string()),
        1 => (0u64..2_000_000).prop_map(|n| n.to_string()),
        2 => prop::sample::select(vec![
            "0", "-1", "1.5", "1e308", "-1e308", ".inf", "-.inf", ".nan", "18446744073709551615",
            "18446744073709551616", "9223372036854775807", "1000001", "10000001", "null", "~",
            "[]", "{}", "\"\"", "true", "0x10", "0o7", "1_000",
        ])
        .prop_map(str::to_string),
        1 => duration_text(),
    ]
}

fn duration_text() -> impl Strategy<Value = String> {
    let unit = prop::sample::select(vec!["ns", "us", "µs", "ms", "s", "m", "h", "d", ""]);
    let valid = prop::sample::select(vec!["ms", "s", "m"]);
    prop_oneof![
        14 => ("[1-9][0-9]{0,2}", valid).prop_map(|(n, u)| format!("{n}{u}")),
        2 => ("[0-9]{1,18}(\\.[0-9]{0,3})?", unit).prop_map(|(n, u)| format!("{n}{u}")),
        2 => prop::sample::select(vec![
            "99999999999999h", "5000000000000000h", "8760h", "8760h1s", "1m30s", "1s..2s",
            "2s..1s", "..", "1.2.3s", "s",
        ])
        .prop_map(str::to_string),
    ]
}

fn template_text() -> impl Strategy<Value = String> {
    let valid = prop::sample::select(vec!["/", "/{{ seq() }}", "/t?id={{ rand_int(1, 9) }}"]);
    let hostile = prop::sample::select(vec![
        "/{{",
        "/{{ }}",
        "/{{ x }}",
        "/{{ env.NOPE_NOT_SET }}",
        "/{{ rand_int(0, 18446744073709551615) }}",
        "/{{ now_iso(-9223372036854775808) }}",
        "/{{ rand_int(-9223372036854775808, 9223372036854775807) }}",
        "/{{ now_iso(-3153600000) }}",
        "/{{ rand_choice() }}",
        "/a b",
        "/\u{0}",
        "",
    ]);
    prop_oneof![3 => valid, 1 => hostile].prop_map(|s| format!("'{s}'"))
}

/// A scenario with every section present or not, filled with hostile values.
fn scenario() -> impl Strategy<Value = String> {
    let model = prop::sample::select(vec![
        "",
        "",
        "",
        "",
        "model: users, ",
        "model: arrival-rate, ",
        "model: x, ",
    ]);
    let stage =
        (duration_text(), value()).prop_map(|(d, t)| format!("{{duration: {d}, target: {t}}}"));
    let load = (
        model,
        prop::sample::select(vec!["rate", "users"]),
        value(),
        duration_text(),
        prop::collection::vec(stage, 0..4),
        prop::option::of(("max_in_flight|connections|think|start", value())),
    )
        .prop_map(|(model, key, v, d, stages, extra)| {
            let shape = if stages.is_empty() {
                format!("{key}: {v}, duration: {d}")
            } else {
                format!("stages: [{}]", stages.join(", "))
            };
            let extra = extra.map_or(String::new(), |(k, v)| format!(", {k}: {v}"));
            format!("load: {{{model}{shape}{extra}}}\n")
        });
    let request = (
        template_text(),
        prop::option::weighted(0.3, value()),
        prop::option::weighted(0.3, duration_text()),
    )
        .prop_map(|(path, weight, timeout)| {
            let weight = weight.map_or(String::new(), |w| format!(", weight: {w}"));
            let timeout = timeout.map_or(String::new(), |t| format!(", timeout: {t}"));
            format!("  - {{path: {path}{weight}{timeout}}}\n")
        });
    let threshold = prop::sample::select(vec![
        "p95 < 500ms",
        "p95 < 500ms",
        "p95 < 500ms",
        "errors < 1%",
        "errors < 1%",
        "p95 < 9999999999999999999999999999s",
        "errors < 1",
        "rate > 1/s",
        "x",
    ]);
    (
        prop::option::weighted(0.3, duration_text()),
        load,
        prop::collection::vec(request, 1..3),
        prop::collection::vec(threshold, 0..3),
    )
        .prop_map(|(timeout, load, requests, thresholds)| {
            let defaults =
                timeout.map_or(String::new(), |t| format!("defaults: {{timeout: {t}}}\n"));
            let thresholds: Vec<String> = thresholds.iter().map(|t| format!("'{t}'")).collect();
            format!(
                "target: http://127.0.0.1:9\n{defaults}{load}thresholds: [{}]\nrequests:\n{}",
                thresholds.join(", "),
                requests.concat()
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn any_duration_text_parses_within_a_year_or_fails(text in ".{0,24}") {
        if let Ok(d) = parse_duration(&text) {
            prop_assert!(d <= MAX_DURATION);
        }
        let _ = parse_think(&text);
    }

    #[test]
    fn hostile_durations_parse_within_a_year_or_fail(text in duration_text()) {
        match parse_duration(&text) {
            Ok(d) => prop_assert!(d <= MAX_DURATION, "{text}: {d:?}"),
            Err(e) => prop_assert!(e.to_string().starts_with("expected a duration") || e.to_string().contains("at most 365 days"), "{e}"),
        }
    }

    #[test]
    fn whole_units_are_exact(n in 0u64..1_000_000, unit in 0usize..4) {
        let (suffix, d) = [("ms", Duration::from_millis(n)), ("s", Duration::from_secs(n)),
            ("m", Duration::from_secs(n * 60)), ("us", Duration::from_micros(n))][unit];
        let got = parse_duration(&format!("{n}{suffix}"));
        if d <= MAX_DURATION {
            prop_assert_eq!(got, Ok(d));
        } else {
            prop_assert!(got.is_err());
        }
    }

    #[test]
    fn any_text_is_a_scenario_or_an_error(text in "(.|\n){0,200}") {
        let _ = compile_bounded(&text);
    }

    #[test]
    fn hostile_scenarios_compile_within_limits_or_fail(text in scenario()) {
        let _ = compile_bounded(&text);
    }
}

/// A request whose `json` body holds `body`, for the YAML tests below.
fn with_json(body: &str) -> String {
    format!("target: http://127.0.0.1:9\nload: {{rate: 1, duration: 1s}}\nrequests:\n  - path: /\n    json:\n{body}")
}

#[test]
fn an_alias_bomb_is_stopped_by_the_budget() {
    // Nine levels of nine aliases: 9^9 (387 million) nodes from 600 bytes.
    let mut body = String::from("      a: &a [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]\n");
    let mut prev = 'a';
    for level in 'b'..='i' {
        let refs = vec![format!("*{prev}"); 9].join(", ");
        body.push_str(&format!("      {level}: &{level} [{refs}]\n"));
        prev = level;
    }
    let err = compile_bounded(&with_json(&body)).unwrap_err();
    assert!(err.contains("budget breached"), "{err}");
}

#[test]
fn aliases_of_a_large_scalar_are_stopped_by_the_text_budget() {
    // A 1 MiB string replayed 729 times would be 729 MiB of JSON strings.
    let big = "x".repeat(1 << 20);
    let body = format!(
        "      a: &a \"{big}\"\n      l: &l [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n      m: &m [*l, *l, *l, *l, *l, *l, *l, *l, *l]\n      n: [*m, *m, *m, *m, *m, *m, *m, *m, *m]\n"
    );
    let err = compile_bounded(&with_json(&body)).unwrap_err();
    assert!(err.contains("budget breached"), "{err}");
}

#[test]
fn deep_nesting_is_refused_in_flow_and_block_style() {
    let flow = format!("      a: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
    assert!(compile_bounded(&with_json(&flow)).is_err());
    let block: String = (0..200)
        .map(|i| format!("{}k:\n", " ".repeat(6 + 2 * i)))
        .collect();
    assert!(compile_bounded(&with_json(&block)).is_err());
}

#[test]
fn counts_and_rates_past_the_limits_are_refused_naming_them() {
    for (load, says) in [
        (
            "{users: 18446744073709551615, duration: 1s}",
            "at most 1000000 users",
        ),
        ("{users: 1000001, duration: 1s}", "at most 1000000 users"),
        ("{rate: 1e308, duration: 1s}", "at most 10000000 per second"),
        (
            "{rate: 1, duration: 1s, max_in_flight: 99999999999}",
            "at most 1000000 in flight",
        ),
        (
            "{rate: 1, duration: 1s, connections: 1000001}",
            "at most 1000000 connections",
        ),
        (
            "{stages: [{duration: 1s, target: 1e12}]}",
            "load.stages[0].target",
        ),
        ("{rate: 1, duration: 99999999999999h}", "at most 365 days"),
        (
            "{stages: [{duration: 8000h, target: 1}, {duration: 8000h, target: 1}]}",
            "365 days",
        ),
    ] {
        let text = format!("target: http://127.0.0.1:9\nload: {load}\nrequests: [{{path: /}}]\n");
        let err = compile_bounded(&text).unwrap_err();
        assert!(err.contains(says), "{load}: {err}");
    }
    let flags = Overrides {
        url: Some("http://127.0.0.1:9".into()),
        users: Some(u64::MAX),
        ..Overrides::default()
    };
    let err = load(None, &flags).unwrap_err().to_string();
    assert!(
        err.contains("--users: expected at most 1000000 users"),
        "{err}"
    );
    let flags = Overrides {
        url: Some("http://127.0.0.1:9".into()),
        rate: Some(1e300),
        ..Overrides::default()
    };
    assert!(load(None, &flags)
        .unwrap_err()
        .to_string()
        .contains("--rate"));
    // At the limits, accepted.
    let text = "target: http://127.0.0.1:9\nload: {users: 1000000, duration: 8760h}\nrequests: [{path: /}]\n";
    compile_bounded(text).unwrap();
}

#[test]
fn a_file_larger_than_the_limit_is_not_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.yaml");
    let comment = format!("# {}\n", "x".repeat(1 << 16));
    let text: String =
        std::iter::repeat_n(comment.as_str(), (MAX_FILE_BYTES >> 16) as usize + 2).collect();
    std::fs::write(&path, format!("target: http://127.0.0.1:9\n{text}")).unwrap();
    let (r, peak) = peak_during(|| load(Some(&path), &Overrides::default()));
    let err = r.unwrap_err().to_string();
    assert!(err.contains("larger than 4 MiB"), "{err}");
    assert!(peak <= (MAX_FILE_BYTES as usize) * 3, "held {peak}");
    // A device that never ends is refused the same way.
    let err = load(
        Some(std::path::Path::new("/dev/zero")),
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("larger than 4 MiB") || err.contains("cannot read"),
        "{err}"
    );
}
