//! Test builds only: what a test needs from the machine (a PostgreSQL server, root
//! to mount a tmpfs or make a bridge) and does without when it is missing. Shared by
//! the integration tests' `support` and, included by path, the crates' unit tests.
//!
//! [`require`] hands the prerequisite over, or says it is missing: a failure naming
//! it when [`REQUIRE_ALL_ENV`] is set (`scripts/test.sh` sets it: there everything a
//! test needs is installed, so a missing one is a broken machine, not a reason to
//! pass), otherwise a skip the caller returns on. [`machine_feature`] is for what no
//! package provides (cgroup v2 mounted): always a skip.
//!
//! Skips are written straight to the process's stderr, past the test harness's
//! capture, so a run shows every test that did not run.

// Included by three test builds (this crate's, the target crate's, the integration
// tests'); each uses a part of it.
#![allow(dead_code)]

use std::fmt::Display;
use std::io::Write;

/// Set (to anything but `0` or nothing) to make a missing prerequisite a failure
/// instead of a skip.
pub(crate) const REQUIRE_ALL_ENV: &str = "HEADROOM_REQUIRE_ALL";

/// Whether [`REQUIRE_ALL_ENV`] asks for failures.
pub(crate) fn required() -> bool {
    std::env::var_os(REQUIRE_ALL_ENV).is_some_and(|v| !v.is_empty() && v != "0")
}

/// `found`'s value, or `None` when `what` is missing here (`found` says why): then it
/// panics when [`REQUIRE_ALL_ENV`] is set and otherwise reports a skip, and the
/// caller returns.
#[track_caller]
pub(crate) fn require<T, E: Display>(what: &str, found: Result<T, E>) -> Option<T> {
    match found {
        Ok(value) => Some(value),
        Err(why) => {
            assert!(
                !required(),
                "{REQUIRE_ALL_ENV} is set but this test's prerequisite is missing: {what}: {why}"
            );
            skip(
                what,
                &why.to_string(),
                &format!("set {REQUIRE_ALL_ENV}=1 to make that a failure"),
            );
            None
        }
    }
}

/// `found`'s value, or `None` when `what`, a feature of the machine no package
/// installs, is missing (`found` says why): always a skip, reported, and the
/// caller returns.
pub(crate) fn machine_feature<T, E: Display>(what: &str, found: Result<T, E>) -> Option<T> {
    match found {
        Ok(value) => Some(value),
        Err(why) => {
            skip(
                what,
                &why.to_string(),
                &format!("a feature of the machine, skipped even when {REQUIRE_ALL_ENV} is set"),
            );
            None
        }
    }
}

/// Says on stderr, past the harness's capture, that the current test did not run.
fn skip(what: &str, why: &str, note: &str) {
    let current = std::thread::current();
    let test = current.name().unwrap_or("a test");
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: {what} is missing here ({why}); {note}"
    );
}
