//! `workloads:` (several loads at once) and `iterations:` (loads that count their
//! iterations): what they compile into, and what is refused.

use std::time::Duration;

use super::compile::{from_text, from_text_for};
use super::*;
use headroom_plan::{Iterations, Load, Schedule};

const TARGET: &str = "target: http://127.0.0.1:4000\n";

/// Two workloads: users from the start, arrivals from 5 s.
const TWO: &str = "workloads:
  - name: players
    load: {model: users, users: 20, duration: 30s}
    flows: [{name: play, steps: [{request: {name: list, path: /games}}, {request: {name: join, method: POST, path: /join}}]}]
    thresholds: [\"p95 < 300ms\"]
  - name: hammer
    load: {model: arrival-rate, rate: 200, duration: 30s}
    start: 5s
    requests: [{path: /api/games}]
";

fn compile(yaml: &str, overrides: &Overrides, search: bool) -> Result<Plan, String> {
    from_text_for("scenario.yaml", yaml, overrides, search).map_err(|e| e.to_string())
}

fn plan(yaml: &str) -> Plan {
    compile(&format!("{TARGET}{yaml}"), &Overrides::default(), false).unwrap()
}

/// The error of `yaml` (after the target line) for a run, which must contain `parts`.
fn refused(yaml: &str, parts: &[&str]) {
    let err = match from_text(
        "scenario.yaml",
        &format!("{TARGET}{yaml}"),
        &Overrides::default(),
    ) {
        Ok(_) => panic!("expected an error for:\n{yaml}"),
        Err(e) => e.to_string(),
    };
    for part in parts {
        assert!(err.contains(part), "want {part:?} in: {err}");
    }
}

#[test]
fn each_workload_keeps_its_items_load_start_and_rules() {
    let p = plan(TWO);
    let names: Vec<&str> = p.workloads.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["players", "hammer"]);
    let (players, hammer) = (&p.workloads[0], &p.workloads[1]);
    assert_eq!((players.items.len(), hammer.items.len()), (1, 1));
    assert_eq!(p.items.len(), 2, "the plan holds every workload's items");
    let named = |w: &headroom_plan::WorkloadPlan| -> Vec<String> {
        w.names.iter().map(|&id| p.names[id].clone()).collect()
    };
    assert_eq!(named(players), ["list", "join"]);
    assert_eq!(named(hammer), ["GET /api/games"]);
    assert_eq!(players.thresholds.len(), 1);
    assert_eq!(
        (players.start, hammer.start),
        (Duration::ZERO, Duration::from_secs(5))
    );
    assert!(matches!(players.load, Some(Load::Users { .. })));
    assert!(matches!(hammer.load, Some(Load::ArrivalRate { .. })));
    // The run lasts until the last workload ends; the pool is shared by the arrivals.
    assert_eq!(p.duration(), Duration::from_secs(35));
    assert_eq!(p.loads().count(), 2);
    assert_eq!(
        p.client.connection,
        headroom_client::ConnectionModel::Shared(None)
    );
}

#[test]
fn workloads_replace_the_top_level_load_requests_and_flows() {
    let load = "load: {rate: 10, duration: 1s}\n";
    refused(
        &format!("{load}{TWO}"),
        &["load: not allowed with `workloads`"],
    );
    let requests = "requests: [{path: /}]\n";
    refused(
        &format!("{requests}{TWO}"),
        &["requests: not allowed with `workloads`"],
    );
    let flows = "flows: [{name: f, steps: [{think: 1s}]}]\n";
    refused(
        &format!("{flows}{TWO}"),
        &["flows: not allowed with `workloads`"],
    );
}

#[test]
fn a_request_name_in_two_workloads_is_refused_naming_both() {
    let yaml = "workloads:
  - {name: a, load: {rate: 1, duration: 1s}, requests: [{name: list, path: /a}]}
  - {name: b, load: {rate: 1, duration: 1s}, requests: [{name: list, path: /b}]}
";
    refused(
        yaml,
        &[
            "workloads[1]",
            "\"list\"",
            "workloads \"a\" and \"b\"",
            "unique",
        ],
    );
    // Within one workload, requests may share a name (and its figures).
    let same = "workloads:
  - {name: a, load: {rate: 1, duration: 1s}, requests: [{name: x, path: /a}, {name: x, path: /b}]}
";
    assert_eq!(plan(same).workloads[0].names.len(), 1);
}

#[test]
fn a_workload_is_checked_key_by_key() {
    let each = |w: &str| format!("workloads:\n  - {w}\n");
    // Unknown keys, as everywhere.
    refused(
        &each("{name: a, load: {rate: 1, duration: 1s}, requests: [{path: /}], wieght: 2}"),
        &["unknown field `wieght`"],
    );
    // A start is a duration.
    refused(
        &each("{name: a, load: {rate: 1, duration: 1s}, requests: [{path: /}], start: soon}"),
        &["workloads[0].start", "expected a duration"],
    );
    refused(
        &each("{name: a, load: {rate: 1, duration: 1s}, requests: [{path: /}], start: 5}"),
        &["workloads[0].start", "bare number 5"],
    );
    // Its load is read as a `load` section, errors named by their path.
    refused(
        &each("{name: a, load: {rate: 0, duration: 1s}, requests: [{path: /}]}"),
        &["workloads[0].load.rate: expected a number > 0"],
    );
    refused(
        &each("{name: a, load: {rate: 1, duration: 1s}}"),
        &["workloads[0].requests", "at least one entry"],
    );
    refused(
        &each("{name: ' ', load: {rate: 1, duration: 1s}, requests: [{path: /}]}"),
        &["workloads[0].name: expected a name"],
    );
    let twice = "workloads:
  - {name: a, load: {rate: 1, duration: 1s}, requests: [{name: x, path: /}]}
  - {name: a, load: {rate: 1, duration: 1s}, requests: [{name: y, path: /}]}
";
    refused(twice, &["workloads[1].name", "named twice"]);
    // Its rules judge its own requests: no window, no run-wide figure, its names only.
    let rule = |r: &str| {
        each(&format!(
            "{{name: a, load: {{rate: 1, duration: 1s}}, requests: [{{name: x, path: /}}], thresholds: [\"{r}\"]}}"
        ))
    };
    refused(
        &rule("p95 < 1s over 5s"),
        &["workloads[0].thresholds[0]", "over D"],
    );
    refused(&rule("dropped == 0"), &["dropped figures are the run's"]);
    refused(
        &rule("y.p95 < 1s"),
        &[
            "workloads[0].thresholds[0]",
            "`y` is not a request name (known: x)",
        ],
    );
    plan(&rule("x.p95 < 1s"));
}

#[test]
fn a_run_refuses_the_flags_that_shape_one_load() {
    let yaml = format!("{TARGET}{TWO}");
    for o in [
        Overrides {
            rate: Some(5.0),
            ..Overrides::default()
        },
        Overrides {
            max_in_flight: Some(9),
            ..Overrides::default()
        },
    ] {
        let err = compile(&yaml, &o, false).unwrap_err();
        assert!(
            err.contains("players, hammer") && err.contains("own `load`"),
            "{err}"
        );
    }
    // `--duration` sets the length of each constant load.
    let short = Overrides {
        duration: Some(Duration::from_secs(1)),
        ..Overrides::default()
    };
    let p = compile(&yaml, &short, false).unwrap();
    let lengths: Vec<Duration> = p.loads().map(|(l, _)| l.duration()).collect();
    assert_eq!(lengths, [Duration::from_secs(1); 2]);
    assert_eq!(p.duration(), Duration::from_secs(6), "hammer starts at 5 s");
}

#[test]
fn a_search_varies_the_workload_it_is_given_and_names_them_when_none_is() {
    let yaml = format!("{TARGET}{TWO}");
    let find = |workload: Option<&str>| Overrides {
        fallback_rate: Some(1.0),
        workload: workload.map(String::from),
        ..Overrides::default()
    };
    let err = compile(&yaml, &find(None), true).unwrap_err();
    assert!(
        err.contains("--workload NAME") && err.contains("players, hammer"),
        "{err}"
    );
    let err = compile(&yaml, &find(Some("nope")), true).unwrap_err();
    assert!(
        err.contains("\"nope\"") && err.contains("players, hammer"),
        "{err}"
    );
    // The searched workload's load becomes the plan's; it keeps none of its own.
    let p = compile(&yaml, &find(Some("hammer")), true).unwrap();
    assert!(matches!(p.load, Load::ArrivalRate { .. }));
    assert!(p.workloads[1].load.is_none() && p.workloads[0].load.is_some());
    let p = compile(&yaml, &find(Some("players")), true).unwrap();
    assert!(matches!(p.load, Load::Users { .. }) && p.workloads[0].load.is_none());
    // `find --users` forces the searched workload's model, not the others'.
    let users = Overrides {
        users: Some(1),
        ..find(Some("hammer"))
    };
    let p = compile(&yaml, &users, true).unwrap();
    assert!(matches!(p.load, Load::Users { .. }));
    assert!(matches!(p.workloads[0].load, Some(Load::Users { .. })));
    // One workload needs no flag; a run never takes it.
    let one = format!(
        "{TARGET}workloads: [{{name: a, load: {{rate: 1, duration: 1s}}, requests: [{{path: /}}]}}]\n"
    );
    assert!(compile(&one, &find(None), true).unwrap().workloads[0]
        .load
        .is_none());
    let err = compile(&one, &find(Some("a")), false).unwrap_err();
    assert!(err.contains("--workload"), "{err}");
}

#[test]
fn iterations_count_a_users_load_and_bound_its_duration() {
    let head = "requests: [{path: /}]\n";
    let load = |l: &str| plan(&format!("{head}load: {l}\n")).load;
    let Load::Users {
        schedule,
        iterations,
        ..
    } = load("{model: users, users: 4, iterations: {per_user: 5}}")
    else {
        panic!()
    };
    assert_eq!(iterations, Some(Iterations::PerUser(5)));
    assert_eq!(schedule, Schedule::constant(4.0, ITERATIONS_BOUND));
    assert_eq!(ITERATIONS_BOUND, Duration::from_secs(600));
    // `iterations` alone implies the users model; a duration stays the bound.
    let shared = load("{users: 3, iterations: {shared: 17}, duration: 20s}");
    assert_eq!(shared.iterations(), Some(Iterations::Shared(17)));
    assert_eq!(shared.duration(), Duration::from_secs(20));
    assert_eq!(load("{users: 3, duration: 2s}").iterations(), None);
}

#[test]
fn iterations_are_refused_where_they_mean_nothing() {
    let with =
        |l: &str, parts: &[&str]| refused(&format!("requests: [{{path: /}}]\nload: {l}\n"), parts);
    with(
        "{model: arrival-rate, rate: 5, duration: 1s, iterations: {shared: 3}}",
        &["load.iterations: not allowed with `model: arrival-rate`"],
    );
    with(
        "{users: 2, iterations: {per_user: 0}}",
        &["load.iterations.per_user: expected a positive integer, found 0"],
    );
    with(
        "{users: 2, iterations: {per_user: 2, shared: 3}}",
        &["load.iterations", "not both"],
    );
    with(
        "{users: 2, iterations: 5}",
        &[
            "load.iterations",
            "expected {per_user: K} or {shared: K}, found 5",
        ],
    );
    with("{users: 2, iterations: {each: 5}}", &["unknown key `each`"]);
    with("{users: 2, iterations: {}}", &["empty map"]);
    with(
        "{model: users, stages: [{duration: 1s, target: 2}], iterations: {shared: 3}}",
        &["load.iterations", "not `stages`"],
    );
}
