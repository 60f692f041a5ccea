//! `prometheus:URL[#metric,metric]`: scrape a text exposition (Prometheus or
//! OpenMetrics) every interval and report, per series, the first, last and largest
//! value and, for counters, the rate per second over the run (counter resets counted).
//!
//! With no metric named, every counter and gauge series is kept, up to
//! [`MAX_SERIES`]. Histogram buckets and `_created` timestamps are left out; a
//! histogram's `_count` and `_sum` are kept as counters.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use prometheus_parse::{Scrape, Value};

use super::error::ProbeError;
use super::kept::Kept;
use super::live::LiveSample;
use super::sampler::{Finished, RunView, Sampler};
use super::samples::PrometheusSample;
use super::scrape::Scraper;
use super::summary::{round3, Detail};
pub use super::summary::{PrometheusSummary, SeriesSummary};

/// Most series a watch keeps.
pub const MAX_SERIES: usize = 50;
/// Limit of one scrape: connect, TLS handshake, request and the whole response.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug)]
struct Track {
    counter: bool,
    first: (f64, f64),
    last: (f64, f64),
    max: f64,
    increase: f64,
}

/// Scrapes one endpoint.
pub(crate) struct PrometheusSampler {
    url: String,
    scraper: Scraper,
    metrics: Vec<String>,
    series: BTreeMap<String, Track>,
    /// Thinned on long runs; each series' figures are kept exactly in `series`.
    samples: Kept<PrometheusSample>,
    capped: bool,
}

impl PrometheusSampler {
    /// Scrapes once (the baseline); fails when the endpoint does not answer 200 with text.
    /// An `https://` endpoint is trusted as `tls` says (Mozilla's roots when `None`).
    pub(crate) fn start(
        url: &str,
        metrics: Vec<String>,
        tls: Option<Arc<rustls::ClientConfig>>,
    ) -> Result<PrometheusSampler, ProbeError> {
        let mut s = PrometheusSampler {
            url: url.to_string(),
            scraper: Scraper::new(url, tls, SCRAPE_TIMEOUT)?,
            metrics,
            series: BTreeMap::new(),
            samples: Kept::default(),
            capped: false,
        };
        s.sample(0.0)?;
        Ok(s)
    }

    fn wanted(&self, name: &str) -> bool {
        if name.ends_with("_bucket") || name.ends_with("_created") {
            return false;
        }
        self.metrics.is_empty()
            || self
                .metrics
                .iter()
                .any(|m| name == m || name.strip_suffix("_total") == Some(m.as_str()))
    }

    fn record(&mut self, t: f64, text: &str) -> Result<(), ProbeError> {
        let lines = text.lines().map(|l| Ok(l.to_string()));
        let scrape = Scrape::parse(lines).map_err(ProbeError::Exposition)?;
        let mut values = BTreeMap::new();
        for sample in scrape.samples {
            let (v, typed_counter) = match sample.value {
                Value::Counter(v) => (v, true),
                Value::Gauge(v) | Value::Untyped(v) => (v, false),
                Value::Histogram(_) | Value::Summary(_) => continue,
            };
            if !self.wanted(&sample.metric) || !v.is_finite() {
                continue;
            }
            let key = if sample.labels.is_empty() {
                sample.metric.clone()
            } else {
                format!("{}{{{}}}", sample.metric, sample.labels)
            };
            let counter = typed_counter
                || ["_total", "_count", "_sum"]
                    .iter()
                    .any(|s| sample.metric.ends_with(s));
            if !self.series.contains_key(&key) && self.series.len() >= MAX_SERIES {
                self.capped = true;
                continue;
            }
            // A counter that first appears after the first scrape was born during the
            // run: it started from zero at the previous scrape.
            let born = match (counter, self.samples.newest()) {
                (true, Some(prev)) => (prev.t, 0.0),
                _ => (t, v),
            };
            let track = self.series.entry(key.clone()).or_insert(Track {
                counter,
                first: born,
                last: born,
                max: born.1,
                increase: 0.0,
            });
            let before = track.last.1;
            // A counter that went down was reset (the process restarted): count from zero.
            track.increase += if v >= before { v - before } else { v };
            track.last = (t, v);
            track.max = track.max.max(v);
            values.insert(key, v);
        }
        self.samples.push(PrometheusSample {
            t: round3(t),
            values,
        });
        Ok(())
    }
}

impl Sampler for PrometheusSampler {
    fn sample(&mut self, t: f64) -> Result<(), ProbeError> {
        let (status, body) = self.scraper.get()?;
        if status != 200 {
            return Err(ProbeError::Status {
                url: self.url.clone(),
                status,
            });
        }
        let text = String::from_utf8_lossy(&body);
        self.record(t, &text)
    }

    fn latest(&self) -> Option<LiveSample> {
        self.samples.newest().cloned().map(LiveSample::Prometheus)
    }

    fn finish(self: Box<Self>, _run: Option<&dyn RunView>) -> Finished {
        let series = self
            .series
            .iter()
            .map(|(name, tr)| {
                let span = tr.last.0 - tr.first.0;
                SeriesSummary {
                    series: name.clone(),
                    kind: if tr.counter { "counter" } else { "gauge" }.into(),
                    first: tr.first.1,
                    last: tr.last.1,
                    max: tr.max,
                    rate_per_s: (tr.counter && span > 0.0).then(|| round3(tr.increase / span)),
                }
            })
            .collect();
        let mut notices = Vec::new();
        if self.capped {
            notices.push(format!(
                "kept the first {MAX_SERIES} series only; name the metrics to keep with \
                 prometheus:URL#metric,metric"
            ));
        }
        if !self.metrics.is_empty() && self.series.is_empty() {
            notices.push(format!(
                "none of {} appeared at {}",
                self.metrics.join(", "),
                self.url
            ));
        }
        Finished {
            detail: Detail::Prometheus(PrometheusSummary {
                url: self.url,
                series,
                samples: self.samples.into_vec(),
            }),
            warnings: Vec::new(),
            notices,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sampler(metrics: &[&str]) -> PrometheusSampler {
        let url = "http://127.0.0.1:9/metrics";
        PrometheusSampler {
            url: url.into(),
            scraper: Scraper::new(url, None, SCRAPE_TIMEOUT).unwrap(),
            metrics: metrics.iter().map(|m| m.to_string()).collect(),
            series: BTreeMap::new(),
            samples: Kept::default(),
            capped: false,
        }
    }

    const EXPO: &str = "# TYPE reqs counter\nreqs_total{code=\"200\"} {A}\n\
                        # TYPE depth gauge\ndepth {B}\n\
                        # TYPE lat histogram\nlat_bucket{le=\"0.1\"} 1\nlat_count 3\nlat_sum 0.2\n# EOF\n";

    fn expo(a: f64, b: f64) -> String {
        EXPO.replace("{A}", &a.to_string())
            .replace("{B}", &b.to_string())
    }

    #[test]
    fn counters_get_a_rate_that_survives_a_reset_and_gauges_a_max() {
        let mut s = sampler(&[]);
        s.record(0.0, &expo(100.0, 5.0)).unwrap();
        s.record(1.0, &expo(300.0, 9.0)).unwrap();
        // Reset: the process restarted and counted 100 since.
        s.record(2.0, &expo(100.0, 2.0)).unwrap();
        let f = Box::new(s).finish(None);
        let Detail::Prometheus(p) = f.detail else {
            panic!("not a prometheus summary")
        };
        let by: BTreeMap<&str, &SeriesSummary> =
            p.series.iter().map(|s| (s.series.as_str(), s)).collect();
        let reqs = by["reqs_total{code=\"200\"}"];
        assert_eq!(
            (reqs.kind.as_str(), reqs.rate_per_s),
            ("counter", Some(150.0))
        );
        let depth = by["depth"];
        assert_eq!(
            (depth.first, depth.last, depth.max, depth.rate_per_s),
            (5.0, 2.0, 9.0, None)
        );
        assert_eq!(by["lat_count"].kind, "counter");
        assert!(!by.keys().any(|k| k.contains("bucket")), "{by:?}");
        assert_eq!(p.samples.len(), 3);
    }

    #[test]
    fn named_metrics_only_and_a_cap_on_series() {
        let mut s = sampler(&["reqs"]);
        s.record(0.0, "# TYPE other gauge\nother 1\n").unwrap();
        s.record(1.0, &expo(40.0, 1.0)).unwrap();
        let born = &s.series["reqs_total{code=\"200\"}"];
        assert_eq!((born.first, born.increase), ((0.0, 0.0), 40.0));
        assert_eq!(
            s.series.keys().collect::<Vec<_>>(),
            ["reqs_total{code=\"200\"}"]
        );
        let mut s = sampler(&[]);
        let many: String = (0..60).map(|i| format!("g{i} {i}\n")).collect();
        s.record(0.0, &many).unwrap();
        assert_eq!(s.series.len(), MAX_SERIES);
        assert!(Box::new(s).finish(None).notices[0].contains("first 50 series"));
    }
}
