//! The scenario file as written: serde types deserialized from YAML.
//!
//! Every struct rejects unknown keys, so a typo (`wieght`) or a section that is not
//! supported (`cookies`) is an error listing the known keys. Values whose
//! meaning is checked after parsing (numbers, durations, URLs, templates) are kept as
//! [`Spanned`] so the check can point at their line and column.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_saphyr::Spanned;

/// A value whose type and meaning are checked after parsing (a number, a duration, a
/// status list...), with its position.
pub(crate) type Node = Spanned<serde_json::Value>;

/// A whole scenario file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScenarioFile {
    pub(crate) name: Option<String>,
    pub(crate) target: Option<Spanned<String>>,
    pub(crate) defaults: Option<Defaults>,
    pub(crate) load: Option<Spanned<LoadSpec>>,
    #[serde(default)]
    pub(crate) thresholds: Vec<Spanned<String>>,
    #[serde(default)]
    pub(crate) requests: Vec<Spanned<RequestSpec>>,
    #[serde(default)]
    pub(crate) flows: Vec<Spanned<FlowSpec>>,
    /// Watch specs (`pid:N`, `postgres:URL`...), checked when compiled.
    #[serde(default)]
    pub(crate) watch: Vec<Spanned<String>>,
    pub(crate) hooks: Option<HooksSpec>,
    pub(crate) client: Option<Spanned<ClientSpec>>,
    /// The delivery sink (`sink:`), checked when compiled.
    pub(crate) sink: Option<Node>,
}

/// How connections are opened (paths are relative to the scenario file).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClientSpec {
    #[serde(default)]
    pub(crate) insecure: bool,
    pub(crate) cacert: Option<String>,
    pub(crate) cert: Option<String>,
    pub(crate) key: Option<String>,
    #[serde(default)]
    pub(crate) resolve: Vec<Spanned<String>>,
    /// `http2: true` (also a `defaults:` key).
    pub(crate) http2: Option<Spanned<bool>>,
    /// `streams: N` per HTTP/2 connection (also a `defaults:` key).
    pub(crate) streams: Option<Node>,
    /// `connection: per-user | shared | per-request`, or `{shared: N}` (also a
    /// `defaults:` key).
    pub(crate) connection: Option<Node>,
}

/// Shell commands run around each step of a ceiling search.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HooksSpec {
    #[serde(default)]
    pub(crate) before_step: Vec<Spanned<String>>,
    #[serde(default)]
    pub(crate) after_step: Vec<Spanned<String>>,
    pub(crate) wait_until: Option<WaitUntilSpec>,
    pub(crate) timeout: Option<Node>,
}

/// A command polled until it exits 0.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WaitUntilSpec {
    pub(crate) command: Spanned<String>,
    pub(crate) timeout: Option<Node>,
    pub(crate) interval: Option<Node>,
}

/// Settings every request inherits.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Defaults {
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, Spanned<String>>,
    pub(crate) timeout: Option<Node>,
    /// As `client.http2`.
    pub(crate) http2: Option<Spanned<bool>>,
    /// As `client.streams`.
    pub(crate) streams: Option<Node>,
    /// As `client.connection`.
    pub(crate) connection: Option<Node>,
}

/// The `load` section.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LoadSpec {
    pub(crate) model: Option<Spanned<String>>,
    pub(crate) rate: Option<Node>,
    pub(crate) users: Option<Node>,
    pub(crate) start: Option<Node>,
    pub(crate) stages: Option<Spanned<Vec<Spanned<StageSpec>>>>,
    pub(crate) duration: Option<Node>,
    pub(crate) max_in_flight: Option<Node>,
    /// Connection cap (arrival-rate).
    #[serde(default)]
    pub(crate) connections: Option<Node>,
    pub(crate) think: Option<Node>,
}

/// A stream step (`ws:`, `sse:`, `grpc:`): the same keys for every protocol; the ones a
/// protocol does not use are rejected when compiled.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StreamSpec {
    /// The stream's name; later steps refer to the open stream by it.
    pub(crate) name: Spanned<String>,
    /// Opens the stream: a path joined to the target, or a full URL.
    pub(crate) url: Option<Spanned<String>>,
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, Spanned<String>>,
    /// A message: text (a string) or `{text: ...}` / `{json: ...}`.
    pub(crate) send: Option<Node>,
    pub(crate) expect: Option<Spanned<MessageExpectSpec>>,
    #[serde(default)]
    pub(crate) capture: BTreeMap<String, Spanned<String>>,
    /// Close code (WebSocket), or `true` for the protocol's normal close.
    pub(crate) close: Option<Node>,
    pub(crate) timeout: Option<Node>,
    /// gRPC: `.proto` file or list of files, relative to the scenario file.
    pub(crate) proto: Option<Node>,
    /// gRPC: `package.Service/Method`.
    pub(crate) call: Option<Spanned<String>>,
    /// gRPC: the request message as JSON.
    pub(crate) message: Option<Node>,
    /// gRPC: request metadata (headers) sent with the call.
    #[serde(default)]
    pub(crate) metadata: BTreeMap<String, Spanned<String>>,
}

/// What a stream message must satisfy.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MessageExpectSpec {
    #[serde(default)]
    pub(crate) json: BTreeMap<String, Node>,
    pub(crate) jsonpath: Option<Spanned<String>>,
    pub(crate) regex: Option<Spanned<String>>,
    pub(crate) event: Option<Spanned<String>>,
    pub(crate) count: Option<Node>,
    pub(crate) timeout: Option<Node>,
}

/// One linear stage of a load.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StageSpec {
    pub(crate) duration: Node,
    pub(crate) target: Node,
}

/// A request, at the top level or as a flow step.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RequestSpec {
    pub(crate) name: Option<Spanned<String>>,
    pub(crate) weight: Option<Node>,
    pub(crate) method: Option<Spanned<String>>,
    /// Required unless `graphql` is given (which defaults it to `/graphql`).
    pub(crate) path: Option<Spanned<String>>,
    pub(crate) graphql: Option<Spanned<GraphqlSpec>>,
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, Spanned<String>>,
    pub(crate) json: Option<Node>,
    pub(crate) body: Option<Spanned<String>>,
    pub(crate) timeout: Option<Node>,
    pub(crate) expect: Option<ExpectSpec>,
    /// A template rendered once per request into `{{ correlation_id }}` and registered
    /// with the sink.
    pub(crate) correlate: Option<Spanned<String>>,
}

/// A GraphQL request form: the query (inline or from a file), its variables (templated,
/// typed) and the operation to run.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GraphqlSpec {
    pub(crate) query: Option<Spanned<String>>,
    pub(crate) file: Option<Spanned<String>>,
    pub(crate) variables: Option<Node>,
    pub(crate) operation: Option<Spanned<String>>,
}

/// What a response must satisfy.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExpectSpec {
    pub(crate) status: Option<Node>,
    pub(crate) body_contains: Option<String>,
    pub(crate) json_path: Option<Spanned<String>>,
    #[serde(default)]
    pub(crate) json: BTreeMap<String, Node>,
}

/// A flow: steps run in order, sharing captured variables.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FlowSpec {
    pub(crate) name: Spanned<String>,
    pub(crate) weight: Option<Node>,
    pub(crate) steps: Vec<Spanned<StepSpec>>,
}

/// One flow step: a request (with optional captures) or a think time.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StepSpec {
    pub(crate) name: Option<Spanned<String>>,
    pub(crate) request: Option<Spanned<RequestSpec>>,
    #[serde(default)]
    pub(crate) capture: BTreeMap<String, Spanned<String>>,
    pub(crate) think: Option<Node>,
    /// A WebSocket step.
    pub(crate) ws: Option<Spanned<StreamSpec>>,
    /// A server-sent events step.
    pub(crate) sse: Option<Spanned<StreamSpec>>,
    /// A gRPC step.
    pub(crate) grpc: Option<Spanned<StreamSpec>>,
}
