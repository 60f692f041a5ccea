//! The summary's `streams` and `stream_totals` objects, built from the merged stream
//! recorder and the hits of the stream's steps: per stream name, per protocol and for
//! all streams. The data types are the metrics layer's (`metrics::streams`).

use std::collections::BTreeMap;

use headroom_metrics::recorder::streams::StreamTally;
use headroom_metrics::recorder::Recorder;
use headroom_metrics::streams::*;
use headroom_metrics::summary::{Errors, Latency};

use headroom_metrics::ErrorKind;
use headroom_plan::{Item, Plan, Step};

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
        message_latency_ms: Latency::of_micros(&t.round_trip),
        connect_ms: Latency::of_micros(&t.connect),
        first_message_ms: Latency::of_micros(&t.first_message),
        gap_ms: Latency::of_micros(&t.gap),
        lateness_ms: Latency::of_micros(&t.lateness),
        gaps: t.gap.len(),
        cadence_messages: t.lateness.len(),
        session_ms: Latency::of_micros(&t.session),
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
