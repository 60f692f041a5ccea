//! A k6 script (JavaScript or TypeScript) as a scenario.
//!
//! The script is parsed with oxc and *executed abstractly*: module scope is evaluated
//! from constants and `__ENV` (its defaults, or the values the caller passes), then
//! the default function (or each scenario's `exec` function), `setup()` and
//! `teardown()` are walked with the script's own helper functions inlined. Every
//! `http.*` call reached becomes one request step in order; what the script reads of
//! a response becomes a capture on that request and a `{{ name }}` reference; checks,
//! sleeps, groups, random branches and `http.batch` become `check:`, `think:`,
//! `group:`, `if: chance(p)` and `parallel:`. `options` becomes the load (or
//! workloads) and thresholds. Whatever has no static value or no scenario equivalent
//! is reported as left out, and the rest is still converted.
//!
//! Bounds: the input size ([`crate::MAX_INPUT`]), how deep the walk nests and how
//! deep helpers inline ([`crate::MAX_DEPTH`]), how many loop iterations are unrolled
//! ([`MAX_UNROLL`]) and how much evaluation one conversion does ([`MAX_WORK`]), and
//! the number of requests ([`crate::MAX_ITEMS`]).

mod calls;
mod checks;
mod eval;
mod exec;
mod guard;
mod http;
mod members;
mod module;
mod ops;
mod options;
mod output;
mod reads;
mod thresholds;
mod value;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_more;

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use oxc_allocator::Allocator;
use oxc_ast::ast::Program;
use oxc_parser::Parser;
use oxc_span::{SourceType, Span};

use crate::{ConvertError, Converted, Outcome, Report, Source, Yaml};
use value::{FnRef, Value};

/// The most random branches one flow splits on (2^N weighted flows); past it they
/// become `if: chance(p)` steps.
pub const MAX_SPLITS: usize = 4;
/// The most iterations of one loop the evaluator unrolls.
pub const MAX_UNROLL: usize = 1_000;
/// The most statements and expressions one conversion evaluates (helpers inlined and
/// loops unrolled count each time): a script that computes more is refused.
pub const MAX_WORK: usize = 2_000_000;
/// The stack of the thread that parses and walks a script: the parser recurses on
/// nesting ([`guard`] bounds it) and the walk on the AST ([`crate::MAX_DEPTH`]), so
/// neither depends on the caller's stack (test threads have 2 MiB).
const STACK: usize = 64 << 20;

/// What the caller knows that the script reads.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `__ENV`: the process environment (and `-e KEY=VALUE` values) at conversion.
    pub env: BTreeMap<String, String>,
    /// Prepended to a relative path the script `open()`s, so a `data:` file written
    /// into the scenario resolves from where the scenario is written (None: as written).
    pub data_prefix: Option<PathBuf>,
}

/// A request the script makes, as the scenario will say it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Req {
    /// `GET`, `POST`...
    pub(crate) method: String,
    /// The path (and query) under the target, templated.
    pub(crate) path: String,
    /// `name:` (from `tags.name`, or a custom Trend's name).
    pub(crate) name: Option<String>,
    /// Headers, in the order given.
    pub(crate) headers: Vec<(String, String)>,
    /// The body.
    pub(crate) body: Body,
    /// `timeout:`.
    pub(crate) timeout: Option<String>,
    /// `redirects:`.
    pub(crate) redirects: Option<i64>,
    /// `capture:` variable → source.
    pub(crate) captures: Vec<(String, String)>,
    /// `check:` matchers.
    pub(crate) check: Vec<(String, Yaml)>,
    /// Sent inside `parallel:` (which takes no captures).
    pub(crate) parallel: bool,
}

/// A request body.
#[derive(Debug, Clone, Default)]
pub(crate) enum Body {
    /// None.
    #[default]
    None,
    /// `json:`.
    Json(Yaml),
    /// `body:`.
    Raw(String),
    /// `form:`.
    Form(Vec<(String, String)>),
}

/// One step of a flow, `setup:` or `teardown:`.
#[derive(Debug, Clone)]
pub(crate) enum Step {
    /// A request: an index into the requests.
    Request(usize),
    /// `think:`.
    Think(String),
    /// `group:`.
    Group(String, Vec<Step>),
    /// Steps under `if:`.
    If(String, Vec<Step>),
    /// `parallel:` requests.
    Parallel(Vec<usize>),
    /// `if (Math.random() < p) {...} else {...}` at a flow's top level: the flow
    /// splits into weighted flows, one per branch (exact: one draw per iteration).
    Random(f64, Vec<Step>, Vec<Step>),
}

/// Which part of the script is being walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Module scope (k6's init context: no requests).
    Init,
    /// `setup()`.
    Setup,
    /// The default function or a scenario's `exec`.
    Flow,
    /// `teardown()`.
    Teardown,
}

/// A data file the script reads (`SharedArray` + `open()`).
#[derive(Debug, Clone)]
pub(crate) struct DataFile {
    /// The `data:` name.
    pub(crate) name: String,
    /// The file, as the scenario names it.
    pub(crate) file: String,
    /// `pick:` once known.
    pub(crate) pick: Option<&'static str>,
}

/// The evaluator's whole state.
pub(crate) struct Interp<'a, 's> {
    pub(crate) src: Source<'s>,
    /// The script's line index: every report item's position, without rescanning.
    lines: crate::locate::Lines<'s>,
    pub(crate) options: &'s Options,
    pub(crate) report: Report,
    /// (offset, outcome, construct) already reported: each construct is reported once, however
    /// often an inlined helper reaches it.
    seen: HashSet<(u32, u8, String)>,
    /// Variable scopes, innermost last. Lookups go outwards through every frame: the
    /// scripts this reads call module-level helpers, so dynamic scoping finds what
    /// lexical scoping would.
    pub(crate) scopes: Vec<Vec<(String, Value<'a>)>>,
    pub(crate) reqs: Vec<Req>,
    /// The step lists being built, innermost (current group or branch) last.
    pub(crate) out: Vec<Vec<Step>>,
    /// Functions being inlined (their start offsets): recursion is refused.
    pub(crate) calls: Vec<u32>,
    /// Current nesting of the walk.
    pub(crate) depth: usize,
    /// Evaluation steps so far.
    pub(crate) work: usize,
    pub(crate) phase: Phase,
    /// The target's origin (`http://host:port`), from the first request's URL.
    pub(crate) target: Option<String>,
    pub(crate) data: Vec<DataFile>,
    /// Capture names taken in the scenario so far.
    pub(crate) taken: HashSet<String>,
    /// What `setup()` captured: its names become `setup.NAME` in flows.
    pub(crate) setup_captures: Vec<String>,
    /// Trend metric name → the request it times.
    pub(crate) trends: Vec<(String, usize)>,
    /// Custom metrics declared: (name, kind).
    pub(crate) metrics: Vec<(String, String)>,
    /// Exported functions by name (`default`, `setup`, `teardown`, scenario `exec`s).
    pub(crate) exports: Vec<(String, FnRef<'a>)>,
    /// `export const options`, and where.
    pub(crate) options_value: Option<(Value<'a>, Span)>,
    /// Comments for the top of the scenario.
    pub(crate) notes: Vec<String>,
    /// While a check's condition is read: a read of the response is a matcher, never
    /// a capture.
    pub(crate) no_captures: bool,
}

impl<'a, 's> Interp<'a, 's> {
    /// Reports `construct` at `span` once.
    pub(crate) fn item(&mut self, span: Span, construct: impl Into<String>, outcome: Outcome) {
        let construct = construct.into();
        // A helper inlined twice reports its constructs once, unless they ended
        // differently (one call's request kept, another's left out).
        let kind = match &outcome {
            Outcome::Translated => 0,
            Outcome::Approximated(_) => 1,
            Outcome::LeftOut(_) => 2,
        };
        if !self.seen.insert((span.start, kind, construct.clone())) {
            return;
        }
        let (line, column) = self.lines.line_column(span.start as usize);
        self.report.push(line, column, construct, outcome);
    }

    /// Reports a translated construct.
    pub(crate) fn ok(&mut self, span: Span, construct: impl Into<String>) {
        self.item(span, construct, Outcome::Translated);
    }

    /// Reports an approximated construct.
    pub(crate) fn approx(
        &mut self,
        span: Span,
        construct: impl Into<String>,
        note: impl Into<String>,
    ) {
        self.item(span, construct, Outcome::Approximated(note.into()));
    }

    /// Reports a construct left out.
    pub(crate) fn left(
        &mut self,
        span: Span,
        construct: impl Into<String>,
        why: impl Into<String>,
    ) {
        self.item(span, construct, Outcome::LeftOut(why.into()));
    }

    /// Counts one evaluation step and one level of nesting; refuses past the bounds.
    pub(crate) fn enter(&mut self, span: Span) -> Result<(), ConvertError> {
        self.work += 1;
        if self.work > MAX_WORK {
            return Err(self.src.limit(
                span.start as usize,
                "more evaluation steps than",
                MAX_WORK,
            ));
        }
        self.depth += 1;
        if self.depth > crate::MAX_DEPTH {
            return Err(self.src.limit(
                span.start as usize,
                "nesting deeper than",
                crate::MAX_DEPTH,
            ));
        }
        Ok(())
    }

    /// Leaves a level of nesting.
    pub(crate) fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Looks a variable up, innermost scope first.
    pub(crate) fn lookup(&self, name: &str) -> Option<&Value<'a>> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|frame| frame.iter().rev())
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }

    /// Declares a variable in the innermost scope.
    pub(crate) fn declare(&mut self, name: &str, value: Value<'a>) {
        if let Some(frame) = self.scopes.last_mut() {
            frame.push((name.to_string(), value));
        }
    }

    /// Assigns an existing variable (innermost first), or declares it at module scope.
    pub(crate) fn assign(&mut self, name: &str, value: Value<'a>) {
        for frame in self.scopes.iter_mut().rev() {
            if let Some(slot) = frame.iter_mut().rev().find(|(n, _)| n == name) {
                slot.1 = value;
                return;
            }
        }
        if let Some(frame) = self.scopes.first_mut() {
            frame.push((name.to_string(), value));
        }
    }

    /// Appends a step to the list being built.
    pub(crate) fn emit(&mut self, step: Step) {
        if let Some(list) = self.out.last_mut() {
            list.push(step);
        }
    }

    /// A capture name not taken yet, from `hint`.
    pub(crate) fn fresh_name(&mut self, hint: &str) -> String {
        let base = value::word(hint);
        let mut name = base.clone();
        let mut n = 2;
        while self.taken.contains(&name) || is_reserved(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        self.taken.insert(name.clone());
        name
    }
}

/// Names a capture cannot take: the template functions' and the dotted prefixes'.
fn is_reserved(name: &str) -> bool {
    matches!(
        name,
        "env" | "data" | "cookie" | "setup" | "true" | "false" | "chance" | "user" | "iteration"
    )
}

/// Converts `source`: the scenario and the report of every construct met.
pub fn convert(source: Source<'_>, options: &Options) -> Result<Converted, ConvertError> {
    source.check_size()?;
    if let Some(at) = guard::too_deep(source.text) {
        return Err(source.limit(at, "nesting deeper than", guard::MAX_PARSE_NESTING));
    }
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("k6-convert".into())
            .stack_size(STACK)
            .spawn_scoped(scope, || parse_and_run(source, options));
        match worker {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(source.unusable(0, "the converter failed on this script"))),
            // No thread to be had: convert on this one (the guard still bounds the parser).
            Err(_) => parse_and_run(source, options),
        }
    })
}

/// Parses and walks the script.
fn parse_and_run(source: Source<'_>, options: &Options) -> Result<Converted, ConvertError> {
    let allocator = Allocator::default();
    let source_type = if source.file.ends_with(".ts") || source.file.ends_with(".mts") {
        SourceType::ts()
    } else {
        SourceType::mjs()
    };
    let parsed = Parser::new(&allocator, source.text, source_type).parse();
    if let Some(error) = parsed.diagnostics.errors().next() {
        let offset = error.labels.first().map_or(0, |l| l.offset() as usize);
        return Err(source.syntax(offset, error.message.to_string()));
    }
    run(source, options, &parsed.program)
}

/// Walks the parsed program and writes the scenario.
fn run<'a>(
    source: Source<'_>,
    options: &Options,
    program: &'a Program<'a>,
) -> Result<Converted, ConvertError> {
    let mut it = Interp {
        src: source,
        lines: crate::locate::Lines::new(source.text),
        options,
        report: Report::new(source.file, "calls"),
        seen: HashSet::new(),
        scopes: vec![Vec::new()],
        reqs: Vec::new(),
        out: vec![Vec::new()],
        calls: Vec::new(),
        depth: 0,
        work: 0,
        phase: Phase::Init,
        target: None,
        data: Vec::new(),
        taken: HashSet::new(),
        setup_captures: Vec::new(),
        trends: Vec::new(),
        metrics: Vec::new(),
        exports: Vec::new(),
        options_value: None,
        notes: Vec::new(),
        no_captures: false,
    };
    it.module(program)?;
    let doc = it.scenario(program.span)?;
    let file_note = format!(
        "Converted from the k6 script {} by `headroom convert k6`; see the report for what was approximated or left out.",
        source.file
    );
    let mut comments = vec![file_note];
    comments.append(&mut it.notes);
    Ok(Converted {
        yaml: doc.document(&comments),
        report: it.report,
    })
}
