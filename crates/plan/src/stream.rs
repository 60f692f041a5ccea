//! Plan types for stream steps (`ws:`, `sse:`, `grpc:` in a flow): one [`StreamStep`] per
//! step, compiled by `scenario::streams`, run by `stream::run_step`.

use std::time::Duration;

use super::{Capture, JsonExpect, Plan};
use headroom_template::Template;

/// The protocol of a stream step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protocol {
    /// WebSocket (`ws:`), ws:// or wss://.
    Ws,
    /// Server-sent events (`sse:`).
    Sse,
    /// gRPC over HTTP/2 (`grpc:`).
    Grpc,
}

impl Protocol {
    /// The scenario key and summary name: `ws`, `sse`, `grpc`.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Ws => "ws",
            Protocol::Sse => "sse",
            Protocol::Grpc => "grpc",
        }
    }
}

/// One stream step of a flow. What it does: open the stream (`url` given and the
/// stream not yet open), send (`send`), wait for a message (`expect`), then close
/// (`close`); any combination, in that order.
#[derive(Debug, Clone)]
pub struct StreamStep {
    /// Protocol.
    pub protocol: Protocol,
    /// Index into [`Plan::names`]: the operation's metric name (the step's own `name:`
    /// outside the `ws:` map, else `STREAM.open`, `STREAM.send`, `STREAM.expect` or
    /// `STREAM.close` after what the step does first).
    pub name_id: usize,
    /// Index into [`Plan::streams`]: the stream (its `name:`), for the stream recorder.
    pub stream_id: usize,
    /// `url:` a path joined to the target or a full URL (ws:// wss:// http:// https://).
    pub url: Option<Template>,
    /// Extra headers for the opening request (`headers:`).
    pub headers: Vec<(String, Template)>,
    /// A message to send (`send:`).
    pub send: Option<Template>,
    /// A message to wait for (`expect:`).
    pub expect: Option<MessageExpect>,
    /// Variables taken from the matched message (JSONPath, as request captures).
    pub captures: Vec<Capture>,
    /// Close the stream after the rest of the step (`close:`), with this code
    /// (WebSocket close code; ignored by SSE; gRPC cancels).
    pub close: Option<u16>,
    /// The step's `timeout:` (or `expect.timeout`); `None` uses the run's. It bounds
    /// only this step's wait, never the life of the stream it opens.
    pub timeout: Option<Duration>,
    /// gRPC, on a step with a call: the call's deadline (`deadline:`), sent as
    /// `grpc-timeout` and enforced by the client. `None`: a server stream lives as long
    /// as its user holds it; a unary call's deadline is the step's timeout.
    pub deadline: Option<Duration>,
    /// On the step that opens the stream: the cadence the server states (`every:`),
    /// message k being due at the first message + k·every; `None`: no lateness measured.
    pub every: Option<Duration>,
    /// gRPC: the call the step makes (`None` on a step that only expects on or closes an
    /// open server stream).
    pub grpc: Option<GrpcCall>,
}

impl StreamStep {
    /// How long the step may take before it fails as `timeout`/`stream`.
    pub fn timeout_in(&self, plan: &Plan) -> Duration {
        self.timeout.unwrap_or(plan.timeout)
    }
}

/// The call a `grpc:` step makes (`call:`), compiled at load time.
#[derive(Debug, Clone)]
pub struct GrpcCall {
    /// The method, from the scenario's compiled `proto:` files.
    pub method: super::proto::Method,
    /// `message:` as a JSON template (placeholders render JSON-escaped).
    pub message: Template,
    /// `metadata:` extra request headers.
    pub metadata: Vec<(String, Template)>,
}

/// What a message must satisfy to match an `expect:` (all given parts must hold).
#[derive(Debug, Clone, Default)]
pub struct MessageExpect {
    /// `json: {"$.type": joined}` and `jsonpath: "$.move"` (the data must be JSON).
    pub json: Vec<JsonExpect>,
    /// `regex:` searched in the data.
    pub regex: Option<regex::Regex>,
    /// `event:` the SSE event type (`message` when the event has none).
    pub event: Option<String>,
    /// `count:` how many matching messages to wait for (at least 1).
    pub count: u32,
}
