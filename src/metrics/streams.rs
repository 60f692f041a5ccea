//! The summary's `streams` object: per stream name (and, in `stream_totals`, per
//! protocol and for all streams), built from the merged stream recorder and the hits of
//! the stream's steps.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::metrics::recorder::streams::StreamTally;
use crate::metrics::recorder::Recorder;
use crate::metrics::summary::{Errors, Latency};
use crate::metrics::ErrorKind;
use crate::plan::{Item, Plan, Step};

/// Messages or bytes, each way.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Default)]
pub struct EachWay {
    /// Sent by the generator.
    pub sent: u64,
    /// Received by the generator.
    pub received: u64,
}

/// Per-second rates each way.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Default)]
pub struct RatesEachWay {
    /// Sent per second.
    pub sent: f64,
    /// Received per second.
    pub received: f64,
}

/// What one stream (or all streams of a protocol) did during the run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct StreamSummary {
    /// `ws`, `sse`, `grpc` (`mixed` for the all-streams total of several).
    pub protocol: String,
    /// Sessions opened.
    pub sessions: u64,
    /// Stream operations (open, send, expect, close steps) completed or failed.
    pub operations: u64,
    /// Messages each way.
    pub messages: EachWay,
    /// Bytes each way (on the wire, per message).
    pub bytes: EachWay,
    /// Messages per second each way.
    pub messages_per_s: RatesEachWay,
    /// Bytes per second each way.
    pub bytes_per_s: RatesEachWay,
    /// Round trips measured (send → matching message).
    pub round_trips: u64,
    /// Per-message round-trip latency (send → matching message), ms.
    pub message_latency_ms: Latency,
    /// Connect + TLS + protocol handshake, ms.
    pub connect_ms: Latency,
    /// From the start of opening to the first message, ms.
    pub first_message_ms: Latency,
    /// Gap between consecutive messages received, ms.
    pub gap_ms: Latency,
    /// Session duration, ms.
    pub session_ms: Latency,
    /// Failed operations plus failures while no step waited, by kind; `rate` is of
    /// operations plus those background failures.
    pub errors: Errors,
    /// Stream ends by close code (WebSocket code, gRPC status, SSE `eof`).
    pub close_codes: BTreeMap<String, u64>,
    /// gRPC: calls by final status name (`OK`, `NOT_FOUND`, ...; the same counts as
    /// `close_codes`, under the name gRPC users look for).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub status: BTreeMap<String, u64>,
    /// SSE messages by event type.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub events: BTreeMap<String, u64>,
    /// SSE reconnects.
    pub reconnects: u64,
    /// Messages dropped from a full inbox nobody read.
    pub overflowed: u64,
}

fn latency(h: &Histogram<u64>) -> Latency {
    crate::engine::summarize::latency(h)
}

/// Builds `(streams, stream_totals)` for a run of `secs` seconds.
pub(crate) fn summarize(
    plan: &Plan,
    rec: &Recorder,
    secs: f64,
) -> (
    BTreeMap<String, StreamSummary>,
    BTreeMap<String, StreamSummary>,
) {
    let mut streams = BTreeMap::new();
    let mut totals: BTreeMap<String, (StreamTally, [u64; ErrorKind::COUNT], u64)> = BTreeMap::new();
    let empty = StreamTally::default();
    for (id, named) in plan.streams.iter().enumerate() {
        let tally = rec.streams.tallies.get(id).unwrap_or(&empty);
        let mut ops = 0;
        let mut op_errors = [0u64; ErrorKind::COUNT];
        for name_id in step_names(plan, id) {
            let t = &rec.by_name[name_id];
            ops += t.requests();
            for (a, b) in op_errors.iter_mut().zip(t.errors) {
                *a += b;
            }
        }
        let protocol = named.protocol.as_str();
        streams.insert(
            named.name.clone(),
            one(protocol, tally, &op_errors, ops, secs),
        );
        for key in [protocol, "all"] {
            let (t, e, o) = totals.entry(key.to_string()).or_default();
            t.merge(tally);
            for (a, b) in e.iter_mut().zip(op_errors) {
                *a += b;
            }
            *o += ops;
        }
    }
    let several = totals.len() > 2;
    let totals = totals
        .into_iter()
        .map(|(key, (t, e, o))| {
            let protocol = match key.as_str() {
                "all" if several => "mixed",
                "all" => plan.streams[0].protocol.as_str(),
                p => p,
            };
            let s = one(protocol, &t, &e, o, secs);
            (key, s)
        })
        .collect();
    (streams, totals)
}

/// The name ids of stream `id`'s steps.
fn step_names(plan: &Plan, id: usize) -> Vec<usize> {
    let mut ids = Vec::new();
    for item in &plan.items {
        if let Item::Flow(f) = item {
            for step in &f.steps {
                if let Step::Stream(s) = step {
                    if s.stream_id == id && !ids.contains(&s.name_id) {
                        ids.push(s.name_id);
                    }
                }
            }
        }
    }
    ids
}

fn one(
    protocol: &str,
    t: &StreamTally,
    op_errors: &[u64; ErrorKind::COUNT],
    ops: u64,
    secs: f64,
) -> StreamSummary {
    let mut by_kind = BTreeMap::new();
    let mut count = 0;
    for (i, kind) in ErrorKind::ALL.iter().enumerate() {
        let n = op_errors[i] + t.background_errors[i];
        if n > 0 {
            by_kind.insert(kind.as_str().to_string(), n);
            count += n;
        }
    }
    let background = t.background_error_count();
    let judged = ops + background;
    let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    StreamSummary {
        protocol: protocol.to_string(),
        sessions: t.sessions,
        operations: ops,
        messages: EachWay {
            sent: t.sent,
            received: t.received,
        },
        bytes: EachWay {
            sent: t.sent_bytes,
            received: t.received_bytes,
        },
        messages_per_s: RatesEachWay {
            sent: per_s(t.sent),
            received: per_s(t.received),
        },
        bytes_per_s: RatesEachWay {
            sent: per_s(t.sent_bytes),
            received: per_s(t.received_bytes),
        },
        round_trips: t.round_trip.len(),
        message_latency_ms: latency(&t.round_trip),
        connect_ms: latency(&t.connect),
        first_message_ms: latency(&t.first_message),
        gap_ms: latency(&t.gap),
        session_ms: latency(&t.session),
        errors: Errors {
            count,
            rate: if judged > 0 {
                count as f64 / judged as f64
            } else {
                0.0
            },
            by_kind,
            first_message: Default::default(),
        },
        close_codes: t.close_codes.clone(),
        status: if protocol == "grpc" {
            t.close_codes.clone()
        } else {
            BTreeMap::new()
        },
        events: t.events.clone(),
        reconnects: t.reconnects,
        overflowed: t.overflowed,
    }
}
