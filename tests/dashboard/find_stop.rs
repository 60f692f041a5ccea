//! The dashboard's stop button on a search: `find` ends as Ctrl-C ends it, with the
//! interrupted exit code, a `--out` JSON that says it was interrupted and keeps the
//! steps measured so far (each adding up), a store record marked `interrupted`, and a
//! page that shows the end.

use std::time::Duration;

use headroom::search::{LimitedBy, SearchResult};
use headroom::store::{RunStatus, Store};
use headroom::target::{self, TargetOptions};

use super::{serial, Running};
use crate::support::{assert_adds_up, chromium_runtime, Chromium};

#[test]
fn the_stop_button_ends_a_search_with_a_valid_partial_result() {
    let _one = serial();
    let target = target::spawn(TargetOptions::loopback()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("find.json");
    let store = dir.path().join("h.db");
    let url = format!("{}/work", target.url());
    chromium_runtime().block_on(async {
        let chromium = Chromium::launch().await;
        // Steps of 2 s from 50 to 800 req/s: without the button it would run for 10 s
        // and more.
        let run = Running::start(&[
            "find", "--url", &url, "--from", "50", "--to", "800", "--step-duration", "2s",
            "--warmup", "0s", "--cooldown", "100ms", "--wait-ports", "off", "--threads", "1",
            "-q", "--out", out.to_str().unwrap(), "--store", store.to_str().unwrap(),
        ]);
        let origin = run.url();
        chromium.page.goto(origin.as_str()).await.unwrap();
        // Stop in the middle of the second step, one step kept before it.
        chromium
            .wait_for(
                "(window.headroomDashboard?.steps.length ?? 0) >= 1 && window.headroomDashboard.current != null",
                Duration::from_secs(20),
            )
            .await;
        chromium.page.find_element("#stop").await.unwrap().click().await.unwrap();
        let (code, took, stderr) = run.wait(Duration::from_secs(30));
        assert_eq!(code, 105, "the interrupted exit code: {stderr}");
        assert!(took < Duration::from_secs(20), "took {took:?}: {stderr}");
        assert!(stderr.contains("dashboard: stop asked from the page"), "{stderr}");

        let text = std::fs::read_to_string(&out).expect("find writes --out when stopped");
        let result: SearchResult = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(result.limited_by, LimitedBy::Interrupted, "{text}");
        assert!(result.conclusion.contains("interrupted"), "{}", result.conclusion);
        assert!(result.steps.len() >= 2, "the step before the stop is kept: {text}");
        let last = result.steps.last().unwrap();
        assert!(last.summary.interrupted && !last.passed, "the stopped step: {text}");
        assert!(last.summary.requests > 0, "the stopped step measured nothing");
        for step in &result.steps {
            assert_adds_up(&step.summary);
        }

        // The store's record says the search was interrupted, though a step passed.
        let store = Store::open(&store).unwrap();
        let rows = store.runs(&Default::default()).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].kind, "find");
        assert_eq!(rows[0].status, RunStatus::Interrupted, "{:?}", rows[0].message);

        chromium
            .wait_for("window.headroomDashboard.finished !== null", Duration::from_secs(5))
            .await;
        let (exit, disabled, outcome): (i64, bool, String) = chromium
            .eval(
                "[window.headroomDashboard.finished.exit_code,
                  document.getElementById('stop').disabled,
                  document.getElementById('outcome-text').textContent]",
            )
            .await;
        assert_eq!(exit, 105);
        assert!(disabled, "the stop button is disabled once the search ended");
        assert!(outcome.starts_with(&result.conclusion), "{outcome}");
        chromium.assert_clean(&origin);
        chromium.close().await;
    });
    target.shutdown();
}
