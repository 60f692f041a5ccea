//! Compiling a flow: steps in order, each a request (with captures), a think time, a
//! stream step, a `group:` of steps or a `parallel:` set of requests, any of them
//! under `if:` and `repeat:`; and its `once:` steps. A step may use only the variables
//! captured by the steps before it (and the user's: `data.`, `setup.`, `cookie.`).

use std::sync::Arc;

use serde_saphyr::Spanned;

use super::errors::{ScenarioError, Source};
use super::format::{FlowSpec, StepSpec};
use super::requests::{self, Context};
use super::streams::{self, FlowStreams};
use super::values::think;
use headroom_plan::journey::{Block, Parallel, ResponseCapture};
use headroom_plan::{Flow, Protocol, Step};
use headroom_template::{Condition, Escape, Template};

/// Most requests one `parallel:` step sends at once.
const MAX_PARALLEL: usize = 64;
/// Deepest nesting of `group:` steps.
const MAX_DEPTH: usize = 8;

/// Compiles the flow at `path` (`flows[0]`).
pub(crate) fn compile(
    cx: &mut Context<'_>,
    spec: &Spanned<FlowSpec>,
    path: &str,
) -> Result<Flow, ScenarioError> {
    let src = cx.src;
    let flow = &spec.value;
    let mut captured: Vec<String> = cx.user_vars.clone();
    let mut flow_streams = FlowStreams::default();
    let mut at = Where {
        flow: &flow.name.value,
        captured: &mut captured,
        streams: &mut flow_streams,
        depth: 0,
        streams_allowed: false,
    };
    let once = steps(cx, &flow.once, &format!("{path}.once"), &mut at)?;
    at.streams_allowed = true;
    let steps = steps(cx, &flow.steps, &format!("{path}.steps"), &mut at)?;
    if !steps.iter().any(|s| !matches!(s, Step::Think(_))) {
        return Err(src.of(
            spec,
            &format!("{path}.steps"),
            "expected at least one `request` or stream step",
        ));
    }
    Ok(Flow {
        name: flow.name.value.clone(),
        steps,
        once,
    })
}

/// Where steps are being compiled: the flow, what earlier steps captured, its streams.
pub(crate) struct Where<'a> {
    /// The flow's name (a step's default request name is `FLOW[i]`).
    pub(crate) flow: &'a str,
    /// Variables captured so far, with the user's.
    pub(crate) captured: &'a mut Vec<String>,
    /// The flow's streams.
    pub(crate) streams: &'a mut FlowStreams,
    /// How many groups the steps are inside.
    pub(crate) depth: usize,
    /// Whether stream steps may be here (not inside `once:`, blocks or `setup:`).
    pub(crate) streams_allowed: bool,
}

/// Compiles a list of steps at `path` (`flows[0].steps`).
pub(crate) fn steps(
    cx: &mut Context<'_>,
    specs: &[Spanned<StepSpec>],
    path: &str,
    at: &mut Where<'_>,
) -> Result<Vec<Step>, ScenarioError> {
    let mut out = Vec::with_capacity(specs.len());
    for (i, step) in specs.iter().enumerate() {
        out.push(wrapped(cx, step, &format!("{path}[{i}]"), i, at)?);
    }
    Ok(out)
}

/// One step with its `if:` and `repeat:`.
fn wrapped(
    cx: &mut Context<'_>,
    step: &Spanned<StepSpec>,
    path: &str,
    i: usize,
    at: &mut Where<'_>,
) -> Result<Step, ScenarioError> {
    let src = cx.src;
    let s = &step.value;
    let when = match &s.when {
        Some(w) => {
            let c =
                Condition::compile(&w.value).map_err(|e| src.of(w, &format!("{path}.if"), e))?;
            check_vars(src, w, &format!("{path}.if"), c.variables(), at.captured)?;
            Some(c)
        }
        None => None,
    };
    let repeat = match &s.repeat {
        Some(node) => Some(repeat(src, node, &format!("{path}.repeat"), at.captured)?),
        None => None,
    };
    let blocked = when.is_some() || repeat.is_some();
    let allowed = at.streams_allowed;
    if blocked {
        at.streams_allowed = false;
    }
    let inner = one(cx, step, path, i, at);
    at.streams_allowed = allowed;
    let inner = inner?;
    if !blocked {
        return Ok(inner);
    }
    Ok(Step::Block(Arc::new(Block {
        when,
        repeat,
        group: None,
        steps: vec![inner],
    })))
}

/// Reads `repeat:`: a count, or a template rendered to one.
fn repeat(
    src: Source<'_>,
    node: &super::format::Node,
    path: &str,
    known: &[String],
) -> Result<Template, ScenarioError> {
    let text = match &node.value {
        serde_json::Value::Number(n) if n.as_u64().is_some() => n.to_string(),
        serde_json::Value::String(s) => s.clone(),
        other => {
            return Err(src.of(
                node,
                path,
                format!(
                    "expected a count or a template such as \"{{{{ n }}}}\", found {}",
                    super::errors::found(other)
                ),
            ))
        }
    };
    let t = Template::compile(&text, Escape::None).map_err(|e| src.of(node, path, e))?;
    check_vars(src, node, path, t.variables(), known)?;
    if let Some(fixed) = t.as_static() {
        if fixed.trim().parse::<u64>().is_err() {
            return Err(src.of(node, path, format!("expected a count, found {fixed:?}")));
        }
    }
    Ok(t)
}

/// Checks that every variable a condition or count reads is known here.
fn check_vars<T>(
    src: Source<'_>,
    node: &Spanned<T>,
    path: &str,
    vars: Vec<&str>,
    known: &[String],
) -> Result<(), ScenarioError> {
    for var in vars {
        if var.starts_with("cookie.") || known.iter().any(|k| k == var) {
            continue;
        }
        let have = if known.is_empty() {
            "none".to_string()
        } else {
            known.join(", ")
        };
        return Err(src.of(
            node,
            path,
            format!("`{var}` is not known here (known so far: {have})"),
        ));
    }
    Ok(())
}

/// One step, without its `if:` and `repeat:`.
fn one(
    cx: &mut Context<'_>,
    step: &Spanned<StepSpec>,
    step_path: &str,
    i: usize,
    at: &mut Where<'_>,
) -> Result<Step, ScenarioError> {
    let src = cx.src;
    let s = &step.value;
    let kinds = [
        s.request.as_ref().map(|r| ("request", r.referenced)),
        s.think.as_ref().map(|t| ("think", t.referenced)),
        s.ws.as_ref().map(|t| ("ws", t.referenced)),
        s.sse.as_ref().map(|t| ("sse", t.referenced)),
        s.grpc.as_ref().map(|t| ("grpc", t.referenced)),
        s.group.as_ref().map(|t| ("group", t.referenced)),
        s.parallel.as_ref().map(|t| ("parallel", t.referenced)),
    ];
    let given: Vec<_> = kinds.into_iter().flatten().collect();
    if given.len() > 1 {
        let (key, loc) = given[1];
        return Err(src.at(
            loc,
            &format!("{step_path}.{key}"),
            format!(
                "a step is one of `request`, `think`, `ws`, `sse`, `grpc`, `group` or \
                 `parallel`; `{}` and `{key}` were both given",
                given[0].0
            ),
        ));
    }
    let Some(&(kind, _)) = given.first() else {
        return Err(src.of(
            step,
            step_path,
            "expected a `request`, `think`, `ws`, `sse`, `grpc`, `group` or `parallel` step",
        ));
    };
    if !matches!(kind, "request" | "parallel") {
        if let Some((var, value)) = s.capture.iter().next() {
            let msg = match kind {
                "think" => "a think step has no response to capture from".to_string(),
                "group" => "put captures on the group's steps".to_string(),
                _ => format!("put a stream step's captures inside `{kind}:`"),
            };
            return Err(src.of(value, &format!("{step_path}.capture.{var}"), msg));
        }
    }
    match kind {
        "request" => {
            let request = s.request.as_ref().expect("given");
            if let Some(w) = &request.value.weight {
                return Err(src.of(
                    w,
                    &format!("{step_path}.request.weight"),
                    "not allowed in a flow step; weight the whole flow",
                ));
            }
            // (name, whether the step names itself): a GraphQL operation name
            // beats a made-up `flow[i]`, not the step's own name.
            let default_name = s.name.as_ref().map_or_else(
                || (format!("{}[{i}]", at.flow), false),
                |n| (n.value.clone(), true),
            );
            let request = requests::compile(
                cx,
                request,
                &format!("{step_path}.request"),
                Some(default_name),
                Some(at.captured),
            )?;
            let captures = captures(src, s, step_path)?;
            at.captured.extend(captures.iter().map(|c| c.var.clone()));
            cx.captured.extend(captures.iter().map(|c| c.var.clone()));
            Ok(Step::Request {
                request: Arc::new(request),
                captures,
            })
        }
        "think" => Ok(Step::Think(think(
            src,
            s.think.as_ref().expect("given"),
            &format!("{step_path}.think"),
        )?)),
        "group" => {
            let group = s.group.as_ref().expect("given");
            if at.depth >= MAX_DEPTH {
                return Err(src.of(
                    group,
                    &format!("{step_path}.group"),
                    format!("groups nest at most {MAX_DEPTH} deep"),
                ));
            }
            let name = &group.value.name.value;
            let id = match cx.groups.iter().position(|g| g == name) {
                Some(id) => id,
                None => {
                    cx.groups.push(name.clone());
                    cx.groups.len() - 1
                }
            };
            let allowed = at.streams_allowed;
            at.streams_allowed = false;
            at.depth += 1;
            let inner = steps(
                cx,
                &group.value.steps,
                &format!("{step_path}.group.steps"),
                at,
            );
            at.depth -= 1;
            at.streams_allowed = allowed;
            let inner = inner?;
            if inner.is_empty() {
                return Err(src.of(
                    group,
                    &format!("{step_path}.group.steps"),
                    "expected at least one step in a group",
                ));
            }
            Ok(Step::Block(Arc::new(Block {
                when: None,
                repeat: None,
                group: Some(id),
                steps: inner,
            })))
        }
        "parallel" => {
            let list = s.parallel.as_ref().expect("given");
            if list.value.is_empty() || list.value.len() > MAX_PARALLEL {
                return Err(src.of(
                    list,
                    &format!("{step_path}.parallel"),
                    format!(
                        "expected 1 to {MAX_PARALLEL} requests, found {}",
                        list.value.len()
                    ),
                ));
            }
            if let Some((var, value)) = s.capture.iter().next() {
                return Err(src.of(
                    value,
                    &format!("{step_path}.capture.{var}"),
                    "requests sent at once capture nothing: capture in a step of its own",
                ));
            }
            let mut requests = Vec::with_capacity(list.value.len());
            for (j, r) in list.value.iter().enumerate() {
                let default_name = (format!("{}[{i}][{j}]", at.flow), false);
                let compiled = requests::compile(
                    cx,
                    r,
                    &format!("{step_path}.parallel[{j}]"),
                    Some(default_name),
                    Some(at.captured),
                )?;
                requests.push((Arc::new(compiled), Vec::new()));
            }
            Ok(Step::Parallel(Arc::new(Parallel { requests })))
        }
        _ => {
            let (protocol, spec) = [
                (Protocol::Ws, &s.ws),
                (Protocol::Sse, &s.sse),
                (Protocol::Grpc, &s.grpc),
            ]
            .into_iter()
            .find_map(|(p, spec)| spec.as_ref().map(|spec| (p, spec)))
            .expect("a stream step");
            let key = protocol.as_str();
            if !at.streams_allowed {
                return Err(src.of(
                    spec,
                    &format!("{step_path}.{key}"),
                    "stream steps run at the top of a flow's `steps`: not in `once`, \
                     `setup`, a group, or under `if`/`repeat`",
                ));
            }
            let compiled = streams::compile(
                cx,
                protocol,
                spec,
                &format!("{step_path}.{key}"),
                s.name.as_ref().map(|n| n.value.as_str()),
                at.captured,
                at.streams,
            )?;
            at.captured
                .extend(compiled.captures.iter().map(|c| c.var.clone()));
            cx.captured
                .extend(compiled.captures.iter().map(|c| c.var.clone()));
            Ok(Step::Stream(Arc::new(compiled)))
        }
    }
}

fn captures(
    src: Source<'_>,
    step: &StepSpec,
    path: &str,
) -> Result<Vec<ResponseCapture>, ScenarioError> {
    super::captures::captures(src, &step.capture, path)
}
