//! A run's summary and timeline as CSV, in the shape Locust's `--csv PREFIX` writes:
//! `PREFIX_stats.csv` holds one row per request name and an `Aggregated` row (Locust's
//! column names, times in ms); `PREFIX_stats_history.csv` holds one row per second of
//! the timeline (the summary JSON's `timeline` fields). For a search,
//! `PREFIX_steps.csv` adds one row per step.
//!
//! [`write`] writes the files; [`stats`], [`history`] and [`steps`] render each one
//! to bytes. The `csv` crate quotes names holding commas, quotes or line breaks.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::metrics::summary::{Latency, Second, Summary};
use crate::store::StoredStep;

/// The `_stats.csv` row (Locust's columns, minus those headroom does not measure).
#[derive(Debug, Serialize)]
struct StatsRow<'a> {
    #[serde(rename = "Name")]
    name: &'a str,
    #[serde(rename = "Request Count")]
    requests: u64,
    #[serde(rename = "Failure Count")]
    failures: u64,
    #[serde(rename = "Median Response Time")]
    median: f64,
    #[serde(rename = "Average Response Time")]
    avg: f64,
    #[serde(rename = "Min Response Time")]
    min: f64,
    #[serde(rename = "Max Response Time")]
    max: f64,
    #[serde(rename = "Requests/s")]
    rps: f64,
    #[serde(rename = "Failures/s")]
    fps: f64,
    #[serde(rename = "50%")]
    p50: f64,
    #[serde(rename = "90%")]
    p90: f64,
    #[serde(rename = "95%")]
    p95: f64,
    #[serde(rename = "99%")]
    p99: f64,
    #[serde(rename = "99.9%")]
    p999: f64,
    #[serde(rename = "100%")]
    p100: f64,
}

fn stats_row<'a>(
    name: &'a str,
    requests: u64,
    failures: u64,
    l: &Latency,
    secs: f64,
) -> StatsRow<'a> {
    let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    StatsRow {
        name,
        requests,
        failures,
        median: l.p50,
        avg: l.avg,
        min: l.min,
        max: l.max,
        rps: per_s(requests),
        fps: per_s(failures),
        p50: l.p50,
        p90: l.p90,
        p95: l.p95,
        p99: l.p99,
        p999: l.p999,
        p100: l.max,
    }
}

fn finish(w: csv::Writer<Vec<u8>>) -> Vec<u8> {
    w.into_inner().expect("writing into memory cannot fail")
}

/// `_stats.csv`: a row per request name, then `Aggregated` over all requests.
pub fn stats(s: &Summary) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let secs = s.duration_s;
    for (name, n) in &s.by_name {
        let row = stats_row(name, n.requests, n.errors.count, &n.latency_ms, secs);
        w.serialize(row).expect("a row serializes");
    }
    let all = stats_row(
        "Aggregated",
        s.requests,
        s.errors.count,
        &s.latency_ms,
        secs,
    );
    w.serialize(all).expect("a row serializes");
    finish(w)
}

/// `_stats_history.csv`: one row per timeline second, the JSON's field names as the
/// header (always written, even with no second).
pub fn history(timeline: &[Second]) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    if timeline.is_empty() {
        w.serialize(Second::default()).expect("a row serializes");
        // Only the header: the row just written is dropped below.
        let bytes = finish(w);
        let header_end = bytes.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
        return bytes[..header_end].to_vec();
    }
    for second in timeline {
        w.serialize(second).expect("a row serializes");
    }
    finish(w)
}

/// `_steps.csv` of a search: each step's value, verdict and figures.
pub fn steps(steps: &[StoredStep]) -> Vec<u8> {
    #[derive(Serialize)]
    struct StepRow {
        step: u32,
        value: f64,
        passed: bool,
        generator_bound: bool,
        achieved: f64,
        requests: u64,
        errors: u64,
        dropped: u64,
        p50_ms: f64,
        p95_ms: f64,
        p99_ms: f64,
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    for s in steps {
        let m = &s.summary;
        w.serialize(StepRow {
            step: s.index + 1,
            value: s.rate,
            passed: s.ok,
            generator_bound: m.generator.bound,
            achieved: m.rate.achieved,
            requests: m.requests,
            errors: m.errors.count,
            dropped: m.dropped,
            p50_ms: m.latency_ms.p50,
            p95_ms: m.latency_ms.p95,
            p99_ms: m.latency_ms.p99,
        })
        .expect("a row serializes");
    }
    finish(w)
}

/// `PREFIX` + `suffix` (`out/run` + `_stats.csv` → `out/run_stats.csv`).
pub fn path(prefix: &Path, suffix: &str) -> PathBuf {
    let mut name = prefix.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Writes `PREFIX_stats.csv` and `PREFIX_stats_history.csv` (and, with steps,
/// `PREFIX_steps.csv`); returns the files written.
pub fn write(
    prefix: &Path,
    summary: &Summary,
    timeline: &[Second],
    search_steps: &[StoredStep],
) -> std::io::Result<Vec<PathBuf>> {
    let mut files = vec![
        (path(prefix, "_stats.csv"), stats(summary)),
        (path(prefix, "_stats_history.csv"), history(timeline)),
    ];
    if !search_steps.is_empty() {
        files.push((path(prefix, "_steps.csv"), steps(search_steps)));
    }
    for (file, bytes) in &files {
        std::fs::write(file, bytes).map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot write {}: {e}", file.display()))
        })?;
    }
    Ok(files.into_iter().map(|(f, _)| f).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_have_a_row_per_name_and_an_aggregate_with_quoted_names() {
        let mut s = Summary::empty("t", 2.0);
        s.requests = 10;
        s.errors.count = 2;
        s.latency_ms.p50 = 4.0;
        let mut n = crate::metrics::summary::NameSummary {
            requests: 10,
            ..Default::default()
        };
        n.errors.count = 2;
        s.by_name.insert("GET /a,\"b\"".into(), n);
        let text = String::from_utf8(stats(&s)).unwrap();
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
        assert_eq!(
            header[..4],
            [
                "Name",
                "Request Count",
                "Failure Count",
                "Median Response Time"
            ]
        );
        let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(&rows[0][0], "GET /a,\"b\"");
        assert_eq!(&rows[1][0], "Aggregated");
        assert_eq!(&rows[1][1], "10");
        assert_eq!(&rows[1][7], "5.0", "requests per second over 2 s");
        assert_eq!(&rows[1][8], "1.0", "failures per second");
    }

    #[test]
    fn history_has_a_row_per_second_and_a_header_when_empty() {
        let seconds = [
            Second {
                t: 0,
                requests: 5,
                ..Second::default()
            },
            Second {
                t: 1,
                requests: 6,
                ..Second::default()
            },
        ];
        let text = String::from_utf8(history(&seconds)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("t,requests,errors,dropped,offered,p50_ms"),
            "{text}"
        );
        assert_eq!(lines.len(), 3);
        assert!(lines[2].starts_with("1,6,"));
        let empty = String::from_utf8(history(&[])).unwrap();
        assert_eq!(empty.lines().count(), 1);
        assert!(empty.starts_with("t,requests"));
    }

    #[test]
    fn prefixes_get_locust_suffixes() {
        assert_eq!(
            path(Path::new("out/run"), "_stats.csv"),
            PathBuf::from("out/run_stats.csv")
        );
    }
}
