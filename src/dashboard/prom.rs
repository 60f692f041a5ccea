//! `/metrics` on the dashboard's server: the run's counters in the OpenMetrics text
//! format, encoded by `prometheus-client` from the board's [`Totals`] at each scrape.
//!
//! Families:
//! - `headroom_requests_total{name,outcome}`: requests completed, by request name and
//!   outcome (`ok`, or the error kind: `status_5xx`, `timeout`, ...);
//! - `headroom_request_duration_seconds`: histogram of every request's latency
//!   (corrected: from its scheduled start in the open model);
//! - `headroom_dropped_total`: iterations dropped at the in-flight cap;
//! - `headroom_in_flight`, `headroom_users` (closed model), `headroom_offered`: as at
//!   the end of the last second;
//! - `headroom_seconds_total`: seconds of load reported, so a scraper can tell which
//!   seconds the counters cover (they move once a second, when a second completes).
//!
//! In a search the counters add up over every step's measured window.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::board::Totals;

/// The exposition's content type (OpenMetrics text, which Prometheus scrapes).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Upper bounds of the latency histogram's buckets, seconds.
pub const BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// A copy of the totals, encoded at one scrape.
#[derive(Debug)]
struct Snapshot {
    totals: Totals,
    names: Vec<String>,
}

/// Encodes `totals` (`names` names `totals.by_name`) as an OpenMetrics exposition.
pub fn encode(totals: &Totals, names: &[String]) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Snapshot {
        totals: totals.clone(),
        names: names.to_vec(),
    }));
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &registry)
        .expect("writing to a String cannot fail");
    out
}

impl Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let t = &self.totals;
        let mut family = encoder.encode_descriptor(
            "headroom_requests",
            "Requests completed, by request name and outcome (ok or the error kind).",
            None,
            MetricType::Counter,
        )?;
        for (i, counts) in t.by_name.iter().enumerate() {
            let name = self.names.get(i).map_or("", String::as_str);
            for (outcome, n) in counts.outcomes() {
                let labels = [("name", name), ("outcome", outcome)];
                ConstCounter::new(n).encode(family.encode_family(&labels)?)?;
            }
        }
        let latency = encoder.encode_descriptor(
            "headroom_request_duration_seconds",
            "Latency of completed requests (from the scheduled start in the open model).",
            None,
            MetricType::Histogram,
        )?;
        histogram(t, latency)?;
        let dropped = encoder.encode_descriptor(
            "headroom_dropped",
            "Iterations dropped because the in-flight cap was reached.",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(t.dropped).encode(dropped)?;
        let seconds = encoder.encode_descriptor(
            "headroom_seconds",
            "Seconds of load these counters cover.",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(t.seconds).encode(seconds)?;
        let in_flight = encoder.encode_descriptor(
            "headroom_in_flight",
            "Iterations in flight at the end of the last second.",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(t.in_flight as i64).encode(in_flight)?;
        let offered = encoder.encode_descriptor(
            "headroom_offered",
            "Offered rate (req/s, open model) or users (closed model) in the last second.",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(t.offered).encode(offered)?;
        if let Some(users) = t.users {
            let gauge = encoder.encode_descriptor(
                "headroom_users",
                "Active users at the end of the last second (closed model).",
                None,
                MetricType::Gauge,
            )?;
            ConstGauge::new(users as i64).encode(gauge)?;
        }
        Ok(())
    }
}

/// Encodes the merged latency histogram (µs) as a Prometheus histogram in seconds.
fn histogram(
    t: &Totals,
    mut encoder: prometheus_client::encoding::MetricEncoder<'_>,
) -> Result<(), std::fmt::Error> {
    let h = &t.latency;
    let mut below = 0;
    let mut buckets: Vec<(f64, u64)> = Vec::with_capacity(BUCKETS.len() + 1);
    for bound in BUCKETS {
        let upto = if h.is_empty() {
            0
        } else {
            h.count_between(0, (bound * 1e6) as u64)
        };
        // Per-bucket counts: the encoder adds them up into Prometheus's cumulative `le`.
        buckets.push((bound, upto - below));
        below = upto;
    }
    buckets.push((f64::MAX, h.len() - below));
    let sum = h.mean() * h.len() as f64 / 1e6;
    encoder.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
        sum,
        h.len(),
        &buckets,
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::recorder::{new_histogram, NameCounts};
    use crate::metrics::ErrorKind;

    #[test]
    fn the_exposition_parses_and_counts_by_name_and_outcome() {
        let mut latency = new_histogram(2);
        for us in [500, 2_000, 2_000, 40_000, 60_000_000] {
            latency.record(us).unwrap();
        }
        let mut errors = [0; ErrorKind::COUNT];
        errors[ErrorKind::Status5xx as usize] = 2;
        let totals = Totals {
            by_name: vec![
                NameCounts {
                    requests: 3,
                    errors: [0; ErrorKind::COUNT],
                },
                NameCounts {
                    requests: 2,
                    errors,
                },
            ],
            latency,
            dropped: 4,
            in_flight: 7,
            users: None,
            offered: 100.0,
            seconds: 2,
        };
        let text = encode(&totals, &["home".into(), "fail".into()]);
        let lines = text.lines().map(|l| Ok(l.to_string()));
        let scrape = prometheus_parse::Scrape::parse(lines).unwrap();
        let value = |name: &str, labels: &[(&str, &str)]| -> f64 {
            let s = scrape
                .samples
                .iter()
                .find(|s| {
                    s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v))
                })
                .unwrap_or_else(|| panic!("no {name} {labels:?} in\n{text}"));
            match s.value {
                prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Gauge(v) => v,
                prometheus_parse::Value::Untyped(v) => v,
                ref other => panic!("{other:?}"),
            }
        };
        let reqs = "headroom_requests_total";
        assert_eq!(value(reqs, &[("name", "home"), ("outcome", "ok")]), 3.0);
        assert_eq!(
            value(reqs, &[("name", "fail"), ("outcome", "status_5xx")]),
            2.0
        );
        assert_eq!(value(reqs, &[("name", "fail"), ("outcome", "ok")]), 0.0);
        assert_eq!(value("headroom_dropped_total", &[]), 4.0);
        assert_eq!(value("headroom_in_flight", &[]), 7.0);
        assert!(
            text.contains("headroom_request_duration_seconds_count 5"),
            "{text}"
        );
        assert!(
            text.contains("headroom_request_duration_seconds_bucket{le=\"0.005\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("headroom_request_duration_seconds_bucket{le=\"30.0\"} 4"),
            "{text}"
        );
        assert!(
            text.contains("headroom_request_duration_seconds_bucket{le=\"+Inf\"} 5"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"));
    }
}
