//! `/metrics` on the dashboard's server, scraped while a run goes: its counters are the
//! engine's per-second figures added up, by request name and outcome.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use headroom::target::{self, TargetOptions};
use prometheus_parse::{Scrape, Value};

use super::{http_get, serial, write, Running};
use crate::support::read_summary;

/// Every sample of a scrape: `name{k="v",...}` → value.
fn samples(text: &str) -> BTreeMap<String, f64> {
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    let mut out = BTreeMap::new();
    for s in scrape.samples {
        let labels: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let key = format!("{}{{{}}}", s.metric, {
            let mut l = labels;
            l.sort();
            l.join(",")
        });
        let value = match s.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => v,
            Value::Histogram(h) => {
                for b in h {
                    let le = if b.less_than == f64::INFINITY {
                        "+Inf".to_string()
                    } else {
                        b.less_than.to_string()
                    };
                    out.insert(format!("{}_bucket{{le={le}}}", s.metric), b.count);
                }
                continue;
            }
            Value::Summary(_) => continue,
        };
        out.insert(key, value);
    }
    out
}

#[test]
fn metrics_count_the_runs_requests_by_name_and_outcome_as_they_happen() {
    let _one = serial();
    let target = target::spawn(TargetOptions::loopback()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let scenario = write(
        dir.path(),
        "two.yaml",
        &format!(
            "name: two\ntarget: {}\nload: {{model: arrival-rate, rate: 200, duration: 4s}}\nrequests:\n  - {{name: home, weight: 3, path: /work}}\n  - {{name: broken, weight: 1, path: /status/500}}\n",
            target.url()
        ),
    );
    let out = dir.path().join("s.json");
    let run = Running::start(&[
        "run",
        scenario.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    // Scrape during the run, once at least two seconds are in.
    let deadline = Instant::now() + Duration::from_secs(15);
    let scraped = loop {
        let text = http_get(run.addr, "/metrics").expect("/metrics answers 200");
        let s = samples(&text);
        if s["headroom_seconds_total{}"] >= 2.0 {
            break (s, text);
        }
        assert!(Instant::now() < deadline, "no second counted:\n{text}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let (m, text) = scraped;
    let (code, _, stderr) = run.wait(Duration::from_secs(30));
    assert_eq!(code, 0, "{stderr}");
    let summary = read_summary(&out);

    // The counters cover exactly the seconds they say, as the summary's timeline has them.
    let n = m["headroom_seconds_total{}"] as usize;
    assert!(n < summary.timeline.len(), "scraped during the run");
    let seconds = &summary.timeline[..n];
    let requests: u64 = seconds.iter().map(|s| s.requests).sum();
    let errors: u64 = seconds.iter().map(|s| s.errors).sum();
    let dropped: u64 = seconds.iter().map(|s| s.dropped).sum();
    let count = |name: &str, outcome: &str| -> u64 {
        let key = format!("headroom_requests_total{{name={name},outcome={outcome}}}");
        m.get(&key).copied().unwrap_or(0.0) as u64
    };
    assert!(requests > 0);
    assert_eq!(count("broken", "status_5xx"), errors, "{text}");
    assert_eq!(count("home", "ok"), requests - errors, "{text}");
    assert_eq!(
        count("broken", "ok") + count("home", "status_5xx"),
        0,
        "{text}"
    );
    let all: f64 = m
        .iter()
        .filter(|(k, _)| k.starts_with("headroom_requests_total{"))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(all as u64, requests);
    assert_eq!(m["headroom_dropped_total{}"] as u64, dropped);
    assert!(m.contains_key("headroom_in_flight{}"), "{text}");
    // The latency histogram counts every request.
    assert_eq!(
        m["headroom_request_duration_seconds_count{}"] as u64, requests,
        "{text}"
    );
    assert_eq!(
        m["headroom_request_duration_seconds_bucket{le=+Inf}"] as u64, requests,
        "{text}"
    );
    // The built-in target holds /work for 5 ms: only the /status/500 answers can be in
    // the buckets below that, and nothing takes 30 s. (How many fall under 25 ms
    // depends on the machine's load.)
    assert!(
        m["headroom_request_duration_seconds_bucket{le=0.0025}"] as u64 <= errors,
        "{text}"
    );
    assert_eq!(
        m["headroom_request_duration_seconds_bucket{le=30}"] as u64, requests,
        "{text}"
    );
    assert_eq!(
        summary.errors.by_kind.get("status_5xx").copied(),
        Some(summary.errors.count)
    );
}
