//! [`Trace`]: the instants of one request's exchange, noted by the client layer as it
//! happens, from which the engine takes the request's [`Timing`] and uncorrected start.

use std::time::{Duration, Instant};

use super::connect::Opened;
use headroom_metrics::recorder::Timing;

/// The instants of one request's exchange that its [`Timing`] is made of.
#[derive(Debug, Default)]
pub struct Trace {
    /// Connect time of the connection this request opened.
    pub(super) connect: Option<Duration>,
    /// Its TLS handshake time (TLS only).
    pub(super) tls: Option<Duration>,
    /// When that connection was ready to write on.
    pub(super) ready: Option<Instant>,
    /// When the request got its turn after waiting for the shared pool (a capped
    /// HTTP/1.1 pool, or an HTTP/2 connection being opened by another request).
    pub(super) leased: Option<Instant>,
    /// When the first byte of a complete response arrived.
    pub(super) first_byte: Option<FirstByte>,
    /// The request went out on a connection that was open before it.
    pub(super) reused: bool,
    /// The request was sent a second time (stale connection, refused stream).
    pub retried: bool,
}

/// When the first byte of a complete response arrived.
#[derive(Debug, Clone, Copy)]
pub(super) enum FirstByte {
    /// At this instant, before the response's last byte.
    At(Instant),
    /// In the same read as its last byte: when the response ended.
    WithTheEnd,
}

impl Trace {
    /// Notes a connection opened by this request, ready now, and what opening it took.
    pub(super) fn opened(&mut self, took: Opened) {
        self.connect = Some(took.connect);
        self.tls = took.tls;
        self.ready = Some(Instant::now());
        self.reused = false;
    }

    /// Notes a QUIC connection opened by this request, ready now: its handshake (TLS
    /// 1.3 inside QUIC) is the `tls` phase, and there is no TCP connect.
    pub(super) fn opened_quic(&mut self, handshake: Duration) {
        self.connect = None;
        self.tls = Some(handshake);
        self.ready = Some(Instant::now());
        self.reused = false;
    }

    /// When the request was first able to go out: after any wait for the shared pool,
    /// before any connect. Uncorrected latency runs from here, as a tool without a
    /// schedule would measure it (the pool's wait is queueing, which only corrected
    /// latency shows).
    pub fn sent(&self, began: Instant) -> Instant {
        self.leased.unwrap_or(began)
    }

    /// The request's timing: `sent` when it began, `done` when its response ended, and
    /// `since_sent` = `done − sent`, which the caller has already computed.
    ///
    /// Why pass it: an `Instant` subtraction is a checked timespec difference of a few
    /// dozen instructions, and a closed-model request on a reused connection whose
    /// response came in one read has all its phases at `sent` and `done`: its ttfb is
    /// `since_sent` and its receive is zero, so no subtraction is needed here at all.
    pub fn timing(&self, sent: Instant, done: Instant, since_sent: Duration) -> Timing {
        // The write starts when the connection is ready: right after `sent` on a
        // reused one (only an idle check lies between), after the connect on a new
        // one. Taking these instants instead of one more clock read per request keeps
        // the hot path as it was.
        let write = self.ready.or(self.leased).unwrap_or(sent);
        let since_write = |at: Instant| {
            if write == sent && at == done {
                since_sent
            } else {
                at.saturating_duration_since(write)
            }
        };
        let (ttfb, receive) = match self.first_byte {
            None => (None, None),
            Some(FirstByte::WithTheEnd) => (Some(since_write(done)), Some(Duration::ZERO)),
            Some(FirstByte::At(at)) => (
                Some(since_write(at)),
                Some(done.saturating_duration_since(at)),
            ),
        };
        Timing {
            connect: self.connect,
            // Counted in `connections.handshakes` too; plain TCP has none.
            tls: self.tls,
            ttfb,
            receive,
            // A stale kept-alive connection replaced by a new one does not count.
            reused: self.reused && self.connect.is_none(),
        }
    }
}
