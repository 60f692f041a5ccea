//! `headroom report` end to end (issue 5): runs against real nginx on loopback, kept in
//! a temporary store, rendered as HTML (opened in headless Chromium), JUnit (parsed
//! with a real XML parser), Markdown and JSON; text from the target or the user never
//! becomes markup.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use headroom::metrics::summary::Summary;

use crate::support::{assert_adds_up, run_headroom, Nginx};

const LIMIT: Duration = Duration::from_secs(60);
const CHROMIUM: &str = "/usr/bin/chromium";
const HOSTILE: &str = "<script>document.title='pwned'</script>";

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// Runs a 1 s scenario whose request name is [`HOSTILE`], with one threshold that
/// holds and one that cannot, into a store in `dir`; returns the store path.
fn hostile_run(nginx: &Nginx, dir: &Path) -> PathBuf {
    let scenario = dir.join("hostile.yaml");
    std::fs::write(
        &scenario,
        format!(
            "name: hostile\ntarget: {}\nload: {{model: arrival-rate, rate: 100, duration: 1s}}\n\
             requests:\n  - {{name: \"{HOSTILE}\", path: /}}\n",
            nginx.url()
        ),
    )
    .unwrap();
    let store = dir.join("history.db");
    let out = run_headroom(
        [
            "run".to_string(),
            scenario.display().to_string(),
            "--quiet".into(),
            "--threads".into(),
            "1".into(),
            "--threshold".into(),
            "p95 < 10s".into(),
            "--threshold".into(),
            "rate > 1000000/s".into(),
            "--label".into(),
            format!("note={HOSTILE}"),
            "--store".into(),
            store.display().to_string(),
        ],
        LIMIT,
    );
    assert_eq!(
        out.status.code(),
        Some(99),
        "one threshold fails: {}",
        text(&out.stderr)
    );
    store
}

fn report(store: &Path, format: &str) -> String {
    let out = run_headroom(
        [
            "report",
            "latest",
            "--format",
            format,
            "--store",
            &store.display().to_string(),
        ],
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn the_html_report_renders_its_charts_in_chromium_without_scripts_or_fetches() {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing; `bash scripts/test.sh` installs it (apt-get install chromium)"
    );
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let store = hostile_run(&nginx, dir.path());
    let file = dir.path().join("report.html");
    let out = run_headroom(
        [
            "report",
            "latest",
            "--format",
            "html",
            "-o",
            &file.display().to_string(),
            "--store",
            &store.display().to_string(),
        ],
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(&file).unwrap();
    assert!(
        !html.contains("<script"),
        "markup from the target was not escaped"
    );
    assert!(
        html.contains("&lt;script&gt;"),
        "the hostile name is shown, escaped"
    );
    for fetch in ["http", "src=", "href=", "url(", "@import"] {
        assert!(
            !html.contains(fetch),
            "the report could fetch something: {fetch}"
        );
    }

    let profile = tempfile::tempdir().unwrap();
    let browser = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", file.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let dumped = wait_output(browser, Duration::from_secs(60));
    let dom = text(&dumped.stdout);
    let log = text(&dumped.stderr);
    assert!(dumped.status.success(), "chromium failed: {log}");
    assert!(
        dom.matches("<svg").count() >= 3,
        "charts in the DOM:\n{dom}"
    );
    assert!(dom.matches("<polyline").count() >= 6, "lines in the charts");
    assert!(dom.contains("Latency by percentile"));
    assert!(
        !dom.contains("pwned</title>") && !dom.contains("<script"),
        "{dom}"
    );
    for bad in ["CONSOLE", "Uncaught", "ERR_"] {
        assert!(!log.contains(bad), "chromium logged {bad}:\n{log}");
    }
}

/// Waits for `child` with a deadline, killing it if it overruns.
fn wait_output(mut child: std::process::Child, limit: Duration) -> std::process::Output {
    let deadline = std::time::Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn junit_markdown_and_json_reports_hold_the_verdicts_escaped() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let store = hostile_run(&nginx, dir.path());

    let xml = report(&store, "junit");
    let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), 2, "{xml}");
    let failed: Vec<_> = cases
        .iter()
        .filter(|c| c.children().any(|n| n.has_tag_name("failure")))
        .map(|c| c.attribute("name").unwrap())
        .collect();
    assert_eq!(failed, vec!["rate > 1000000/s"]);
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    assert_eq!(suite.attribute("tests"), Some("2"));
    assert_eq!(suite.attribute("failures"), Some("1"));

    let md = report(&store, "md");
    assert!(!md.contains("<script"), "{md}");
    assert!(md.contains("&lt;script&gt;"), "{md}");
    assert!(
        md.contains("**FAIL**") && md.contains("### Per name"),
        "{md}"
    );

    let json = report(&store, "json");
    let summary: Summary = serde_json::from_str(&json).expect("the summary JSON");
    assert_adds_up(&summary);
    assert!(summary.by_name.contains_key(HOSTILE));
    assert_eq!(summary.thresholds.len(), 2);
}
