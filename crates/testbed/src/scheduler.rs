//! The scheduler (seed 000's product): a task posted with a `url` is POSTed as JSON to
//! that url when it falls due, with retries.
//!
//! Task fields it reads (all optional but `url`):
//!
//! | field | meaning | default | bounds |
//! |---|---|---|---|
//! | `url` | where to deliver: `http://` on loopback only (else 400) | — | |
//! | `deliver_in_ms` | delay from creation to the first attempt | 0 | ≤ 1 h |
//! | `max_attempts` | attempts in all (1 = no retry) | 3 | 1..=10 |
//! | `timeout_ms` | limit on one attempt (connect, send, answer) | 5000 | 1..=60000 |
//! | `backoff_ms` | wait before the first retry, doubled each time | 100 | ≤ 10000 |
//!
//! A relative `deliver_in_ms` rather than an absolute `deliver_at`: the generator and
//! the target then need no shared clock, and the delay is exact from the moment the
//! task is accepted. Retries follow seed 003's rules: 5xx, 408, 429, timeouts and
//! connection failures are retried; any other 4xx is a permanent failure. The queue of
//! scheduled deliveries is bounded ([`DEFAULT_MAX_PENDING`]); a task posted to a full
//! queue is refused with 503 and not stored. Delivered, retried and failed deliveries
//! and the queue depth are on `/metrics` (`headroom_target_scheduler_*`).

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::Uri;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde_json::Value;

/// Deliveries scheduled and not finished, at most.
pub(crate) const DEFAULT_MAX_PENDING: usize = 100_000;

const MAX_DELAY_MS: u64 = 3_600_000;

/// Why a task's delivery fields are refused (answered 400).
#[derive(Debug, thiserror::Error, PartialEq)]
pub(crate) enum ScheduleError {
    /// `url` is not a string or not a valid absolute URL.
    #[error("`url` must be an absolute http:// URL")]
    BadUrl,
    /// `url` does not point at loopback.
    #[error("`url` must point at loopback (127.0.0.0/8, ::1 or localhost): the target never sends traffic off the machine")]
    NotLoopback,
    /// A numeric field is missing its bounds.
    #[error("`{0}` must be an integer in {1}")]
    Field(&'static str, &'static str),
}

/// The delivery of one task, parsed from its fields.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    addr: SocketAddr,
    uri: Uri,
    delay: Duration,
    max_attempts: u32,
    timeout: Duration,
    backoff: Duration,
}

fn field(
    task: &Value,
    name: &'static str,
    default: u64,
    lo: u64,
    hi: u64,
    bounds: &'static str,
) -> Result<u64, ScheduleError> {
    match task.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_u64()
            .filter(|n| (lo..=hi).contains(n))
            .ok_or(ScheduleError::Field(name, bounds)),
    }
}

/// The delivery plan of a posted task: `Ok(None)` when it has no `url`.
pub(crate) fn plan_of(task: &Value) -> Result<Option<Plan>, ScheduleError> {
    let Some(url) = task.get("url") else {
        return Ok(None);
    };
    let uri: Uri = url
        .as_str()
        .and_then(|s| s.parse().ok())
        .ok_or(ScheduleError::BadUrl)?;
    if uri.scheme_str() != Some("http") {
        return Err(ScheduleError::BadUrl);
    }
    let host = uri.host().ok_or(ScheduleError::BadUrl)?;
    let ip: IpAddr = if host.eq_ignore_ascii_case("localhost") {
        IpAddr::from([127, 0, 0, 1])
    } else {
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .map_err(|_| ScheduleError::NotLoopback)?
    };
    if !ip.is_loopback() {
        return Err(ScheduleError::NotLoopback);
    }
    let port = uri.port_u16().unwrap_or(80);
    Ok(Some(Plan {
        addr: SocketAddr::new(ip, port),
        uri,
        delay: Duration::from_millis(field(
            task,
            "deliver_in_ms",
            0,
            0,
            MAX_DELAY_MS,
            "0..=3600000",
        )?),
        max_attempts: field(task, "max_attempts", 3, 1, 10, "1..=10")? as u32,
        timeout: Duration::from_millis(field(task, "timeout_ms", 5000, 1, 60_000, "1..=60000")?),
        backoff: Duration::from_millis(field(task, "backoff_ms", 100, 0, 10_000, "0..=10000")?),
    }))
}

/// The scheduler's counters on `/metrics`.
#[derive(Clone, Default)]
pub(crate) struct SchedulerMetrics {
    delivered: Counter,
    retried: Counter,
    failed: Counter,
    pending: Gauge,
}

impl SchedulerMetrics {
    /// Registers the families in `registry`.
    pub(crate) fn registered(registry: &mut Registry) -> Self {
        let m = SchedulerMetrics::default();
        registry.register(
            "scheduler_delivered",
            "Scheduled tasks delivered (2xx)",
            m.delivered.clone(),
        );
        registry.register(
            "scheduler_retried",
            "Delivery attempts retried",
            m.retried.clone(),
        );
        registry.register(
            "scheduler_failed",
            "Scheduled tasks given up on",
            m.failed.clone(),
        );
        registry.register(
            "scheduler_pending",
            "Scheduled deliveries not finished",
            m.pending.clone(),
        );
        m
    }
}

/// The bounded queue of scheduled deliveries.
pub(crate) struct Scheduler {
    pending: Arc<AtomicUsize>,
    max_pending: usize,
    metrics: SchedulerMetrics,
}

/// A reserved place in the queue, released when the delivery ends (or is never made).
pub(crate) struct Slot {
    pending: Arc<AtomicUsize>,
    gauge: Gauge,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.pending.fetch_sub(1, Ordering::Relaxed);
        self.gauge.dec();
    }
}

impl Scheduler {
    /// An empty queue of at most `max_pending` deliveries.
    pub(crate) fn new(max_pending: usize, metrics: SchedulerMetrics) -> Self {
        Scheduler {
            pending: Arc::new(AtomicUsize::new(0)),
            max_pending,
            metrics,
        }
    }

    /// A place in the queue, or `None` when it is full.
    pub(crate) fn reserve(&self) -> Option<Slot> {
        let max = self.max_pending;
        self.pending
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()?;
        self.metrics.pending.inc();
        Some(Slot {
            pending: self.pending.clone(),
            gauge: self.metrics.pending.clone(),
        })
    }

    /// Delivers `task` per `plan` on a task of its own, from `accepted`.
    pub(crate) fn schedule(&self, slot: Slot, plan: Plan, task: &Value, accepted: Instant) {
        let body = Bytes::from(task.to_string());
        let metrics = self.metrics.clone();
        tokio::spawn(async move {
            let _slot = slot;
            tokio::time::sleep_until((accepted + plan.delay).into()).await;
            let mut backoff = plan.backoff;
            for attempt in 1..=plan.max_attempts {
                let outcome = tokio::time::timeout(plan.timeout, post(&plan, body.clone())).await;
                let retry = match outcome {
                    Ok(Ok(status)) if (200..300).contains(&status) => {
                        metrics.delivered.inc();
                        return;
                    }
                    Ok(Ok(status)) => status >= 500 || status == 408 || status == 429,
                    // Connection failures and timeouts are retried.
                    Ok(Err(_)) | Err(_) => true,
                };
                if !retry || attempt == plan.max_attempts {
                    break;
                }
                metrics.retried.inc();
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(10));
            }
            metrics.failed.inc();
        });
    }
}

/// One attempt: a new connection, one POST, the status.
async fn post(plan: &Plan, body: Bytes) -> Result<u16, Box<dyn std::error::Error + Send + Sync>> {
    let stream = tokio::net::TcpStream::connect(plan.addr).await?;
    let _ = stream.set_nodelay(true);
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
    // The connection driver ends when the response is read or the attempt is dropped.
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let path = plan
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    let req = hyper::Request::post(path)
        .header(hyper::header::HOST, plan.addr.to_string())
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(hyper::header::CONNECTION, "close")
        .body(Full::new(body))?;
    let res = sender.send_request(req).await?;
    Ok(res.status().as_u16())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_queue_is_bounded_and_slots_come_back() {
        let s = Scheduler::new(2, SchedulerMetrics::default());
        let (a, b) = (s.reserve().unwrap(), s.reserve().unwrap());
        assert!(s.reserve().is_none(), "a third delivery does not fit");
        assert_eq!(s.metrics.pending.get(), 2);
        drop(a);
        let c = s.reserve().expect("a finished delivery frees its place");
        drop((b, c));
        assert_eq!(s.metrics.pending.get(), 0);
    }

    #[test]
    fn plans_only_loopback_http_urls() {
        assert_eq!(plan_of(&json!({"name": "x"})), Ok(None));
        let plan = plan_of(&json!({"url": "http://127.0.0.1:9/hook?a=1", "deliver_in_ms": 200}))
            .unwrap()
            .unwrap();
        assert_eq!(plan.addr, "127.0.0.1:9".parse().unwrap());
        assert_eq!(plan.delay, Duration::from_millis(200));
        assert_eq!(plan.max_attempts, 3);
        assert!(plan_of(&json!({"url": "http://localhost:80/"}))
            .unwrap()
            .is_some());
        assert!(plan_of(&json!({"url": "http://[::1]:80/"}))
            .unwrap()
            .is_some());
        for off in [
            "http://10.0.0.1/",
            "http://example.com/",
            "http://0.0.0.0:80/",
        ] {
            assert_eq!(
                plan_of(&json!({"url": off})),
                Err(ScheduleError::NotLoopback),
                "{off}"
            );
        }
        for bad in [json!(5), json!("https://127.0.0.1/"), json!("not a url")] {
            assert_eq!(
                plan_of(&json!({"url": bad})),
                Err(ScheduleError::BadUrl),
                "{bad}"
            );
        }
        let err = plan_of(&json!({"url": "http://127.0.0.1/", "max_attempts": 0})).unwrap_err();
        assert!(matches!(err, ScheduleError::Field("max_attempts", _)));
        let err = plan_of(&json!({"url": "http://127.0.0.1/", "deliver_in_ms": -1})).unwrap_err();
        assert!(matches!(err, ScheduleError::Field("deliver_in_ms", _)));
    }
}
