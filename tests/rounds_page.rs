//! Issue 12: the rounds page (`report --rounds ... --format html`) as a reader sees it,
//! rendered in headless Chromium. Two short searches and a run against the built-in
//! target make three rounds; the page's chart of ceilings over the rounds must have
//! drawn lines in a screenshot (`Page.captureScreenshot` of its box), in the light
//! scheme and in the dark one (`prefers-color-scheme: dark` emulated), with its lines
//! and text legible against the page's background, no console error and no request
//! beyond the file itself.

use std::path::Path;
use std::time::Duration;

use headroom::target::{self, TargetOptions};
use serde_json::Value;

use crate::support::{
    assert_exit, chromium_runtime, contrast, luminance, run_headroom, saturated, Chromium, Shot,
};

const LIMIT: Duration = Duration::from_secs(60);

/// A short search of `url` up to `to` req/s (every step passes: its ceiling is `to`,
/// a lower bound), stored as round `round`.
fn search(url: &str, store: &Path, to: &str, round: &str) {
    let round = format!("round={round}");
    let out = run_headroom(
        [
            "find",
            "--url",
            url,
            "--from",
            "50",
            "--to",
            to,
            "--step-duration",
            "500ms",
            "--warmup",
            "0s",
            "--cooldown",
            "100ms",
            "--wait-ports",
            "off",
            "--threads",
            "1",
            "-q",
            "--label",
            &round,
            "--note",
            "workers=4",
            "--store",
            store.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_exit(&out, 0);
}

/// The colour of CSS property `property` of the first element matching `selector`.
async fn colour(page: &Chromium, selector: &str, property: &str) -> [u8; 3] {
    let js = format!(
        "getComputedStyle(document.querySelector({selector:?}))[{property:?}]
            .match(/[0-9.]+/g).slice(0, 3).map(Number)"
    );
    page.eval(&js).await
}

/// What a screenshot of the chart holds against the page's background `bg`: pixels
/// that differ from it at all, and saturated ones (lines and dots) that stand out
/// from it by WCAG's 3:1 for graphics.
fn ink(shot: &Shot, bg: [u8; 3]) -> (usize, usize) {
    let drawn = shot.count(|px| px.iter().zip(bg).any(|(a, b)| a.abs_diff(b) > 24));
    let lines = shot.count(|px| saturated(px) && contrast(px, bg) >= 3.0);
    (drawn, lines)
}

/// Reads the page in the scheme it is in now: the chart's text stands out from the
/// background (4.5:1), the screenshot of its box holds drawn lines, and nothing in it
/// is the other scheme's background.
async fn check_scheme(page: &Chromium, dark: bool) -> (usize, usize) {
    let bg = colour(page, "body", "backgroundColor").await;
    let fg = colour(page, "body", "color").await;
    assert_eq!(
        luminance(bg) < 0.1,
        dark,
        "background {bg:?} (dark: {dark})"
    );
    assert!(contrast(fg, bg) >= 7.0, "text {fg:?} on {bg:?}");
    for text in [
        ".chart .title",
        ".chart .tick",
        ".chart .label",
        ".chart .legend",
    ] {
        let fill = colour(page, text, "fill").await;
        assert!(
            contrast(fill, bg) >= 4.5,
            "{text} {fill:?} on {bg:?} (dark: {dark})"
        );
    }
    let rect = page.rect_of("svg.chart").await;
    assert!(rect[2] > 300.0 && rect[3] > 100.0, "chart box {rect:?}");
    let shot = page.screenshot(rect).await;
    assert!(
        shot.width >= 300 && shot.height >= 100,
        "{}x{}",
        shot.width,
        shot.height
    );
    let (drawn, lines) = ink(&shot, bg);
    // The other scheme's background: a chart that paints its own box would show it.
    let other = if dark { [255; 3] } else { [0x15, 0x17, 0x1a] };
    let foreign = shot.count(|px| px.iter().zip(other).all(|(a, b)| a.abs_diff(b) < 8));
    assert!(
        foreign < shot.rgb.len() / 100,
        "{foreign} pixels of {other:?}"
    );
    (drawn, lines)
}

#[test]
fn the_rounds_page_draws_its_chart_legibly_in_light_and_dark() {
    let target = target::spawn(TargetOptions::loopback()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.db");
    let url = format!("{}/work", target.url());
    search(&url, &store, "100", "1");
    search(&url, &store, "150", "2");
    let store_arg = store.to_str().unwrap();
    let out = run_headroom(
        [
            "run",
            "--url",
            &url,
            "--rate",
            "50",
            "--duration",
            "1s",
            "--threads",
            "1",
            "-q",
            "--label",
            "round=3",
            "--store",
            store_arg,
        ],
        LIMIT,
    );
    assert_exit(&out, 0);
    target.shutdown();
    let page = dir.path().join("rounds.html");
    let out = run_headroom(
        [
            "report",
            "--rounds",
            "label:round=1",
            "label:round=2",
            "label:round=3",
            "--format",
            "html",
            "-o",
            page.to_str().unwrap(),
            "--store",
            store_arg,
        ],
        LIMIT,
    );
    assert_exit(&out, 0);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("prefers-color-scheme:dark"), "no dark styles");

    chromium_runtime().block_on(async {
        let chromium = Chromium::launch().await;
        let file = format!("file://{}", page.display());
        chromium.page.goto(file.as_str()).await.unwrap();
        let title: String = chromium.eval("document.title").await;
        assert_eq!(title, "headroom rounds");
        // The chart as the page states it: a ceiling line through the two searches
        // and a dot for the run.
        let lines: Vec<Value> = chromium
            .eval("[...document.querySelectorAll('svg.chart polyline')].map(p => p.getAttribute('points').split(' ').length)")
            .await;
        assert_eq!(lines, [Value::from(2), Value::from(1)], "{html}");

        let (drawn, lines) = check_scheme(&chromium, false).await;
        assert!(drawn > 2_000 && lines > 300, "light: {drawn} drawn, {lines} line pixels");
        chromium.emulate_dark().await;
        let dark: bool = chromium
            .eval("matchMedia('(prefers-color-scheme: dark)').matches")
            .await;
        assert!(dark, "the emulation did not take");
        let (drawn, lines) = check_scheme(&chromium, true).await;
        assert!(drawn > 2_000 && lines > 300, "dark: {drawn} drawn, {lines} line pixels");
        chromium.assert_clean("file://");
        chromium.close().await;
    });
}
