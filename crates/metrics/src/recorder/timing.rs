//! Where a request's time went ([`Timing`]), the histograms of those phases per tally
//! ([`Breakdown`]), and what the run did with connections ([`Connections`]).

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::new_histogram;

/// The timing breakdown's histograms take two digits (1%): it adds five histograms to
/// each [`Tally`](super::Tally) (per request name and thread), which holds three. One
/// spanning 50 µs to 30 s takes 19 KiB at two digits, 128 KiB at three; so the
/// breakdown adds about a fifth to a tally instead of more than doubling it. Its phases
/// explain the latency, which keeps three digits.
pub(super) const BREAKDOWN_SIGFIG: u8 = 2;

/// Where one request's time went. A phase that did not happen for this request is
/// `None` and records nothing: a request on a reused connection has no connect (nor
/// TLS) time, a request whose response was not read to its end has no ttfb nor
/// receive.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timing {
    /// TCP connect time of the connection this request opened.
    pub connect: Option<Duration>,
    /// TLS handshake time of the connection this request opened (TLS only).
    pub tls: Option<Duration>,
    /// From the start of the request's write to the first byte of the response.
    pub ttfb: Option<Duration>,
    /// From the first byte of the response to the end of its body.
    pub receive: Option<Duration>,
    /// True when the request was sent on a connection opened before it (kept alive).
    pub reused: bool,
}

/// Histograms of the phases of a request, microseconds ([`Timing`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Breakdown {
    /// Name resolutions (the engine resolves the target once per run, not per request).
    #[serde(with = "super::hdr_serde")]
    pub dns: Histogram<u64>,
    /// TCP connects, one per connection opened.
    #[serde(with = "super::hdr_serde")]
    pub connect: Histogram<u64>,
    /// TLS handshakes, one per TLS connection opened.
    #[serde(with = "super::hdr_serde")]
    pub tls: Histogram<u64>,
    /// Time to first byte, one per response read to its end.
    #[serde(with = "super::hdr_serde")]
    pub ttfb: Histogram<u64>,
    /// Receive time, one per response read to its end.
    #[serde(with = "super::hdr_serde")]
    pub receive: Histogram<u64>,
}

impl Default for Breakdown {
    fn default() -> Self {
        Breakdown {
            dns: new_histogram(BREAKDOWN_SIGFIG),
            connect: new_histogram(BREAKDOWN_SIGFIG),
            tls: new_histogram(BREAKDOWN_SIGFIG),
            ttfb: new_histogram(BREAKDOWN_SIGFIG),
            receive: new_histogram(BREAKDOWN_SIGFIG),
        }
    }
}

impl Breakdown {
    /// Adds another breakdown into this one.
    pub fn merge(&mut self, other: &Breakdown) {
        let pairs = [
            (&mut self.dns, &other.dns),
            (&mut self.connect, &other.connect),
            (&mut self.tls, &other.tls),
            (&mut self.ttfb, &other.ttfb),
            (&mut self.receive, &other.receive),
        ];
        for (a, b) in pairs {
            a.add(b).expect("auto-resizing histograms always merge");
        }
    }
}

/// Connections a run opened and requests that went on an already open one.
///
/// `opened`, `by_protocol` and `handshakes` are counted by the client layer's
/// connector as each connection opens (every connection passes through it: requests',
/// WebSockets', SSE streams', gRPC calls'), and added in by [`Connections::add_opened`];
/// `reused` is counted per request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connections {
    /// New connections (successful connects, TCP and TLS), every protocol's.
    pub opened: u64,
    /// Requests sent on a connection opened before them.
    pub reused: u64,
    /// TLS handshakes completed (0 over plain TCP).
    pub handshakes: u64,
    /// `opened` by what each connection was opened to speak (absent in a recorder
    /// stored before it was counted).
    #[serde(default)]
    pub by_protocol: ByProtocol,
    /// HTTP/3 connections' transport figures, added as each closes (absent in a
    /// recorder stored before they were counted, and all 0 in a run without HTTP/3).
    #[serde(default)]
    pub quic: QuicTally,
    /// Successful requests that opened their connection with a handshake, and how
    /// much of their time it took (absent in a recorder stored before it was counted).
    #[serde(default)]
    pub opening: Opening,
}

/// Successful requests that paid for their connection's handshake (TLS over TCP, or
/// QUIC's): sums, so the handshake's share of such a request is one division at the
/// end and costs two additions per opening request, none per reused one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Opening {
    /// Such requests.
    pub requests: u64,
    /// The sum of their handshakes, µs.
    pub handshake_us: u64,
    /// The sum of their latencies from the actual send (the handshake included), µs.
    pub latency_us: u64,
}

impl Opening {
    fn merge(&mut self, other: &Opening) {
        self.requests += other.requests;
        self.handshake_us += other.handshake_us;
        self.latency_us += other.latency_us;
    }
}

impl Connections {
    /// Counts one finished request: `uncorrected` is its latency from the actual send,
    /// `ok` whether it succeeded (a failed one's time says nothing of the handshake's
    /// share: a timeout would swamp it).
    pub(super) fn record(&mut self, t: &Timing, uncorrected: Duration, ok: bool) {
        self.reused += u64::from(t.reused);
        if let (Some(handshake), true) = (t.tls, ok) {
            self.opening.requests += 1;
            self.opening.handshake_us += super::micros(handshake);
            // Why the larger of the two: the send's clock starts before the connect on
            // some paths and after on none, but a coarse clock may still order them
            // the other way by a microsecond; a share above 100 % would be nonsense.
            self.opening.latency_us += super::micros(uncorrected.max(handshake));
        }
    }

    /// Adds connections opened (counted by the connector) and their TLS handshakes.
    pub fn add_opened(&mut self, by_protocol: &ByProtocol, handshakes: u64) {
        self.by_protocol.merge(by_protocol);
        self.opened += by_protocol.total();
        self.handshakes += handshakes;
    }

    /// Adds another thread's counts into these.
    pub(super) fn merge(&mut self, other: &Connections) {
        self.opened += other.opened;
        self.reused += other.reused;
        self.handshakes += other.handshakes;
        self.by_protocol.merge(&other.by_protocol);
        self.quic.merge(&other.quic);
        self.opening.merge(&other.opening);
    }
}

/// What QUIC measured on the HTTP/3 connections a run closed: the round-trip times
/// its loss recovery estimated and the packets it sent and declared lost. Read from
/// the stack once per connection, as it closes, never per request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct QuicTally {
    /// Connections whose figures are added in.
    pub connections: u64,
    /// The smallest RTT any of them saw, µs (0 while none was added).
    pub min_rtt_us: u64,
    /// The sum of their smoothed RTTs at close, µs (the mean's numerator).
    pub smoothed_rtt_us_sum: u64,
    /// The largest smoothed RTT at close, µs.
    pub smoothed_rtt_us_max: u64,
    /// Packets sent.
    pub packets_sent: u64,
    /// Packets declared lost (each was retransmitted, or its frames were).
    pub packets_lost: u64,
    /// Bytes in the lost packets.
    pub bytes_lost: u64,
    /// UDP datagrams received.
    pub datagrams_received: u64,
    /// Congestion events (loss or ECN marks that shrank the window).
    pub congestion_events: u64,
    /// Server certificates verified: one per full handshake (a resumed one verifies
    /// none), counted as the handshakes happen.
    pub verified: u64,
    /// Requests sent as 0-RTT early data (`--h3-0rtt`), and of those, the ones whose
    /// early data the server accepted and rejected.
    pub zero_rtt_sent: u64,
    /// See `zero_rtt_sent`.
    pub zero_rtt_accepted: u64,
    /// See `zero_rtt_sent`.
    pub zero_rtt_rejected: u64,
    /// The most datagrams one send of the client's UDP sockets may carry (UDP GSO,
    /// where the kernel has it; 1 without). The largest any thread's socket had.
    pub gso_segments: u64,
}

/// One QUIC connection's figures at its close, as [`QuicTally::add`] takes them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QuicSample {
    /// The smallest RTT the connection saw.
    pub min_rtt: Duration,
    /// Its smoothed RTT.
    pub smoothed_rtt: Duration,
    /// Packets sent.
    pub packets_sent: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// Bytes in the lost packets.
    pub bytes_lost: u64,
    /// UDP datagrams received.
    pub datagrams_received: u64,
    /// Congestion events.
    pub congestion_events: u64,
}

impl QuicTally {
    /// Adds one closed connection's figures.
    pub fn add(&mut self, c: &QuicSample) {
        let us = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        let min = us(c.min_rtt);
        self.min_rtt_us = match (self.connections, min) {
            (0, m) => m,
            (_, 0) => self.min_rtt_us,
            (_, m) => self.min_rtt_us.min(m),
        };
        self.connections += 1;
        self.smoothed_rtt_us_sum += us(c.smoothed_rtt);
        self.smoothed_rtt_us_max = self.smoothed_rtt_us_max.max(us(c.smoothed_rtt));
        self.packets_sent += c.packets_sent;
        self.packets_lost += c.packets_lost;
        self.bytes_lost += c.bytes_lost;
        self.datagrams_received += c.datagrams_received;
        self.congestion_events += c.congestion_events;
    }

    /// Adds another tally (another thread's, another second's) into this one.
    pub fn merge(&mut self, o: &QuicTally) {
        self.verified += o.verified;
        self.zero_rtt_sent += o.zero_rtt_sent;
        self.zero_rtt_accepted += o.zero_rtt_accepted;
        self.zero_rtt_rejected += o.zero_rtt_rejected;
        self.gso_segments = self.gso_segments.max(o.gso_segments);
        if o.connections == 0 {
            return;
        }
        self.min_rtt_us = if self.connections == 0 {
            o.min_rtt_us
        } else {
            self.min_rtt_us.min(o.min_rtt_us)
        };
        self.connections += o.connections;
        self.smoothed_rtt_us_sum += o.smoothed_rtt_us_sum;
        self.smoothed_rtt_us_max = self.smoothed_rtt_us_max.max(o.smoothed_rtt_us_max);
        self.packets_sent += o.packets_sent;
        self.packets_lost += o.packets_lost;
        self.bytes_lost += o.bytes_lost;
        self.datagrams_received += o.datagrams_received;
        self.congestion_events += o.congestion_events;
    }
}

/// What a connection was opened to speak: the key it is counted under in
/// `connections.by_protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Speaks {
    /// HTTP/1.1 requests.
    Http1,
    /// HTTP/2: the client's own connections (per user or pooled), which carry requests
    /// and, sharing them, a user's gRPC calls and SSE streams.
    Http2,
    /// A WebSocket (an HTTP/1.1 upgrade).
    WebSocket,
    /// An SSE stream on a connection of its own (HTTP/1.1, or HTTP/2 when no
    /// connection of the user's could carry it).
    Sse,
    /// gRPC calls on a connection of their own (HTTP/2).
    Grpc,
    /// HTTP/3: the client's QUIC connections (per user or pooled).
    Http3,
}

/// Connections opened, by what they were opened to speak. The six always appear in
/// the JSON; all 0 in a summary stored before they were counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ByProtocol {
    /// HTTP/1.1 request connections.
    pub http1: u64,
    /// HTTP/2 connections of the client (carrying requests, and gRPC calls and SSE
    /// streams that share them).
    pub http2: u64,
    /// WebSocket connections.
    pub websocket: u64,
    /// SSE streams' own connections.
    pub sse: u64,
    /// gRPC calls' own connections.
    pub grpc: u64,
    /// HTTP/3 connections of the client (QUIC).
    pub h3: u64,
}

impl ByProtocol {
    /// Counts one connection opened to speak `speaks`.
    pub fn count(&mut self, speaks: Speaks) {
        *match speaks {
            Speaks::Http1 => &mut self.http1,
            Speaks::Http2 => &mut self.http2,
            Speaks::WebSocket => &mut self.websocket,
            Speaks::Sse => &mut self.sse,
            Speaks::Grpc => &mut self.grpc,
            Speaks::Http3 => &mut self.h3,
        } += 1;
    }

    /// Every protocol's connections together.
    pub fn total(&self) -> u64 {
        self.http1 + self.http2 + self.websocket + self.sse + self.grpc + self.h3
    }

    /// Adds `other`'s counts into these.
    pub fn merge(&mut self, other: &ByProtocol) {
        self.http1 += other.http1;
        self.http2 += other.http2;
        self.websocket += other.websocket;
        self.sse += other.sse;
        self.grpc += other.grpc;
        self.h3 += other.h3;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::{Hit, Recorder};
    use crate::ErrorKind;

    fn timed(name_id: usize, connect_us: Option<u64>, ttfb_ms: u64, reused: bool) -> Hit {
        Hit {
            name_id,
            corrected: Duration::from_millis(ttfb_ms + 1),
            uncorrected: Duration::from_millis(ttfb_ms + 1),
            error: None,
            timing: Timing {
                connect: connect_us.map(Duration::from_micros),
                tls: None,
                ttfb: Some(Duration::from_millis(ttfb_ms)),
                receive: Some(Duration::from_millis(1)),
                reused,
            },
        }
    }

    #[test]
    fn phases_record_only_when_they_happened_and_connections_are_counted() {
        let mut r = Recorder::new(2);
        r.record(&timed(0, Some(300), 100, false));
        r.record(&timed(0, None, 100, true));
        r.record(&timed(1, None, 100, true));
        // A request that failed before any response: no phase, not reused.
        r.record(&Hit {
            timing: Timing::default(),
            error: Some(ErrorKind::Connect),
            ..timed(1, None, 1, false)
        });
        let finished = r.clone().finish();
        let t = &finished.overall.timing;
        assert_eq!(
            t.connect.len(),
            1,
            "one connect, for the one new connection"
        );
        assert!(
            (297..=303).contains(&t.connect.max()),
            "{}",
            t.connect.max()
        );
        assert_eq!((t.ttfb.len(), t.receive.len(), t.tls.len()), (3, 3, 0));
        assert!((99_000..=101_000).contains(&t.ttfb.value_at_quantile(0.5)));
        assert_eq!(r.by_name[0].timing.connect.len(), 1);
        assert_eq!(r.by_name[1].timing.connect.len(), 0);
        assert_eq!(r.by_name[1].timing.ttfb.len(), 1);
        // Requests count only reuse: the connector counts connections as they open.
        let c = r.connections;
        assert_eq!((c.opened, c.reused, c.handshakes), (0, 2, 0));
        r.record(&Hit {
            timing: Timing {
                tls: Some(Duration::from_millis(3)),
                ..timed(0, Some(300), 5, false).timing
            },
            ..timed(0, Some(300), 5, false)
        });
        assert_eq!(r.by_name[0].timing.tls.len(), 1);
        let mut opened = ByProtocol::default();
        opened.count(Speaks::Http1);
        opened.count(Speaks::WebSocket);
        opened.count(Speaks::WebSocket);
        r.connections.add_opened(&opened, 1);
        let c = r.connections;
        assert_eq!((c.opened, c.handshakes), (3, 1));
        assert_eq!((c.by_protocol.http1, c.by_protocol.websocket), (1, 2));
        assert_eq!(c.by_protocol.total(), c.opened);
    }

    #[test]
    fn breakdowns_and_connections_merge_like_one_recorder() {
        let mut a = Recorder::new(1);
        let mut b = Recorder::new(1);
        let mut all = Recorder::new(1);
        for i in 0..500u64 {
            let h = timed(
                0,
                (i % 10 == 0).then_some(100 + i),
                1 + i % 150,
                i % 10 != 0,
            );
            if i % 2 == 0 {
                a.record(&h)
            } else {
                b.record(&h)
            }
            all.record(&h);
        }
        a.record_dns(Duration::from_millis(2));
        all.record_dns(Duration::from_millis(2));
        let grpc = ByProtocol {
            grpc: 50,
            ..ByProtocol::default()
        };
        b.connections.add_opened(&grpc, 0);
        all.connections.add_opened(&grpc, 0);
        let (mut a, b, all) = (a.finish(), b.finish(), all.finish());
        a.merge(&b);
        assert_eq!(a.connections, all.connections);
        assert_eq!((a.connections.opened, a.connections.reused), (50, 450));
        assert_eq!(a.connections.by_protocol.grpc, 50);
        let (x, y) = (&a.overall.timing, &all.overall.timing);
        for (p, q) in [
            (&x.dns, &y.dns),
            (&x.connect, &y.connect),
            (&x.ttfb, &y.ttfb),
            (&x.receive, &y.receive),
        ] {
            assert_eq!(p.len(), q.len());
            for quantile in [0.5, 0.95, 0.99, 1.0] {
                assert_eq!(p.value_at_quantile(quantile), q.value_at_quantile(quantile));
            }
        }
        assert_eq!(x.dns.len(), 1);
        assert_eq!(a.by_name[0].timing.dns.len(), 0, "dns belongs to the run");
    }
}
