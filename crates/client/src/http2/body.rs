//! Reading a response body off a stream: kept (within its limit and the shared
//! [`BodyBudget`]) or discarded, flow-control capacity released as each frame is consumed.

use bytes::{Bytes, BytesMut};
use h2::RecvStream;

use super::error::Failure;
use crate::http1::BodyBudget;

/// Budget bytes held by a kept body; given back when dropped (with the [`super::Response`]).
#[derive(Debug, Default)]
pub(crate) struct Charge {
    budget: Option<BodyBudget>,
    bytes: usize,
}

impl Charge {
    fn take(&mut self, budget: &BodyBudget, n: usize) -> bool {
        if !budget.take(n) {
            return false;
        }
        self.budget.get_or_insert_with(|| budget.clone());
        self.bytes += n;
        true
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        if let Some(budget) = &self.budget {
            budget.give(self.bytes);
        }
    }
}

/// Where a kept body collects. One DATA frame is kept as it came (no copy); a second
/// one starts a contiguous buffer.
#[derive(Debug, Default)]
enum Kept {
    #[default]
    Empty,
    One(Bytes),
    Many(BytesMut),
}

impl Kept {
    fn len(&self) -> usize {
        match self {
            Kept::Empty => 0,
            Kept::One(b) => b.len(),
            Kept::Many(b) => b.len(),
        }
    }

    fn push(&mut self, data: Bytes) {
        *self = match std::mem::take(self) {
            Kept::Empty => Kept::One(data),
            Kept::One(first) => {
                let mut all = BytesMut::with_capacity(first.len() + data.len());
                all.extend_from_slice(&first);
                all.extend_from_slice(&data);
                Kept::Many(all)
            }
            Kept::Many(mut all) => {
                all.extend_from_slice(&data);
                Kept::Many(all)
            }
        };
    }

    fn into_bytes(self) -> Bytes {
        match self {
            Kept::Empty => Bytes::new(),
            Kept::One(b) => b,
            Kept::Many(b) => b.freeze(),
        }
    }
}

/// What a body read needs besides the stream.
pub(super) struct Keep<'a> {
    /// Most bytes kept for one body.
    pub(super) limit: usize,
    /// Shared by the bodies kept by every connection.
    pub(super) budget: &'a BodyBudget,
}

/// A body being kept, chunk by chunk, within its limit and the shared budget (HTTP/2's
/// DATA frames, HTTP/3's chunks).
pub(crate) struct Keeper<'a> {
    limit: usize,
    budget: &'a BodyBudget,
    kept: Kept,
    charge: Charge,
}

impl<'a> Keeper<'a> {
    /// Keeps at most `limit` bytes, charged to `budget`.
    pub(crate) fn new(limit: usize, budget: &'a BodyBudget) -> Keeper<'a> {
        Keeper {
            limit,
            budget,
            kept: Kept::Empty,
            charge: Charge::default(),
        }
    }

    /// Keeps one chunk; past the limit: `protocol` (the target's fault); past the
    /// budget: `generator` (ours).
    pub(crate) fn push(&mut self, data: Bytes) -> Result<(), Failure> {
        let n = data.len();
        if self.kept.len() + n > self.limit {
            return Err(Failure::too_large("kept response body", self.limit));
        }
        if !self.charge.take(self.budget, n) {
            return Err(Failure::over_budget(self.budget.cap()));
        }
        self.kept.push(data);
        Ok(())
    }

    /// The kept bytes and the budget they hold.
    pub(crate) fn finish(self) -> (Bytes, Charge) {
        (self.kept.into_bytes(), self.charge)
    }
}

/// A body read to its end.
pub(super) struct Read {
    /// Bytes received, kept or not.
    pub(super) len: u64,
    /// The kept bytes (empty when not kept).
    pub(super) kept: Bytes,
    /// The budget `kept` holds.
    pub(super) charge: Charge,
}

/// Reads the body to its end. With `keep`, the bytes are kept (failing past the limit
/// or the budget, after which the stream is dropped and so reset); without, each
/// frame is dropped as it arrives. Either way, the window is given back frame by frame,
/// so a body of any length streams through a small window. `fail` maps `h2` errors.
pub(super) async fn read(
    body: &mut RecvStream,
    keep: Option<Keep<'_>>,
    fail: impl Fn(&h2::Error) -> Failure,
) -> Result<Read, Failure> {
    let mut len = 0u64;
    let mut keeper = keep.map(|k| Keeper::new(k.limit, k.budget));
    while let Some(data) = body.data().await {
        let data = data.map_err(|e| fail(&e))?;
        let n = data.len();
        len += n as u64;
        // Release before judging the frame: capacity for bytes already received is
        // owed to the server whether or not the body is kept.
        let _ = body.flow_control().release_capacity(n);
        if let Some(keeper) = &mut keeper {
            keeper.push(data)?;
        }
    }
    let (kept, charge) = keeper.map(Keeper::finish).unwrap_or_default();
    Ok(Read { len, kept, charge })
}
