//! Issue 12: rounds on one page and CSV output, end to end. Two searches and a run
//! against the built-in target, kept in a temporary store with `--label round=N` and
//! `--note`; `report --rounds` shows them as a trip report does, and the CSV files
//! say what the summaries say.

use std::path::Path;
use std::time::Duration;

use headroom::search::SearchResult;
use headroom::target::{self, TargetOptions};

use crate::support::{assert_exit, read_summary, run_headroom, stdout};

const LIMIT: Duration = Duration::from_secs(120);

fn search(url: &str, store: &Path, out: &Path, round: &str, note: &str) -> SearchResult {
    let round = format!("round={round}");
    let output = run_headroom(
        [
            "find",
            "--url",
            url,
            "--from",
            "25",
            "--to",
            "800",
            "--precision",
            "25%",
            "--step-duration",
            "1s",
            "--warmup",
            "300ms",
            "--cooldown",
            "200ms",
            "--time-wait-limit",
            "1000000",
            "--threads",
            "1",
            "-q",
            "--label",
            &round,
            "--note",
            note,
            "--store",
            &store.display().to_string(),
            "--out",
            &out.display().to_string(),
        ],
        LIMIT,
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}\n{}",
        stdout(&output),
        crate::support::stderr(&output)
    );
    serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
}

fn csv_rows(path: &Path) -> Vec<csv::StringRecord> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    reader.records().map(Result::unwrap).collect()
}

#[test]
fn rounds_show_each_change_its_ceiling_and_the_delta_and_runs_write_csv() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.db");
    // 1 worker × 10 ms: a ceiling near 100 req/s, then 4 workers: near 400. Low
    // rates, so the searches stay light on a shared machine.
    let slow = target::spawn(TargetOptions {
        workers: 1,
        service_time: Duration::from_millis(10),
        ..TargetOptions::loopback()
    })
    .unwrap();
    let first = search(
        &format!("{}/work", slow.url()),
        &store,
        &dir.path().join("1.json"),
        "1",
        "baseline",
    );
    slow.shutdown();
    let fast = target::spawn(TargetOptions {
        workers: 4,
        service_time: Duration::from_millis(10),
        ..TargetOptions::loopback()
    })
    .unwrap();
    let second = search(
        &format!("{}/work", fast.url()),
        &store,
        &dir.path().join("2.json"),
        "2",
        "workers=4 | <b>",
    );
    let (c1, c2) = (first.ceiling.unwrap(), second.ceiling.unwrap());
    assert!(c2 > c1, "more workers, higher ceiling: {c1} then {c2}");

    // A run with CSV output.
    let prefix = dir.path().join("run");
    let out = run_headroom(
        [
            "run",
            "--url",
            &format!("{}/work", fast.url()),
            "--rate",
            "50",
            "--duration",
            "2s",
            "--threads",
            "1",
            "-q",
            "--label",
            "round=3",
            "--store",
            &store.display().to_string(),
            "--out",
            &dir.path().join("s.json").display().to_string(),
            "--csv",
            &prefix.display().to_string(),
        ],
        LIMIT,
    );
    assert_exit(&out, 0);
    let summary = read_summary(&dir.path().join("s.json"));
    let stats = csv_rows(&dir.path().join("run_stats.csv"));
    let aggregated = stats.last().unwrap();
    assert_eq!(&aggregated[0], "Aggregated");
    assert_eq!(aggregated[1].parse::<u64>().unwrap(), summary.requests);
    assert_eq!(stats.len(), summary.by_name.len() + 1);
    let history = csv_rows(&dir.path().join("run_stats_history.csv"));
    assert_eq!(history.len(), summary.timeline.len());
    let per_second: u64 = history.iter().map(|r| r[1].parse::<u64>().unwrap()).sum();
    assert_eq!(
        per_second,
        summary.timeline.iter().map(|s| s.requests).sum::<u64>()
    );

    // The rounds page, Markdown.
    let store_arg = store.display().to_string();
    let page = run_headroom(
        [
            "report",
            "--rounds",
            "label:round=1",
            "label:round=2",
            "latest",
            "--store",
            &store_arg,
        ],
        LIMIT,
    );
    assert_exit(&page, 0);
    let md = stdout(&page);
    let headline = format!("Ceiling or rate: {} → {} → ", value(c1), value(c2));
    assert!(md.contains(&headline), "{headline}\n{md}");
    assert!(md.contains("baseline"), "{md}");
    assert!(
        md.contains("workers=4 \\| &lt;b&gt;"),
        "the note, escaped: {md}"
    );
    assert!(md.contains(&format!("ceiling {} req/s", value(c2))), "{md}");
    let delta = (c2 - c1) / c1 * 100.0;
    assert!(md.contains(&format!("{delta:+.1}%")), "{delta:+.1}%\n{md}");
    assert_eq!(
        md.lines().filter(|l| l.starts_with("| ")).count(),
        4,
        "{md}"
    );

    // HTML: one chart with the ceilings.
    let html_file = dir.path().join("rounds.html");
    let html = run_headroom(
        [
            "report",
            "--rounds",
            "label:round=1",
            "label:round=2",
            "--format",
            "html",
            "-o",
            &html_file.display().to_string(),
            "--store",
            &store_arg,
        ],
        LIMIT,
    );
    assert_exit(&html, 0);
    let html = std::fs::read_to_string(&html_file).unwrap();
    assert_eq!(html.matches("<svg").count(), 1);
    assert!(html.contains("Ceiling over rounds") && html.contains("<polyline"));
    assert!(!html.contains("<b>"));

    // A search's CSV from the store: a row per step.
    let csv_prefix = dir.path().join("find");
    let report = run_headroom(
        [
            "report",
            "label:round=2",
            "--csv",
            &csv_prefix.display().to_string(),
            "--store",
            &store_arg,
        ],
        LIMIT,
    );
    assert_exit(&report, 0);
    assert_eq!(
        csv_rows(&dir.path().join("find_steps.csv")).len(),
        second.steps.len()
    );

    // Bad input is named.
    let bad = run_headroom(
        [
            "report", "--rounds", "1", "--format", "junit", "--store", &store_arg,
        ],
        LIMIT,
    );
    assert_exit(&bad, 2);
    fast.shutdown();
}

fn value(v: f64) -> String {
    headroom::search::result::value(v)
}
