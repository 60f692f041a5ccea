//! [`TargetMetrics`]: what the target exposes on `/metrics`, in the Prometheus /
//! OpenMetrics text format.
//!
//! Families: `headroom_target_requests_total{endpoint,status}` (counter),
//! `headroom_target_in_flight` (requests being handled), `headroom_target_queue_depth`
//! (`/work` requests waiting for a worker), `headroom_target_workers_busy`,
//! `headroom_target_workers` (configured), and
//! `headroom_target_request_duration_seconds{endpoint}` (histogram).
//!
//! Connections (so a client's connection model can be checked from the server side):
//! `headroom_target_connections_accepted_total`, `headroom_target_connections_open`,
//! `headroom_target_protocol_connections_total{protocol}` (connections by the protocol
//! of their first request: `http1` or `h2`), `headroom_target_protocol_requests_total{protocol}`,
//! `headroom_target_tls_handshakes_total{kind}` (`full` or `resumed`) and
//! `headroom_target_tls_handshake_errors_total`.

use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// The route a request matched, as a metrics label.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Work,
    Tasks,
    Health,
    Metrics,
    Status,
    Echo,
    Slow,
    Admin,
    Graphql,
    NotFound,
}

impl Endpoint {
    /// The label value: the route's first path segment, or `not_found`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Endpoint::Work => "work",
            Endpoint::Tasks => "tasks",
            Endpoint::Health => "health",
            Endpoint::Metrics => "metrics",
            Endpoint::Status => "status",
            Endpoint::Echo => "echo",
            Endpoint::Slow => "slow",
            Endpoint::Admin => "admin",
            Endpoint::Graphql => "graphql",
            Endpoint::NotFound => "not_found",
        }
    }
}

impl EncodeLabelValue for Endpoint {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        use std::fmt::Write;
        encoder.write_str(self.as_str())
    }
}

/// The HTTP version a request or connection used, as a metrics label.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// HTTP/1.0 or HTTP/1.1.
    Http1,
    /// HTTP/2, over TLS (ALPN `h2`) or cleartext (h2c with prior knowledge).
    H2,
    /// HTTP/3 over QUIC (`--tls`).
    H3,
}

impl Protocol {
    /// The protocol of a request of this version.
    pub(crate) fn of(version: hyper::Version) -> Self {
        if version == hyper::Version::HTTP_2 {
            Protocol::H2
        } else {
            Protocol::Http1
        }
    }
}

impl EncodeLabelValue for Protocol {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        use std::fmt::Write;
        encoder.write_str(match self {
            Protocol::Http1 => "http1",
            Protocol::H2 => "h2",
            Protocol::H3 => "h3",
        })
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProtocolLabels {
    protocol: Protocol,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HandshakeLabels {
    kind: &'static str,
}

/// One counter per protocol, created up front so both series show from the start
/// (a test reads 0 before it reads 1) and the hot path takes no lock to find them.
#[derive(Clone)]
pub(crate) struct ByProtocol {
    http1: Counter,
    h2: Counter,
    h3: Counter,
}

impl ByProtocol {
    fn registered(registry: &mut Registry, name: &str, help: &str) -> Self {
        let family = Family::<ProtocolLabels, Counter>::default();
        let of = |protocol| family.get_or_create(&ProtocolLabels { protocol }).clone();
        let counters = ByProtocol {
            http1: of(Protocol::Http1),
            h2: of(Protocol::H2),
            h3: of(Protocol::H3),
        };
        registry.register(name, help, family);
        counters
    }

    /// The count over every protocol.
    pub(crate) fn total(&self) -> u64 {
        self.http1.get() + self.h2.get() + self.h3.get()
    }

    /// Counts one for `protocol`.
    pub(crate) fn inc(&self, protocol: Protocol) {
        match protocol {
            Protocol::Http1 => self.http1.inc(),
            Protocol::H2 => self.h2.inc(),
            Protocol::H3 => self.h3.inc(),
        };
    }
}

/// The connection and TLS counters.
#[derive(Clone)]
pub(crate) struct ConnectionMetrics {
    /// TCP connections accepted.
    pub(crate) accepted: Counter,
    /// Connections open now (accepted and not yet closed).
    pub(crate) open: Gauge,
    /// Connections by the protocol of their first request.
    pub(crate) by_protocol: ByProtocol,
    /// Requests by protocol.
    pub(crate) requests: ByProtocol,
    /// Completed full TLS handshakes.
    pub(crate) tls_full: Counter,
    /// Completed resumed TLS handshakes.
    pub(crate) tls_resumed: Counter,
    /// Completed QUIC handshakes (HTTP/3): full or resumed, which quinn does not say.
    pub(crate) tls_quic: Counter,
    /// TLS handshakes that failed (or timed out).
    pub(crate) tls_errors: Counter,
}

impl ConnectionMetrics {
    fn registered(registry: &mut Registry) -> Self {
        let (accepted, open, tls_errors) =
            (Counter::default(), Gauge::default(), Counter::default());
        registry.register(
            "connections_accepted",
            "TCP connections accepted",
            accepted.clone(),
        );
        registry.register("connections_open", "Connections open now", open.clone());
        let by_protocol = ByProtocol::registered(
            registry,
            "protocol_connections",
            "Connections by the protocol of their first request",
        );
        let requests =
            ByProtocol::registered(registry, "protocol_requests", "Requests by protocol");
        let handshakes = Family::<HandshakeLabels, Counter>::default();
        let kind = |kind| handshakes.get_or_create(&HandshakeLabels { kind }).clone();
        let (tls_full, tls_resumed, tls_quic) = (kind("full"), kind("resumed"), kind("quic"));
        registry.register(
            "tls_handshakes",
            "Completed TLS handshakes: full or resumed over TCP, quic over UDP",
            handshakes,
        );
        registry.register(
            "tls_handshake_errors",
            "TLS handshakes that failed or timed out",
            tls_errors.clone(),
        );
        ConnectionMetrics {
            accepted,
            open,
            by_protocol,
            requests,
            tls_full,
            tls_resumed,
            tls_quic,
            tls_errors,
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    endpoint: Endpoint,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndpointLabels {
    endpoint: Endpoint,
}

type DurationFamily = Family<EndpointLabels, Histogram, fn() -> Histogram>;

/// The target's registry and metric handles. Shared by reference; every update is an
/// atomic operation (plus a read lock on a label family).
pub(crate) struct TargetMetrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: DurationFamily,
    /// Requests being handled now, all endpoints.
    pub(crate) in_flight: Gauge,
    /// `/work` requests waiting for a worker.
    pub(crate) queue_depth: Gauge,
    /// Workers holding a `/work` request.
    pub(crate) workers_busy: Gauge,
    /// Connections, protocols and TLS handshakes.
    pub(crate) connections: ConnectionMetrics,
    /// The scheduler's deliveries.
    pub(crate) scheduler: super::scheduler::SchedulerMetrics,
}

fn duration_histogram() -> Histogram {
    // 100 µs to ~3.3 s by doubling: covers loopback overhead up to a deep queue.
    Histogram::new(exponential_buckets(0.000_1, 2.0, 16))
}

impl TargetMetrics {
    /// A registry with every family registered; `workers` is exported as a constant gauge.
    pub(crate) fn new(workers: usize) -> Self {
        let mut registry = Registry::with_prefix("headroom_target");
        let requests = Family::<RequestLabels, Counter>::default();
        let durations: DurationFamily = Family::new_with_constructor(duration_histogram);
        let (in_flight, queue_depth, workers_busy, configured) = (
            Gauge::default(),
            Gauge::default(),
            Gauge::default(),
            Gauge::<i64>::default(),
        );
        configured.set(i64::try_from(workers).unwrap_or(i64::MAX));
        registry.register(
            "requests",
            "Requests answered, by endpoint and status",
            requests.clone(),
        );
        registry.register("in_flight", "Requests being handled", in_flight.clone());
        registry.register(
            "queue_depth",
            "Work requests waiting for a worker",
            queue_depth.clone(),
        );
        registry.register(
            "workers_busy",
            "Workers serving a work request",
            workers_busy.clone(),
        );
        registry.register("workers", "Configured workers", configured);
        registry.register(
            "request_duration_seconds",
            "Time from request head to response, by endpoint",
            durations.clone(),
        );
        let connections = ConnectionMetrics::registered(&mut registry);
        let scheduler = super::scheduler::SchedulerMetrics::registered(&mut registry);
        TargetMetrics {
            scheduler,
            registry,
            requests,
            durations,
            in_flight,
            queue_depth,
            workers_busy,
            connections,
        }
    }

    /// Records one answered request.
    pub(crate) fn observe(&self, endpoint: Endpoint, status: u16, took: Duration) {
        self.requests
            .get_or_create(&RequestLabels { endpoint, status })
            .inc();
        self.durations
            .get_or_create(&EndpointLabels { endpoint })
            .observe(took.as_secs_f64());
    }

    /// The exposition text, ending in `# EOF`.
    pub(crate) fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// A gauge incremented for as long as this value lives: the decrement runs on drop, so
/// a request abandoned mid-wait (client gone) is still counted out.
pub(crate) struct Held<'a> {
    gauge: &'a Gauge,
    /// The gauge's value before this increment.
    pub(crate) previous: i64,
}

impl<'a> Held<'a> {
    /// Increments `gauge` until the returned value is dropped.
    pub(crate) fn inc(gauge: &'a Gauge) -> Self {
        Held {
            previous: gauge.inc(),
            gauge,
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}

/// The content type of [`TargetMetrics::encode`]'s output.
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_counts_requests_by_endpoint_and_status() {
        let m = TargetMetrics::new(4);
        m.observe(Endpoint::Work, 200, Duration::from_millis(5));
        m.observe(Endpoint::Work, 200, Duration::from_millis(6));
        m.observe(Endpoint::Work, 503, Duration::from_micros(50));
        m.queue_depth.set(7);
        let text = m.encode();
        assert!(
            text.contains("headroom_target_requests_total{endpoint=\"work\",status=\"200\"} 2"),
            "{text}"
        );
        assert!(text.contains("headroom_target_requests_total{endpoint=\"work\",status=\"503\"} 1"));
        assert!(text.contains("headroom_target_queue_depth 7"));
        assert!(text.contains("headroom_target_workers 4"));
        assert!(
            text.contains("headroom_target_request_duration_seconds_count{endpoint=\"work\"} 3")
        );
        assert!(text.trim_end().ends_with("# EOF"));
    }

    #[test]
    fn connection_series_start_at_zero_and_count_by_protocol_and_kind() {
        let m = TargetMetrics::new(1);
        let before = m.encode();
        for zero in [
            "headroom_target_connections_accepted_total 0",
            "headroom_target_connections_open 0",
            "headroom_target_protocol_requests_total{protocol=\"http1\"} 0",
            "headroom_target_protocol_requests_total{protocol=\"h2\"} 0",
            "headroom_target_protocol_connections_total{protocol=\"h2\"} 0",
            "headroom_target_tls_handshakes_total{kind=\"full\"} 0",
            "headroom_target_tls_handshakes_total{kind=\"resumed\"} 0",
            "headroom_target_tls_handshakes_total{kind=\"quic\"} 0",
            "headroom_target_protocol_requests_total{protocol=\"h3\"} 0",
            "headroom_target_tls_handshake_errors_total 0",
        ] {
            assert!(before.contains(zero), "{zero} in {before}");
        }
        let c = &m.connections;
        c.accepted.inc();
        c.requests.inc(Protocol::of(hyper::Version::HTTP_2));
        c.requests.inc(Protocol::of(hyper::Version::HTTP_2));
        c.requests.inc(Protocol::of(hyper::Version::HTTP_11));
        c.tls_resumed.inc();
        let after = m.encode();
        for counted in [
            "headroom_target_connections_accepted_total 1",
            "headroom_target_protocol_requests_total{protocol=\"h2\"} 2",
            "headroom_target_protocol_requests_total{protocol=\"http1\"} 1",
            "headroom_target_tls_handshakes_total{kind=\"resumed\"} 1",
        ] {
            assert!(after.contains(counted), "{counted} in {after}");
        }
    }
}
