//! The delivery sink: a loopback HTTP receiver that times asynchronous deliveries
//! (webhooks) end to end, as seed 003's "local webhook receiver with ~100 ms latency".
//!
//! A load run registers the correlation id of each request it sends, with the send
//! time, in a [`Tracker`]; the target later delivers something carrying that id to the
//! sink, which finds the id (a JSONPath into the JSON body, or a header), records the
//! delivery latency (request sent → delivery received) in an HDR histogram, and answers
//! after a configured latency with a configured status, or refuses a share of the ids
//! with a failure status. After the load and a grace period, every registered id not
//! delivered is lost.
//!
//! Parts: `options` (configuration), `tracker` (the bounded registry of outstanding ids
//! and the counts), `server` (the HTTP listener on its own thread), `summary` (the
//! `delivery` object of the summary JSON and its text table).

mod options;
mod server;
mod summary;
mod tracker;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_e2e;

pub use options::{
    Attached, Correlate, Fail, SinkLatency, SinkOptions, SinkOptionsError, SinkPlan, DEFAULT_GRACE,
    DEFAULT_MAX_BODY, DEFAULT_MAX_IDS, DEFAULT_SETTLE,
};
pub use server::{spawn, RunningSink, SinkError};
pub use summary::{DeliveryLatency, DeliverySummary};
pub use tracker::{Registered, Tracker, Verdict, MAX_SECONDS};
