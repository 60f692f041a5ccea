//! Streams: long-lived exchanges inside a user's flow (WebSocket, SSE, gRPC), protocol
//! neutral. See /work/notes/streams.md (the contract) and the README.
//!
//! - [`Inbox`]: the receiving side of an open stream, fed by the protocol's pump task,
//!   bounded, counted in the thread's stream recorder.
//! - [`Streams`]: a user's open streams (in its `Scratch`), closed at the user's end, an
//!   open-model arrival's end, or the drain.
//! - [`step::run_step`]: the engine's hook: one stream step is one operation (`Pending`).
//! - [`proto`]: the one place protocols plug in (`open`, the writer's `send`/`close`).

pub(crate) mod cadence;
pub(crate) mod connectors;
pub(crate) mod cx;
pub(crate) mod failure;
pub(crate) mod grpc;
pub(crate) mod inbox;
pub(crate) mod proto;
pub(crate) mod sse;
pub(crate) mod step;
pub(crate) mod url;
pub(crate) mod ws;

use std::rc::Rc;
use std::time::Instant;

pub(crate) use failure::Failure;
pub(crate) use inbox::Inbox;

/// One message received on a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Message {
    /// SSE event type (`None` = "message"); None for WebSocket and gRPC.
    pub(crate) event: Option<String>,
    /// The payload as text (WebSocket text frames, SSE data lines joined by \n, a gRPC
    /// message converted to JSON). Binary WebSocket frames: lossy UTF-8.
    pub(crate) data: String,
    /// Bytes on the wire for it (frame/event/message size), for bytes/s.
    pub(crate) wire_bytes: usize,
}

/// One open stream of a user.
pub(crate) struct Open {
    /// The plan's stream id.
    pub(crate) id: usize,
    /// Its receiving side.
    pub(crate) inbox: Rc<Inbox>,
    /// Its sending side.
    pub(crate) writer: proto::Writer,
    /// Its pump task (aborted when the stream is finished).
    pub(crate) pump: tokio::task::JoinHandle<()>,
    /// When it opened (for the session duration).
    pub(crate) since: Instant,
    /// Records its session duration when finished (`None` in tests).
    pub(crate) sink: Option<Rc<crate::thread::ThreadState>>,
}

impl Open {
    /// Ends the stream now: stops the pump, drops the connection, records the session.
    fn finish(self) {
        self.inbox.set_closing();
        self.pump.abort();
        if let Some(state) = &self.sink {
            state
                .recorder
                .borrow_mut()
                .streams
                .tally(self.id)
                .ended(self.since.elapsed());
        }
    }

    /// Whether the stream still carries messages (its peer has not ended it).
    pub(crate) fn live(&self) -> bool {
        self.inbox.end().is_none() && !self.inbox.closing()
    }
}

/// A user's open streams, by the plan's stream id. Dropping it ends them all at once
/// (no close handshake); [`Streams::close_all`] closes them politely first.
#[derive(Default)]
pub(crate) struct Streams {
    open: Vec<Open>,
    /// The user's HTTP/2 connection for gRPC calls, opened by the first.
    pub(crate) h2: H2Slot,
}

/// Where a user keeps its gRPC connection (shared with the `open` in progress).
pub(crate) type H2Slot = Rc<std::cell::RefCell<Option<Rc<headroom_client::http2::Connection>>>>;

impl Streams {
    /// The open stream `id`, if any.
    pub(crate) fn get(&mut self, id: usize) -> Option<&mut Open> {
        self.open.iter_mut().find(|o| o.id == id)
    }

    /// Adds a stream (finishing one of the same id first).
    pub(crate) fn insert(&mut self, open: Open) {
        self.remove(open.id);
        self.open.push(open);
    }

    /// Finishes and forgets stream `id`.
    pub(crate) fn remove(&mut self, id: usize) {
        if let Some(i) = self.open.iter().position(|o| o.id == id) {
            self.open.swap_remove(i).finish();
        }
    }

    /// Waits until one of the user's live streams ends (returns at once when none is
    /// live): what a user whose flow only holds streams has left to wait for.
    pub(crate) async fn any_ended(&self) {
        let live: Vec<_> = self
            .open
            .iter()
            .filter(|o| o.live())
            .map(|o| Box::pin(o.inbox.ended()))
            .collect();
        if !live.is_empty() {
            futures_util::future::select_all(live).await;
        }
    }

    /// Closes every stream with the protocol's normal close (WebSocket 1000), waiting at
    /// most `grace` in all for the peers, then finishes them.
    pub(crate) async fn close_all(&mut self, grace: std::time::Duration) {
        let until = tokio::time::Instant::now() + grace;
        for mut open in std::mem::take(&mut self.open) {
            if open.live() {
                open.inbox.set_closing();
                let inbox = open.inbox.clone();
                let polite = async {
                    if open.writer.close(1000).await.is_ok() {
                        // The peer's answering close frame, counted by its code.
                        inbox.ended().await;
                    }
                };
                let _ = tokio::time::timeout_at(until, polite).await;
            }
            open.finish();
        }
    }
}

impl Drop for Streams {
    fn drop(&mut self) {
        for open in self.open.drain(..) {
            open.finish();
        }
    }
}
