//! The figures every summary is made of ([`Latency`], [`Errors`]), in a leaf module
//! that the run summary, the stream summaries and the thresholds all import.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Default)]
pub struct Latency {
    /// Fastest.
    pub min: f64,
    /// Mean.
    pub avg: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    #[serde(rename = "p99.9")]
    pub p999: f64,
    /// Slowest.
    pub max: f64,
}

/// Error counts.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Errors {
    /// Requests that ended in any error.
    pub count: u64,
    /// `count / requests` (0 when there were no requests).
    pub rate: f64,
    /// Count per kind (`connect`, `timeout`, `reset`, `status_4xx`, `status_5xx`, `check`,
    /// `protocol`, `generator`, `tls`, `goaway`, `stream_reset`, `graphql`, `stream`, `grpc`,
    /// `redirect`).
    pub by_kind: BTreeMap<String, u64>,
    /// The run's first failure message by kind, for the kinds that carry one
    /// (`graphql`: the first error's `message`, or that the body was not JSON). Raw
    /// text, at most 300 characters; renderers escape it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub first_message: BTreeMap<String, String>,
}

impl Latency {
    /// The percentiles of a histogram of microseconds, in milliseconds (all zero when
    /// it is empty).
    pub fn of_micros(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        Latency {
            min: ms(h.min()),
            avg: h.mean() / 1000.0,
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p95: ms(h.value_at_quantile(0.95)),
            p99: ms(h.value_at_quantile(0.99)),
            p999: ms(h.value_at_quantile(0.999)),
            max: ms(h.max()),
        }
    }
}
