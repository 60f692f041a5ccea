//! The stream recorder: per stream (a plan's stream name), what its sessions saw —
//! connect/handshake, time to first message, message round trips, inter-arrival gaps,
//! lateness against a stated cadence, session durations (HDR histograms, merged exactly like the request ones), messages
//! and bytes each way, close codes, SSE event types, reconnects and background errors.
//! Operations on a stream (open, send+expect, ...) are ordinary hits of the request
//! recorder; this one holds what happens between them.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::{new_histogram, put, SIGFIG};
use crate::ErrorKind;

/// Most distinct close codes or event types one stream keeps; the rest count as `other`
/// (the peer chooses them, so they are bounded like everything else it sends).
pub const MAX_KEYS: usize = 64;

/// What one stream's sessions saw on one thread (or merged).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StreamTally {
    /// Sessions opened.
    pub sessions: u64,
    /// Connect + TLS + protocol handshake, microseconds.
    #[serde(with = "super::hdr_serde")]
    pub connect: Histogram<u64>,
    /// From the start of opening to the first message received, microseconds.
    #[serde(with = "super::hdr_serde")]
    pub first_message: Histogram<u64>,
    /// From a send to the matching message (send+expect steps), microseconds.
    #[serde(with = "super::hdr_serde")]
    pub round_trip: Histogram<u64>,
    /// Between consecutive messages received, microseconds.
    #[serde(with = "super::hdr_serde")]
    pub gap: Histogram<u64>,
    /// How late each message came against the stream's stated cadence (`every:`),
    /// microseconds; empty without one.
    #[serde(with = "super::hdr_serde")]
    pub lateness: Histogram<u64>,
    /// From opened to closed, microseconds.
    #[serde(with = "super::hdr_serde")]
    pub session: Histogram<u64>,
    /// Messages sent.
    pub sent: u64,
    /// Bytes sent (payload).
    pub sent_bytes: u64,
    /// Messages received.
    pub received: u64,
    /// Bytes received (on the wire, per message).
    pub received_bytes: u64,
    /// Close codes (WebSocket code, gRPC status, SSE `eof`) by code.
    pub close_codes: BTreeMap<String, u64>,
    /// SSE messages by event type.
    pub events: BTreeMap<String, u64>,
    /// SSE reconnects.
    pub reconnects: u64,
    /// Messages dropped from a full buffer nobody read.
    pub overflowed: u64,
    /// Failures of a stream while no step was waiting on it, by kind.
    pub background_errors: [u64; ErrorKind::COUNT],
}

impl Default for StreamTally {
    fn default() -> Self {
        StreamTally {
            sessions: 0,
            connect: new_histogram(SIGFIG),
            first_message: new_histogram(SIGFIG),
            round_trip: new_histogram(SIGFIG),
            gap: new_histogram(SIGFIG),
            lateness: new_histogram(SIGFIG),
            session: new_histogram(SIGFIG),
            sent: 0,
            sent_bytes: 0,
            received: 0,
            received_bytes: 0,
            close_codes: BTreeMap::new(),
            events: BTreeMap::new(),
            reconnects: 0,
            overflowed: 0,
            background_errors: [0; ErrorKind::COUNT],
        }
    }
}

fn bump(map: &mut BTreeMap<String, u64>, key: &str, n: u64) {
    if let Some(v) = map.get_mut(key) {
        *v += n;
    } else if map.len() < MAX_KEYS {
        map.insert(key.to_string(), n);
    } else {
        *map.entry("other".to_string()).or_default() += n;
    }
}

impl StreamTally {
    /// A session opened after `connect` (connect + handshakes).
    pub fn opened(&mut self, connect: Duration) {
        self.sessions += 1;
        put(&mut self.connect, connect);
    }

    /// A message received: `first` is set for a session's first message (time since
    /// opening began), `gap` for the others.
    pub fn received(
        &mut self,
        bytes: usize,
        first: Option<Duration>,
        gap: Option<Duration>,
        event: Option<&str>,
    ) {
        self.received += 1;
        self.received_bytes += bytes as u64;
        if let Some(d) = first {
            put(&mut self.first_message, d);
        }
        if let Some(d) = gap {
            put(&mut self.gap, d);
        }
        if let Some(e) = event {
            bump(&mut self.events, e, 1);
        }
    }

    /// A message of a stream with a stated cadence arrived `d` after it was due (0 when
    /// on time or early).
    pub fn late(&mut self, d: Duration) {
        put(&mut self.lateness, d);
    }

    /// A message sent.
    pub fn sent(&mut self, bytes: usize) {
        self.sent += 1;
        self.sent_bytes += bytes as u64;
    }

    /// A send → matching reply round trip.
    pub fn round_trip(&mut self, d: Duration) {
        put(&mut self.round_trip, d);
    }

    /// The stream ended with `code`.
    pub fn closed(&mut self, code: &str) {
        bump(&mut self.close_codes, code, 1);
    }

    /// A session ended after `d`.
    pub fn ended(&mut self, d: Duration) {
        put(&mut self.session, d);
    }

    /// Background errors, all kinds.
    pub fn background_error_count(&self) -> u64 {
        self.background_errors.iter().sum()
    }

    /// Adds another tally into this one.
    pub fn merge(&mut self, o: &StreamTally) {
        self.sessions += o.sessions;
        for (a, b) in [
            (&mut self.connect, &o.connect),
            (&mut self.first_message, &o.first_message),
            (&mut self.round_trip, &o.round_trip),
            (&mut self.gap, &o.gap),
            (&mut self.lateness, &o.lateness),
            (&mut self.session, &o.session),
        ] {
            a.add(b).expect("auto-resizing histograms always merge");
        }
        self.sent += o.sent;
        self.sent_bytes += o.sent_bytes;
        self.received += o.received;
        self.received_bytes += o.received_bytes;
        for (k, v) in &o.close_codes {
            bump(&mut self.close_codes, k, *v);
        }
        for (k, v) in &o.events {
            bump(&mut self.events, k, *v);
        }
        self.reconnects += o.reconnects;
        self.overflowed += o.overflowed;
        for (a, b) in self.background_errors.iter_mut().zip(o.background_errors) {
            *a += b;
        }
    }
}

/// Every stream's tally on one thread, indexed by the plan's stream id (grown on use).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StreamRecorders {
    /// Tallies by stream id.
    pub tallies: Vec<StreamTally>,
}

impl StreamRecorders {
    /// Stream `id`'s tally.
    pub fn tally(&mut self, id: usize) -> &mut StreamTally {
        if self.tallies.len() <= id {
            self.tallies.resize_with(id + 1, StreamTally::default);
        }
        &mut self.tallies[id]
    }

    /// Adds another thread's tallies into these.
    pub fn merge(&mut self, other: &StreamRecorders) {
        for (id, t) in other.tallies.iter().enumerate() {
            self.tally(id).merge(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_tallies_equal_one_tally_and_peer_chosen_keys_are_bounded() {
        let (mut a, mut b, mut all) = (
            StreamRecorders::default(),
            StreamRecorders::default(),
            StreamTally::default(),
        );
        for i in 0..1000u64 {
            let d = Duration::from_micros(i * 37 % 5000 + 1);
            let r = if i % 3 == 0 { &mut a } else { &mut b };
            r.tally(1).round_trip(d);
            r.tally(1).closed(&format!("code{i}"));
            all.round_trip(d);
        }
        a.merge(&b);
        let t = &a.tallies[1];
        assert_eq!(t.round_trip.len(), 1000);
        assert_eq!(
            t.round_trip.value_at_quantile(0.95),
            all.round_trip.value_at_quantile(0.95)
        );
        assert!(t.close_codes.len() <= MAX_KEYS + 1);
        assert_eq!(t.close_codes.values().sum::<u64>(), 1000);
        assert_eq!(a.tallies[0].sessions, 0);
    }
}
