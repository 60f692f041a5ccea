//! `--otlp URL`: the run's metrics pushed over OTLP/HTTP (protobuf) while it runs, to an
//! OpenTelemetry collector or to Prometheus' own OTLP receiver, with the OpenTelemetry
//! SDK (instruments, cumulative aggregation, the periodic reader and exporter).
//!
//! Instruments (Prometheus names, as its OTLP receiver translates them, in brackets):
//! - `headroom.requests` (`headroom_requests_total`), counter of completed requests by
//!   `name` and `outcome` (`ok` or the error kind), as on the dashboard's `/metrics`;
//! - `headroom.request.duration` (`headroom_request_duration_seconds`), histogram of
//!   every request's latency in seconds, from its scheduled start in the open model;
//! - `headroom.dropped` (`headroom_dropped_total`), iterations dropped at the in-flight cap;
//! - `headroom.in_flight`, `headroom.offered` and `headroom.users` (closed model), gauges
//!   as at the end of the last second.
//!
//! The resource says who pushed: `service.name` `headroom` (unless `OTEL_SERVICE_NAME`
//! says otherwise), a `service.instance.id` per process, and `headroom.command`,
//! `headroom.scenario` and `headroom.target`; `OTEL_RESOURCE_ATTRIBUTES` adds more.
//!
//! Where the numbers come from: the same per-second [`Live`] figures the terminal
//! progress and the dashboard show (no second measurement path). A search adds up its
//! steps' measured windows, as the dashboard's counters do.
//!
//! Timing: the instruments are fed once a second, when a second completes; the SDK's
//! reader pushes on its own clock (`OTEL_METRIC_EXPORT_INTERVAL` in ms, 5 s by default)
//! and once more at the end, so the collector's last point is the run's total. Why
//! cumulative and not delta: a push that fails loses nothing, the next one carries the
//! totals again, so failed pushes are not retried.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry::metrics::{Counter, Gauge, Histogram, MeterProvider as _};
use opentelemetry::KeyValue;
use opentelemetry_http::{HttpClient, HttpError};
use opentelemetry_otlp::{Protocol, RetryPolicy, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};
use opentelemetry_sdk::Resource;

use crate::client::tls::{client_config, TlsOptions};
use crate::engine::Live;
use crate::plan::Plan;

/// The push interval when `OTEL_METRIC_EXPORT_INTERVAL` does not set one: often enough
/// to watch a run of a minute, rarely enough to cost nothing.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);

/// How long one push may take before it counts as failed.
const PUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// The path OTLP/HTTP receivers take metrics on, appended to a base URL.
const METRICS_PATH: &str = "/v1/metrics";

/// Parses `--otlp`'s value: the OTLP/HTTP endpoint's base URL, as
/// `OTEL_EXPORTER_OTLP_ENDPOINT` takes it (`http://127.0.0.1:4318` for a collector,
/// `http://127.0.0.1:9090/api/v1/otlp` for Prometheus), to which `/v1/metrics` is
/// added; a URL already ending in `/v1/metrics` is taken as it is.
pub fn parse_endpoint(text: &str) -> Result<String, EndpointError> {
    let given = || text.to_string();
    let uri: http::Uri = text.parse().map_err(|source| EndpointError::NotAUrl {
        text: given(),
        source,
    })?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        _ => return Err(EndpointError::Scheme { text: given() }),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(EndpointError::NoHost { text: given() });
    }
    if uri.query().is_some() {
        return Err(EndpointError::Query { text: given() });
    }
    let base = text.trim_end_matches('/');
    Ok(if base.ends_with(METRICS_PATH) {
        base.to_string()
    } else {
        format!("{base}{METRICS_PATH}")
    })
}

/// An `--otlp` value that is not an OTLP/HTTP endpoint.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// Not a URL.
    #[error("{text:?} is not a URL ({source})")]
    NotAUrl {
        /// The value given.
        text: String,
        /// Why it does not parse.
        #[source]
        source: http::uri::InvalidUri,
    },
    /// Not `http://` or `https://`.
    #[error(
        "{text:?}: expected the http:// or https:// URL of an OTLP/HTTP receiver, \
         e.g. http://127.0.0.1:4318 (a collector) or http://127.0.0.1:9090/api/v1/otlp (Prometheus)"
    )]
    Scheme {
        /// The value given.
        text: String,
    },
    /// No host.
    #[error("{text:?}: the URL has no host")]
    NoHost {
        /// The value given.
        text: String,
    },
    /// A query string.
    #[error("{text:?}: a query string is not part of an OTLP endpoint")]
    Query {
        /// The value given.
        text: String,
    },
}

/// An exporter that cannot be set up (bad input, reported before any load is sent).
#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    /// The TLS configuration for an `https://` receiver (`OTEL_EXPORTER_OTLP_CERTIFICATE`).
    #[error("--otlp {endpoint}: {source}")]
    Tls {
        /// The endpoint.
        endpoint: String,
        /// Why (boxed: the TLS error is large, and rare).
        source: Box<crate::client::tls::TlsConfigError>,
    },
    /// The HTTP client could not be built.
    #[error("--otlp {endpoint}: {source}")]
    Client {
        /// The endpoint.
        endpoint: String,
        /// Why.
        #[source]
        source: reqwest::Error,
    },
    /// The exporter could not be built.
    #[error("--otlp {endpoint}: {source}")]
    Exporter {
        /// The endpoint.
        endpoint: String,
        /// Why.
        #[source]
        source: opentelemetry_otlp::ExporterBuildError,
    },
}

/// The run's instruments, fed once a second.
struct Instruments {
    requests: Counter<u64>,
    duration: Histogram<f64>,
    dropped: Counter<u64>,
    in_flight: Gauge<u64>,
    offered: Gauge<f64>,
    users: Gauge<u64>,
}

/// How the pushes went, counted by the exporter on the reader's thread.
#[derive(Debug, Default)]
struct Pushes {
    ok: AtomicU64,
    failed: AtomicU64,
    last_error: Mutex<Option<String>>,
    /// Why the last request could not be sent at all (refused, timed out...), which
    /// the exporter's own error reduces to "network error".
    transport: Mutex<Option<String>>,
}

/// The HTTP client the exporter sends with: reqwest's, keeping the cause of a request
/// that could not be sent.
#[derive(Debug)]
struct Client {
    inner: reqwest::blocking::Client,
    pushes: Arc<Pushes>,
}

#[async_trait::async_trait]
impl HttpClient for Client {
    async fn send_bytes(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> Result<http::Response<bytes::Bytes>, HttpError> {
        let result = self.inner.send_bytes(request).await;
        if let Err(e) = &result {
            let mut reason = e.to_string();
            let mut source = e.source();
            while let Some(cause) = source {
                reason = format!("{reason}: {cause}");
                source = cause.source();
            }
            *lock(&self.pushes.transport) = Some(reason);
        }
        result
    }
}

/// Locks `m`, whatever a panicking holder left in it (a reason string is always whole).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Why a push failed, in words: the transport's cause when there is one, and what to
/// check for a receiver that has no such path.
fn push_failure(e: &dyn std::fmt::Display, pushes: &Pushes) -> String {
    let said = e.to_string();
    if said.contains("network error") {
        if let Some(cause) = lock(&pushes.transport).take() {
            return cause;
        }
    }
    if said.contains("status code: 404") {
        return format!(
            "{said} (no OTLP receiver at that path: a collector takes its base URL, \
             Prometheus /api/v1/otlp with --web.enable-otlp-receiver)"
        );
    }
    said
}

/// The exporter, counting its pushes and saying once, as soon as it happens, that the
/// receiver refused one.
#[derive(Debug)]
struct Counted<E> {
    inner: E,
    endpoint: String,
    pushes: Arc<Pushes>,
}

impl<E: PushMetricExporter> PushMetricExporter for Counted<E> {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        let result = self.inner.export(metrics).await;
        match &result {
            Ok(()) => {
                self.pushes.ok.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                let reason = push_failure(e, &self.pushes);
                if self.pushes.failed.fetch_add(1, Ordering::Relaxed) == 0 {
                    eprintln!(
                        "warning: --otlp {}: a push failed: {reason}; the run goes on (failures are counted at the end)",
                        self.endpoint
                    );
                }
                *lock(&self.pushes.last_error) = Some(reason);
            }
        }
        result
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}

/// The OTLP push of one command (`run` or `find`). Feed it every second; finish it at
/// the end, which pushes the totals one last time.
pub struct Otlp {
    endpoint: String,
    provider: SdkMeterProvider,
    instruments: Instruments,
    /// `name` attributes, indexed as the plan's request names.
    names: Vec<KeyValue>,
    pushes: Arc<Pushes>,
}

impl Otlp {
    /// Sets up the exporter for `endpoint` (as [`parse_endpoint`] returns it). Nothing is
    /// sent until the first push.
    pub fn start(endpoint: &str, command: &'static str, plan: &Plan) -> Result<Otlp, OtlpError> {
        // The run's own TLS stack (ring, Mozilla's roots) for an https:// receiver, or the
        // CA file OpenTelemetry's variable names, as other OTLP exporters read it.
        let tls = TlsOptions {
            cacert: std::env::var_os("OTEL_EXPORTER_OTLP_CERTIFICATE").map(Into::into),
            ..TlsOptions::default()
        };
        let tls = client_config(&tls).map_err(|source| OtlpError::Tls {
            endpoint: endpoint.to_string(),
            source: Box::new(source),
        })?;
        let pushes = Arc::new(Pushes::default());
        let client = Client {
            inner: reqwest::blocking::Client::builder()
                .tls_backend_preconfigured((*tls).clone())
                .timeout(PUSH_TIMEOUT)
                .build()
                .map_err(|source| OtlpError::Client {
                    endpoint: endpoint.to_string(),
                    source,
                })?,
            pushes: pushes.clone(),
        };
        let exporter = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(endpoint)
            .with_timeout(PUSH_TIMEOUT)
            .with_retry_policy(RetryPolicy::default().with_max_retries(0))
            .with_temporality(Temporality::Cumulative)
            .build()
            .map_err(|source| OtlpError::Exporter {
                endpoint: endpoint.to_string(),
                source,
            })?;
        let exporter = Counted {
            inner: exporter,
            endpoint: endpoint.to_string(),
            pushes: pushes.clone(),
        };
        let mut reader = PeriodicReader::builder(exporter);
        if std::env::var_os("OTEL_METRIC_EXPORT_INTERVAL").is_none() {
            reader = reader.with_interval(DEFAULT_INTERVAL);
        }
        let service = std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| "headroom".into());
        let resource = Resource::builder()
            .with_service_name(service)
            .with_attributes([
                KeyValue::new("service.instance.id", instance_id()),
                KeyValue::new("headroom.command", command),
                KeyValue::new("headroom.scenario", plan.name.clone()),
                KeyValue::new(
                    "headroom.target",
                    format!("{}://{}", plan.target.scheme, plan.target.authority),
                ),
            ])
            .build();
        let provider = SdkMeterProvider::builder()
            .with_reader(reader.build())
            .with_resource(resource)
            .build();
        let meter = provider.meter("headroom");
        let instruments = Instruments {
            requests: meter
                .u64_counter("headroom.requests")
                .with_description(
                    "Requests completed, by request name and outcome (ok or the error kind).",
                )
                .with_unit("{request}")
                .build(),
            duration: meter
                .f64_histogram("headroom.request.duration")
                .with_description(
                    "Latency of completed requests (from the scheduled start in the open model).",
                )
                .with_unit("s")
                .with_boundaries(crate::dashboard::prom::BUCKETS.to_vec())
                .build(),
            dropped: meter
                .u64_counter("headroom.dropped")
                .with_description("Iterations dropped because the in-flight cap was reached.")
                .with_unit("{iteration}")
                .build(),
            in_flight: meter
                .u64_gauge("headroom.in_flight")
                .with_description("Iterations in flight at the end of the last second.")
                .with_unit("{iteration}")
                .build(),
            offered: meter
                .f64_gauge("headroom.offered")
                .with_description(
                    "Offered rate (req/s, open model) or users (closed model) in the last second.",
                )
                .build(),
            users: meter
                .u64_gauge("headroom.users")
                .with_description("Active users at the end of the last second (closed model).")
                .with_unit("{user}")
                .build(),
        };
        let names = plan
            .names
            .iter()
            .map(|n| KeyValue::new("name", n.clone()))
            .collect();
        Ok(Otlp {
            endpoint: endpoint.to_string(),
            provider,
            instruments,
            names,
            pushes,
        })
    }

    /// A second of load completed: its counts go into the instruments (pushed at the
    /// reader's next tick).
    pub fn second(&self, live: &Live) {
        let bucket = &live.last_bucket;
        let i = &self.instruments;
        for (index, counts) in bucket.by_name.iter().enumerate() {
            let Some(name) = self.names.get(index) else {
                continue;
            };
            for (outcome, n) in counts.outcomes().filter(|&(_, n)| n > 0) {
                i.requests
                    .add(n, &[name.clone(), KeyValue::new("outcome", outcome)]);
            }
        }
        // Every request once, at the value HDR keeps for it (as the summary's
        // percentiles read it): the collector's sum and count match the run's.
        let h = &bucket.latency;
        for v in h.iter_recorded() {
            let seconds = h.median_equivalent(v.value_iterated_to()) as f64 / 1e6;
            for _ in 0..v.count_at_value() {
                i.duration.record(seconds, &[]);
            }
        }
        if bucket.dropped > 0 {
            i.dropped.add(bucket.dropped, &[]);
        }
        i.in_flight.record(live.in_flight, &[]);
        i.offered.record(live.last.offered, &[]);
        if let Some(users) = live.users {
            i.users.record(users, &[]);
        }
    }

    /// Pushes the totals one last time and stops the reader. Returns a warning when
    /// pushes failed (the run's own results are unaffected).
    pub fn finish(self) -> Option<String> {
        let last = self.provider.shutdown();
        let failed = self.pushes.failed.load(Ordering::Relaxed);
        let ok = self.pushes.ok.load(Ordering::Relaxed);
        if failed == 0 && last.is_ok() {
            return None;
        }
        let reason = lock(&self.pushes.last_error)
            .clone()
            .or_else(|| last.as_ref().err().map(ToString::to_string))
            .unwrap_or_default();
        let end = if last.is_ok() {
            "the last push, with the run's totals, arrived"
        } else {
            "the receiver does not have the run's totals"
        };
        Some(format!(
            "--otlp {}: {failed} of {} pushes failed ({end}); the last failure: {reason}",
            self.endpoint,
            failed + ok
        ))
    }
}

/// This process's `service.instance.id`: the host and process id, so that two runs at
/// once are two series, not one.
fn instance_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into());
    format!("{host}:{}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_take_the_metrics_path_once() {
        let ok = |t: &str| parse_endpoint(t).unwrap();
        assert_eq!(
            ok("http://127.0.0.1:4318"),
            "http://127.0.0.1:4318/v1/metrics"
        );
        assert_eq!(
            ok("http://127.0.0.1:4318/"),
            "http://127.0.0.1:4318/v1/metrics"
        );
        assert_eq!(
            ok("http://127.0.0.1:9090/api/v1/otlp"),
            "http://127.0.0.1:9090/api/v1/otlp/v1/metrics"
        );
        assert_eq!(
            ok("https://collector.example:4318/v1/metrics"),
            "https://collector.example:4318/v1/metrics"
        );
    }

    #[test]
    fn endpoints_that_are_not_otlp_http_are_refused_with_the_reason() {
        for (bad, says) in [
            ("127.0.0.1:4317", "http:// or https://"),
            ("grpc://127.0.0.1:4317", "http:// or https://"),
            ("http://", "not a URL"),
            ("http://127.0.0.1:4318/?x=1", "query string"),
            ("not a url", "not a URL"),
        ] {
            let e = parse_endpoint(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
