//! One request written as a scenario step: the scripts in force translated (each
//! reported once, at its statements' places in the collection), the request built
//! ([`super::request`]), its origin checked against the target, its checks and
//! captures attached. The [`Writer`] holds what the whole scenario shares; the
//! scenario itself is assembled in the `scenario` module, which imports this one.

use std::collections::HashMap;
use std::path::PathBuf;

use super::effects::{Checks, Effects, Listen, Met};
use super::request;
use super::script;
use super::spans::{Owner, Spans};
use super::vars::{Avail, Vars, MAX_EXPANSION};
use super::walk::{Req, ScriptRef};
use crate::locate::Lines;
use crate::tpl::identifier;
use crate::{ConvertError, Outcome, Report, Source, Yaml};

/// Writes the scenario: each request as a step, and the report, every position
/// located with one index of the collection's text.
pub(super) struct Writer<'s> {
    /// The collection.
    pub(super) source: &'s Source<'s>,
    /// An index of its text: every report item is located without rescanning it.
    lines: Lines<'s>,
    /// Where its items and script lines are.
    spans: &'s Spans,
    /// The variables in force at the request being written.
    pub(super) vars: Vars,
    /// What became of every construct.
    pub(super) report: Report,
    /// Scripts translated already (an inherited script is reported once).
    translated: HashMap<(Owner, usize), Effects>,
    /// The collection's directory (form-data files are looked for beside it).
    dir: PathBuf,
    /// The origin of the first request that names one.
    pub(super) target: Option<String>,
    /// Whether the target is a placeholder (no request names its host).
    pub(super) placeholder: bool,
}

impl<'s> Writer<'s> {
    /// A writer of the collection `source` (located by `spans`), with the variables in
    /// force and the collection's directory.
    pub(super) fn new(source: &'s Source<'s>, spans: &'s Spans, vars: Vars, dir: PathBuf) -> Self {
        Writer {
            source,
            lines: Lines::new(source.text),
            spans,
            vars,
            report: Report::new(source.file, "requests"),
            translated: HashMap::new(),
            dir,
            target: None,
            placeholder: false,
        }
    }

    /// Reports `construct` at byte `offset` of the collection.
    pub(super) fn push(&mut self, offset: usize, construct: &str, outcome: Outcome) {
        let (line, column) = self.lines.line_column(offset);
        self.report.push(line, column, construct, outcome);
    }

    /// The offset of the item of pre-order `ordinal`.
    fn item_offset(&self, ordinal: usize) -> usize {
        self.spans.items.get(ordinal).copied().unwrap_or(0)
    }

    /// The effects of a script, reporting its statements the first time.
    pub(super) fn script(&mut self, s: &ScriptRef) -> Effects {
        if let Some(effects) = self.translated.get(&(s.owner, s.event)) {
            return effects.clone();
        }
        let (effects, met) = script::translate(&s.text, s.listen);
        for m in met {
            let offset = self.script_offset(s, &m);
            self.push(offset, &m.construct, m.outcome);
        }
        self.translated.insert((s.owner, s.event), effects.clone());
        effects
    }

    /// Where a script statement is in the collection: in its `exec` line's JSON string
    /// when that string has no escape before the column, else the string's start.
    fn script_offset(&self, s: &ScriptRef, m: &Met) -> usize {
        let Some(&start) = self.spans.exec.get(&(s.owner, s.event, m.line)) else {
            let owner = match s.owner {
                Owner::Item(o) => self.item_offset(o),
                Owner::Collection => 0,
            };
            return owner;
        };
        let line = s.lines.get(m.line).map_or("", String::as_str);
        let prefix = line.get(..m.column).unwrap_or_default();
        let raw = self.source.text.get(start + 1..).unwrap_or_default();
        if raw.starts_with(prefix) {
            start + 1 + m.column
        } else {
            start
        }
    }

    /// One request as a flow step (None when left out); `caps` are its captures,
    /// `in_flow` whether it is a flow step (reported, checked) or a setup copy.
    pub(super) fn step(
        &mut self,
        req: &Req<'_>,
        caps: &[(String, String)],
        in_flow: bool,
    ) -> Result<Option<Yaml>, ConvertError> {
        let at = self.item_offset(req.ordinal);
        let mut checks = Checks::default();
        let mut after = Vec::new();
        for s in &req.scripts {
            let effects = self.script(s);
            match s.listen {
                Listen::PreRequest => {
                    for (k, v) in effects.constants {
                        self.vars.values.insert(k, v);
                    }
                }
                Listen::Test => {
                    checks.merge(&effects.checks);
                    after.extend(effects.constants);
                }
            }
        }
        let built =
            request::build(req.request, req.auth, &mut self.vars, &self.dir).map_err(|_| {
                self.source
                    .limit(at, "variables expanding to more bytes than", MAX_EXPANSION)
            })?;
        if !in_flow {
            return Ok(Some(step_yaml(req, built.yaml, &Checks::default())));
        }
        match (&built.origin, &self.target) {
            (Some(origin), None) => self.target = Some(origin.clone()),
            (Some(origin), Some(target)) if origin != target => {
                self.push(
                    at,
                    &req.name,
                    Outcome::LeftOut(format!(
                        "a request to {origin}, another origin than the target {target}"
                    )),
                );
                return Ok(None);
            }
            _ => {}
        }
        self.push(at, &req.name, Outcome::Translated);
        for (construct, outcome) in built.notes {
            self.push(at, &construct, outcome);
        }
        let mut step = step_yaml(req, built.yaml, &checks);
        if !caps.is_empty() {
            let mut capture = Yaml::map();
            for (n, from) in caps {
                capture.set(&identifier(n), from.as_str());
                self.vars
                    .captured
                    .insert(n.clone(), Avail::Flow(identifier(n)));
            }
            step.set("capture", capture);
        }
        for (k, v) in after {
            self.vars.captured.remove(&k);
            self.vars.values.insert(k, v);
        }
        Ok(Some(step))
    }
}

/// A step: `request:` (name first) with its checks.
fn step_yaml(req: &Req<'_>, request: Yaml, checks: &Checks) -> Yaml {
    let mut r = Yaml::map().with("name", req.name.as_str());
    if let Yaml::Map(entries) = request {
        for (k, v) in entries {
            r.set(&k, v);
        }
    }
    if !checks.is_empty() {
        r.set("check", checks.to_yaml());
    }
    Yaml::map().with("request", r)
}
