//! [`DeliverySummary`]: the `delivery` object of the summary JSON, and its table.

use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Delivery latency percentiles in milliseconds (request sent → delivery received).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeliveryLatency {
    /// Latencies recorded (ids registered and delivered).
    pub count: u64,
    /// Shortest.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Longest.
    pub max: f64,
}

impl DeliveryLatency {
    /// Percentiles of a histogram in microseconds.
    pub(crate) fn of(h: &Histogram<u64>) -> DeliveryLatency {
        if h.is_empty() {
            return DeliveryLatency::default();
        }
        let ms = |us: u64| (us as f64 / 1e3 * 1e3).round() / 1e3;
        DeliveryLatency {
            count: h.len(),
            min: ms(h.min()),
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p95: ms(h.value_at_quantile(0.95)),
            p99: ms(h.value_at_quantile(0.99)),
            max: ms(h.max()),
        }
    }
}

/// Everything the sink counted. `registered = delivered-among-registered + lost`;
/// `delivered` also counts ids first seen in a delivery by a standalone sink.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeliverySummary {
    /// Ids registered by the run's requests.
    pub registered: u64,
    /// Ids delivered and accepted (first accepted delivery of each).
    pub delivered: u64,
    /// Registered ids not accepted by the end of the grace period.
    pub lost: u64,
    /// `lost / registered` (0 when nothing was registered).
    pub lost_rate: f64,
    /// Accepted deliveries of an id already accepted.
    pub duplicated: u64,
    /// `duplicated / registered`.
    pub duplicated_rate: f64,
    /// Deliveries refused by the failure share.
    pub refused: u64,
    /// Deliveries whose id was never registered.
    pub unknown: u64,
    /// Deliveries without an id where the id should be.
    pub no_id: u64,
    /// Deliveries whose body was not JSON.
    pub bad_body: u64,
    /// Deliveries whose body was over the limit.
    pub too_large: u64,
    /// Ids not tracked because the registry was full.
    pub registry_overflow: u64,
    /// The grace period waited after the load, seconds.
    pub grace_s: f64,
    /// Delivery latency percentiles.
    pub latency_ms: DeliveryLatency,
    /// Accepted first deliveries per second from the start.
    pub per_second: Vec<u64>,
}

impl DeliverySummary {
    /// Requests per second (`requests[i]` completed in second `i`) beside deliveries
    /// per second, one line per second (at most 30 lines: longer runs are summed into
    /// equal buckets).
    pub fn rates(&self, requests: &[u64]) -> String {
        let len = requests.len().max(self.per_second.len());
        if len == 0 {
            return String::new();
        }
        let bucket = len.div_ceil(30);
        let mut out = format!(
            "\n  {:>9}  {:>10}  {:>10}\n",
            "second", "requests", "delivered"
        );
        for start in (0..len).step_by(bucket) {
            let end = (start + bucket).min(len);
            let sent: u64 = requests
                .get(start..end.min(requests.len()))
                .map_or(0, |s| s.iter().sum());
            let got: u64 = self
                .per_second
                .get(start..end.min(self.per_second.len()))
                .map_or(0, |s| s.iter().sum());
            let label = if bucket == 1 {
                format!("{start}")
            } else {
                format!("{start}-{}", end - 1)
            };
            let _ = writeln!(out, "  {label:>9}  {sent:>10}  {got:>10}");
        }
        out
    }

    /// A Markdown table (also readable as text) of the counts and latency.
    pub fn table(&self) -> String {
        let l = &self.latency_ms;
        let mut out = String::new();
        out.push_str("| registered | delivered | lost | duplicated | refused | unknown | p50 | p95 | p99 | max |\n");
        out.push_str("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        let _ = writeln!(
            out,
            "| {} | {} | {} ({:.2}%) | {} | {} | {} | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms |",
            self.registered,
            self.delivered,
            self.lost,
            self.lost_rate * 100.0,
            self.duplicated,
            self.refused,
            self.unknown,
            l.p50,
            l.p95,
            l.p99,
            l.max,
        );
        let hostile = self.no_id + self.bad_body + self.too_large;
        if hostile > 0 || self.registry_overflow > 0 {
            let _ = writeln!(
                out,
                "\nrejected deliveries: {} without id, {} not JSON, {} too large; {} ids over the registry cap",
                self.no_id, self.bad_body, self.too_large, self.registry_overflow
            );
        }
        out
    }
}
