//! Issue 28, item 6: `headroom check` prints the plan a scenario compiles to without
//! contacting its target, and fails on a broken or hostile scenario exactly as `run`
//! does; `headroom completions` and `headroom man` are generated from the same flags.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::{assert_exit, run_headroom, stderr, stdout};

const LIMIT: Duration = Duration::from_secs(60);

/// Every command of the command line, as `--help` lists them.
const COMMANDS: [&str; 15] = [
    "run",
    "find",
    "demo",
    "target",
    "sink",
    "runs",
    "compare",
    "report",
    "schema",
    "check",
    "convert",
    "shard",
    "cluster",
    "completions",
    "man",
];

/// Writes `text` to `name` in `dir`; returns its path as text.
fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// A listener on a free loopback port that accepts nothing by itself: a connection
/// made to it waits in its backlog, where [`assert_untouched`] finds it.
fn silent_target() -> TcpListener {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    listener
}

/// Fails if anything connected to `listener`.
#[track_caller]
fn assert_untouched(listener: &TcpListener) {
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        Err(e) => panic!("accept: {e}"),
        Ok((_, peer)) => panic!("check connected to the target (from {peer})"),
    }
}

/// A scenario with two requests, a flow and three thresholds against `target`.
fn scenario(target: &str) -> String {
    format!(
        r#"name: shop
target: {target}/api
load: {{rate: 25, duration: 3s, max_in_flight: 400}}
thresholds: ["p95 < 250ms", "errors < 2%", "browse.p99 < 1s"]
requests:
  - {{name: browse, weight: 3, path: "/items?page={{{{ rand_int(1, 9) }}}}"}}
  - {{name: buy, method: POST, path: /orders, json: {{item: 7}}}}
flows:
  - name: checkout
    steps:
      - request: {{name: add, method: POST, path: /cart}}
        capture: {{cart: "$.id"}}
      - think: 200ms..400ms
      - request: {{name: pay, method: POST, path: "/cart/{{{{ cart }}}}/pay"}}
"#
    )
}

#[test]
fn a_valid_scenario_prints_its_plan_and_contacts_nothing() {
    let listener = silent_target();
    let target = format!("http://{}", listener.local_addr().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "shop.yaml", &scenario(&target));

    let out = run_headroom(["check", &file], LIMIT);
    assert_exit(&out, 0);
    let text = stdout(&out);
    for shown in [
        format!("shop ({file})"),
        format!("target    {target}/api"),
        "arrival rate: 25/s for 3s".to_string(),
        "at most 400 in flight".to_string(),
        "/items?page={{ rand_int(1, 9) }}".to_string(),
        "60.0%".to_string(),
        "checkout".to_string(),
        "1. add".to_string(),
        "captures cart".to_string(),
        "2. think".to_string(),
        "200ms..400ms".to_string(),
        "/cart/{{ cart }}/pay".to_string(),
        "p95 < 250ms".to_string(),
        "browse.p99 < 1s".to_string(),
    ] {
        assert!(text.contains(&shown), "{shown:?} not in:\n{text}");
    }
    let buy = text.lines().find(|l| l.starts_with("buy ")).unwrap();
    assert!(
        buy.contains("POST") && buy.contains("/orders") && buy.contains("20.0%"),
        "{buy}"
    );

    let out = run_headroom(["check", "--format", "json", &file], LIMIT);
    assert_exit(&out, 0);
    let plan: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(plan["target"], format!("{target}/api"));
    let names: Vec<&str> = plan["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["browse", "buy", "checkout"]);
    assert_eq!(plan["items"][0]["method"], "GET");
    assert_eq!(plan["items"][0]["weight"], 3);
    assert_eq!(plan["items"][2]["kind"], "flow");
    assert_eq!(plan["items"][2]["steps"][1]["kind"], "think");
    assert_eq!(plan["items"][2]["steps"][2]["name"], "pay");
    assert_eq!(plan["load"]["model"], "arrival-rate");
    assert_eq!(plan["load"]["peak"], 25.0);
    assert_eq!(plan["load"]["duration_s"], 3.0);
    assert_eq!(plan["thresholds"][0], "p95 < 250ms");

    // Not even the plan's own connection settings reached out to the target.
    assert_untouched(&listener);
}

#[test]
fn a_closed_model_shows_its_stages_and_think_time() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "users.yaml",
        "target: http://127.0.0.1:9\nload:\n  model: users\n  start: 5\n  stages: [{duration: 30s, target: 50}, {duration: 1m, target: 50}]\n  think: 2s\nrequests: [{path: /}]\n",
    );
    let out = run_headroom(["check", &file], LIMIT);
    assert_exit(&out, 0);
    let text = stdout(&out);
    for shown in [
        "users: from 5 users in 2 stages, 1m 30s in all (peak 50 users)",
        "ramp to 50 users over 30s",
        "hold 50 users for 1m",
        "think 2s after each iteration",
        "thresholds: none",
    ] {
        assert!(text.contains(shown), "{shown:?} not in:\n{text}");
    }
}

#[test]
fn workloads_and_counted_iterations_are_outlined_in_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "workloads.yaml",
        "target: http://127.0.0.1:9\nworkloads:
  - {name: players, load: {users: 4, iterations: {per_user: 5}}, requests: [{name: list, path: /}], thresholds: [\"p95 < 300ms\"]}
  - {name: hammer, load: {rate: 200, duration: 30s}, start: 5s, requests: [{name: hit, path: /h}]}
",
    );
    let out = run_headroom(["check", &file], LIMIT);
    assert_exit(&out, 0);
    let text = stdout(&out);
    for shown in [
        "workload players (starts at 0s)",
        "users: 4 users for 10m",
        "each user stops after 5 iterations",
        "thresholds: p95 < 300ms",
        "workload hammer (starts at 5s)",
        "arrival rate: 200/s for 30s",
    ] {
        assert!(text.contains(shown), "{shown:?} not in:\n{text}");
    }
    let out = run_headroom(["check", "--format", "json", &file], LIMIT);
    assert_exit(&out, 0);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let w = &json["workloads"];
    assert_eq!(w[0]["name"], "players");
    assert_eq!(
        w[0]["load"]["iterations"],
        serde_json::json!({"per_user": 5})
    );
    assert_eq!(w[0]["items"][0]["name"], "list");
    assert_eq!(w[1]["start_s"], 5.0);
    assert_eq!(w[1]["load"]["model"], "arrival-rate");
    assert!(json.get("load").is_none() && json["items"].as_array().unwrap().is_empty());
}

#[test]
fn a_broken_scenario_fails_with_runs_own_located_error() {
    let listener = silent_target();
    let target = format!("http://{}", listener.local_addr().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let head = format!("target: {target}\nload: {{rate: 5, duration: 1s}}\n");
    for (name, text, located, says) in [
        (
            "yaml.yaml",
            format!("{head}requests: [{{path: /\n"),
            ":3:12: ",
            "requests: unclosed bracket",
        ),
        (
            "key.yaml",
            format!("{head}requests:\n  - {{path: /, wieght: 2}}\n"),
            ":4:15: ",
            "requests[0].wieght: unknown field `wieght`",
        ),
        (
            "threshold.yaml",
            format!("{head}thresholds: [\"p95 <<< 5ms\"]\nrequests: [{{path: /}}]\n"),
            ":3:14: ",
            "thresholds[0]: threshold \"p95 <<< 5ms\"",
        ),
    ] {
        let file = write(dir.path(), name, &text);
        let checked = run_headroom(["check", &file], LIMIT);
        assert_exit(&checked, 2);
        let error = stderr(&checked);
        assert!(
            error.starts_with(&format!("error: {file}{located}{says}")),
            "{name}: {error}"
        );
        assert!(stdout(&checked).is_empty(), "{name}: {}", stdout(&checked));
        // `run` stops on the same words, before it would send anything.
        let ran = run_headroom(["run", &file, "--quiet"], LIMIT);
        assert_exit(&ran, 2);
        assert_eq!(stderr(&ran), error, "{name}");
    }
    assert_untouched(&listener);
}

#[test]
fn hostile_scenarios_are_refused_within_the_loaders_limits() {
    let dir = tempfile::tempdir().unwrap();
    let head = "target: http://127.0.0.1:9\nload: {rate: 1, duration: 1s}\nrequests:\n  - path: /\n    json:\n";
    // Larger than the 4 MiB a scenario may have: refused before it is read whole.
    let line = format!("# {}\n", "x".repeat(1 << 16));
    let huge = write(dir.path(), "huge.yaml", &line.repeat(70));
    // Deeper than the parser's depth budget, and far deeper (stopped by the first
    // limit it meets).
    let nested = |depth: usize| {
        format!(
            "{head}      a: {}{}\n",
            "[".repeat(depth),
            "]".repeat(depth)
        )
    };
    let deep = write(dir.path(), "deep.yaml", &nested(60));
    let deeper = write(dir.path(), "deeper.yaml", &nested(100_000));
    // Nine levels of nine aliases: 387 million nodes from a few hundred bytes.
    let mut bomb = format!("{head}      a: &a [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]\n");
    let mut prev = 'a';
    for level in 'b'..='i' {
        let refs = vec![format!("*{prev}"); 9].join(", ");
        bomb.push_str(&format!("      {level}: &{level} [{refs}]\n"));
        prev = level;
    }
    let bomb = write(dir.path(), "bomb.yaml", &bomb);
    for (file, says) in [
        (&huge, "the scenario is larger than 4 MiB"),
        (&deep, "budget breached: Depth"),
        (&deeper, "requests[0].json.a"),
        (&bomb, "budget breached"),
    ] {
        let out = run_headroom(["check", file], LIMIT);
        assert_exit(&out, 2);
        let error = stderr(&out);
        assert!(
            error.starts_with(&format!("error: {file}")) && error.contains(says),
            "{file}: {error}"
        );
    }
}

#[test]
fn completions_name_every_command_in_each_shell() {
    let script = |shell: &str| {
        let out = run_headroom(["completions", shell], LIMIT);
        assert_exit(&out, 0);
        stdout(&out)
    };
    let bash = script("bash");
    assert!(bash.contains("_headroom()"), "{bash}");
    for command in COMMANDS {
        assert!(bash.contains(&format!("headroom,{command})")), "{command}");
    }
    assert!(bash.contains("--step-duration"));
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let text = script(shell);
        assert!(text.contains("find") && text.contains("check"), "{shell}");
    }
    assert!(script("zsh").starts_with("#compdef headroom"));
    let out = run_headroom(["completions", "tcsh"], LIMIT);
    assert_exit(&out, 2);
}

#[test]
fn man_prints_the_page_and_writes_one_per_command() {
    let out = run_headroom(["man"], LIMIT);
    assert_exit(&out, 0);
    let page = stdout(&out);
    assert!(page.contains(".TH headroom 1"), "{page}");
    assert!(
        !page.contains("headroom\\-help"),
        "no page is written for help"
    );
    for command in COMMANDS {
        assert!(
            page.contains(&format!("headroom\\-{command}(1)")),
            "{command}"
        );
    }

    let dir = tempfile::tempdir().unwrap();
    let pages = dir.path().join("man1");
    let out = run_headroom(["man", "--out-dir", &pages.display().to_string()], LIMIT);
    assert_exit(&out, 0);
    let read = |name: &str| -> String {
        let path: PathBuf = pages.join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    assert!(read("headroom.1").contains(".TH headroom 1"));
    let find = read("headroom-find.1");
    assert!(find.contains(".TH headroom-find 1  \"headroom "), "{find}");
    assert!(find.contains("\\-\\-step\\-duration"), "{find}");
    assert!(read("headroom-check.1").contains("\\-\\-format"));
    assert!(read("headroom-cluster-manifest.1").contains(".TH"));
    assert!(!pages.join("headroom-help.1").exists());
}
