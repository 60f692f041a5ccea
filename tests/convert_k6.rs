//! Issue 30: a k6 script run as it is (`headroom run SCRIPT.js`) and converted
//! (`headroom convert k6`), against the journey app (a Django API on loopback). Each
//! test checks on the server's side what the script says it does: the requests per
//! route, the bodies and headers received. k6 itself is not run here (its licence rules
//! it out): what the scripts would do is what the tests assert.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use headroom::metrics::summary::Summary;

use crate::support::journey::JourneyApp;
use crate::support::{headroom_bin, read_summary, run_command, stderr, stdout};

const LIMIT: Duration = Duration::from_secs(90);

/// A script of `tests/fixtures/convert/`.
fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/convert")
        .join(name)
}

/// `headroom ARGS...` with `env` set, at most [`LIMIT`].
fn headroom(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(headroom_bin());
    command.args(args).envs(env.iter().copied());
    run_command(command, LIMIT)
}

/// `headroom run SCRIPT --quiet --out DIR/s.json` with `env`; the summary must add up.
fn run_script(
    dir: &Path,
    script: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (Output, Summary) {
    let out_file = dir.join("s.json");
    let mut args = vec!["run", script.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend(["--quiet", "--out", out_file.to_str().unwrap()]);
    let out = headroom(&args, env);
    assert!(out_file.is_file(), "no summary; stderr:\n{}", stderr(&out));
    (out, read_summary(&out_file))
}

/// The closing line of a translation report: `translated N of M calls; ...`.
fn closing_line(text: &str) -> &str {
    text.lines()
        .find(|l| l.starts_with("translated ") && l.contains(" calls; "))
        .unwrap_or_else(|| panic!("no closing line in:\n{text}"))
}

#[test]
fn a_k6_script_with_a_login_in_setup_runs_as_it_is() {
    let Some(app) = JourneyApp::start(3) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let url = app.url();
    let env = [("BASE_URL", url.as_str()), ("PROFILE", "smoke")];
    let (out, s) = run_script(dir.path(), &fixture("api-profile.js"), &[], &env);
    let err = stderr(&out);
    // The report's closing line comes first, before anything the run prints.
    let first = err.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("k6 script ") && first.contains("translated "),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(0), "{err}\n{:?}", s.errors);
    assert_eq!(s.errors.count, 0, "{:?}", s.errors.by_kind);

    let got = app.requests();
    // setup() logged in once, as the environment's default account.
    assert_eq!(got.count("POST /api/login"), 1, "{:?}", got.counts);
    let login = &got.to("POST", "/api/login")[0];
    let body: serde_json::Value = serde_json::from_str(&login.body).unwrap();
    assert_eq!(body["username"], "user0001", "{}", login.body);
    assert_eq!(app.stats().api_logins.get("user0001"), Some(&1));
    // The smoke profile: 6 iterations shared by 2 users, each listing, creating and
    // reading back the item it created.
    assert_eq!(got.count("GET /api/items"), 6, "{:?}", got.counts);
    let created = got.to("POST", "/api/items");
    assert_eq!(created.len(), 6, "{:?}", got.counts);
    let mut read_back = BTreeSet::new();
    for id in 1..=6 {
        let route = format!("GET /api/items/{id}");
        if got.count(&route) == 1 {
            read_back.insert(id);
        }
    }
    assert_eq!(
        read_back.len(),
        6,
        "each created item read back once: {:?}",
        got.counts
    );
    // Every request after the login carried the token setup() returned, and the
    // bodies are the script's JSON.
    let token = {
        let auth = created[0].header("authorization").unwrap_or_default();
        auth.strip_prefix("Bearer ").unwrap_or_default().to_string()
    };
    assert_eq!(token.len(), 32, "{:?}", created[0].headers);
    for r in got.requests.iter().filter(|r| r.path != "/api/login") {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {token}").as_str())
        );
    }
    for r in &created {
        let body: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(body["kind"], "k6", "{}", r.body);
        assert!(
            body["name"].as_str().unwrap().starts_with("item-"),
            "{}",
            r.body
        );
        assert_eq!(r.header("content-type"), Some("application/json"));
    }
    // The checks ran, non-fatal, and all passed.
    assert_eq!(s.checks.failed, 0, "{:?}", s.checks);
    assert!(s.checks.passed >= 6 * 4, "{:?}", s.checks);
}

#[test]
fn the_report_names_what_was_left_out_and_strict_refuses_it() {
    let script = fixture("api-profile.js");
    let out = headroom(&["convert", "k6", script.to_str().unwrap()], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // The report: handleSummary left out, with its line.
    let left = err
        .lines()
        .find(|l| l.contains("left out") && l.contains("handleSummary"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(left.contains("api-profile.js:"), "{left}");
    let closing = closing_line(&err);
    let numbers: Vec<usize> = closing
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    let [translated, total, approximated, left_out] = numbers[..] else {
        panic!("{closing}")
    };
    assert!(left_out >= 1 && translated >= 10, "{closing}");
    assert_eq!(translated + approximated + left_out, total, "{closing}");
    // The scenario on standard output loads and names the script's requests.
    let yaml = stdout(&out);
    for name in ["create item", "list items", "get item", "login"] {
        assert!(yaml.contains(name), "{name}:\n{yaml}");
    }
    // --strict: exit 2, after the report, for convert and for run.
    let out = headroom(
        &["convert", "k6", script.to_str().unwrap(), "--strict"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--strict"), "{}", stderr(&out));
    let out = headroom(
        &["run", script.to_str().unwrap(), "--strict", "--quiet"],
        &[("BASE_URL", "http://127.0.0.1:9")],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn each_user_logs_in_with_its_own_csv_row() {
    let Some(app) = JourneyApp::start(3) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let url = app.url();
    let (out, s) = run_script(
        dir.path(),
        &fixture("csv-users.js"),
        &[],
        &[("BASE_URL", url.as_str())],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(s.errors.count, 0, "{:?}", s.errors.by_kind);
    // per-vu-iterations: 3 users × 2 iterations, each user its own row.
    let logins = app.stats().api_logins;
    for user in ["user0001", "user0002", "user0003"] {
        assert_eq!(logins.get(user), Some(&2), "{logins:?}");
    }
    let got = app.requests();
    assert_eq!(got.count("GET /api/whoami"), 6, "{:?}", got.counts);
    assert_eq!(s.checks.failed, 0, "{:?}", s.checks);
}

#[test]
fn two_k6_scenarios_become_two_workloads() {
    let Some(app) = JourneyApp::start(1) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let url = app.url();
    let (out, s) = run_script(
        dir.path(),
        &fixture("two-scenarios.js"),
        &[],
        &[("BASE_URL", url.as_str())],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let got = app.requests();
    // browse: 20/s for 3 s.
    let public = got.count("GET /public/");
    assert!((50..=70).contains(&public), "{:?}", got.counts);
    // echo: 2 users × 5 iterations, each a form body (k6 posts an object as a form).
    let echoes = got.to("POST", "/echo/k6");
    assert_eq!(echoes.len(), 10, "{:?}", got.counts);
    for r in &echoes {
        assert_eq!(
            r.header("content-type"),
            Some("application/x-www-form-urlencoded"),
            "{:?}",
            r.headers
        );
        assert!(
            r.body.starts_with("who=") || r.body.contains("who="),
            "{}",
            r.body
        );
        assert!(r.body.contains("n="), "{}", r.body);
    }
    assert!(
        s.by_workload.contains_key("browse"),
        "{:?}",
        s.by_workload.keys()
    );
    assert!(
        s.by_workload.contains_key("echo"),
        "{:?}",
        s.by_workload.keys()
    );
}

#[test]
fn find_searches_a_k6_scripts_ceiling() {
    use headroom::search::result::SearchResult;
    use headroom::target::{self, TargetOptions};
    // 2 workers × 10 ms: 200 requests a second, latency far from the rule below it.
    let target = target::spawn(TargetOptions {
        workers: 2,
        service_time: Duration::from_millis(10),
        ..TargetOptions::loopback()
    })
    .expect("start the built-in target");
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("work.js");
    std::fs::write(
        &script,
        "import http from 'k6/http';\nimport { check } from 'k6';\n\
         const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:8080';\n\
         export const options = {\n  scenarios: { api: { executor: 'constant-arrival-rate', rate: 10, timeUnit: '1s', duration: '30s', preAllocatedVUs: 100 } },\n  thresholds: { http_req_duration: ['p(95)<100'] },\n};\n\
         export default function () {\n  const res = http.get(`${BASE_URL}/work`);\n  check(res, { 'ok': (r) => r.status === 200 });\n}\n",
    )
    .unwrap();
    let out_file = dir.path().join("find.json");
    let url = target.url();
    let out = headroom(
        &[
            "find",
            script.to_str().unwrap(),
            "--from",
            "50",
            "--to",
            "800",
            "--step-duration",
            "1s",
            "--warmup",
            "500ms",
            "--cooldown",
            "0s",
            "--time-wait-limit",
            "1000000",
            "--quiet",
            "--out",
            out_file.to_str().unwrap(),
        ],
        &[("BASE_URL", url.as_str())],
    );
    let err = stderr(&out);
    assert!(
        err.lines()
            .next()
            .unwrap_or_default()
            .starts_with("k6 script "),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(0), "{err}");
    let result: SearchResult =
        serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    for step in &result.steps {
        crate::support::assert_adds_up(&step.summary);
    }
    // The script's rate model, searched: the ceiling within the search's precision
    // of the 200/s the target serves (a busy machine may answer a little lower).
    let ceiling = result.ceiling.unwrap_or_else(|| panic!("{err}"));
    assert!((160.0..=210.0).contains(&ceiling), "{ceiling}\n{err}");
}
