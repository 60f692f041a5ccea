//! The shared pool's HTTP/2 side: which connection a request (or a user's stream) goes
//! on, and the connections streams take in an `--http2` run.

use std::cell::Cell;
use std::rc::Rc;

use super::{Client, Failure, Pool, Trace};
use crate::http2;
use crate::ConnectionModel;
use headroom_metrics::recorder::Speaks;

impl Client {
    /// An HTTP/2 connection to the target for a user's stream (a gRPC call, an SSE
    /// stream) in an `--http2` run, shared with the requests as the connection model
    /// says: under `shared`, the pool's least loaded connection, on which the stream
    /// takes one of the `--streams` slots (so the pool spreads streams and requests
    /// alike, and the server's MAX_CONCURRENT_STREAMS holds); under `per-user`, a new
    /// connection counted as `http2`, which the caller makes the user's own (its
    /// requests then go on it); under `per-request`, a new connection of the stream's
    /// own, counted as `speaks`.
    pub async fn stream_h2(&self, speaks: Speaks) -> Result<Rc<http2::Connection>, Failure> {
        let connecting = Cell::new(false);
        let mut trace = Trace::default();
        match self.model {
            ConnectionModel::Shared(_) => self.checkout_h2(&connecting, &mut trace).await,
            ConnectionModel::PerUser => Ok(Rc::new(
                self.open_h2(Speaks::Http2, &connecting, &mut trace).await?,
            )),
            ConnectionModel::PerRequest => Ok(Rc::new(
                self.open_h2(speaks, &connecting, &mut trace).await?,
            )),
        }
    }

    /// A connection of the shared pool with a free stream: the least loaded open one;
    /// else a new one while the pool has room; else, when others are being opened,
    /// one of those (so a burst of requests at the start opens one connection per
    /// `streams` requests, not one each); else the least loaded, whose streams the
    /// request waits for.
    pub(super) async fn checkout_h2(
        &self,
        connecting: &Cell<bool>,
        trace: &mut Trace,
    ) -> Result<Rc<http2::Connection>, Failure> {
        let pool = &self.pool;
        let streams = self.h2.streams.max(1) as usize;
        loop {
            pool.h2.borrow_mut().retain(|c| c.is_open());
            let best = pool
                .h2
                .borrow()
                .iter()
                .min_by_key(|c| c.in_flight())
                .cloned();
            if let Some(c) = best.as_ref().filter(|c| c.in_flight() < c.streams()) {
                trace.reused = true;
                return Ok(c.clone());
            }
            // Streams of connections still opening that no request has claimed yet.
            let coming = pool.opening.get() * streams;
            if coming > pool.waiting.get() {
                let opened = pool.opened.notified();
                pool.waiting.set(pool.waiting.get() + 1);
                // Dropped by a timeout: the claim is given back all the same.
                let _claim = Claim(&pool.waiting);
                opened.await;
                continue;
            }
            let room = pool
                .cap
                .is_none_or(|cap| pool.h2.borrow().len() + pool.opening.get() < cap);
            if room {
                pool.opening.set(pool.opening.get() + 1);
                let opened = {
                    let _done = Opening(pool);
                    self.open_h2(Speaks::Http2, connecting, trace).await
                };
                let c = Rc::new(opened?);
                // Streams (gRPC calls, SSE) on a pooled connection hold a slot too.
                c.slots_for_raw_streams();
                pool.h2.borrow_mut().push(c.clone());
                return Ok(c);
            }
            match best {
                Some(c) => {
                    trace.reused = true;
                    return Ok(c);
                }
                None => pool.opened.notified().await,
            }
        }
    }
}

/// A request's claim on a stream of a connection being opened, given back when dropped.
struct Claim<'a>(&'a Cell<usize>);

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.0.set(self.0.get() - 1);
    }
}

/// An HTTP/2 connection of the pool being opened; done (opened or failed, or given
/// up by a timeout) when dropped, which wakes the requests waiting for it.
struct Opening<'a>(&'a Pool);

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        self.0.opening.set(self.0.opening.get() - 1);
        self.0.opened.notify_waiters();
    }
}
