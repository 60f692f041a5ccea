//! The walk's results as a scenario: `setup()` first (its return value becomes
//! `{{ setup.NAME }}` references), then each exec function's flow, `teardown()`, the
//! load and thresholds from `options`, all written as a person would write them.

use std::collections::HashMap;

use oxc_span::Span;

use super::options::LoadPlan;
use super::value::{FnRef, Value};
use super::{Body, Interp, Phase, Req, Step};
use crate::{ConvertError, Yaml};

impl<'a> Interp<'a, '_> {
    /// Walks the exported functions and writes the scenario.
    pub(crate) fn scenario(&mut self, at: Span) -> Result<Yaml, ConvertError> {
        let exports = self.exports.clone();
        let find = |name: &str| exports.iter().find(|(n, _)| n == name).map(|(_, f)| *f);
        let mut used: Vec<String> = ["setup", "teardown", "default", "handleSummary"]
            .map(String::from)
            .to_vec();
        let mut setup_steps = Vec::new();
        let mut data = Value::Undefined;
        if let Some(f) = find("setup") {
            let span = fn_span(f);
            let first = self.reqs.len();
            let (steps, ret) = self.walk(f, Phase::Setup, Vec::new(), span)?;
            self.phase = Phase::Setup;
            data = self.setup_value(ret, span);
            self.phase = Phase::Init;
            for req in &self.reqs[first..] {
                self.setup_captures
                    .extend(req.captures.iter().map(|(n, _)| n.clone()));
            }
            setup_steps = steps;
            self.ok(span, "setup()");
        }
        let options = self.options_value.take();
        let plan = self.load_plan(options);
        let mut flows: Vec<(String, Vec<Step>)> = Vec::new();
        for w in &plan.workloads {
            if flows.iter().any(|(n, _)| *n == w.exec) {
                continue;
            }
            used.push(w.exec.clone());
            match find(&w.exec) {
                Some(f) => {
                    let (steps, _) = self.walk(f, Phase::Flow, vec![data.clone()], fn_span(f))?;
                    flows.push((w.exec.clone(), steps));
                }
                None => self.left(
                    at,
                    format!("exec {}", w.exec),
                    "the script exports no function of that name",
                ),
            }
        }
        let mut teardown_steps = Vec::new();
        if let Some(f) = find("teardown") {
            let (steps, _) = self.walk(f, Phase::Teardown, vec![data.clone()], fn_span(f))?;
            teardown_steps = steps;
            self.ok(fn_span(f), "teardown()");
        }
        if let Some(f) = find("handleSummary") {
            self.left(
                fn_span(f),
                "handleSummary",
                "headroom writes its own reports (`--out`, `headroom report`)",
            );
        }
        for (name, f) in &exports {
            if !used.contains(name) {
                self.left(
                    fn_span(*f),
                    format!("export {name}"),
                    "no scenario runs this function",
                );
            }
        }
        self.document(plan, flows, setup_steps, teardown_steps, at)
    }

    /// What `setup()` returned, as flows see it: what it read of responses becomes
    /// captures of the setup requests, referred to as `{{ setup.NAME }}`.
    fn setup_value(&mut self, v: Value<'a>, span: Span) -> Value<'a> {
        match v {
            Value::Object(entries) => Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, self.setup_value(v, span)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(
                items
                    .into_iter()
                    .map(|v| self.setup_value(v, span))
                    .collect(),
            ),
            v @ (Value::RespRead(..) | Value::Tpl(_)) => match self.text(v, span) {
                Ok(text) => {
                    let mut text = text;
                    let names: Vec<String> = self
                        .reqs
                        .iter()
                        .flat_map(|r| r.captures.iter().map(|(n, _)| n.clone()))
                        .collect();
                    for n in names {
                        text = text
                            .replace(&format!("{{{{ {n} }}}}"), &format!("{{{{ setup.{n} }}}}"));
                    }
                    Value::Tpl(text)
                }
                Err(why) => Value::Unknown(why.0),
            },
            v => v,
        }
    }

    /// The scenario document.
    fn document(
        &mut self,
        plan: LoadPlan,
        flows: Vec<(String, Vec<Step>)>,
        setup: Vec<Step>,
        teardown: Vec<Step>,
        at: Span,
    ) -> Result<Yaml, ConvertError> {
        let Some(target) = self.target.clone() else {
            // Say why the requests there were are left out: the user's next step.
            let first = self.report.items.iter().find_map(|i| match &i.outcome {
                crate::Outcome::LeftOut(why) if i.construct.starts_with("http.") => {
                    Some(format!(" (line {}: {why})", i.line))
                }
                _ => None,
            });
            return Err(self.src.unusable(
                at.start as usize,
                format!(
                    "no request with a URL known before the run: nothing to convert{}",
                    first.unwrap_or_default()
                ),
            ));
        };
        let stem = std::path::Path::new(self.src.file)
            .file_stem()
            .map_or_else(|| "k6".to_string(), |s| s.to_string_lossy().into_owned());
        let mut doc = Yaml::map().with("name", stem).with("target", target);
        if !plan.client.is_empty() {
            doc.set("client", Yaml::Map(plan.client.clone()));
        }
        if !plan.headers.is_empty() {
            let h = Yaml::Map(
                plan.headers
                    .iter()
                    .map(|(k, v)| (k.clone(), Yaml::str(v.clone())))
                    .collect(),
            );
            doc.set("defaults", Yaml::map().with("headers", h));
        }
        let workloads: Vec<_> = plan
            .workloads
            .iter()
            .filter(|w| flows.iter().any(|(n, s)| *n == w.exec && has_request(s)))
            .cloned()
            .collect();
        if workloads.is_empty() {
            return Err(self.src.unusable(
                at.start as usize,
                "no function a scenario runs sends a request",
            ));
        }
        let single = workloads.len() == 1 && workloads[0].start.is_none();
        if single {
            doc.set("load", workloads[0].load.clone());
        }
        if !self.data.is_empty() {
            let mut d = Yaml::map();
            for f in &self.data {
                d.set(
                    &f.name,
                    Yaml::map()
                        .with("file", f.file.clone())
                        .with("pick", f.pick.unwrap_or("sequential")),
                );
            }
            doc.set("data", d);
        }
        let names: Vec<String> = self.reqs.iter().filter_map(|r| r.name.clone()).collect();
        let wnames: Vec<String> = if single {
            Vec::new()
        } else {
            workloads.iter().map(|w| w.name.clone()).collect()
        };
        let placed = match plan.thresholds {
            Some(t) => self.thresholds(t, plan.span, &wnames, &names),
            None => Vec::new(),
        };
        let top: Vec<Yaml> = placed
            .iter()
            .filter(|(w, _)| w.is_none())
            .map(|(_, t)| Yaml::str(t.clone()))
            .collect();
        if !top.is_empty() {
            doc.set("thresholds", Yaml::Seq(top));
        }
        let mut names_seen: HashMap<String, String> = HashMap::new();
        if !setup.is_empty() {
            doc.set("setup", self.steps(&setup, "", &mut names_seen));
        }
        if !teardown.is_empty() {
            doc.set("teardown", self.steps(&teardown, "", &mut names_seen));
        }
        let flow_of = |exec: &str| {
            flows
                .iter()
                .find(|(n, _)| n == exec)
                .map(|(_, s)| s.clone())
                .unwrap_or_default()
        };
        if single {
            let w = &workloads[0];
            let flows = self.flows(&w.exec, &flow_of(&w.exec), "", &mut names_seen);
            doc.set("flows", flows);
        } else {
            let mut list = Vec::new();
            for w in &workloads {
                let mut y = Yaml::map()
                    .with("name", w.name.clone())
                    .with("load", w.load.clone());
                if let Some(s) = &w.start {
                    y.set("start", s.clone());
                }
                let th: Vec<Yaml> = placed
                    .iter()
                    .filter(|(n, _)| n.as_deref() == Some(&w.name))
                    .map(|(_, t)| Yaml::str(t.clone()))
                    .collect();
                if !th.is_empty() {
                    y.set("thresholds", Yaml::Seq(th));
                }
                let flows = self.flows(&w.exec, &flow_of(&w.exec), &w.name, &mut names_seen);
                y.set("flows", flows);
                list.push(y);
            }
            doc.set("workloads", Yaml::Seq(list));
        }
        Ok(doc)
    }

    /// A function's flow as `flows:`: one flow, or one weighted flow per combination
    /// of its random branches ([`Step::Random`]).
    fn flows(
        &self,
        exec: &str,
        steps: &[Step],
        workload: &str,
        seen: &mut HashMap<String, String>,
    ) -> Yaml {
        let variants = expand(steps);
        if variants.len() == 1 {
            return Yaml::Seq(vec![Yaml::map()
                .with("name", exec)
                .with("steps", self.steps(steps, workload, seen))]);
        }
        // Probabilities as integer weights out of 10,000 (a weight of 0 never runs,
        // as a branch of probability 0 never does).
        let weights: Vec<u64> = variants
            .iter()
            .map(|(p, _)| (p * 10_000.0).round() as u64)
            .collect();
        let g = weights.iter().copied().fold(0, gcd).max(1);
        let list = variants
            .iter()
            .zip(&weights)
            .enumerate()
            .map(|(i, ((_, v), w))| {
                Yaml::map()
                    .with("name", format!("{exec} {}", i + 1))
                    .with("weight", w / g)
                    .with("steps", self.steps(v, workload, seen))
            })
            .collect();
        Yaml::Seq(list)
    }

    /// Steps as YAML; `workload` names the workload they are written for (request
    /// names must be unique across workloads: a second workload's copy is renamed).
    fn steps(&self, steps: &[Step], workload: &str, seen: &mut HashMap<String, String>) -> Yaml {
        Yaml::Seq(steps.iter().map(|s| self.step(s, workload, seen)).collect())
    }

    fn step(&self, step: &Step, workload: &str, seen: &mut HashMap<String, String>) -> Yaml {
        match step {
            Step::Request(id) => {
                let req = &self.reqs[*id];
                let mut y = Yaml::map().with("request", request(req, workload, seen));
                if !req.captures.is_empty() {
                    y.set(
                        "capture",
                        Yaml::Map(
                            req.captures
                                .iter()
                                .map(|(n, s)| (n.clone(), Yaml::str(s.clone())))
                                .collect(),
                        ),
                    );
                }
                y
            }
            Step::Think(t) => Yaml::map().with("think", t.clone()),
            Step::Group(name, inner) => Yaml::map().with(
                "group",
                Yaml::map()
                    .with("name", name.clone())
                    .with("steps", self.steps(inner, workload, seen)),
            ),
            Step::If(cond, inner) => match inner.as_slice() {
                [one] if !matches!(one, Step::If(..)) => {
                    let Yaml::Map(mut entries) = self.step(one, workload, seen) else {
                        return Yaml::Null;
                    };
                    entries.insert(0, ("if".into(), Yaml::str(cond.clone())));
                    Yaml::Map(entries)
                }
                _ => Yaml::map().with("if", cond.clone()).with(
                    "group",
                    Yaml::map()
                        .with("name", format!("if {cond}"))
                        .with("steps", self.steps(inner, workload, seen)),
                ),
            },
            // Only at a flow's top level, which `flows` expands; elsewhere (never made)
            // the branches draw separately.
            Step::Random(p, then, otherwise) => {
                let text = format!("chance({})", super::value::number_text(*p));
                let then = self.step(&Step::If(text, then.clone()), workload, seen);
                let other = format!("chance({})", super::value::number_text(1.0 - p));
                let otherwise = self.step(&Step::If(other, otherwise.clone()), workload, seen);
                Yaml::map().with(
                    "group",
                    Yaml::map()
                        .with("name", "random branch")
                        .with("steps", Yaml::Seq(vec![then, otherwise])),
                )
            }
            Step::Parallel(ids) => Yaml::map().with(
                "parallel",
                Yaml::Seq(
                    ids.iter()
                        .map(|id| request(&self.reqs[*id], workload, seen))
                        .collect(),
                ),
            ),
        }
    }
}

/// One request's keys.
fn request(req: &Req, workload: &str, seen: &mut HashMap<String, String>) -> Yaml {
    let mut y = Yaml::map();
    let default_name = format!("{} {}", req.method, req.path);
    let name = req.name.clone().unwrap_or_else(|| default_name.clone());
    let owner = seen
        .entry(name.clone())
        .or_insert_with(|| workload.to_string())
        .clone();
    if owner != workload {
        y.set("name", format!("{name} ({workload})"));
    } else if let Some(n) = &req.name {
        y.set("name", n.clone());
    }
    if req.method != "GET" {
        y.set("method", req.method.clone());
    }
    y.set("path", req.path.clone());
    if !req.headers.is_empty() {
        y.set(
            "headers",
            Yaml::Map(
                req.headers
                    .iter()
                    .map(|(k, v)| (k.clone(), Yaml::str(v.clone())))
                    .collect(),
            ),
        );
    }
    match &req.body {
        Body::None => {}
        Body::Json(j) => y.set("json", j.clone()),
        Body::Raw(b) => y.set("body", b.clone()),
        Body::Form(f) => y.set(
            "form",
            Yaml::Map(
                f.iter()
                    .map(|(k, v)| (k.clone(), Yaml::str(v.clone())))
                    .collect(),
            ),
        ),
    }
    if let Some(t) = &req.timeout {
        y.set("timeout", t.clone());
    }
    if let Some(r) = req.redirects {
        y.set("redirects", r);
    }
    if !req.check.is_empty() {
        y.set("check", Yaml::Map(req.check.clone()));
    }
    y
}

/// The variants of a flow split on its top-level random branches, with their
/// probabilities.
fn expand(steps: &[Step]) -> Vec<(f64, Vec<Step>)> {
    let mut variants = vec![(1.0, Vec::new())];
    for step in steps {
        match step {
            Step::Random(p, then, otherwise) => {
                let mut next = Vec::new();
                for (q, prefix) in &variants {
                    for (r, branch) in [(*p, then), (1.0 - p, otherwise)] {
                        let mut v: Vec<Step> = prefix.clone();
                        v.extend(branch.iter().cloned());
                        next.push((q * r, v));
                    }
                }
                variants = next;
            }
            other => {
                for (_, v) in &mut variants {
                    v.push(other.clone());
                }
            }
        }
    }
    variants
}

/// Greatest common divisor (0 with n is n).
fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Whether any step sends a request.
fn has_request(steps: &[Step]) -> bool {
    steps.iter().any(|s| match s {
        Step::Request(_) | Step::Parallel(_) => true,
        Step::Think(_) => false,
        Step::Group(_, inner) | Step::If(_, inner) => has_request(inner),
        Step::Random(_, a, b) => has_request(a) || has_request(b),
    })
}

/// Where a function starts.
fn fn_span(f: FnRef<'_>) -> Span {
    Span::new(f.start(), f.start())
}
