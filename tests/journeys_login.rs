//! The login journey against a real web framework (issue 29's "done when"): a Django
//! application with session login and CSRF protection, on loopback. Many users each
//! log in once, as their own account from a CSV file, keep their session cookie and
//! browse behind the login, beside an anonymous workload at a fixed rate; `setup:`
//! clears the server's counters once before the load and `teardown:` reads them once
//! after. The server's own counts must show every account logged in exactly once and
//! nothing else. Skipped when the app is not installed (a failure under
//! `HEADROOM_REQUIRE_ALL`).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::support::journey::JourneyApp;
use crate::support::{run_with_summary, stderr};

const LIMIT: Duration = Duration::from_secs(90);
/// Members in the guide's example, one per row of its `accounts.csv`.
const USERS: usize = 24;

/// The guide's example, `docs/examples/login-journey.yaml`.
fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/examples/login-journey.yaml")
}

#[test]
fn every_account_logs_in_once_beside_an_anonymous_workload() {
    let Some(app) = JourneyApp::start(USERS) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // The example's accounts are the app's: `userNNNN` with password `pw-userNNNN`.
    let example = example();
    // Counts the server held before the run: setup must clear them.
    let _ = crate::support::journey::exchange(app.addr(), "GET", "/public/", &[], b"");
    let (out, _) = run_with_summary(
        dir.path(),
        &[example.to_str().unwrap(), "--url", &app.url()],
        LIMIT,
    );
    let err = stderr(&out);
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("s.json")).unwrap()).unwrap();
    assert_eq!(out.status.code(), Some(0), "{err}\n{}", s["by_name"]);

    let stats = app.stats();
    // Every account logged in exactly once, and nothing else did.
    for i in 1..=USERS {
        let name = app.username(i);
        assert_eq!(
            stats.logins_of(&name),
            1,
            "{name}: {stats:?}\n{}",
            app.log()
        );
    }
    assert_eq!(stats.total_logins, USERS as u64, "{stats:?}");
    assert_eq!(stats.failed_logins, 0, "{stats:?}");
    let by = |n: &str, k: &str| s["by_name"][n][k].as_u64().unwrap_or(0);
    assert_eq!(by("login", "requests"), USERS as u64, "{}", s["by_name"]);
    assert_eq!(by("login_form", "requests"), USERS as u64);
    assert!(
        by("home", "requests") >= 4 * USERS as u64,
        "{}",
        s["by_name"]
    );
    assert_eq!(s["errors"]["count"], 0, "{}", s["errors"]);
    // The anonymous workload ran at its own rate, and the server saw exactly its
    // requests on /public/ (setup cleared the one sent before the run).
    let public = by("public", "requests");
    assert!((90..=110).contains(&public), "{public}");
    assert_eq!(stats.public_requests, public, "{stats:?}");
    // Per workload figures, and checks on the greeting each user's own page shows.
    assert_eq!(
        s["by_workload"]["anonymous"]["requests"].as_u64(),
        Some(public),
        "{}",
        s["by_workload"]
    );
    let checks = &s["checks"];
    assert_eq!(checks["failed"], 0, "{checks}");
    assert!(
        checks["passed"].as_u64().unwrap() >= 2 * 4 * USERS as u64,
        "{checks}"
    );
    // Cookies: each member received its csrftoken and session cookies and sent them.
    assert!(
        s["cookies"]["received"].as_u64().unwrap() >= 2 * USERS as u64,
        "{}",
        s["cookies"]
    );
    // Every login was redirected to the page behind it.
    assert!(
        s["redirects"].as_u64().unwrap() >= USERS as u64,
        "{}",
        s["redirects"]
    );
}

#[test]
fn more_users_than_accounts_is_bad_input_naming_both_numbers() {
    let Some(app) = JourneyApp::start(3) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("login.yaml");
    let text = std::fs::read_to_string(example())
        .unwrap()
        .replace(
            "file: accounts.csv",
            &format!("file: {}", app.accounts_csv().display()),
        )
        .replace("users: 24", "users: 5");
    std::fs::write(&path, text).unwrap();
    let out = crate::support::run_headroom(
        [
            "run",
            path.to_str().unwrap(),
            "--quiet",
            "--url",
            &app.url(),
        ],
        LIMIT,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("data.accounts") && err.contains('3') && err.contains('5'),
        "{err}"
    );
    assert_eq!(app.stats().total_logins, 0);
}
