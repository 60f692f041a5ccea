//! Compiling a stream step (`ws:`, `sse:`, `grpc:` in a flow) into a [`StreamStep`].
//! Checked here, with the file, line and column: the stream's name (a later step may
//! only use a stream an earlier step of the flow opened and did not close), the
//! message to send (templated text or JSON), the `expect:` rule, captures and the
//! close code.

use serde_json::Value;
use serde_saphyr::Spanned;

use super::errors::{found, ScenarioError, Source};
use super::fields::{captures_of, json_path, template};
use super::format::{MessageExpectSpec, Node, StreamSpec};
use super::requests::{self, Context};
use super::values::{duration, positive_int};
use headroom_plan::{JsonExpect, MessageExpect, Protocol, StreamName, StreamStep};
use headroom_template::{Escape, Template};

/// Most matches one `expect.count` may wait for.
const MAX_COUNT: u64 = 100_000;

/// What the steps before the current one did to each stream name of a flow.
#[derive(Debug, Default)]
pub(crate) struct FlowStreams {
    /// Streams opened (and not closed since) by earlier steps, with their protocol.
    open: Vec<(String, Protocol)>,
    /// Streams an earlier step closed, with that step's path.
    closed: Vec<(String, String)>,
}

/// Compiles the stream step `spec` at `path` (`flows[0].steps[2].ws`). `step_name` is
/// the step's own `name:` (outside the protocol's map), `captured` the variables
/// captured so far.
pub(crate) fn compile(
    cx: &mut Context<'_>,
    protocol: Protocol,
    spec: &Spanned<StreamSpec>,
    path: &str,
    step_name: Option<&str>,
    captured: &[String],
    flow: &mut FlowStreams,
) -> Result<StreamStep, ScenarioError> {
    let src = cx.src;
    let s = &spec.value;
    let name = &s.name.value;
    if name.is_empty() || name.len() > 100 || name.chars().any(|c| c.is_whitespace()) {
        return Err(src.of(
            &s.name,
            &format!("{path}.name"),
            format!("expected a stream name (up to 100 characters, no spaces), found {name:?}"),
        ));
    }
    if protocol != Protocol::Grpc {
        for (key, node) in [
            ("call", s.call.as_ref().map(|n| n.referenced)),
            ("proto", s.proto.as_ref().map(|n| n.referenced)),
        ] {
            if let Some(at) = node {
                return Err(src.at(
                    at,
                    &format!("{path}.{key}"),
                    format!("only `grpc:` steps take `{key}`"),
                ));
            }
        }
        if let Some(m) = &s.message {
            return Err(src.of(
                m,
                &format!("{path}.message"),
                "only `grpc:` steps take `message`; use `send`",
            ));
        }
        if let Some((key, value)) = s.metadata.iter().next() {
            return Err(src.of(
                value,
                &format!("{path}.metadata.{key}"),
                "only `grpc:` steps take `metadata`; use `headers`",
            ));
        }
    }
    let vars = Some(captured);
    let grpc = match protocol {
        Protocol::Grpc => super::grpc::compile(src, s, path, vars, cx.proto_paths)?,
        _ => None,
    };
    // A gRPC call opens its stream (a unary call's is over once its reply is in): its
    // "URL" is the method's path on the run's target.
    let call_url = match (&grpc, &s.call) {
        (Some(g), Some(call)) => Some(template(
            src,
            call,
            &format!("{path}.call"),
            &g.method.path,
            Escape::None,
            vars,
        )?),
        _ => None,
    };
    let url = match &s.url {
        _ if call_url.is_some() => call_url,
        Some(u) => {
            if let Some((_, previous)) = flow.open.iter().find(|(n, _)| n == name) {
                if *previous != protocol {
                    return Err(src.of(
                        u,
                        &format!("{path}.url"),
                        format!(
                            "stream {name:?} is already a {} stream in this flow",
                            previous.as_str()
                        ),
                    ));
                }
            }
            Some(template(
                src,
                u,
                &format!("{path}.url"),
                &u.value,
                Escape::None,
                vars,
            )?)
        }
        None => {
            match flow.open.iter().find(|(n, _)| n == name) {
                Some((_, p)) if *p == protocol => None,
                Some((_, p)) => {
                    return Err(src.of(
                        &s.name,
                        &format!("{path}.name"),
                        format!(
                            "stream {name:?} is a {} stream, not {}",
                            p.as_str(),
                            protocol.as_str()
                        ),
                    ));
                }
                None => {
                    let why = match flow.closed.iter().find(|(n, _)| n == name) {
                        Some((_, at)) => format!("stream {name:?} was closed by {at}; give `url` to open it again"),
                        None => format!("no earlier step of this flow opens stream {name:?}; give `url` to open it"),
                    };
                    return Err(src.of(&s.name, &format!("{path}.name"), why));
                }
            }
        }
    };
    let mut headers = Vec::new();
    for (h, value) in &s.headers {
        if url.is_none() {
            return Err(src.of(
                value,
                &format!("{path}.headers.{h}"),
                "headers go with `url`, on the step that opens the stream",
            ));
        }
        headers.push((
            h.clone(),
            requests::header(src, h, value, &format!("{path}.headers.{h}"), vars)?,
        ));
    }
    let send = s
        .send
        .as_ref()
        .map(|n| send(src, n, &format!("{path}.send"), vars))
        .transpose()?;
    if send.is_some() && protocol == Protocol::Sse {
        let n = s.send.as_ref().expect("some");
        return Err(src.of(
            n,
            &format!("{path}.send"),
            "an SSE stream only receives; `send` is for `ws:`",
        ));
    }
    let (expect, expect_timeout) = match &s.expect {
        Some(e) => {
            let (m, t) = expect(src, e, &format!("{path}.expect"), protocol)?;
            (Some(m), t)
        }
        None => (None, None),
    };
    let captures = captures_of(src, &s.capture, path)?;
    if expect.is_none() {
        if let Some((var, node)) = s.capture.iter().next() {
            return Err(src.of(
                node,
                &format!("{path}.capture.{var}"),
                "captures come from the message an `expect` matches; add `expect`",
            ));
        }
    }
    let close = s
        .close
        .as_ref()
        .map(|n| close_code(src, n, &format!("{path}.close")))
        .transpose()?;
    let timeout = s
        .timeout
        .as_ref()
        .map(|t| duration(src, t, &format!("{path}.timeout")))
        .transpose()?;
    let (deadline, every) = held(src, s, path, protocol, url.is_some(), grpc.as_ref())?;
    if url.is_none() && send.is_none() && expect.is_none() && close.is_none() {
        return Err(src.of(
            spec,
            path,
            "expected `url`, `send`, `expect` or `close`: the step does nothing",
        ));
    }

    let stream_id = match cx.streams.iter().position(|st| st.name == *name) {
        Some(i) if cx.streams[i].protocol != protocol => {
            return Err(src.of(
                &s.name,
                &format!("{path}.name"),
                format!(
                    "stream {name:?} is a {} stream elsewhere in the scenario",
                    cx.streams[i].protocol.as_str()
                ),
            ));
        }
        Some(i) => i,
        None => {
            cx.streams.push(StreamName {
                name: name.clone(),
                protocol,
            });
            cx.streams.len() - 1
        }
    };
    let op = if grpc.is_some() {
        "call"
    } else if url.is_some() {
        "open"
    } else if send.is_some() {
        "send"
    } else if expect.is_some() {
        "expect"
    } else {
        "close"
    };
    let metric = step_name.map_or_else(|| format!("{name}.{op}"), str::to_string);
    let name_id = cx.intern(&metric);

    if url.is_some() && !flow.open.iter().any(|(n, _)| n == name) {
        flow.open.push((name.clone(), protocol));
        flow.closed.retain(|(n, _)| n != name);
    }
    if close.is_some() {
        flow.open.retain(|(n, _)| n != name);
        flow.closed.push((name.clone(), path.to_string()));
    }
    Ok(StreamStep {
        protocol,
        name_id,
        stream_id,
        url,
        headers,
        send,
        expect,
        captures,
        close,
        timeout: expect_timeout.or(timeout),
        deadline,
        every,
        grpc,
    })
}

/// `deadline:` (a gRPC call's) and `every:` (the cadence of a stream the step opens;
/// for gRPC, of a server stream), checked where they may appear.
fn held(
    src: Source<'_>,
    s: &StreamSpec,
    path: &str,
    protocol: Protocol,
    opens: bool,
    grpc: Option<&headroom_plan::GrpcCall>,
) -> Result<(Option<std::time::Duration>, Option<std::time::Duration>), ScenarioError> {
    let deadline = match &s.deadline {
        Some(n) if grpc.is_none() => {
            let why = if protocol == Protocol::Grpc {
                "`deadline` goes with `call`, on the step that makes the call"
            } else {
                "only `grpc:` calls have a deadline; a stream ends with a `close` step"
            };
            return Err(src.of(n, &format!("{path}.deadline"), why));
        }
        Some(n) => Some(duration(src, n, &format!("{path}.deadline"))?),
        None => None,
    };
    let every = match &s.every {
        Some(n) if !opens => {
            return Err(src.of(
                n,
                &format!("{path}.every"),
                "`every` states the cadence of the stream a step opens: put it on the step with `url` (or `call`)",
            ))
        }
        Some(n) if grpc.is_some_and(|g| !g.method.server_streaming) => {
            return Err(src.of(
                n,
                &format!("{path}.every"),
                "`every` states a server stream's cadence; this method is unary",
            ))
        }
        Some(n) => Some(duration(src, n, &format!("{path}.every"))?),
        None => None,
    };
    if every.is_some_and(|d| d.is_zero()) {
        let n = s.every.as_ref().expect("some");
        return Err(src.of(n, &format!("{path}.every"), "expected a duration above 0"));
    }
    Ok((deadline, every))
}

/// `send: "text {{ x }}"`, `send: {text: ...}` or `send: {json: {...}}` (JSON
/// serialized once; placeholders in its strings render JSON-escaped).
fn send(
    src: Source<'_>,
    node: &Node,
    path: &str,
    vars: Option<&[String]>,
) -> Result<Template, ScenarioError> {
    match &node.value {
        Value::String(text) => template(src, node, path, text, Escape::None, vars),
        Value::Object(map) if map.len() == 1 => {
            let (key, value) = map.iter().next().expect("one entry");
            match (key.as_str(), value) {
                ("text", Value::String(text)) => {
                    template(src, node, &format!("{path}.text"), text, Escape::None, vars)
                }
                ("json", value) => {
                    let text = serde_json::to_string(value).map_err(|e| src.of(node, path, e))?;
                    template(
                        src,
                        node,
                        &format!("{path}.json"),
                        &text,
                        Escape::Json,
                        vars,
                    )
                }
                _ => Err(src.of(
                    node,
                    path,
                    format!("expected `text: STRING` or `json: VALUE`, found `{key}`"),
                )),
            }
        }
        other => Err(src.of(
            node,
            path,
            format!(
                "expected a text message, `{{text: ...}}` or `{{json: ...}}`, found {}",
                found(other)
            ),
        )),
    }
}

fn expect(
    src: Source<'_>,
    spec: &Spanned<MessageExpectSpec>,
    path: &str,
    protocol: Protocol,
) -> Result<(MessageExpect, Option<std::time::Duration>), ScenarioError> {
    let e = &spec.value;
    let mut json = Vec::new();
    if let Some(q) = &e.jsonpath {
        json.push(JsonExpect {
            path: json_path(src, q, &format!("{path}.jsonpath"), &q.value)?,
            source: q.value.clone(),
            equals: None,
        });
    }
    for (query, value) in &e.json {
        json.push(JsonExpect {
            path: json_path(src, value, &format!("{path}.json.{query}"), query)?,
            source: query.clone(),
            equals: Some(headroom_plan::journey::Expected::Value(value.value.clone())),
        });
    }
    let regex = e
        .regex
        .as_ref()
        .map(|r| {
            regex::RegexBuilder::new(&r.value)
                .size_limit(1 << 20)
                .build()
                .map_err(|err| {
                    src.of(
                        r,
                        &format!("{path}.regex"),
                        format!("expected a regular expression: {err}"),
                    )
                })
        })
        .transpose()?;
    if let Some(ev) = &e.event {
        if protocol != Protocol::Sse {
            return Err(src.of(
                ev,
                &format!("{path}.event"),
                "only SSE messages have an event type",
            ));
        }
    }
    let count = match &e.count {
        Some(n) => {
            let c = positive_int(src, n, &format!("{path}.count"))?;
            if c > MAX_COUNT {
                return Err(src.of(
                    n,
                    &format!("{path}.count"),
                    format!("expected at most {MAX_COUNT}, found {c}"),
                ));
            }
            c as u32
        }
        None => 1,
    };
    let timeout = e
        .timeout
        .as_ref()
        .map(|t| duration(src, t, &format!("{path}.timeout")))
        .transpose()?;
    Ok((
        MessageExpect {
            json,
            regex,
            event: e.event.as_ref().map(|v| v.value.clone()),
            count,
        },
        timeout,
    ))
}

/// `close: 1000` (a WebSocket close code a client may send: 1000, or 3000–4999) or
/// `close: true` (1000).
fn close_code(src: Source<'_>, node: &Node, path: &str) -> Result<u16, ScenarioError> {
    match &node.value {
        Value::Bool(true) => Ok(1000),
        Value::Number(n) => match n.as_u64() {
            Some(c @ (1000 | 3000..=4999)) => Ok(c as u16),
            _ => Err(src.of(
                node,
                path,
                format!("expected 1000 or a code in 3000..=4999, found {n}"),
            )),
        },
        other => Err(src.of(
            node,
            path,
            format!(
                "expected a close code such as 1000 (or `true`), found {}",
                found(other)
            ),
        )),
    }
}
