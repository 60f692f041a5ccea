//! What a web application's journey needs of a request beyond its method, path and
//! body: captures from any part of a response (not only its JSON body), non-fatal
//! checks, multipart bodies with files read at load, and the cookie and redirect
//! settings of the run.

use std::sync::Arc;
use std::time::Duration;

use headroom_template::Template;

use crate::StatusRange;

/// A variable taken from a flow step's response.
#[derive(Debug, Clone)]
pub struct ResponseCapture {
    /// Variable name, usable as `{{ name }}` in later steps.
    pub var: String,
    /// Where in the response the value is found.
    pub from: CaptureFrom,
    /// Which match becomes the value when there are several.
    pub pick: CapturePick,
    /// The value when nothing matched; without one, no match fails the step.
    pub default: Option<String>,
    /// The source as written (`$.id`, `header:Location`, `css:input@value`), for messages.
    pub source: String,
}

/// Where a capture looks.
#[derive(Debug, Clone)]
pub enum CaptureFrom {
    /// A JSONPath query on the JSON body.
    Json(serde_json_path::JsonPath),
    /// A response header, by its lower-case name (every value, in order).
    Header(String),
    /// A cookie the response set, by name.
    Cookie(String),
    /// A regular expression on the body: its first group (or the whole match when it
    /// has no group).
    Regex(regex::Regex),
    /// An HTML element found by a CSS selector: its text, or an attribute's value.
    Css {
        /// The compiled selector.
        selector: Box<scraper::Selector>,
        /// `@ATTR`: the attribute read instead of the text.
        attr: Option<String>,
    },
    /// The status code.
    Status,
}

impl CaptureFrom {
    /// Whether the capture reads the response body.
    pub fn reads_body(&self) -> bool {
        matches!(
            self,
            CaptureFrom::Json(_) | CaptureFrom::Regex(_) | CaptureFrom::Css { .. }
        )
    }
}

/// Which match a capture keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CapturePick {
    /// The first (JSONPath order, document order, header order).
    #[default]
    First,
    /// One of them, uniformly at random (JMeter's match number 0, Gatling's `findRandom`).
    Random,
    /// All of them, as a JSON array.
    All,
}

/// A non-fatal check (`check:`): counted as passed or failed, never failing its request.
#[derive(Debug, Clone)]
pub struct Check {
    /// Index into [`crate::Plan::checks`], the check's name.
    pub id: usize,
    /// What is checked.
    pub rule: CheckRule,
}

/// One check's rule: the matchers of `expect`, and a response-time bound.
#[derive(Debug, Clone)]
pub enum CheckRule {
    /// The status is in one of these ranges.
    Status(Vec<StatusRange>),
    /// The body contains the rendered text.
    BodyContains(Template),
    /// A JSONPath query matches; with a value, its first match equals it.
    Json {
        /// Compiled query.
        path: serde_json_path::JsonPath,
        /// What the first match must equal, if anything.
        equals: Option<Expected>,
    },
    /// The request (its whole redirect chain) took less than this.
    Duration(Duration),
}

/// An expected JSON value: literal, or a template whose rendering is compared with a
/// string (or the text of a number) found in the response.
#[derive(Debug, Clone)]
pub enum Expected {
    /// A JSON value written in the scenario.
    Value(serde_json::Value),
    /// A string with placeholders, rendered per response.
    Template(Template),
}

impl Expected {
    /// The literal value, when it is one.
    pub fn value(&self) -> Option<&serde_json::Value> {
        match self {
            Expected::Value(v) => Some(v),
            Expected::Template(_) => None,
        }
    }
}

/// A `multipart/form-data` body: text pieces (templates) and the bytes of files read
/// once at load, in order. The boundary is chosen at load and is part of the pieces.
#[derive(Debug, Clone)]
pub struct Multipart {
    /// The boundary, also in the request's `content-type` header.
    pub boundary: String,
    /// The body's pieces in order.
    pub pieces: Vec<Piece>,
}

/// A piece of a multipart body.
#[derive(Debug, Clone)]
pub enum Piece {
    /// Text, with placeholders.
    Text(Template),
    /// A file's bytes, read at load.
    Bytes(Arc<[u8]>),
}

impl Multipart {
    /// The body when nothing in it varies.
    pub fn as_static(&self) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.extend_from_slice(t.as_static()?.as_bytes()),
                Piece::Bytes(b) => out.extend_from_slice(b),
            }
        }
        Some(out)
    }

    /// Appends the rendered body to `out`.
    pub fn render(&self, ctx: &mut headroom_template::RenderContext<'_>, out: &mut Vec<u8>) {
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => t.render(ctx, out),
                Piece::Bytes(b) => out.extend_from_slice(b),
            }
        }
    }
}

/// Limits of a user's cookie jar, as browsers keep them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CookieLimits {
    /// Most cookies kept per domain; more are counted as dropped.
    pub per_domain: usize,
    /// Longest `name=value` kept, in bytes.
    pub size: usize,
}

impl Default for CookieLimits {
    fn default() -> CookieLimits {
        CookieLimits {
            per_domain: 50,
            size: 4096,
        }
    }
}

/// Redirects followed when neither the scenario nor the request says (as k6, oha and
/// browsers).
pub const DEFAULT_REDIRECTS: u32 = 10;

/// Steps run under one rule: only when a condition holds (`if:`), a number of times
/// (`repeat:`), and timed together as a group (`group:`, as k6's `group_duration`).
/// A step with `if:` or `repeat:` of its own is a block of that one step.
#[derive(Debug, Clone)]
pub struct Block {
    /// Run only when this holds (evaluated once per entry into the block).
    pub when: Option<headroom_template::Condition>,
    /// How many times the steps run: a template rendered to a count (at most
    /// [`MAX_REPEAT`]); `None`: once.
    pub repeat: Option<Template>,
    /// A group's id (index into [`crate::Plan::groups`]): the block's duration is
    /// recorded under it.
    pub group: Option<usize>,
    /// The steps, in order.
    pub steps: Vec<crate::Step>,
}

/// Most times a `repeat:` runs its steps: a rendered count above it is cut to it.
pub const MAX_REPEAT: u64 = 10_000;

/// Requests of one step sent at once (`parallel:`, as k6's `http.batch`): each
/// request is recorded on its own; the step ends when all have.
#[derive(Debug, Clone)]
pub struct Parallel {
    /// The requests, each with its captures.
    pub requests: Vec<(Arc<crate::RequestTemplate>, Vec<ResponseCapture>)>,
}

/// Steps run outside the load: `setup:` once before it, `teardown:` once after it.
/// Their requests count in none of the load's figures.
#[derive(Debug, Clone, Default)]
pub struct Once {
    /// The steps, in order.
    pub steps: Vec<crate::Step>,
}

/// Values captured by the run's `setup:` steps, read by every user as
/// `{{ setup.NAME }}`: (name, text, whether the text is JSON of a non-string value).
pub type SetupValues = Vec<(String, String, bool)>;

/// What a plan holds for journeys outside its items: data files, the run's `setup:`
/// and `teardown:` steps, and what `setup:` captured (filled by the command that runs
/// the plan, before any load).
#[derive(Debug, Clone, Default)]
pub struct JourneyPlan {
    /// The scenario's `data:` files.
    pub data: crate::data::DataPlan,
    /// For each of `data.sets`, the variable of each column (`data.SET.COLUMN`), made
    /// once at load so an iteration sets its row's values without formatting names.
    pub data_vars: Vec<Vec<String>>,
    /// Steps run once before the load.
    pub setup: Vec<crate::Step>,
    /// Steps run once after the load.
    pub teardown: Vec<crate::Step>,
    /// The values `setup:` captured, for every user as `setup.NAME`.
    pub setup_values: SetupValues,
    /// The variables `setup:` steps capture (their names, without `setup.`).
    pub setup_captures: Vec<String>,
    /// Users (and arrivals) numbered so far by this process's part of the run:
    /// `user()` is made from it and [`JourneyPlan::shard`], unique across shards.
    pub users: Arc<std::sync::atomic::AtomicU64>,
    /// This process's part of the run (the whole in a single process).
    pub shard: crate::Slice,
    /// What the scenario's `secrets:` marks secret.
    pub secrets: crate::Secrets,
}

impl JourneyPlan {
    /// The journey of shard `part`: its disjoint slice of every `unique` data file, and
    /// user numbers of its own (numbered `n × count + index + 1`).
    pub fn for_shard(&self, part: crate::Slice) -> JourneyPlan {
        JourneyPlan {
            data: self.data.slice(part),
            shard: part,
            users: Arc::default(),
            ..self.clone()
        }
    }

    /// The same journey with its cursors and user numbers back at the start: a new run
    /// of the plan (each step of a search) hands out rows and numbers anew.
    pub fn fresh(&self) -> JourneyPlan {
        JourneyPlan {
            data: self.data.restart(),
            users: Arc::default(),
            ..self.clone()
        }
    }

    /// The next user's number (1-based, unique across shards).
    pub fn next_user(&self) -> u64 {
        let n = self
            .users
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        n * self.shard.count() + self.shard.index() + 1
    }
}

impl JourneyPlan {
    /// The data files (indexes into `data.sets`) that `item`'s templates read
    /// (`{{ data.NAME.COLUMN }}`), in conditions, counts and checks too: a user takes
    /// a `unique` row only of a file its work reads.
    pub fn data_sets_of(&self, item: &crate::Item) -> Vec<usize> {
        let mut names: Vec<String> = Vec::new();
        match item {
            crate::Item::Request(r) => request_vars(r, &mut names),
            crate::Item::Flow(f) => {
                steps_vars(&f.steps, &mut names);
                steps_vars(&f.once, &mut names);
            }
        }
        let mut sets: Vec<usize> = names
            .iter()
            .filter_map(|n| n.strip_prefix("data."))
            .filter_map(|rest| rest.split('.').next())
            .filter_map(|set| self.data.index(set))
            .collect();
        sets.sort_unstable();
        sets.dedup();
        sets
    }
}

/// Every variable a request's templates read.
fn request_vars(r: &crate::RequestTemplate, out: &mut Vec<String>) {
    let mut add = |t: &Template| out.extend(t.variables().into_iter().map(str::to_string));
    add(&r.path);
    r.headers.iter().for_each(|(_, t)| add(t));
    if let Some(b) = &r.body {
        add(b);
    }
    if let Some(m) = &r.multipart {
        for p in &m.pieces {
            if let Piece::Text(t) = p {
                add(t);
            }
        }
    }
    if let Some(t) = &r.expect.body_contains {
        add(t);
    }
    for j in &r.expect.json {
        if let Some(Expected::Template(t)) = &j.equals {
            add(t);
        }
    }
    for c in &r.checks {
        match &c.rule {
            CheckRule::BodyContains(t) => add(t),
            CheckRule::Json {
                equals: Some(Expected::Template(t)),
                ..
            } => add(t),
            _ => {}
        }
    }
}

/// Every variable a list of steps reads.
fn steps_vars(steps: &[crate::Step], out: &mut Vec<String>) {
    for s in steps {
        match s {
            crate::Step::Request { request, .. } => request_vars(request, out),
            crate::Step::Block(b) => {
                if let Some(c) = &b.when {
                    out.extend(c.variables().into_iter().map(str::to_string));
                }
                if let Some(t) = &b.repeat {
                    out.extend(t.variables().into_iter().map(str::to_string));
                }
                steps_vars(&b.steps, out);
            }
            crate::Step::Parallel(p) => p.requests.iter().for_each(|(r, _)| request_vars(r, out)),
            crate::Step::Think(_) | crate::Step::Stream(_) => {}
        }
    }
}
