//! [`Message`]: what the page is sent (`/state`, or one `/events` frame), borrowed from
//! the [`Board`](super::Board) and serialized as it is written.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::{CurrentStep, Finished, Meta, Row, StepPoint};
use crate::watch::LiveWatch;

/// One message to the page (`/state`, or one `/events` frame), borrowing the board.
#[derive(Debug, Serialize)]
pub struct Message<'a> {
    /// The page starts over with these rows (a new connection, or rows thinned).
    pub(super) reset: bool,
    /// The command's description, on a reset only.
    pub(super) meta: Option<&'a Meta>,
    /// The rows the page has not seen.
    pub(super) rows: &'a [Row],
    /// The newest second's figures.
    pub(super) now: &'a Value,
    /// Errors by kind so far, kinds with none left out.
    pub(super) error_kinds: BTreeMap<&'static str, u64>,
    /// A search's steps so far.
    pub(super) steps: &'a [StepPoint],
    /// A search's step in progress.
    pub(super) current: &'a Option<CurrentStep>,
    /// The live verdict in words.
    pub(super) verdict: &'a str,
    /// The watches' newest samples.
    pub(super) watches: Vec<LiveWatch>,
    /// The PostgreSQL watch's newest figures.
    pub(super) postgres: &'a Option<Value>,
    /// Stop was asked.
    pub(super) stopping: bool,
    /// How the command ended, once it has.
    pub(super) finished: &'a Option<Finished>,
    /// Each workload's requests and errors so far.
    pub(super) workloads: Vec<Value>,
}

impl Message<'_> {
    /// The message as JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a dashboard message serializes")
    }

    /// The message as a JSON value (tests read it by key).
    #[cfg(test)]
    pub fn value(&self) -> Value {
        serde_json::to_value(self).expect("a dashboard message serializes")
    }
}
