//! The shared pool's multiplexed side (HTTP/2 and HTTP/3): which connection a request
//! (or a user's stream) goes on, and the connections streams take in an `--http2` run.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::{Client, Failure, Pool, Trace};
use crate::ConnectionModel;
use crate::{http2, http3};
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

    /// A connection of the shared HTTP/2 pool with a free stream ([`Client::checkout`]).
    pub(super) async fn checkout_h2(
        &self,
        connecting: &Cell<bool>,
        trace: &mut Trace,
    ) -> Result<Rc<http2::Connection>, Failure> {
        self.checkout(&self.pool.h2, connecting, trace, async |client, c, t| {
            client.open_h2(Speaks::Http2, c, t).await
        })
        .await
    }

    /// A connection of a shared pool of multiplexed connections (`list`, HTTP/2's or
    /// HTTP/3's) with a free stream: the least loaded open one; else a new one, made
    /// by `open`, while the pool has room; else, when others are being opened, one of
    /// those (so a burst of requests at the start opens one connection per `streams`
    /// requests, not one each); else the least loaded, whose streams the request waits
    /// for.
    pub(super) async fn checkout<C: Muxed>(
        &self,
        list: &RefCell<Vec<Rc<C>>>,
        connecting: &Cell<bool>,
        trace: &mut Trace,
        open: impl AsyncFn(&Client, &Cell<bool>, &mut Trace) -> Result<C, Failure>,
    ) -> Result<Rc<C>, Failure> {
        let pool = &self.pool;
        // HTTP/2's and HTTP/3's settings both take the plan's `streams`.
        let streams = self.h2.streams.max(1) as usize;
        loop {
            list.borrow_mut().retain(|c| c.is_open());
            let best = list.borrow().iter().min_by_key(|c| c.in_flight()).cloned();
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
                .is_none_or(|cap| list.borrow().len() + pool.opening.get() < cap);
            if room {
                pool.opening.set(pool.opening.get() + 1);
                let opened = {
                    let _done = Opening(pool);
                    open(self, connecting, trace).await
                };
                let c = Rc::new(opened?);
                c.pooled();
                list.borrow_mut().push(c.clone());
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

/// A connection that carries many requests at once, as the shared pool balances them.
pub(super) trait Muxed {
    /// Whether it takes new requests.
    fn is_open(&self) -> bool;
    /// Requests on it now.
    fn in_flight(&self) -> usize;
    /// Most requests it carries at once.
    fn streams(&self) -> usize;
    /// Told once, when it joins the shared pool.
    fn pooled(&self) {}
}

impl Muxed for http2::Connection {
    fn is_open(&self) -> bool {
        http2::Connection::is_open(self)
    }
    fn in_flight(&self) -> usize {
        http2::Connection::in_flight(self)
    }
    fn streams(&self) -> usize {
        http2::Connection::streams(self)
    }
    /// Streams (gRPC calls, SSE) on a pooled connection hold a slot too.
    fn pooled(&self) {
        self.slots_for_raw_streams();
    }
}

impl Muxed for http3::Connection {
    fn is_open(&self) -> bool {
        http3::Connection::is_open(self)
    }
    fn in_flight(&self) -> usize {
        http3::Connection::in_flight(self)
    }
    fn streams(&self) -> usize {
        http3::Connection::streams(self)
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
