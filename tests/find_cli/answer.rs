//! Issue 12 items 2 and 4: the report of a search leads with its answer, draws its
//! capacity against the offered load, shows what limited the ceiling and sizes it.
//! The demo's report is checked from the demo's own test ([`check_demo_report`]);
//! a search of the PostgreSQL-backed target shows its statements, connections and
//! sizing on the terminal and in the report.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use headroom::target::{self, TargetOptions};

use super::{all_output, find, serial, QUICK};
use crate::support::run_headroom;

const CHROMIUM: &str = "/usr/bin/chromium";

/// The demo's HTML report (in `dir`): titled and opened by the ceiling, the capacity
/// chart's x axis is the offered load, the rate over time has no partial last second,
/// and Chromium draws charts (coloured pixels in a screenshot). The demo's stdout
/// shows each step once (on stderr as it ends), not a second time as a table.
pub(super) fn check_demo_report(dir: &Path, stdout: &str) {
    assert!(
        !stdout.contains("Achieved"),
        "the step table again:\n{stdout}"
    );
    let md = std::fs::read_to_string(dir.join("headroom-demo-report.md")).unwrap();
    assert!(md.starts_with("# Ceiling: "), "{md}");
    // The HTML's title is the ceiling the terminal printed (`800 req/s`, or `at least
    // 800 req/s` when the search stopped short of a failed step).
    let printed = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Ceiling:"))
        .unwrap_or_else(|| panic!("{stdout}"))
        .trim()
        .trim_end_matches(" (a lower bound)");
    let path = dir.join("headroom-demo-report.html");
    let html = std::fs::read_to_string(&path).unwrap();
    let title = format!("<title>Ceiling: {printed} — ");
    assert!(html.contains(&title), "no {title}: {html}");
    let body = html.split("<body>").nth(1).unwrap();
    assert!(body.starts_with("\n<h2>Ceiling: "), "{body}");
    let capacity = svg(&html, "chart capacity");
    assert!(capacity.contains("offered load (req/s)"), "{capacity}");
    assert!(!capacity.contains("against achieved"), "{capacity}");
    assert!(capacity.contains("class=\"mark ceiling\""), "{capacity}");
    // Offered vs achieved over the ceiling step: every achieved point is well above
    // the x axis (y = 216); a partial last second would fall towards it.
    let rates = svg(&html, "aria-label=\"Offered vs achieved rate\"");
    let achieved = rates.split("<polyline").nth(2).unwrap();
    let points = achieved.split("points=\"").nth(1).unwrap();
    let points = points.split('"').next().unwrap();
    assert!(!points.is_empty(), "{rates}");
    for p in points.split(' ') {
        let y: f64 = p.split(',').nth(1).unwrap().parse().unwrap();
        assert!(y < 150.0, "achieved falls towards 0 at {p}: {rates}");
    }
    assert!(
        html.matches("class=\"chart step ").count() >= 4,
        "a chart per step"
    );
    assert!(html.contains("prefers-color-scheme:dark") && html.contains("@media print"));
    let coloured = screenshot_coloured_pixels(&path);
    assert!(
        coloured > 5_000,
        "{coloured} coloured pixels: charts not drawn"
    );
}

/// The `<svg>` element of `html` whose opening tag contains `marker`.
fn svg<'a>(html: &'a str, marker: &str) -> &'a str {
    let at = html
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker}: {html}"));
    let start = html[..at].rfind("<svg").unwrap();
    let end = at + html[at..].find("</svg>").unwrap();
    &html[start..end]
}

/// Screenshots `file` in headless Chromium and counts the saturated pixels: chart
/// lines and marks (text and table borders are grey).
fn screenshot_coloured_pixels(file: &Path) -> usize {
    assert!(Path::new(CHROMIUM).exists(), "{CHROMIUM} is missing");
    let profile = tempfile::tempdir().unwrap();
    let png = profile.path().join("shot.png");
    let status = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1200,3000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", file.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("start chromium");
    assert!(status.success(), "chromium failed");
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert!(channels >= 3, "{:?}", info.color_type);
    buf[..info.buffer_size()]
        .chunks(channels)
        .filter(|px| {
            let (r, g, b) = (px[0] as i32, px[1] as i32, px[2] as i32);
            r.max(g).max(b) - r.min(g).min(b) > 60
        })
        .count()
}

/// A search of the PostgreSQL-backed target (2 workers × 10 ms on `/work`: 200/s),
/// watching PostgreSQL and the target's process: find's terminal and the report show
/// the ceiling step's and the failing step's top statements, connections against
/// max_connections and the process's CPU, and a sizing table whose figures are the
/// stored profile's scaled to the load.
#[test]
fn a_postgres_search_shows_what_limited_it_and_sizes_it() {
    let _one = serial();
    let Some(cluster) = crate::support::statements_cluster(&[]) else {
        return;
    };
    let t = target::spawn(TargetOptions {
        workers: 2,
        service_time: Duration::from_millis(10),
        postgres: Some(cluster.url()),
        ..TargetOptions::loopback()
    })
    .expect("target on PostgreSQL");
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("tasks.yaml");
    std::fs::write(
        &scenario,
        format!(
            "name: tasks\ntarget: {}\nrequests:\n  - {{name: create, method: POST, path: /tasks, json: {{name: a}}}}\n  - {{name: work, path: /work}}\n",
            t.url()
        ),
    )
    .unwrap();
    let store = dir.path().join("h.db");
    let pg = format!("postgres:{}", cluster.url());
    // This test process serves the target: watching it watches the target.
    let me = format!("pid:{}", std::process::id());
    let mut args = vec![scenario.to_str().unwrap(), "--from", "50", "--to", "800"];
    args.extend(["--precision", "25%", "--threshold", "p95 < 50ms"]);
    args.extend(["--watch", &pg, "--watch", &me, "--quiet"]);
    let store_arg = store.display().to_string();
    args.extend(["--store", &store_arg]);
    args.extend(QUICK);
    let (out, result) = find(&args, &dir.path().join("r.json"));
    let text = all_output(&out);
    let ceiling = result
        .ceiling
        .unwrap_or_else(|| panic!("no ceiling\n{text}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for want in [
        "What limited the ceiling",
        "Ceiling step",
        "First failing step",
        "top statements",
        "of max_connections",
        "INSERT",
        "Sizing",
        "runs out at",
    ] {
        assert!(
            stdout.contains(want),
            "no {want:?} on the terminal:\n{text}"
        );
    }

    let report = |format: &str, extra: &[&str]| {
        let mut argv = vec![
            "report", "latest", "--format", format, "--store", &store_arg,
        ];
        argv.extend(extra);
        let out = run_headroom(&argv, Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let md = report("md", &["--size-for", "100,400"]);
    assert!(md.starts_with("## Ceiling: "), "{md}");
    for want in [
        "#### Ceiling step",
        "#### First failing step",
        "| top statements |",
        "of max_connections",
    ] {
        assert!(md.contains(want), "no {want:?} in the report:\n{md}");
    }
    // The sizing row of the watched process follows from the stored profile: its
    // largest CPU sample at the ceiling step, scaled to 400 / ceiling.
    let step = result
        .steps
        .iter()
        .rev()
        .find(|s| s.passed && !s.summary.generator.bound && s.rate == ceiling)
        .unwrap();
    let row = step
        .summary
        .watches
        .iter()
        .find(|w| w.spec == me)
        .and_then(|w| w.profile())
        .unwrap();
    let want = format!("{:.2} cores", row.cpu.max * 400.0 / ceiling);
    let sizing = md
        .split("### Sizing")
        .nth(1)
        .unwrap_or_else(|| panic!("{md}"));
    let line = sizing
        .lines()
        .find(|l| l.starts_with(&format!("| {me} (")))
        .unwrap_or_else(|| panic!("no sizing row for {me}:\n{md}"));
    let cells: Vec<&str> = line.split('|').map(str::trim).collect();
    assert!(cells[3].starts_with(&want), "{line} (want {want} at 400)");
    // A load the size-for asks about that is the ceiling itself says so (a search
    // that doubles from 50 may land on 400 exactly).
    let at = |load: f64| {
        let tag = if load == ceiling { " (ceiling)" } else { "" };
        format!("at {load} req/s{tag}")
    };
    let header = format!("| part | {} | {} |", at(100.0), at(400.0));
    assert!(md.contains(&header), "no {header:?} in the report:\n{md}");
    let html = report("html", &[]);
    assert!(html.contains("<h4>Ceiling step"), "{html}");
    assert!(html.contains("top statements"), "{html}");
    t.shutdown();
}
