//! The scenario assembled from the flows: what each request captures, the capturing
//! requests another flow reads copied into `setup:` (each reading what the setup
//! steps before it captured), the flows' steps, and the document with its target
//! and comments.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::effects::Listen;
use super::step::Writer;
use super::vars::Avail;
use super::walk::{Flow, Req};
use crate::tpl::{identifier, references};
use crate::{ConvertError, Converted, Yaml};

/// The target written when no request names its host.
const PLACEHOLDER_TARGET: &str = "http://127.0.0.1:8080";

impl Writer<'_> {
    /// The scenario named `name` of `flows`, and the report.
    pub(super) fn write(
        mut self,
        name: &str,
        flows: &[Flow<'_>],
    ) -> Result<Converted, ConvertError> {
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
