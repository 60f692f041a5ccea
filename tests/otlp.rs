//! `--otlp URL` end to end: a run's metrics pushed over OTLP/HTTP into a real
//! Prometheus (3.x, its OTLP receiver; built by scripts/peers.sh) while the run goes,
//! then read back with PromQL and held against the run's own summary. A receiver that
//! is not there costs a warning, never the run. Every summary adds up (read_summary).

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use headroom::metrics::summary::Summary;
use headroom::target::{self, TargetOptions};
use serde_json::Value;

use crate::support::{
    assert_exit, free_port, headroom_bin, http_get, peer_path, read_summary, refusing_port,
    run_command, stderr, test_store,
};

const LIMIT: Duration = Duration::from_secs(60);

/// A throwaway Prometheus on loopback, its OTLP receiver on, killed when dropped.
struct Prometheus {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start() -> Prometheus {
        let bin = peer_path("prometheus");
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        // No scrape jobs: everything it holds was pushed.
        std::fs::write(&config, "global: {}\n").unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let child = Command::new(bin)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--web.enable-otlp-receiver")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::File::create(dir.path().join("log")).unwrap(),
            ))
            .spawn()
            .expect("start prometheus");
        let prometheus = Prometheus {
            child,
            addr,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(addr).is_err() || http_get(addr, "/-/ready").0 != 200 {
            assert!(
                Instant::now() < deadline,
                "prometheus not ready: {}",
                prometheus.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        prometheus
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("log")).unwrap_or_default()
    }

    /// `--otlp`'s value for this Prometheus.
    fn otlp(&self) -> String {
        format!("http://{}/api/v1/otlp", self.addr)
    }

    /// The instant vector of `promql`, as (labels, value) pairs.
    fn query(&self, promql: &str) -> Vec<(Value, f64)> {
        let (status, body) = http_get(
            self.addr,
            &format!("/api/v1/query?query={}", encode(promql)),
        );
        assert_eq!(status, 200, "{promql}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        v["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let value = r["value"][1].as_str().unwrap().parse().unwrap();
                (r["metric"].clone(), value)
            })
            .collect()
    }

    /// The single value of `promql`, or `None` when it has no sample (yet).
    fn value(&self, promql: &str) -> Option<f64> {
        let result = self.query(promql);
        assert!(result.len() <= 1, "{promql}: {result:?}");
        result.first().map(|(_, v)| *v)
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Percent-encodes a query parameter (PromQL has braces, quotes and spaces).
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `headroom run ARGS --otlp ... --quiet --out DIR/s.json`, pushing every 500 ms.
fn headroom(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(headroom_bin());
    command
        .arg("run")
        .args(args)
        .args(["--quiet", "--out"])
        .arg(dir.join("s.json"))
        .env("HEADROOM_STORE", test_store())
        .env("OTEL_METRIC_EXPORT_INTERVAL", "500");
    command
}

#[test]
fn a_runs_counters_and_latency_arrive_in_prometheus_while_it_runs_and_add_up_at_the_end() {
    let prometheus = Prometheus::start();
    let target = target::spawn(TargetOptions::loopback()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("otlp.yaml");
    // Two names, one of which fails: the outcomes are labels.
    std::fs::write(
        &scenario,
        format!(
            "name: otlp\ntarget: {}\nload: {{model: arrival-rate, rate: 200, duration: 4s}}\nthresholds: [\"errors < 50%\"]\n\
             requests:\n  - {{name: work, weight: 3, path: /work}}\n  - {{name: broken, weight: 1, path: /status/503}}\n",
            target.url()
        ),
    )
    .unwrap();
    let otlp = prometheus.otlp();
    let mut child = headroom(dir.path(), &[scenario.to_str().unwrap(), "--otlp", &otlp])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // While it runs, the counter is already there and still behind the run's end.
    let total = "sum(headroom_requests_total{job=\"headroom\"})";
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut during = None;
    while Instant::now() < deadline && during.is_none() {
        std::thread::sleep(Duration::from_millis(250));
        during = prometheus.value(total).filter(|&v| v > 0.0);
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "the run ended before a push was seen"
    );
    let during = during.expect("no push reached Prometheus during the run");
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    let s: Summary = read_summary(&dir.path().join("s.json"));
    assert!(!err.contains("--otlp"), "no push failed: {err}");
    assert!(
        during < s.requests as f64,
        "{during} seen during a run of {}",
        s.requests
    );

    // The last push (at the end) holds the run's totals, to the request.
    let ok = "headroom_requests_total{job=\"headroom\",name=\"work\",outcome=\"ok\"}";
    let failed = "headroom_requests_total{job=\"headroom\",name=\"broken\",outcome=\"status_5xx\"}";
    assert_eq!(prometheus.value(total), Some(s.requests as f64));
    assert_eq!(
        prometheus.value(ok),
        Some(s.by_name["work"].requests as f64)
    );
    assert_eq!(
        prometheus.value(failed),
        Some(s.errors.by_kind["status_5xx"] as f64)
    );
    let count = prometheus
        .value("headroom_request_duration_seconds_count")
        .unwrap();
    assert_eq!(count, s.requests as f64, "every request's latency");
    let sum = prometheus
        .value("headroom_request_duration_seconds_sum")
        .unwrap();
    let mean_ms = sum / count * 1000.0;
    assert!(
        (mean_ms - s.latency_ms.avg).abs() <= s.latency_ms.avg * 0.02 + 0.05,
        "mean {mean_ms} ms pushed, {} ms in the summary",
        s.latency_ms.avg
    );
    // The buckets place the median where the summary does (their bounds are coarse:
    // the median's bucket must contain the summary's p50).
    let p50_s = prometheus
        .value("histogram_quantile(0.5, sum by (le) (headroom_request_duration_seconds_bucket))")
        .unwrap();
    let bounds = [0.0, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25];
    let p50 = s.latency_ms.p50 / 1000.0;
    let bucket = bounds
        .windows(2)
        .find(|w| p50 > w[0] && p50 <= w[1])
        .unwrap();
    assert!(
        p50_s > bucket[0] && p50_s <= bucket[1],
        "p50 {p50_s} s from Prometheus, {p50} s in the summary"
    );
    // Who pushed: the resource's attributes, on Prometheus' target_info.
    let info = prometheus.query("target_info{job=\"headroom\"}");
    assert_eq!(info.len(), 1, "{info:?}");
    assert_eq!(info[0].0["headroom_command"], "run");
    assert_eq!(info[0].0["headroom_scenario"], "otlp");
    assert_eq!(info[0].0["headroom_target"], target.url());
}

#[test]
fn a_receiver_that_is_not_there_costs_a_warning_not_the_run() {
    let target = target::spawn(TargetOptions::loopback()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Bound and not listening for the whole test: refused, and nobody else's.
    let (_refusing, port) = refusing_port();
    let nowhere = format!("http://127.0.0.1:{port}");
    let url = format!("{}/work", target.url());
    let command = headroom(
        dir.path(),
        &[
            "--url",
            &url,
            "--rate",
            "50",
            "--duration",
            "2s",
            "--otlp",
            &nowhere,
        ],
    );
    let out = run_command(command, LIMIT);
    assert_exit(&out, 0);
    let s = read_summary(&dir.path().join("s.json"));
    assert!(s.completed > 0, "{s:?}");
    let err = stderr(&out);
    let endpoint = format!("--otlp {nowhere}/v1/metrics");
    assert_eq!(
        err.matches("a push failed").count(),
        1,
        "one warning as it happens: {err}"
    );
    assert!(
        err.contains(&format!("{endpoint}: ")) && err.contains("pushes failed"),
        "the end names the receiver and counts the failures: {err}"
    );
    assert!(err.contains("Connection refused"), "and says why: {err}");

    // A server that is there but has no receiver at that path (the built-in target).
    let elsewhere = format!("{}/no-receiver", target.url());
    let command = headroom(
        dir.path(),
        &[
            "--url",
            &url,
            "--rate",
            "50",
            "--duration",
            "1s",
            "--otlp",
            &elsewhere,
        ],
    );
    let out = run_command(command, LIMIT);
    assert_exit(&out, 0);
    read_summary(&dir.path().join("s.json"));
    let err = stderr(&out);
    assert!(
        err.contains("status code: 404 (no OTLP receiver at that path"),
        "{err}"
    );
}

#[test]
fn an_otlp_url_that_is_not_http_is_bad_input_before_any_load() {
    let dir = tempfile::tempdir().unwrap();
    let command = headroom(
        dir.path(),
        &["--url", "http://127.0.0.1:9/", "--otlp", "127.0.0.1:4317"],
    );
    let out = run_command(command, LIMIT);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("http:// or https://"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("s.json").exists());
}
