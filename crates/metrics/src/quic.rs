//! [`QuicSummary`]: the summary's `quic` section, what QUIC measured on an HTTP/3 run's
//! connections (their round-trip times and lost packets), from the recorder's
//! [`QuicTally`].

use serde::{Deserialize, Serialize};

use crate::recorder::QuicTally;

/// What QUIC measured on the run's HTTP/3 connections, read once per connection as it
/// closed. Absent from a run without HTTP/3.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct QuicSummary {
    /// Connections measured (every HTTP/3 connection the run closed, which at its end
    /// is every one it opened).
    pub connections: u64,
    /// Round-trip times as QUIC's loss recovery estimated them.
    pub rtt: QuicRtt,
    /// Packets sent and datagrams received.
    pub packets: QuicPackets,
    /// Packets QUIC declared lost (their frames were sent again).
    pub lost: QuicLost,
    /// Congestion events: losses (or ECN marks) that shrank a congestion window.
    pub congestion_events: u64,
    /// Connections whose handshake resumed a session (`--h3-resume`, `--h3-0rtt`):
    /// the handshakes that verified no server certificate.
    pub resumed: u64,
    /// Requests sent as 0-RTT early data (`--h3-0rtt`).
    pub zero_rtt: QuicZeroRtt,
    /// The most QUIC packets one send could carry to the kernel (UDP generic
    /// segmentation offload, which quinn uses where the kernel has it); 1 without GSO,
    /// and 0 in a summary stored before it was recorded.
    pub gso_segments: u64,
}

/// 0-RTT: the request that opens a connection, sent as early data with a resumed
/// session's keys before the handshake completes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct QuicZeroRtt {
    /// Requests sent as early data.
    pub sent: u64,
    /// Of those, the ones the server accepted as early data.
    pub accepted: u64,
    /// The ones it rejected (each sent again once the handshake completed).
    pub rejected: u64,
}

/// Round-trip times, milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct QuicRtt {
    /// The smallest any connection saw: the path's floor.
    pub min_ms: f64,
    /// The connections' smoothed RTT at close, averaged.
    pub smoothed_ms: f64,
    /// The largest smoothed RTT at close.
    pub smoothed_max_ms: f64,
}

/// Packets and datagrams.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct QuicPackets {
    /// QUIC packets sent.
    pub sent: u64,
    /// UDP datagrams received.
    pub received_datagrams: u64,
}

/// Loss.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct QuicLost {
    /// Packets declared lost.
    pub packets: u64,
    /// Bytes in them.
    pub bytes: u64,
    /// Lost packets as a percentage of those sent.
    pub percent: f64,
}

impl QuicSummary {
    /// The section for a recorder's tally; `None` when no QUIC connection closed.
    pub fn of(t: &QuicTally) -> Option<QuicSummary> {
        if t.connections == 0 {
            return None;
        }
        let ms = |us: u64| us as f64 / 1000.0;
        let percent = if t.packets_sent == 0 {
            0.0
        } else {
            (t.packets_lost as f64 / t.packets_sent as f64 * 100.0 * 1000.0).round() / 1000.0
        };
        Some(QuicSummary {
            connections: t.connections,
            rtt: QuicRtt {
                min_ms: ms(t.min_rtt_us),
                smoothed_ms: ms(t.smoothed_rtt_us_sum / t.connections),
                smoothed_max_ms: ms(t.smoothed_rtt_us_max),
            },
            packets: QuicPackets {
                sent: t.packets_sent,
                received_datagrams: t.datagrams_received,
            },
            lost: QuicLost {
                packets: t.packets_lost,
                bytes: t.bytes_lost,
                percent,
            },
            congestion_events: t.congestion_events,
            resumed: t.connections.saturating_sub(t.verified),
            zero_rtt: QuicZeroRtt {
                sent: t.zero_rtt_sent,
                accepted: t.zero_rtt_accepted,
                rejected: t.zero_rtt_rejected,
            },
            gso_segments: t.gso_segments,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::recorder::QuicSample;

    #[test]
    fn connections_add_up_and_the_floor_is_the_smallest_seen() {
        assert_eq!(QuicSummary::of(&QuicTally::default()), None);
        let sample = |min_us, smoothed_us, sent, lost| QuicSample {
            min_rtt: Duration::from_micros(min_us),
            smoothed_rtt: Duration::from_micros(smoothed_us),
            packets_sent: sent,
            packets_lost: lost,
            bytes_lost: lost * 1200,
            datagrams_received: sent / 2,
            congestion_events: lost.min(1),
        };
        let (mut a, mut b) = (QuicTally::default(), QuicTally::default());
        a.add(&sample(300, 500, 100, 0));
        b.add(&sample(200, 1500, 300, 4));
        b.add(&sample(0, 1000, 0, 0)); // closed before any RTT sample: no floor
        let mut all = QuicTally::default();
        all.merge(&a);
        all.merge(&b);
        let s = QuicSummary::of(&all).unwrap();
        assert_eq!(s.connections, 3);
        assert_eq!(
            (s.rtt.min_ms, s.rtt.smoothed_ms, s.rtt.smoothed_max_ms),
            (0.2, 1.0, 1.5)
        );
        assert_eq!((s.packets.sent, s.packets.received_datagrams), (400, 200));
        assert_eq!(
            (s.lost.packets, s.lost.bytes, s.lost.percent),
            (4, 4800, 1.0)
        );
        assert_eq!(s.congestion_events, 1);
        // Every handshake verified a certificate: none resumed.
        all.verified = 3;
        assert_eq!(QuicSummary::of(&all).unwrap().resumed, 0);
        all.verified = 1;
        all.zero_rtt_sent = 2;
        all.zero_rtt_accepted = 2;
        let s = QuicSummary::of(&all).unwrap();
        assert_eq!((s.resumed, s.zero_rtt.sent, s.zero_rtt.accepted), (2, 2, 2));
    }
}
