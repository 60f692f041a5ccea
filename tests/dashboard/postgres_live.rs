//! PostgreSQL's top statements on the dashboard while the load runs: a run against the
//! built-in target kept in a throwaway PostgreSQL cluster, watched with
//! `--watch postgres:URL`, shows its INSERT among the top statements "so far" before
//! the run ends, and the summary's (counted once, at the end) after.

use std::time::Duration;

use super::{serial, Running};
use crate::support::{chromium_runtime, read_summary, statements_cluster, Chromium};
use headroom::target::{self, TargetOptions};

#[test]
fn the_top_statements_are_shown_while_the_run_goes() {
    let _one = serial();
    let Some(cluster) = statements_cluster(&[]) else {
        return;
    };
    let t = target::spawn(TargetOptions {
        postgres: Some(cluster.url()),
        ..TargetOptions::loopback()
    })
    .expect("target on PostgreSQL");
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("tasks.yaml");
    std::fs::write(
        &scenario,
        format!(
            "name: tasks\ntarget: {}\nload: {{model: arrival-rate, rate: 50, duration: 8s}}\n\
             requests:\n  - {{name: create, method: POST, path: /tasks, json: {{name: a}}}}\n",
            t.url()
        ),
    )
    .unwrap();
    let out = dir.path().join("s.json");
    let watch = format!("postgres:{}", cluster.url());
    chromium_runtime().block_on(async {
        let chromium = Chromium::launch().await;
        let run = Running::start(&[
            "run",
            scenario.to_str().unwrap(),
            "--watch",
            &watch,
            "--watch-interval",
            "500ms",
            "-q",
            "--out",
            out.to_str().unwrap(),
        ]);
        let origin = run.url();
        chromium.page.goto(origin.as_str()).await.unwrap();
        chromium
            .wait_for(
                "document.getElementById('postgres-heading')?.dataset.live === 'true' && \
                 [...document.querySelectorAll('#postgres td.query')].some((td) => td.textContent.toUpperCase().startsWith('INSERT'))",
                Duration::from_secs(8),
            )
            .await;
        let (heading, calls, finished): (String, u64, bool) = chromium
            .eval(
                "(() => {
                   const row = [...document.querySelectorAll('#postgres tr')]
                     .find((tr) => tr.querySelector('td.query')?.textContent.toUpperCase().startsWith('INSERT'));
                   return [document.getElementById('postgres-heading').textContent,
                           Number(row.children[1].textContent.replace(/[^0-9]/g, '')),
                           window.headroomDashboard.finished !== null];
                 })()",
            )
            .await;
        assert!(!finished, "seen while the run goes");
        assert!(heading.contains("so far in this run"), "{heading}");
        assert!(calls > 0, "{heading}: {calls} calls");
        let (code, _, stderr) = run.wait(Duration::from_secs(30));
        assert_eq!(code, 0, "{stderr}");
        let summary = read_summary(&out);
        // At the end, the run's own count replaces the live one, and it has at least
        // as many INSERTs as were seen during the run.
        chromium
            .wait_for(
                "window.headroomDashboard.finished !== null && \
                 document.getElementById('postgres-heading')?.dataset.live === 'false'",
                Duration::from_secs(5),
            )
            .await;
        let done: String = chromium
            .eval("document.getElementById('postgres-heading').textContent")
            .await;
        assert!(done.contains("of the last run"), "{done}");
        assert!(summary.completed >= calls, "{} completed, {calls} INSERTs seen", summary.completed);
        chromium.assert_clean(&origin);
        chromium.close().await;
    });
    t.shutdown();
}
