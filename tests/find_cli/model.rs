//! Issue 23 item 3: `find` fits the Universal Scalability Law to its steps and reports
//! the peak it predicts (`model` in the JSON, `Model (USL):` in the text and the
//! reports, the fitted curve on the capacity chart).
//!
//! Two targets whose peak is known: the built-in target's queue of c workers (its
//! throughput levels off at c / service time, found in the open model through Little's
//! law), and the same target in its contention mode, whose throughput falls past a
//! peak (searched by users, where N is the user count).

use std::time::Duration;

use headroom::search::{SearchResult, Unit};
use headroom::target::{spawn, TargetOptions};

use super::{all_output, find, serial, target, CAPS, LIMIT, QUICK, SLO};
use crate::support::run_headroom;

/// The result's `model` as written, with every contract key present.
fn model_json(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let model = json["model"].clone();
    assert_eq!(model["kind"], "usl", "{model}");
    for key in ["lambda", "sigma", "kappa", "r2"] {
        assert!(model[key].is_number(), "{key}: {model}");
    }
    for key in ["peak", "peak_concurrency"] {
        assert!(model.get(key).is_some(), "{key}: {model}");
    }
    model
}

/// The highest throughput measured among the steps the fit may use, and its value.
fn measured_peak(result: &SearchResult) -> (f64, f64) {
    result
        .steps
        .iter()
        .filter(|s| !s.summary.generator.bound && !s.summary.interrupted)
        .map(|s| {
            (
                s.summary.rate.achieved * (1.0 - s.summary.errors.rate),
                s.rate,
            )
        })
        .fold((0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a })
}

#[test]
fn the_fit_of_a_queue_of_workers_peaks_at_its_capacity() {
    // 4 workers × 5 ms: 800 req/s, which the fit's peak must be within 10 % of.
    let _one = serial();
    let t = target(4, 5);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/work", t.url());
    let mut args = vec!["--url", &url, "--from", "100"];
    args.extend(QUICK);
    args.extend(CAPS);
    args.extend(SLO);
    let path = dir.path().join("r.json");
    let (out, result) = find(&args, &path);
    let text = all_output(&out);
    assert_eq!(result.unit, Unit::Rate);
    let json = model_json(&path);
    let model = result
        .model
        .as_ref()
        .unwrap_or_else(|| panic!("no model\n{text}"));
    let peak = model
        .peak
        .unwrap_or_else(|| panic!("no peak: {model:?}\n{text}"));
    assert!(
        (peak - 800.0).abs() <= 80.0,
        "peak {peak}: {model:?}\n{text}"
    );
    assert_eq!(json["peak"].as_f64(), Some(peak));
    assert!(model.r2 >= 0.8 && model.kappa > 0.0, "{model:?}");
    // The fit rests on every step that measured the target: passing and failing (a
    // step the generator could not drive measured nothing of it).
    let measured = result
        .steps
        .iter()
        .filter(|s| !s.summary.generator.bound)
        .count();
    assert_eq!(model.points, measured, "{model:?}\n{text}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("Model (USL): peak "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        line.contains(" in flight (r² ") || line.contains(" in flight, where the steps level off"),
        "{line}"
    );
    assert!(line.contains("(r² "), "{line}");
}

#[test]
fn the_fit_of_a_contended_target_peaks_where_its_throughput_does() {
    // 10 ms of service, then reconciling with the others in flight (0.2 ms × n per
    // exchange): n users complete n / (10 ms + 0.2 ms·n(n−1)), which peaks near
    // √50 ≈ 7 users at about 370/s and falls to about 160/s at 32.
    let _one = serial();
    let t = spawn(TargetOptions {
        workers: 64,
        service_time: Duration::from_millis(10),
        contention: Duration::from_micros(200),
        ..TargetOptions::loopback()
    })
    .expect("start the contended target");
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/work", t.url());
    let store = dir.path().join("h.db").display().to_string();
    let mut args = vec!["--url", &url, "--users", "--from", "1", "--to", "32"];
    args.extend(QUICK);
    args.extend(["--threshold", "p95 < 1s", "--store", &store]);
    let path = dir.path().join("r.json");
    let (out, result) = find(&args, &path);
    let text = all_output(&out);
    assert_eq!(result.unit, Unit::Users);
    model_json(&path);
    let (best, best_at) = measured_peak(&result);
    // The measured throughput really falls past its peak.
    let last = result.steps.last().unwrap();
    assert!(
        last.summary.rate.achieved < 0.7 * best,
        "no fall past {best}/s at {best_at}\n{text}"
    );
    let model = result.model.as_ref().unwrap();
    let peak = model
        .peak
        .unwrap_or_else(|| panic!("no peak: {model:?}\n{text}"));
    assert!(
        (peak - best).abs() <= 0.15 * best,
        "peak {peak} vs measured {best}/s at {best_at} users: {model:?}\n{text}"
    );
    // Where: between the steps on either side of the best one (the steps double), and
    // within 15 % of the target's own peak, √(10 / 0.2) ≈ 7.07 users.
    let at = model.peak_concurrency.unwrap();
    assert!(
        at > best_at / 2.0 && at < best_at * 2.0 && (at - 7.07).abs() <= 0.15 * 7.07,
        "peak at {at} users, measured best at {best_at}\n{text}"
    );
    assert!(model.kappa > 0.0 && model.r2 >= 0.9, "{model:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Model (USL): peak "), "{stdout}");
    assert!(stdout.contains(" users (r² "), "{stdout}");

    // The reports say it and the capacity chart draws the fitted curve and its peak.
    let md = run_headroom(["report", "latest", "--store", &store], LIMIT);
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("- Model (USL): peak "), "{md}");
    let html = run_headroom(
        ["report", "latest", "--format", "html", "--store", &store],
        LIMIT,
    );
    let html = String::from_utf8_lossy(&html.stdout);
    let chart_at = html.find("class=\"chart capacity\"").unwrap();
    let chart = &html[chart_at..chart_at + html[chart_at..].find("</svg>").unwrap()];
    assert!(chart.contains("class=\"line s-usl\""), "{chart}");
    assert!(chart.contains(">USL peak "), "{chart}");
    assert!(html.contains("<li>Model (USL): peak "), "{html}");
}
