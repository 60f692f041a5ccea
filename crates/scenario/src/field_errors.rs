//! Typed errors of the scenario's field checks: a duration, a limit, a header, a
//! threshold's scope, a `sink:` field, the target URL, the `--url` flags, the file.
//! Each becomes a [`super::ScenarioError`]'s message, with the field's location.

use std::time::Duration;

use headroom_metrics::threshold::ThresholdError;
use headroom_sink::SinkOptionsError;

/// What a duration looks like, for the errors.
pub(super) const EXPECTED: &str =
    "expected a duration with a unit, such as 500ms, 1.5s, 2m or 1m30s";

pub(super) const SINK_KEYS: &str =
    "listen, latency, status, fail, id, grace, settle, max_ids, max_body";

/// A duration or think time that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Nothing was written.
    #[error("{}, found an empty value", EXPECTED)]
    Empty,
    /// A number with no unit.
    #[error(
        "{}, found the bare number {number} (add a unit: {number}s or {number}ms)",
        EXPECTED
    )]
    BareNumber {
        /// The number as written.
        number: String,
    },
    /// Not a duration.
    #[error("{}, found {text:?}", EXPECTED)]
    Malformed {
        /// The text as written.
        text: String,
    },
    /// A unit headroom does not know.
    #[error("{}, found {text:?} (units: ns, us, ms, s, m, h)", EXPECTED)]
    UnknownUnit {
        /// The text as written.
        text: String,
    },
    /// Longer than [`super::MAX_DURATION`].
    #[error("durations are at most 365 days (8760h), found {text:?}")]
    TooLong {
        /// The text as written, trimmed.
        text: String,
    },
    /// A think-time range whose low end is above its high end.
    #[error("expected a range low..high with low <= high, found {text:?} ({low:?} > {high:?})")]
    Reversed {
        /// The range as written.
        text: String,
        /// Its low end.
        low: Duration,
        /// Its high end.
        high: Duration,
    },
}

/// A value above the most a field takes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("expected at most {max} {what}, found {}", shown(*value))]
pub struct LimitError {
    /// The value given.
    pub value: f64,
    /// The most allowed.
    pub max: f64,
    /// What is counted (`users`, `per second`...).
    pub what: String,
}

/// Whole numbers as written; huge or fractional ones in exponent form.
fn shown(value: f64) -> String {
    if value < 1e15 {
        format!("{value}")
    } else {
        format!("{value:e}")
    }
}

/// A header that cannot go into a request head.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// The name is not an HTTP token.
    #[error("expected a header name made of letters, digits and -, found {name:?}")]
    Name {
        /// The name given.
        name: String,
    },
    /// The value holds a line break.
    #[error("expected a header value on one line, found a line break")]
    LineBreak,
}

/// A threshold that does not parse or whose scope names nothing in the scenario.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScopeError {
    /// The rule does not parse.
    #[error(transparent)]
    Rule(#[from] ThresholdError),
    /// A stream rule in a scenario without streams.
    #[error("a stream rule needs a `ws:`, `sse:` or `grpc:` step in a flow")]
    NoStreams,
    /// A stream rule's scope that is no stream's name or protocol.
    #[error("`{scope}` is not a stream name or a protocol with streams (streams: {})", streams.join(", "))]
    NotAStream {
        /// The scope given.
        scope: String,
        /// The scenario's stream names.
        streams: Vec<String>,
    },
    /// A `checks{NAME}` rule whose name is no check of the scenario.
    #[error("{expr:?}: {scope:?} is not a check of the scenario (its checks: {})", if known.is_empty() { "none".to_string() } else { known.join(", ") })]
    NotACheck {
        /// The rule as written.
        expr: String,
        /// The name given.
        scope: String,
        /// The scenario's check names.
        known: Vec<String>,
    },
    /// A request rule's scope that is no request's name.
    #[error("`{scope}` is not a request name (known: {})", known.join(", "))]
    NotARequest {
        /// The scope given.
        scope: String,
        /// The scenario's request names.
        known: Vec<String>,
    },
}

/// A field of the `sink:` block that does not fit.
#[derive(Debug, thiserror::Error)]
pub enum SinkFieldError {
    /// A duration that does not parse.
    #[error(transparent)]
    Duration(#[from] DurationError),
    /// Something other than a duration string.
    #[error("expected a duration such as 100ms, found {found}")]
    NotDuration {
        /// The value found, described.
        found: String,
    },
    /// Not a positive integer.
    #[error("{what} must be a positive integer, found {found}")]
    NotPositive {
        /// The field.
        what: &'static str,
        /// The value found, described.
        found: String,
    },
    /// Not an HTTP status the sink may answer.
    #[error("expected an HTTP status 200..=599, found {found}")]
    Status {
        /// The value found, described.
        found: String,
    },
    /// `fail:` is not a mapping.
    #[error("expected {{share: 0.1, status: 503}}")]
    FailShape,
    /// `fail.share` is not a fraction.
    #[error("share must be 0..=1, found {found}")]
    Share {
        /// The value found, described.
        found: String,
    },
    /// `fail.every_attempt` is not a boolean.
    #[error("every_attempt must be true or false")]
    EveryAttempt,
    /// A key `fail:` does not take.
    #[error("unknown key `{key}` in fail (share, status, every_attempt)")]
    FailKey {
        /// The key given.
        key: String,
    },
    /// `id:` is not one of its two forms.
    #[error("expected {{json_path: \"$.event_id\"}} or {{header: x-event-id}}")]
    IdShape,
    /// `id.json_path` does not parse.
    #[error("{0}")]
    JsonPath(#[source] SinkOptionsError),
    /// `listen:` is not a socket address.
    #[error("expected an address such as 127.0.0.1:0, found {found}")]
    Listen {
        /// The value found, described.
        found: String,
    },
    /// A key `sink:` does not take.
    #[error("unknown key `{key}`; expected one of {}", SINK_KEYS)]
    UnknownKey {
        /// The key given.
        key: String,
    },
}

/// The text naming what a target URL must be.
const TARGET: &str = "expected an absolute http:// or https:// URL such as http://127.0.0.1:8080";

/// A target URL headroom cannot send to.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The URL does not parse.
    #[error("{}, found {url:?} ({source})", TARGET)]
    Parse {
        /// The URL given.
        url: String,
        /// Why it does not parse.
        #[source]
        source: http::uri::InvalidUri,
    },
    /// A scheme other than http or https.
    #[error("{}, found scheme {scheme:?}", TARGET)]
    Scheme {
        /// The scheme given.
        scheme: String,
    },
    /// A relative URL (no scheme or no authority).
    #[error("{}, found {url:?}", TARGET)]
    Relative {
        /// The URL given.
        url: String,
    },
    /// User information (`user:pass@`) in the URL.
    #[error("{}, found user information in {url:?}", TARGET)]
    UserInfo {
        /// The URL given.
        url: String,
    },
    /// An empty host.
    #[error("{}, found no host in {url:?}", TARGET)]
    NoHost {
        /// The URL given.
        url: String,
    },
}

/// A `--url` run's request flag that does not fit.
#[derive(Debug, thiserror::Error)]
pub enum QuickError {
    /// `--method` is not a method name.
    #[error("--method: expected an HTTP method such as GET or POST, found {method:?}")]
    Method {
        /// The method given.
        method: String,
    },
    /// A `--header` that cannot go into a request head.
    #[error("--header {name:?}: {source}")]
    Header {
        /// The header's name.
        name: String,
        /// What is wrong with it.
        #[source]
        source: HeaderError,
    },
    /// A `--header` value whose template does not compile.
    #[error("--header {name:?}: {reason}")]
    HeaderTemplate {
        /// The header's name.
        name: String,
        /// The template's error.
        reason: String,
    },
    /// A `--body` whose template does not compile.
    #[error("--body: {reason}")]
    Body {
        /// The template's error.
        reason: String,
    },
    /// A `--json` that is not JSON.
    #[error("--json: not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// A `--json` whose template does not compile.
    #[error("--json: {reason}")]
    Json {
        /// The template's error.
        reason: String,
    },
}

/// A scenario file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file cannot be opened or read.
    #[error("cannot read the scenario: {0}")]
    Io(#[from] std::io::Error),
    /// The file is above the size limit.
    #[error("the scenario is larger than {mib} MiB; a scenario file is YAML of a few KiB")]
    TooLarge {
        /// The limit, in MiB.
        mib: u64,
    },
}
