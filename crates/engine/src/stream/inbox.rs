//! The receiving side of one open stream: what its pump task delivers, buffered (bounded)
//! for the user's `expect` steps, and counted in the thread's stream recorder.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Instant;

use tokio::sync::Notify;

use super::{Failure, Message};
use crate::thread::ThreadState;
use headroom_metrics::ErrorKind;

/// How a stream ended, as its pump reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum End {
    /// The peer closed it, with this code.
    Closed(String),
    /// It broke.
    Failed(Failure),
}

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<(Message, Instant)>,
    bytes: usize,
    last: Option<Instant>,
    end: Option<End>,
    /// The stated cadence messages are judged against (`every:`), if any.
    cadence: Option<super::cadence::Cadence>,
}

/// The receiving side of one open stream, shared (`Rc`) by its pump task and the user's
/// steps. Bounded: it buffers at most [`Inbox::MAX_MESSAGES`] unconsumed messages and
/// [`Inbox::MAX_BYTES`] bytes of them (the oldest are dropped and counted as
/// `overflowed`).
pub(crate) struct Inbox {
    /// Where counts go (`None` in unit tests: nothing is recorded).
    sink: Option<Rc<ThreadState>>,
    stream_id: usize,
    /// When the stream began opening: time to first message runs from here.
    opened: Instant,
    state: RefCell<State>,
    notify: Notify,
    closing: Cell<bool>,
    waiting: Cell<bool>,
    overflowed: Cell<u64>,
}

impl Inbox {
    /// Most unconsumed messages one stream buffers.
    pub(crate) const MAX_MESSAGES: usize = 1024;
    /// Most bytes of unconsumed messages one stream buffers.
    pub(crate) const MAX_BYTES: usize = 4 << 20;

    /// An inbox for stream `stream_id` of the plan, recording into `sink`'s recorder.
    pub(crate) fn new(sink: Option<Rc<ThreadState>>, stream_id: usize, opened: Instant) -> Inbox {
        Inbox {
            sink,
            stream_id,
            opened,
            state: RefCell::default(),
            notify: Notify::new(),
            closing: Cell::new(false),
            waiting: Cell::new(false),
            overflowed: Cell::new(0),
        }
    }

    /// Judges each message's lateness against one every `every` (the opening step's
    /// `every:`), when given.
    pub(crate) fn with_cadence(self, every: Option<std::time::Duration>) -> Inbox {
        self.state.borrow_mut().cadence = every.map(super::cadence::Cadence::new);
        self
    }

    fn record(&self, f: impl FnOnce(&mut headroom_metrics::recorder::streams::StreamTally)) {
        if let Some(state) = &self.sink {
            let mut recorder = state.recorder.borrow_mut();
            f(recorder.streams.tally(self.stream_id));
        }
    }

    /// A message arrived: counts it (messages, bytes, gap since the previous one, time to
    /// first message, lateness against a stated cadence), buffers it for `expect`, wakes
    /// a waiting step. Every message the peer pushes comes through here, whatever the
    /// protocol, so gaps and lateness cover them all.
    pub(crate) fn message(&self, m: Message) {
        let now = Instant::now();
        let mut st = self.state.borrow_mut();
        let (first, gap) = match st.last {
            None => (Some(now - self.opened), None),
            Some(last) => (None, Some(now - last)),
        };
        st.last = Some(now);
        let late = st.cadence.as_mut().map(|c| c.arrived(now));
        self.record(|t| {
            t.received(m.wire_bytes, first, gap, m.event.as_deref());
            if let Some(d) = late {
                t.late(d);
            }
        });
        // Oversized single messages are refused by the protocol before they get here;
        // this bounds how many unconsumed ones pile up behind a step that never reads.
        st.bytes += m.data.len();
        st.queue.push_back((m, now));
        while st.queue.len() > Self::MAX_MESSAGES || st.bytes > Self::MAX_BYTES {
            let Some((old, _)) = st.queue.pop_front() else {
                break;
            };
            st.bytes -= old.data.len();
            self.overflowed.set(self.overflowed.get() + 1);
            self.record(|t| t.overflowed += 1);
        }
        drop(st);
        self.notify.notify_one();
    }

    /// SSE: the stream dropped and was opened again (counted, not fatal).
    pub(crate) fn reconnected(&self) {
        self.record(|t| t.reconnects += 1);
    }

    /// The peer ended the stream: a WebSocket close code ("1000"), a gRPC status name
    /// ("OK", "NOT_FOUND"), SSE "eof". Counted by code; a waiting step fails as `stream`
    /// unless the close was asked for.
    pub(crate) fn closed(&self, code: String) {
        self.record(|t| t.closed(&code));
        let mut st = self.state.borrow_mut();
        st.end.get_or_insert(End::Closed(code));
        drop(st);
        self.notify.notify_one();
    }

    /// The stream broke (reset, protocol error, oversized message): counted as a stream
    /// error of `kind` with `reason` (unless a step is waiting: that step's failure
    /// counts it); a waiting step fails with it.
    pub(crate) fn failed(&self, kind: ErrorKind, reason: String) {
        if !self.waiting.get() && !self.closing.get() {
            self.record(|t| t.background_errors[kind as usize] += 1);
        }
        let mut st = self.state.borrow_mut();
        st.end.get_or_insert(End::Failed(Failure { kind, reason }));
        drop(st);
        self.notify.notify_one();
    }

    /// True once the owner closed the stream or the run is ending: a pump stops reading.
    pub(crate) fn closing(&self) -> bool {
        self.closing.get()
    }

    /// Marks the stream as closing (asked for by its owner).
    pub(crate) fn set_closing(&self) {
        self.closing.set(true);
        self.notify.notify_one();
    }

    /// How the stream ended, if it has.
    pub(crate) fn end(&self) -> Option<End> {
        self.state.borrow().end.clone()
    }

    /// Waits until the pump reports the end (after a close the owner asked for).
    pub(crate) async fn ended(&self) {
        while self.state.borrow().end.is_none() {
            self.notify.notified().await;
        }
    }

    /// Messages dropped from a full buffer so far.
    #[cfg(test)]
    pub(crate) fn overflowed(&self) -> u64 {
        self.overflowed.get()
    }

    /// Messages buffered now.
    #[cfg(test)]
    pub(crate) fn buffered(&self) -> (usize, usize) {
        let st = self.state.borrow();
        (st.queue.len(), st.bytes)
    }

    /// Takes buffered messages in order until `accept` takes one, waiting for more as
    /// needed; returns that message's arrival instant. Messages it skips are consumed.
    /// Fails when the stream ends first (`stream`, or the failure's own kind). No
    /// deadline here: the caller bounds the wait.
    pub(crate) async fn next(
        &self,
        mut accept: impl FnMut(&Message, Instant) -> bool,
    ) -> Result<Instant, Failure> {
        loop {
            {
                let mut st = self.state.borrow_mut();
                while let Some((m, at)) = st.queue.pop_front() {
                    st.bytes -= m.data.len();
                    if accept(&m, at) {
                        return Ok(at);
                    }
                }
                if self.closing.get() {
                    return Err(Failure::new(ErrorKind::Stream, "the stream is closing"));
                }
                match &st.end {
                    Some(End::Closed(code)) => {
                        return Err(Failure::new(
                            ErrorKind::Stream,
                            format!("the peer closed the stream ({code})"),
                        ));
                    }
                    Some(End::Failed(f)) => return Err(f.clone()),
                    None => {}
                }
            }
            self.waiting.set(true);
            // `notify_one` stores a permit when no step waits, so a message delivered
            // between the check above and this await still wakes us.
            let woken = WaitingGuard(&self.waiting);
            self.notify.notified().await;
            drop(woken);
        }
    }
}

/// Clears `waiting` however the wait ends (a timeout drops the future mid-await).
struct WaitingGuard<'a>(&'a Cell<bool>);

impl Drop for WaitingGuard<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(data: &str) -> Message {
        Message {
            event: None,
            data: data.into(),
            wire_bytes: data.len() + 2,
        }
    }

    #[test]
    fn a_flood_nobody_reads_is_bounded_by_count_and_bytes() {
        let inbox = Inbox::new(None, 0, Instant::now());
        for i in 0..10 * Inbox::MAX_MESSAGES {
            inbox.message(msg(&i.to_string()));
        }
        assert_eq!(inbox.buffered().0, Inbox::MAX_MESSAGES);
        assert_eq!(inbox.overflowed(), 9 * Inbox::MAX_MESSAGES as u64);
        let big = "x".repeat(1 << 20);
        for _ in 0..10 {
            inbox.message(msg(&big));
        }
        let (n, bytes) = inbox.buffered();
        assert!(bytes <= Inbox::MAX_BYTES, "{bytes} bytes buffered");
        assert!(n <= 4, "{n} messages of 1 MiB buffered");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn next_skips_to_the_first_match_and_fails_once_the_peer_closed() {
        let inbox = Inbox::new(None, 0, Instant::now());
        inbox.message(msg("a"));
        inbox.message(msg("b"));
        inbox.message(msg("c"));
        inbox.next(|m, _| m.data == "b").await.unwrap();
        assert_eq!(inbox.buffered().0, 1, "`a` skipped, `c` still buffered");
        inbox.closed("1001".into());
        inbox.next(|m, _| m.data == "c").await.unwrap();
        let err = inbox.next(|_, _| true).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Stream);
        assert!(err.reason.contains("1001"), "{}", err.reason);
    }
}
