//! The summary's `streams` object: per stream name (and, in `stream_totals`, per
//! protocol and for all streams), as plain data. The engine builds it from the merged
//! stream recorder and the hits of the stream's steps (`engine::summarize_streams`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::figures::{Errors, Latency};

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
    /// How late each message came against the cadence the opening step states
    /// (`every:`): message k is due at the first message + k·every, and its lateness is
    /// max(0, arrival − due), ms. All zero without a cadence.
    pub lateness_ms: Latency,
    /// Gaps measured (`gap_ms`'s count: each message but a session's first).
    pub gaps: u64,
    /// Messages judged against a stated cadence (`lateness_ms`'s count).
    pub cadence_messages: u64,
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
