//! The dashboard page in headless Chromium: it draws the run as it goes from the
//! engine's own per-second data, its stop button stops a run as Ctrl-C does, a search
//! grows its capacity curve step by step, and the process exits with the tab open.

use std::time::Duration;

use headroom::metrics::summary::Summary;
use headroom::search::SearchResult;
use headroom::target::{self, TargetOptions};
use serde_json::Value;

use super::{http_get, serial, Running};
use crate::support::{chromium_runtime as runtime, read_summary, Chromium};

/// The "achieved req/s" series' stroke (PALETTE[2] in dashboard.js).
const ACHIEVED: [u8; 3] = [0x1a, 0x9e, 0x5a];

/// The page's figure `id` (its `data-value`), as a number.
async fn figure(page: &Chromium, id: &str) -> f64 {
    let js = format!("Number(document.getElementById('{id}').dataset.value)");
    page.eval(&js).await
}

#[test]
fn the_page_draws_a_run_from_the_engines_seconds_and_the_process_exits_with_it_open() {
    let _one = serial();
    let target = target::spawn(TargetOptions::loopback()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    let url = format!("{}/work", target.url());
    runtime().block_on(async {
        let chromium = Chromium::launch().await;
        let run = Running::start(&[
            "run", "--url", &url, "--rate", "200", "--duration", "5s", "-q", "--out",
            out.to_str().unwrap(),
        ]);
        let origin = run.url();
        chromium.page.goto(origin.as_str()).await.unwrap();
        chromium
            .wait_for(
                "(window.headroomDashboard?.rows.length ?? 0) >= 2",
                Duration::from_secs(15),
            )
            .await;
        // Within a second of the engine: the page holds every second the server has
        // (give or take the one that completed in between).
        let shown: usize = chromium.eval("window.headroomDashboard.rows.length").await;
        let server: Value = serde_json::from_str(&http_get(run.addr, "/state").unwrap()).unwrap();
        let held = server["rows"].as_array().unwrap().len();
        assert!(held >= shown && held - shown <= 1, "page {shown} s, server {held} s");
        let requests_shown = figure(&chromium, "requests").await;
        let elapsed_shown = figure(&chromium, "elapsed").await as usize;
        // The charts draw the data: the achieved rate's line is on the rate chart.
        let pixels = chromium.pixels_of(ACHIEVED).await;
        assert!(pixels["rate-chart"].as_i64().unwrap() > 50, "{pixels}");
        for chart in ["latency-chart", "errors-chart", "flight-chart"] {
            assert!(pixels[chart].as_i64().unwrap() >= 0, "{chart} has no canvas: {pixels}");
        }
        // A percentile picked in the page shows or hides its series.
        let shown_before: bool = chromium
            .eval("document.querySelector('#percentiles input[data-series=\"2\"]').checked")
            .await;
        assert!(!shown_before, "p90 starts hidden");
        chromium
            .page
            .find_element("#percentiles input[data-series=\"2\"]")
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let legend_shown: bool = chromium
            .eval("!document.querySelectorAll('#latency-chart .u-legend .u-series')[2].classList.contains('u-off')")
            .await;
        assert!(legend_shown, "p90 is shown once ticked");

        // The tab stays open while the run ends: the process must still exit promptly.
        let (code, took, stderr) = run.wait(Duration::from_secs(30));
        assert_eq!(code, 0, "{stderr}");
        assert!(took < Duration::from_secs(15), "took {took:?}: {stderr}");
        chromium
            .wait_for("window.headroomDashboard.finished !== null", Duration::from_secs(5))
            .await;
        let summary: Summary = read_summary(&out);
        let rows: Vec<Value> = chromium.eval("window.headroomDashboard.rows").await;
        assert!(rows.len() >= 4, "{} rows", rows.len());
        for row in &rows {
            let t = row["t"].as_u64().unwrap() as usize;
            let second = &summary.timeline[t];
            assert_eq!(row["achieved"], second.requests, "second {t}");
            assert_eq!(row["errors"], second.errors, "second {t}");
            assert_eq!(row["latency_ms"]["p95"].as_f64().unwrap(), second.p95_ms, "second {t}");
            assert_eq!(row["offered"].as_f64().unwrap(), second.offered, "second {t}");
        }
        // The figures read during the run were those of the engine's first seconds.
        let upto: u64 = summary.timeline[..elapsed_shown]
            .iter()
            .map(|s| s.requests)
            .sum();
        assert_eq!(requests_shown as u64, upto, "requests after {elapsed_shown} s");
        let final_requests: f64 = chromium
            .eval("Number(document.querySelector('tr[data-fact=\"requests\"] td:last-child').dataset.value)")
            .await;
        assert_eq!(final_requests as u64, summary.requests);
        let outcome: String = chromium
            .eval("document.getElementById('outcome-text').textContent")
            .await;
        assert!(outcome.contains("exit code 0"), "{outcome}");
        chromium.assert_clean(&origin);
        chromium.close().await;
    });
}

#[test]
fn the_stop_button_ends_the_run_as_ctrl_c_does() {
    let _one = serial();
    let target = target::spawn(TargetOptions::loopback()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    let url = format!("{}/work", target.url());
    runtime().block_on(async {
        let chromium = Chromium::launch().await;
        let run = Running::start(&[
            "run",
            "--url",
            &url,
            "--rate",
            "100",
            "--duration",
            "60s",
            "-q",
            "--out",
            out.to_str().unwrap(),
        ]);
        let origin = run.url();
        chromium.page.goto(origin.as_str()).await.unwrap();
        chromium
            .wait_for(
                "(window.headroomDashboard?.rows.length ?? 0) >= 2",
                Duration::from_secs(15),
            )
            .await;
        chromium
            .page
            .find_element("#stop")
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let (code, took, stderr) = run.wait(Duration::from_secs(30));
        assert_eq!(code, 105, "the interrupted exit code: {stderr}");
        assert!(took < Duration::from_secs(20), "took {took:?}");
        assert!(
            stderr.contains("dashboard: stop asked from the page"),
            "{stderr}"
        );
        let summary = read_summary(&out);
        assert!(summary.interrupted);
        assert!(
            summary.requests > 0 && summary.duration_s < 30.0,
            "{}",
            summary.duration_s
        );
        chromium
            .wait_for(
                "window.headroomDashboard.finished !== null",
                Duration::from_secs(5),
            )
            .await;
        let exit: i64 = chromium
            .eval("window.headroomDashboard.finished.exit_code")
            .await;
        assert_eq!(exit, 105);
        let disabled: bool = chromium
            .eval("document.getElementById('stop').disabled")
            .await;
        assert!(disabled);
        chromium.assert_clean(&origin);
        chromium.close().await;
    });
}

#[test]
fn a_search_grows_its_capacity_curve_step_by_step() {
    let _one = serial();
    let target = target::spawn(TargetOptions::loopback()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("find.json");
    let url = format!("{}/work", target.url());
    runtime().block_on(async {
        let chromium = Chromium::launch().await;
        let run = Running::start(&[
            "find", "--url", &url, "--from", "50", "--to", "400", "--step-duration", "1s",
            "--warmup", "0s", "--cooldown", "100ms", "--wait-ports", "off", "-q", "--out",
            out.to_str().unwrap(),
        ]);
        let origin = run.url();
        chromium.page.goto(origin.as_str()).await.unwrap();
        // While a step runs past the first, it is highlighted: a marked row in the step
        // table and a band on the curve, with the finished steps drawn beside it.
        chromium
            .wait_for(
                "(window.headroomDashboard?.steps.length ?? 0) >= 1 && window.headroomDashboard.current !== null",
                Duration::from_secs(20),
            )
            .await;
        // Read in one evaluation, so that the page cannot move on in between.
        let (index, row, heading): (u64, String, String) = chromium
            .eval(
                "[window.headroomDashboard.current.index,
                  document.querySelector('#steps tr.current td').textContent,
                  document.getElementById('current-step').textContent]",
            )
            .await;
        assert!(row.starts_with(&index.to_string()), "{row}");
        assert!(heading.contains(&format!("step {index} at")), "{heading}");
        // On a busy machine a step may fail or be generator-bound: whatever the search
        // found, the page must say what the JSON says.
        let (code, _, stderr) = run.wait(Duration::from_secs(60));
        assert!(code == 0 || code == 1, "{stderr}");
        chromium
            .wait_for("window.headroomDashboard.finished !== null", Duration::from_secs(5))
            .await;
        let exit: i32 = chromium.eval("window.headroomDashboard.finished.exit_code").await;
        assert_eq!(exit, code);
        let result: SearchResult =
            serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let steps: Vec<Value> = chromium.eval("window.headroomDashboard.steps").await;
        assert_eq!(steps.len(), result.steps.len());
        for (shown, step) in steps.iter().zip(&result.steps) {
            assert_eq!(shown["value"].as_f64().unwrap(), step.rate);
            assert_eq!(shown["passed"].as_bool().unwrap(), step.passed);
            assert_eq!(shown["achieved"].as_f64().unwrap(), step.summary.rate.achieved);
            assert_eq!(shown["p95_ms"].as_f64().unwrap(), step.summary.latency_ms.p95);
        }
        let rows: usize = chromium
            .eval("document.querySelectorAll('#steps tbody tr').length")
            .await;
        assert_eq!(rows, result.steps.len(), "no step is running any more");
        let pixels = chromium.pixels_of(ACHIEVED).await;
        assert!(pixels["capacity-chart"].as_i64().unwrap() > 50, "{pixels}");
        let ceiling: String = chromium
            .eval("document.querySelector('tr[data-fact=\"ceiling\"] td:last-child').dataset.value")
            .await;
        let want = result.ceiling.map(|c| c.to_string()).unwrap_or_default();
        assert_eq!(ceiling, want, "{}", result.conclusion);
        let outcome: String = chromium
            .eval("document.getElementById('outcome-text').textContent")
            .await;
        assert!(outcome.starts_with(&result.conclusion), "{outcome}");
        chromium.assert_clean(&origin);
        chromium.close().await;
    });
}
