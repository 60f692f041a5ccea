//! [`SinkOptions`]: how the sink listens, answers, refuses and finds ids.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json_path::JsonPath;

/// Default cap on ids tracked at once (registered and not yet forgotten).
pub const DEFAULT_MAX_IDS: usize = 1_000_000;
/// Default largest delivery body read; larger ones are refused with 413 and counted.
pub const DEFAULT_MAX_BODY: usize = 64 * 1024;

/// Why sink options are invalid.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SinkOptionsError {
    /// The listen address is not on loopback.
    #[error("sink must listen on loopback (127.0.0.0/8 or ::1), not {0}")]
    NotLoopback(SocketAddr),
    /// The failure share is outside 0..=1.
    #[error("fail share must be between 0 and 1, got {0}")]
    Share(f64),
    /// A status is not a valid HTTP status.
    #[error("status must be 200..=599, got {0}")]
    Status(u16),
    /// A latency range with its low end above its high end.
    #[error("latency range must be low <= high")]
    Range,
    /// The JSONPath does not parse.
    #[error("id json_path `{0}`: {1}")]
    JsonPath(String, String),
    /// A cap of zero.
    #[error("{0} must be at least 1")]
    Zero(&'static str),
}

/// How long the sink waits before answering a delivery.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SinkLatency {
    /// Always this long.
    Fixed(Duration),
    /// Uniformly between the two, inclusive.
    Range(Duration, Duration),
}

/// Where the correlation id is in a delivery.
#[derive(Debug, Clone)]
pub enum Correlate {
    /// The first string or number this JSONPath selects in the JSON body.
    JsonPath(JsonPath),
    /// The value of this request header.
    Header(String),
}

impl Correlate {
    /// A JSONPath locator, checked.
    pub fn json_path(path: &str) -> Result<Correlate, SinkOptionsError> {
        JsonPath::parse(path)
            .map(Correlate::JsonPath)
            .map_err(|e| SinkOptionsError::JsonPath(path.to_string(), e.to_string()))
    }
}

/// The share of ids the sink refuses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fail {
    /// Share of distinct ids refused, 0..=1. Chosen exactly, not by chance: of the
    /// first n distinct ids, ⌊n·share⌋ are refused, so a test can count on it.
    pub share: f64,
    /// The status a refused delivery gets (503 by default: a sender retries it).
    pub status: u16,
    /// Refuse every attempt for a chosen id (it is then lost whatever the sender's
    /// retries), instead of its first attempt only (a retrying sender then gets it
    /// through, seed 003's case).
    pub every_attempt: bool,
}

/// The whole sink configuration.
#[derive(Debug, Clone)]
pub struct SinkOptions {
    /// Where to listen; loopback only. Port 0 picks a free one.
    pub listen: SocketAddr,
    /// Wait before answering.
    pub latency: SinkLatency,
    /// Status of an accepted delivery.
    pub status: u16,
    /// Refusals, if any.
    pub fail: Option<Fail>,
    /// Where the id is in a delivery.
    pub correlate: Correlate,
    /// Most ids tracked at once; ids registered beyond it are counted in
    /// `registry_overflow` and not tracked.
    pub max_ids: usize,
    /// Largest delivery body read.
    pub max_body: usize,
}

impl Default for SinkOptions {
    fn default() -> Self {
        SinkOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            latency: SinkLatency::Fixed(Duration::ZERO),
            status: 200,
            fail: None,
            correlate: Correlate::Header("x-correlation-id".into()),
            max_ids: DEFAULT_MAX_IDS,
            max_body: DEFAULT_MAX_BODY,
        }
    }
}

impl SinkOptions {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), SinkOptionsError> {
        if !self.listen.ip().is_loopback() {
            return Err(SinkOptionsError::NotLoopback(self.listen));
        }
        let status_ok = |s: u16| (200..=599).contains(&s);
        if !status_ok(self.status) {
            return Err(SinkOptionsError::Status(self.status));
        }
        if let Some(fail) = self.fail {
            if !(0.0..=1.0).contains(&fail.share) {
                return Err(SinkOptionsError::Share(fail.share));
            }
            if !status_ok(fail.status) {
                return Err(SinkOptionsError::Status(fail.status));
            }
        }
        if let SinkLatency::Range(lo, hi) = self.latency {
            if lo > hi {
                return Err(SinkOptionsError::Range);
            }
        }
        if self.max_ids == 0 {
            return Err(SinkOptionsError::Zero("max_ids"));
        }
        if self.max_body == 0 {
            return Err(SinkOptionsError::Zero("max_body"));
        }
        Ok(())
    }
}

/// The scenario's `sink:` block, compiled; the run attaches the live sink to it.
#[derive(Debug, Clone)]
pub struct SinkPlan {
    /// How the sink listens and answers.
    pub options: SinkOptions,
    /// How long the run waits after the load for deliveries still on their way, before
    /// the outstanding ids count as lost.
    pub grace: Duration,
    /// The grace period ends early once nothing is outstanding and no delivery has
    /// arrived for this long (`settle:`, default [`DEFAULT_SETTLE`]).
    pub settle: Duration,
    /// The running sink's URL and tracker, set by the command that runs the plan
    /// (`None` while only parsed).
    pub attached: Option<Attached>,
}

/// A running sink as the engine sees it.
#[derive(Debug, Clone)]
pub struct Attached {
    /// `http://127.0.0.1:PORT`, what `{{ sink_url }}` renders to.
    pub url: String,
    /// Where each request's correlation id is registered.
    pub tracker: std::sync::Arc<super::Tracker>,
}

/// Default quiet time that ends the grace period early.
pub const DEFAULT_SETTLE: Duration = Duration::from_millis(500);

/// Default grace period after the load.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);
