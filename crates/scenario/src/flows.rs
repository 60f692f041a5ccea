//! Compiling a flow: steps in order, each a request (with captures) or a think time.
//! A step may use only the variables captured by the steps before it.

use std::sync::Arc;

use serde_saphyr::Spanned;

use super::errors::{ScenarioError, Source};
use super::fields::captures_of;
use super::format::FlowSpec;
use super::requests::{self, Context};
use super::streams::{self, FlowStreams};
use super::values::think;
use headroom_plan::{Capture, Flow, Protocol, Step};

/// Compiles the flow at `path` (`flows[0]`).
pub(crate) fn compile(
    cx: &mut Context<'_>,
    spec: &Spanned<FlowSpec>,
    path: &str,
) -> Result<Flow, ScenarioError> {
    let src = cx.src;
    let flow = &spec.value;
    let mut captured: Vec<String> = Vec::new();
    let mut steps = Vec::with_capacity(flow.steps.len());
    let mut flow_streams = FlowStreams::default();
    for (i, step) in flow.steps.iter().enumerate() {
        let step_path = format!("{path}.steps[{i}]");
        let s = &step.value;
        let stream = [
            (Protocol::Ws, &s.ws),
            (Protocol::Sse, &s.sse),
            (Protocol::Grpc, &s.grpc),
        ]
        .into_iter()
        .filter_map(|(p, spec)| spec.as_ref().map(|spec| (p, spec)))
        .collect::<Vec<_>>();
        if let Some((protocol, spec)) = stream.first() {
            let key = protocol.as_str();
            if stream.len() > 1 || s.request.is_some() || s.think.is_some() {
                return Err(src.of(
                    spec,
                    &format!("{step_path}.{key}"),
                    "a step is one of `request`, `think`, `ws`, `sse` or `grpc`",
                ));
            }
            if let Some((var, value)) = s.capture.iter().next() {
                return Err(src.of(
                    value,
                    &format!("{step_path}.capture.{var}"),
                    format!("put a stream step's captures inside `{key}:`"),
                ));
            }
            let compiled = streams::compile(
                cx,
                *protocol,
                spec,
                &format!("{step_path}.{key}"),
                s.name.as_ref().map(|n| n.value.as_str()),
                &captured,
                &mut flow_streams,
            )?;
            captured.extend(compiled.captures.iter().map(|c| c.var.clone()));
            steps.push(Step::Stream(Arc::new(compiled)));
            continue;
        }
        match (&s.request, &s.think) {
            (Some(request), None) => {
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
                    || (format!("{}[{i}]", flow.name.value), false),
                    |n| (n.value.clone(), true),
                );
                let request = requests::compile(
                    cx,
                    request,
                    &format!("{step_path}.request"),
                    Some(default_name),
                    Some(&captured),
                )?;
                let captures = captures(src, s, &step_path)?;
                captured.extend(captures.iter().map(|c| c.var.clone()));
                steps.push(Step::Request {
                    request: Arc::new(request),
                    captures,
                });
            }
            (None, Some(node)) => {
                if let Some((var, value)) = s.capture.iter().next() {
                    return Err(src.of(
                        value,
                        &format!("{step_path}.capture.{var}"),
                        "a think step has no response to capture from",
                    ));
                }
                steps.push(Step::Think(think(
                    src,
                    node,
                    &format!("{step_path}.think"),
                )?));
            }
            (Some(_), Some(node)) => {
                return Err(src.of(
                    node,
                    &format!("{step_path}.think"),
                    "a step is either a `request` or a `think`, not both",
                ));
            }
            (None, None) => {
                return Err(src.of(
                    step,
                    &step_path,
                    "expected a `request`, `think`, `ws`, `sse` or `grpc` step",
                ));
            }
        }
    }
    if !steps
        .iter()
        .any(|s| matches!(s, Step::Request { .. } | Step::Stream(_)))
    {
        return Err(src.of(
            spec,
            &format!("{path}.steps"),
            "expected at least one `request` or stream step",
        ));
    }
    Ok(Flow {
        name: flow.name.value.clone(),
        steps,
    })
}

fn captures(
    src: Source<'_>,
    step: &super::format::StepSpec,
    path: &str,
) -> Result<Vec<Capture>, ScenarioError> {
    captures_of(src, &step.capture, path)
}
