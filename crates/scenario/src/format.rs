//! The scenario file as written: serde types deserialized from YAML.
//!
//! Every struct rejects unknown keys, so a typo (`wieght`) or a section that is not
//! supported (`cookies`) is an error listing the known keys. Values whose
//! meaning is checked after parsing (numbers, durations, URLs, templates) are kept as
//! [`Spanned`] so the check can point at their line and column.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_saphyr::Spanned;

/// A value whose type and meaning are checked after parsing (a number, a duration, a
/// status list...), with its position.
pub(crate) type Node = Spanned<serde_json::Value>;

/// A whole scenario file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScenarioFile {
    pub(crate) name: Option<String>,
    #[schemars(with = "Option<String>")]
    pub(crate) target: Option<Spanned<String>>,
    pub(crate) defaults: Option<Defaults>,
    #[schemars(with = "Option<LoadSpec>")]
    pub(crate) load: Option<Spanned<LoadSpec>>,
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub(crate) thresholds: Vec<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "Vec<RequestSpec>")]
    pub(crate) requests: Vec<Spanned<RequestSpec>>,
    #[serde(default)]
    #[schemars(with = "Vec<FlowSpec>")]
    pub(crate) flows: Vec<Spanned<FlowSpec>>,
    /// Watch specs (`pid:N`, `postgres:URL`...), checked when compiled.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub(crate) watch: Vec<Spanned<String>>,
    pub(crate) hooks: Option<HooksSpec>,
    #[schemars(with = "Option<ClientSpec>")]
    pub(crate) client: Option<Spanned<ClientSpec>>,
    /// The delivery sink (`sink:`), checked when compiled.
    #[serde(default)]
    #[schemars(schema_with = "super::schema::sink")]
    pub(crate) sink: Option<Node>,
    /// How the load is split over shards (`cluster:`).
    pub(crate) cluster: Option<super::cluster::ClusterSpec>,
    /// Data files: name → `{file, pick}`.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, DataSpec>")]
    pub(crate) data: BTreeMap<String, Spanned<DataSpec>>,
    /// Steps run once before the load.
    #[serde(default)]
    #[schemars(with = "Vec<StepSpec>")]
    pub(crate) setup: Vec<Spanned<StepSpec>>,
    /// Steps run once after the load.
    #[serde(default)]
    #[schemars(with = "Vec<StepSpec>")]
    pub(crate) teardown: Vec<Spanned<StepSpec>>,
    /// Several workloads at once, each with its own load.
    #[serde(default)]
    #[schemars(with = "Vec<WorkloadSpec>")]
    pub(crate) workloads: Vec<Spanned<WorkloadSpec>>,
    /// Headers and values that never leave the process (`secrets:`).
    pub(crate) secrets: Option<SecretsSpec>,
}

/// `secrets:`: what is secret besides `Authorization`, `Cookie`,
/// `Proxy-Authorization` and `X-Api-Key`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SecretsSpec {
    /// Header names whose values are secret, in every request and stream.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub(crate) headers: Vec<Spanned<String>>,
    /// Values that are secret wherever they are used: `data.SET.COLUMN`, `setup.NAME`,
    /// a captured variable's name, or `env.NAME`.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub(crate) values: Vec<Spanned<String>>,
}

/// A data file (`data:`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DataSpec {
    /// CSV with a header row, JSON array of objects, or JSON Lines; relative to the scenario.
    #[schemars(with = "String")]
    pub(crate) file: Spanned<String>,
    /// `unique`, `sequential` (the default) or `random`.
    #[schemars(with = "Option<String>")]
    pub(crate) pick: Option<Spanned<String>>,
}

/// One workload of `workloads:`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WorkloadSpec {
    #[schemars(with = "String")]
    pub(crate) name: Spanned<String>,
    #[schemars(with = "LoadSpec")]
    pub(crate) load: Spanned<LoadSpec>,
    #[serde(default)]
    #[schemars(with = "Vec<RequestSpec>")]
    pub(crate) requests: Vec<Spanned<RequestSpec>>,
    #[serde(default)]
    #[schemars(with = "Vec<FlowSpec>")]
    pub(crate) flows: Vec<Spanned<FlowSpec>>,
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub(crate) thresholds: Vec<Spanned<String>>,
    /// When it starts, from the run's start (default 0s).
    #[serde(default)]
    #[schemars(schema_with = "super::schema::duration")]
    pub(crate) start: Option<Node>,
}

/// How connections are opened (paths are relative to the scenario file).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClientSpec {
    #[serde(default)]
    pub(crate) insecure: bool,
    pub(crate) cacert: Option<String>,
    pub(crate) cert: Option<String>,
    pub(crate) key: Option<String>,
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub(crate) resolve: Vec<Spanned<String>>,
    /// `http2: true` (also a `defaults:` key).
    #[schemars(with = "Option<bool>")]
    pub(crate) http2: Option<Spanned<bool>>,
    /// `http3: true`: HTTP/3 over QUIC (also a `defaults:` key).
    #[schemars(with = "Option<bool>")]
    pub(crate) http3: Option<Spanned<bool>>,
    /// `streams: N` per HTTP/2 connection (also a `defaults:` key).
    #[serde(default)]
    #[schemars(schema_with = "super::schema::integer")]
    pub(crate) streams: Option<Node>,
    /// `connection: per-user | shared | per-request`, or `{shared: N}` (also a
    /// `defaults:` key).
    #[serde(default)]
    #[schemars(schema_with = "super::schema::connection")]
    pub(crate) connection: Option<Node>,
    /// `cookies: false` turns off each user's cookie jar (on by default).
    #[schemars(with = "Option<bool>")]
    pub(crate) cookies: Option<Spanned<bool>>,
    /// Redirects a request follows (default 10; 0: none).
    #[serde(default)]
    #[schemars(schema_with = "super::schema::integer")]
    pub(crate) redirects: Option<Node>,
}

/// Shell commands run around each step of a ceiling search.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct HooksSpec {
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub(crate) before_step: Vec<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub(crate) after_step: Vec<Spanned<String>>,
    pub(crate) wait_until: Option<WaitUntilSpec>,
    #[serde(default)]
    #[schemars(schema_with = "super::schema::duration")]
    pub(crate) timeout: Option<Node>,
}

/// A command polled until it exits 0.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WaitUntilSpec {
    #[schemars(with = "String")]
    pub(crate) command: Spanned<String>,
    #[serde(default)]
    #[schemars(schema_with = "super::schema::duration")]
    pub(crate) timeout: Option<Node>,
    #[serde(default)]
    #[schemars(schema_with = "super::schema::duration")]
    pub(crate) interval: Option<Node>,
}

/// Settings every request inherits.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Defaults {
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    pub(crate) headers: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    #[schemars(schema_with = "super::schema::duration")]
    pub(crate) timeout: Option<Node>,
    /// As `client.http2`.
    #[schemars(with = "Option<bool>")]
    pub(crate) http2: Option<Spanned<bool>>,
    /// As `client.http3`.
    #[schemars(with = "Option<bool>")]
    pub(crate) http3: Option<Spanned<bool>>,
    /// As `client.streams`.
    #[serde(default)]
    #[schemars(schema_with = "super::schema::integer")]
    pub(crate) streams: Option<Node>,
    /// As `client.connection`.
    #[serde(default)]
    #[schemars(schema_with = "super::schema::connection")]
    pub(crate) connection: Option<Node>,
}

/// The `load` section.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LoadSpec {
    #[schemars(with = "Option<String>")]
    pub(crate) model: Option<Spanned<String>>,
    #[serde(default)]
    #[schemars(schema_with = "super::schema::number")]
    pub(crate) rate: Option<Node>,
    #[serde(default)]
    #[schemars(schema_with = "super::schema::integer")]
    pub(crate) users: Option<Node>,
    #[serde(default)]
    #[schemars(schema_with = "super::schema::number")]
    pub(crate) start: Option<Node>,
    #[schemars(with = "Option<Vec<StageSpec>>")]
    pub(crate) stages: Option<Spanned<Vec<Spanned<StageSpec>>>>,
    #[serde(default)]
    #[schemars(schema_with = "super::schema::duration")]
    pub(crate) duration: Option<Node>,
    #[serde(default)]
    #[schemars(schema_with = "super::schema::integer")]
    pub(crate) max_in_flight: Option<Node>,
    /// Connection cap (arrival-rate).
    #[serde(default)]
    #[schemars(schema_with = "super::schema::integer")]
    pub(crate) connections: Option<Node>,
    #[serde(default)]
    #[schemars(schema_with = "super::schema::think")]
    pub(crate) think: Option<Node>,
    /// `{per_user: K}` or `{shared: K}` (users model): the run ends when they are done.
    #[serde(default)]
    #[schemars(schema_with = "super::schema::iterations")]
    pub(crate) iterations: Option<Node>,
}

/// A stream step (`ws:`, `sse:`, `grpc:`): the same keys for every protocol; the ones a
/// protocol does not use are rejected when compiled.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StreamSpec {
    /// The stream's name; later steps refer to the open stream by it.
    #[schemars(with = "String")]
    pub(crate) name: Spanned<String>,
    /// Opens the stream: a path joined to the target, or a full URL.
    #[schemars(with = "Option<String>")]
    pub(crate) url: Option<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    pub(crate) headers: BTreeMap<String, Spanned<String>>,
    /// A message: text (a string) or `{text: ...}` / `{json: ...}`.
    #[serde(default)]
    #[schemars(schema_with = "super::schema::message")]
    pub(crate) send: Option<Node>,
    #[schemars(with = "Option<MessageExpectSpec>")]
    pub(crate) expect: Option<Spanned<MessageExpectSpec>>,
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    pub(crate) capture: BTreeMap<String, Spanned<String>>,
    /// Close code (WebSocket), or `true` for the protocol's normal close.
    #[serde(default)]
    #[schemars(schema_with = "super::schema::close")]
    pub(crate) close: Option<Node>,
    #[serde(default)]
    #[schemars(schema_with = "super::schema::duration")]
    pub(crate) timeout: Option<Node>,
    /// gRPC, on the step with `call`: the call's deadline (sent as `grpc-timeout`); a
    /// held server stream has none by default.
    #[serde(default)]
    #[schemars(schema_with = "super::schema::duration")]
    pub(crate) deadline: Option<Node>,
    /// On the step that opens the stream: the server's stated cadence (one message per
    /// `every`), against which each message's lateness is measured.
    #[serde(default)]
    #[schemars(schema_with = "super::schema::duration")]
    pub(crate) every: Option<Node>,
    /// gRPC: `.proto` file or list of files, relative to the scenario file, or
    /// `{files: […], import_paths: […]}` (import paths relative to the scenario file too).
    #[serde(default)]
    #[schemars(schema_with = "super::schema::proto")]
    pub(crate) proto: Option<Node>,
    /// gRPC: `package.Service/Method`.
    #[schemars(with = "Option<String>")]
    pub(crate) call: Option<Spanned<String>>,
    /// gRPC: the request message as JSON.
    #[serde(default)]
    #[schemars(schema_with = "super::schema::any")]
    pub(crate) message: Option<Node>,
    /// gRPC: request metadata (headers) sent with the call.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    pub(crate) metadata: BTreeMap<String, Spanned<String>>,
}

/// What a stream message must satisfy.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct MessageExpectSpec {
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, serde_json::Value>")]
    pub(crate) json: BTreeMap<String, Node>,
    #[schemars(with = "Option<String>")]
    pub(crate) jsonpath: Option<Spanned<String>>,
    #[schemars(with = "Option<String>")]
    pub(crate) regex: Option<Spanned<String>>,
    #[schemars(with = "Option<String>")]
    pub(crate) event: Option<Spanned<String>>,
    #[serde(default)]
    #[schemars(schema_with = "super::schema::integer")]
    pub(crate) count: Option<Node>,
    #[serde(default)]
    #[schemars(schema_with = "super::schema::duration")]
    pub(crate) timeout: Option<Node>,
}

/// One linear stage of a load.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StageSpec {
    #[schemars(schema_with = "super::schema::duration")]
    pub(crate) duration: Node,
    #[schemars(schema_with = "super::schema::number")]
    pub(crate) target: Node,
}

/// A request, at the top level or as a flow step.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RequestSpec {
    #[schemars(with = "Option<String>")]
    pub(crate) name: Option<Spanned<String>>,
    #[serde(default)]
    #[schemars(schema_with = "super::schema::integer")]
    pub(crate) weight: Option<Node>,
    #[schemars(with = "Option<String>")]
    pub(crate) method: Option<Spanned<String>>,
    /// Required unless `graphql` is given (which defaults it to `/graphql`).
    #[schemars(with = "Option<String>")]
    pub(crate) path: Option<Spanned<String>>,
    #[schemars(with = "Option<GraphqlSpec>")]
    pub(crate) graphql: Option<Spanned<GraphqlSpec>>,
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    pub(crate) headers: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    #[schemars(schema_with = "super::schema::any")]
    pub(crate) json: Option<Node>,
    #[schemars(with = "Option<String>")]
    pub(crate) body: Option<Spanned<String>>,
    /// An `application/x-www-form-urlencoded` body: field → value (templates).
    #[serde(default)]
    #[schemars(with = "Option<BTreeMap<String, String>>")]
    pub(crate) form: Option<Spanned<BTreeMap<String, Spanned<String>>>>,
    /// A `multipart/form-data` body: field → text, or `{file, filename, content_type}`.
    #[serde(default)]
    #[schemars(schema_with = "super::schema::any")]
    pub(crate) multipart: Option<Node>,
    /// Redirects this request follows (overrides `client.redirects`; 0: none).
    #[serde(default)]
    #[schemars(schema_with = "super::schema::integer")]
    pub(crate) redirects: Option<Node>,
    #[serde(default)]
    #[schemars(schema_with = "super::schema::duration")]
    pub(crate) timeout: Option<Node>,
    pub(crate) expect: Option<ExpectSpec>,
    /// Non-fatal checks: counted, never failing the request.
    #[schemars(with = "Option<CheckSpec>")]
    pub(crate) check: Option<Spanned<CheckSpec>>,
    /// A template rendered once per request into `{{ correlation_id }}` and registered
    /// with the sink.
    #[schemars(with = "Option<String>")]
    pub(crate) correlate: Option<Spanned<String>>,
}

/// A GraphQL request form: the query (inline or from a file), its variables (templated,
/// typed) and the operation to run.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GraphqlSpec {
    #[schemars(with = "Option<String>")]
    pub(crate) query: Option<Spanned<String>>,
    #[schemars(with = "Option<String>")]
    pub(crate) file: Option<Spanned<String>>,
    #[serde(default)]
    #[schemars(schema_with = "super::schema::any")]
    pub(crate) variables: Option<Node>,
    #[schemars(with = "Option<String>")]
    pub(crate) operation: Option<Spanned<String>>,
}

/// What a response must satisfy.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExpectSpec {
    #[serde(default)]
    #[schemars(schema_with = "super::schema::status")]
    pub(crate) status: Option<Node>,
    #[schemars(with = "Option<String>")]
    pub(crate) body_contains: Option<Spanned<String>>,
    #[schemars(with = "Option<String>")]
    pub(crate) json_path: Option<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, serde_json::Value>")]
    pub(crate) json: BTreeMap<String, Node>,
}

/// Non-fatal checks on a response: the matchers of `expect`, and a time bound.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CheckSpec {
    #[serde(default)]
    #[schemars(schema_with = "super::schema::status")]
    pub(crate) status: Option<Node>,
    #[schemars(with = "Option<String>")]
    pub(crate) body_contains: Option<Spanned<String>>,
    #[schemars(with = "Option<String>")]
    pub(crate) json_path: Option<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, serde_json::Value>")]
    pub(crate) json: BTreeMap<String, Node>,
    /// `<500ms`: the whole request, redirects included, took less.
    #[schemars(with = "Option<String>")]
    pub(crate) duration: Option<Spanned<String>>,
}

/// A flow: steps run in order, sharing captured variables.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FlowSpec {
    #[schemars(with = "String")]
    pub(crate) name: Spanned<String>,
    #[serde(default)]
    #[schemars(schema_with = "super::schema::integer")]
    pub(crate) weight: Option<Node>,
    #[schemars(with = "Vec<StepSpec>")]
    pub(crate) steps: Vec<Spanned<StepSpec>>,
    /// Steps run once per user before its first iteration (a login).
    #[serde(default)]
    #[schemars(with = "Vec<StepSpec>")]
    pub(crate) once: Vec<Spanned<StepSpec>>,
}

/// A group of steps timed together (`group:`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GroupSpec {
    #[schemars(with = "String")]
    pub(crate) name: Spanned<String>,
    #[schemars(with = "Vec<StepSpec>")]
    pub(crate) steps: Vec<Spanned<StepSpec>>,
}

/// One step (of a flow's `steps` or `once`, `setup`, `teardown` or a group): a request
/// (with its captures), a think time, a stream step, a `group` or `parallel` requests,
/// any of them under `if:` and `repeat:`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StepSpec {
    #[schemars(with = "Option<String>")]
    pub(crate) name: Option<Spanned<String>>,
    #[schemars(with = "Option<RequestSpec>")]
    pub(crate) request: Option<Spanned<RequestSpec>>,
    /// Variable → source (`$.id`, `header:NAME`, `cookie:NAME`, `regex:P`, `css:SEL`,
    /// `status`) or `{from, pick, default}`.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, serde_json::Value>")]
    pub(crate) capture: BTreeMap<String, Node>,
    #[serde(default)]
    #[schemars(schema_with = "super::schema::think")]
    pub(crate) think: Option<Node>,
    /// A WebSocket step.
    #[schemars(with = "Option<StreamSpec>")]
    pub(crate) ws: Option<Spanned<StreamSpec>>,
    /// A server-sent events step.
    #[schemars(with = "Option<StreamSpec>")]
    pub(crate) sse: Option<Spanned<StreamSpec>>,
    /// A gRPC step.
    #[schemars(with = "Option<StreamSpec>")]
    pub(crate) grpc: Option<Spanned<StreamSpec>>,
    /// Runs the step only when the condition holds.
    #[serde(default, rename = "if")]
    #[schemars(rename = "if", with = "Option<String>")]
    pub(crate) when: Option<Spanned<String>>,
    /// Runs the step N times (a number or a template).
    #[serde(default)]
    #[schemars(schema_with = "super::schema::any")]
    pub(crate) repeat: Option<Node>,
    /// Steps timed together.
    #[schemars(with = "Option<GroupSpec>")]
    pub(crate) group: Option<Spanned<GroupSpec>>,
    /// Requests sent at once.
    #[serde(default)]
    #[schemars(with = "Option<Vec<RequestSpec>>")]
    pub(crate) parallel: Option<Spanned<Vec<Spanned<RequestSpec>>>>,
}
