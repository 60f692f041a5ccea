//! The `sink:` block: where deliveries are received and how the id is found in them.
//!
//! ```yaml
//! sink:
//!   listen: 127.0.0.1:0          # loopback only; port 0 picks one
//!   latency: 100ms               # or a range: 50ms..150ms
//!   status: 200
//!   fail: {share: 0.1, status: 503, every_attempt: false}
//!   id: {json_path: "$.event_id"}   # or {header: x-event-id}
//!   grace: 5s                   # longest wait after the load
//!   settle: 500ms                # ...which ends once all are in and the sink is this quiet
//!   max_ids: 1000000
//!   max_body: 65536
//! ```

use std::time::Duration;

use serde_json::{Map, Value};

use super::duration::parse_duration;
use super::errors::{found, ScenarioError, Source};
use super::field_errors::{SinkFieldError, SINK_KEYS};
use super::format::Node;
use headroom_sink::{
    Correlate, Fail, SinkLatency, SinkOptions, SinkPlan, DEFAULT_GRACE, DEFAULT_SETTLE,
};

fn dur(v: &Value) -> Result<Duration, SinkFieldError> {
    match v {
        Value::String(s) => Ok(parse_duration(s)?),
        other => Err(SinkFieldError::NotDuration {
            found: found(other),
        }),
    }
}

fn count(v: &Value, what: &'static str) -> Result<u64, SinkFieldError> {
    v.as_u64()
        .filter(|n| *n > 0)
        .ok_or_else(|| SinkFieldError::NotPositive {
            what,
            found: found(v),
        })
}

fn status(v: &Value) -> Result<u16, SinkFieldError> {
    v.as_u64()
        .and_then(|n| u16::try_from(n).ok())
        .filter(|n| (200..=599).contains(n))
        .ok_or_else(|| SinkFieldError::Status { found: found(v) })
}

fn fail(v: &Value) -> Result<Fail, SinkFieldError> {
    let m = v.as_object().ok_or(SinkFieldError::FailShape)?;
    let mut fail = Fail {
        share: 0.0,
        status: 503,
        every_attempt: false,
    };
    for (k, v) in m {
        match k.as_str() {
            "share" => {
                fail.share = v
                    .as_f64()
                    .filter(|s| (0.0..=1.0).contains(s))
                    .ok_or_else(|| SinkFieldError::Share { found: found(v) })?
            }
            "status" => fail.status = status(v)?,
            "every_attempt" => {
                fail.every_attempt = v.as_bool().ok_or(SinkFieldError::EveryAttempt)?
            }
            other => {
                return Err(SinkFieldError::FailKey {
                    key: other.to_string(),
                })
            }
        }
    }
    Ok(fail)
}

fn id(v: &Value) -> Result<Correlate, SinkFieldError> {
    let m = v
        .as_object()
        .filter(|m| m.len() == 1)
        .ok_or(SinkFieldError::IdShape)?;
    match m.iter().next() {
        Some((k, Value::String(p))) if k == "json_path" => {
            Correlate::json_path(p).map_err(SinkFieldError::JsonPath)
        }
        Some((k, Value::String(h))) if k == "header" => {
            Ok(Correlate::Header(h.to_ascii_lowercase()))
        }
        _ => Err(SinkFieldError::IdShape),
    }
}

fn field(
    opts: &mut SinkOptions,
    times: &mut (Duration, Duration),
    k: &str,
    v: &Value,
) -> Result<(), SinkFieldError> {
    match k {
        "listen" => {
            opts.listen = v
                .as_str()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| SinkFieldError::Listen { found: found(v) })?
        }
        "latency" => {
            opts.latency = match v.as_str().and_then(|s| s.split_once("..")) {
                Some((lo, hi)) => {
                    SinkLatency::Range(parse_duration(lo.trim())?, parse_duration(hi.trim())?)
                }
                None => SinkLatency::Fixed(dur(v)?),
            }
        }
        "status" => opts.status = status(v)?,
        "fail" => opts.fail = Some(fail(v)?),
        "id" => opts.correlate = id(v)?,
        "grace" => times.0 = dur(v)?,
        "settle" => times.1 = dur(v)?,
        "max_ids" => opts.max_ids = usize::try_from(count(v, "max_ids")?).unwrap_or(usize::MAX),
        "max_body" => opts.max_body = usize::try_from(count(v, "max_body")?).unwrap_or(usize::MAX),
        other => {
            return Err(SinkFieldError::UnknownKey {
                key: other.to_string(),
            })
        }
    }
    Ok(())
}

/// Compiles the `sink:` block.
pub(crate) fn build(src: Source<'_>, node: &Node) -> Result<SinkPlan, ScenarioError> {
    let empty = Map::new();
    let map = match &node.value {
        Value::Object(m) => m,
        Value::Null => &empty,
        other => {
            return Err(src.of(
                node,
                "sink",
                format!(
                    "expected a mapping with {SINK_KEYS}, found {}",
                    found(other)
                ),
            ))
        }
    };
    let mut options = SinkOptions::default();
    let mut times = (DEFAULT_GRACE, DEFAULT_SETTLE);
    for (k, v) in map {
        field(&mut options, &mut times, k, v).map_err(|e| src.of(node, &format!("sink.{k}"), e))?;
    }
    options
        .validate()
        .map_err(|e| src.of(node, "sink", e.to_string()))?;
    let (grace, settle) = times;
    Ok(SinkPlan {
        options,
        grace,
        settle,
        attached: None,
    })
}
