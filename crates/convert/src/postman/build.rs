//! The collection walked into flows, and the scenario written.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde_json::Value;

use super::request;
use super::script::{self, Checks, Effects, Listen, Met};
use super::spans::{self, Owner, Spans};
use super::template::{identifier, references};
use super::vars::{Avail, Vars, MAX_EXPANSION};
use super::{parse_json, Options};
use crate::{ConvertError, Converted, Outcome, Report, Source, Yaml, MAX_DEPTH, MAX_ITEMS};

/// The longest request name kept, characters.
const MAX_NAME: usize = 200;
/// The longest body or path kept, bytes of template text (the scenario compiler
/// bounds a scenario's size; a request that large is not a load test's).
pub(super) const MAX_TEXT: usize = 1 << 20;

/// The target written when no request names its host.
const PLACEHOLDER_TARGET: &str = "http://127.0.0.1:8080";

/// One event script in force for a request.
#[derive(Debug, Clone)]
struct ScriptRef {
    owner: Owner,
    event: usize,
    listen: Listen,
    text: String,
    lines: Vec<String>,
}

/// A request met, with what it inherits.
struct Req<'v> {
    ordinal: usize,
    name: String,
    request: &'v Value,
    auth: Option<&'v Value>,
    scripts: Vec<ScriptRef>,
}

/// A flow: its name and requests.
struct Flow<'v> {
    name: String,
    requests: Vec<Req<'v>>,
}

/// What the walk carries down the folders.
#[derive(Clone)]
struct Inherited<'v> {
    auth: Option<&'v Value>,
    scripts: Vec<ScriptRef>,
}

struct Walker<'s> {
    source: &'s Source<'s>,
    spans: &'s Spans,
    ordinal: usize,
    count: usize,
    report_items: Vec<(usize, String, Outcome)>,
}

/// Converts a collection (on the big stack).
pub(super) fn convert(
    source: Source<'_>,
    options: &Options<'_>,
) -> Result<Converted, ConvertError> {
    let root = parse_json(&source)?;
    let Value::Object(top) = &root else {
        return Err(source.unusable(
            0,
            "not a Postman collection: the top level is not an object",
        ));
    };
    let schema = top
        .get("info")
        .and_then(|i| i.get("schema"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if schema.contains("v1.") || (!top.contains_key("item") && top.contains_key("requests")) {
        return Err(source.unusable(
            0,
            "a Postman v1 collection: export it again as Collection v2.1 (Export, then v2.1)",
        ));
    }
    let Some(Value::Array(items)) = top.get("item") else {
        return Err(source.unusable(0, "not a Postman collection: no `item` list of requests"));
    };
    let spans = spans::locate(source.text);
    let name = top
        .get("info")
        .and_then(|i| i.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("postman")
        .to_string();

    let mut vars = Vars::default();
    for (k, v) in variables(top.get("variable"), "disabled", true) {
        vars.values.insert(k, v);
    }
    if let Some(env) = &options.environment {
        let env_root = parse_json(env)?;
        for (k, v) in variables(env_root.get("values"), "enabled", false) {
            vars.values.insert(k, v);
        }
    }

    let mut walker = Walker {
        source: &source,
        spans: &spans,
        ordinal: 0,
        count: 0,
        report_items: Vec::new(),
    };
    let inherited = Inherited {
        auth: top.get("auth").filter(|a| !a.is_null()),
        scripts: scripts_of(top.get("event"), Owner::Collection),
    };
    let mut flows: Vec<Flow<'_>> = Vec::new();
    let mut top_flow: Option<usize> = None;
    for item in items {
        if item.get("item").is_some() {
            let folder = item.get("name").and_then(Value::as_str).unwrap_or("folder");
            let mut flow = Flow {
                name: folder.to_string(),
                requests: Vec::new(),
            };
            walker.folder(item, &inherited, &mut flow.requests, 1)?;
            if !flow.requests.is_empty() {
                flows.push(flow);
            }
        } else {
            let mut found = Vec::new();
            walker.item(item, &inherited, &mut found, 1)?;
            let index = *top_flow.get_or_insert_with(|| {
                flows.push(Flow {
                    name: name.clone(),
                    requests: Vec::new(),
                });
                flows.len() - 1
            });
            flows[index].requests.extend(found);
        }
    }
    if flows.is_empty() {
        return Err(source.unusable(0, "the collection holds no request"));
    }
    let dir = Path::new(source.file)
        .parent()
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let mut writer = Writer {
        source: &source,
        spans: &spans,
        vars,
        report: Report::new(source.file, "requests"),
        translated: HashMap::new(),
        dir,
        target: None,
        placeholder: false,
    };
    for (offset, construct, outcome) in walker.report_items {
        writer.push(offset, &construct, outcome);
    }
    writer.write(&name, &flows)
}

/// `{key, value}` pairs of a variable list, skipping disabled ones (`flag` is the
/// field that says so, `on` whether true means enabled).
fn variables(list: Option<&Value>, flag: &str, disabled_when_true: bool) -> Vec<(String, String)> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| match v.get(flag).and_then(Value::as_bool) {
            Some(b) => b != disabled_when_true,
            None => true,
        })
        .filter_map(|v| {
            let key = v.get("key").and_then(Value::as_str)?;
            let value = match v.get("value") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            Some((key.to_string(), value))
        })
        .collect()
}

/// The enabled scripts of an `event` list.
fn scripts_of(events: Option<&Value>, owner: Owner) -> Vec<ScriptRef> {
    let mut out = Vec::new();
    for (event, e) in events
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if e.get("disabled").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        let listen = match e.get("listen").and_then(Value::as_str) {
            Some("test") => Listen::Test,
            Some("prerequest") => Listen::PreRequest,
            _ => continue,
        };
        let lines: Vec<String> = match e.get("script").and_then(|s| s.get("exec")) {
            Some(Value::Array(lines)) => lines
                .iter()
                .map(|l| l.as_str().unwrap_or_default().to_string())
                .collect(),
            Some(Value::String(text)) => vec![text.clone()],
            _ => continue,
        };
        let text = lines.join("\n");
        // A single `exec` string holds many lines: split so positions resolve.
        let lines = text.split('\n').map(String::from).collect();
        out.push(ScriptRef {
            owner,
            event,
            listen,
            text,
            lines,
        });
    }
    out
}

impl Walker<'_> {
    /// A folder's items, flattened in order.
    fn folder<'v>(
        &mut self,
        folder: &'v Value,
        inherited: &Inherited<'v>,
        out: &mut Vec<Req<'v>>,
        depth: usize,
    ) -> Result<(), ConvertError> {
        let ordinal = self.ordinal;
        self.ordinal += 1;
        let at = self.spans.items.get(ordinal).copied().unwrap_or(0);
        if depth > MAX_DEPTH {
            return Err(self
                .source
                .limit(at, "folders nested deeper than", MAX_DEPTH));
        }
        let mut inner = inherited.clone();
        if let Some(auth) = folder.get("auth").filter(|a| !a.is_null()) {
            if auth.get("type").and_then(Value::as_str) != Some("inherit") {
                inner.auth = Some(auth);
            }
        }
        inner
            .scripts
            .extend(scripts_of(folder.get("event"), Owner::Item(ordinal)));
        for item in folder
            .get("item")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if item.get("item").is_some() {
                self.folder(item, &inner, out, depth + 1)?;
            } else {
                self.item(item, &inner, out, depth + 1)?;
            }
        }
        Ok(())
    }

    /// One request item.
    fn item<'v>(
        &mut self,
        item: &'v Value,
        inherited: &Inherited<'v>,
        out: &mut Vec<Req<'v>>,
        depth: usize,
    ) -> Result<(), ConvertError> {
        let ordinal = self.ordinal;
        self.ordinal += 1;
        let at = self.spans.items.get(ordinal).copied().unwrap_or(0);
        if depth > MAX_DEPTH {
            return Err(self
                .source
                .limit(at, "folders nested deeper than", MAX_DEPTH));
        }
        let name = item
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("request");
        // A request's name labels its statistics: a huge one is cut, not carried.
        let name: String = name.chars().take(MAX_NAME).collect();
        let Some(request) = item
            .get("request")
            .filter(|r| r.is_object() || r.is_string())
        else {
            self.report_items.push((
                at,
                name,
                Outcome::LeftOut("an item with neither a request nor items".into()),
            ));
            return Ok(());
        };
        self.count += 1;
        if self.count > MAX_ITEMS {
            return Err(self.source.limit(at, "more requests than", MAX_ITEMS));
        }
        let mut scripts = inherited.scripts.clone();
        scripts.extend(scripts_of(item.get("event"), Owner::Item(ordinal)));
        let auth = match request.get("auth").filter(|a| !a.is_null()) {
            Some(a) if a.get("type").and_then(Value::as_str) == Some("inherit") => inherited.auth,
            Some(a) => Some(a),
            None => inherited.auth,
        };
        out.push(Req {
            ordinal,
            name,
            request,
            auth,
            scripts,
        });
        Ok(())
    }
}

/// Writes the scenario.
struct Writer<'s> {
    source: &'s Source<'s>,
    spans: &'s Spans,
    vars: Vars,
    report: Report,
    /// Scripts translated already (an inherited script is reported once).
    translated: HashMap<(Owner, usize), Effects>,
    dir: std::path::PathBuf,
    target: Option<String>,
    placeholder: bool,
}

impl Writer<'_> {
    fn push(&mut self, offset: usize, construct: &str, outcome: Outcome) {
        let (line, column) = self.source.line_column(offset);
        self.report.push(line, column, construct, outcome);
    }

    fn item_offset(&self, ordinal: usize) -> usize {
        self.spans.items.get(ordinal).copied().unwrap_or(0)
    }

    /// The effects of a script, reporting its statements the first time.
    fn script(&mut self, s: &ScriptRef) -> Effects {
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

    fn write(mut self, name: &str, flows: &[Flow<'_>]) -> Result<Converted, ConvertError> {
        // Pass 1: what each request captures, and which captured names another flow
        // reads (those are captured in `setup:` too).
        let mut captures_of: HashMap<usize, Vec<(String, String)>> = HashMap::new();
        // Name → the last request of an earlier flow that captures it.
        let mut captured_in: HashMap<String, usize> = HashMap::new();
        let mut setup_vars: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for flow in flows {
            let mut here: HashMap<String, usize> = HashMap::new();
            for req in &flow.requests {
                for name in referenced(req) {
                    if here.contains_key(&name) {
                        continue;
                    }
                    if let Some(&ordinal) = captured_in.get(&name) {
                        let list = setup_vars.entry(ordinal).or_default();
                        if !list.contains(&name) {
                            list.push(name);
                        }
                    }
                }
                let mut caps = Vec::new();
                for s in &req.scripts {
                    let effects = self.script(s);
                    if s.listen == Listen::Test {
                        caps.extend(effects.captures);
                    }
                }
                for (name, _) in &caps {
                    here.insert(name.clone(), req.ordinal);
                }
                captures_of.insert(req.ordinal, caps);
            }
            captured_in.extend(here);
        }

        // Setup: the capturing requests another flow depends on, in flow order; each
        // reads what the setup steps before it captured by its plain name.
        let mut setup = Vec::new();
        let mut in_setup: HashMap<String, Avail> = HashMap::new();
        let mut for_flows: HashMap<String, Avail> = HashMap::new();
        let base_values = self.vars.values.clone();
        for flow in flows {
            for req in &flow.requests {
                let Some(names) = setup_vars.get(&req.ordinal) else {
                    continue;
                };
                self.vars.captured = in_setup.clone();
                let Some(mut step) = self.step(req, &[], false)? else {
                    continue;
                };
                let mut capture = Yaml::map();
                for (n, from) in captures_of.get(&req.ordinal).into_iter().flatten() {
                    if names.contains(n) {
                        let id = identifier(n);
                        capture.set(&id, from.as_str());
                        in_setup.insert(n.clone(), Avail::Flow(id.clone()));
                        for_flows.insert(n.clone(), Avail::Setup(id));
                    }
                }
                step.set("capture", capture);
                setup.push(step);
            }
        }
        self.vars.values = base_values;

        // The flows.
        let mut flow_yaml = Vec::new();
        for flow in flows {
            self.vars.captured = for_flows.clone();
            let mut steps = Vec::new();
            for req in &flow.requests {
                let caps = captures_of.get(&req.ordinal).cloned().unwrap_or_default();
                if let Some(step) = self.step(req, &caps, true)? {
                    steps.push(step);
                }
            }
            if !steps.is_empty() {
                flow_yaml.push(
                    Yaml::map()
                        .with("name", flow.name.as_str())
                        .with("steps", Yaml::Seq(steps)),
                );
            }
        }
        if flow_yaml.is_empty() {
            return Err(self
                .source
                .unusable(0, "no request of the collection could be converted"));
        }

        let target = self.target.clone().unwrap_or_else(|| {
            self.placeholder = true;
            PLACEHOLDER_TARGET.to_string()
        });
        let mut doc = Yaml::map()
            .with("name", name)
            .with("target", target.as_str())
            .with(
                "load",
                Yaml::map().with("rate", 1i64).with("duration", "10s"),
            );
        if !setup.is_empty() {
            doc.set("setup", Yaml::Seq(setup));
        }
        doc.set("flows", Yaml::Seq(flow_yaml));
        let mut comments = vec![format!(
            "Made by `headroom convert postman` from {}; set the load before a real run.",
            self.source.file
        )];
        if self.placeholder {
            comments.push(format!(
                "No request names its host: {PLACEHOLDER_TARGET} is a placeholder; run with --url."
            ));
        }
        if !self.vars.undefined.is_empty() {
            let names: Vec<String> = self.vars.undefined.values().cloned().collect();
            comments.push(format!(
                "Defined nowhere, read from the environment when the scenario loads: {}",
                names.join(", ")
            ));
        }
        // The report reads in the collection's order.
        self.report.items.sort_by_key(|i| (i.line, i.column));
        let c = self.report.counts();
        if c.left_out > 0 {
            comments.push(format!(
                "{} construct(s) left out: see the translation report.",
                c.left_out
            ));
        }
        Ok(Converted {
            yaml: doc.document(&comments),
            report: self.report,
        })
    }

    /// One request as a flow step (None when left out); `caps` are its captures,
    /// `in_flow` whether it is a flow step (reported, checked) or a setup copy.
    fn step(
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

/// The variable names a request's strings (and its auth's) refer to.
fn referenced(req: &Req<'_>) -> Vec<String> {
    let mut names = Vec::new();
    let mut stack: Vec<&Value> = vec![req.request];
    stack.extend(req.auth);
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => {
                names.extend(references(s, 1000).into_iter().map(String::from));
            }
            Value::Array(a) => stack.extend(a),
            Value::Object(o) => stack.extend(o.values()),
            _ => {}
        }
    }
    names
}
