//! The engine's hook: one stream step is one operation. It opens the stream (when the
//! step gives `url:` or a gRPC `call:` and the user does not hold it live), sends, waits
//! for a matching message, closes — in that order, all within the step's timeout — and
//! records one hit under the step's name. The stream it opens outlives the step (and the
//! iteration): the step's timeout never ends it. Round trips (send → matching message)
//! go to the stream recorder.

use std::rc::Rc;
use std::time::Instant;

use serde_json::Value;

use super::cx::OpenCx;
use super::proto;
use super::{url, Failure, Inbox, Message, Open, Streams};
use crate::thread::{Pending, ThreadState};
use headroom_metrics::recorder::{Hit, Timing};
use headroom_metrics::ErrorKind;
use headroom_plan::{MessageExpect, StreamStep};
use headroom_template::{RenderContext, Template, Vars};

/// What a stream step that did not fail did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ran {
    /// It was an operation, recorded under its name.
    Done,
    /// It only opened a stream the user already holds, so it did nothing.
    Skipped,
}

/// Runs stream step `step` of a user holding `streams`, counted by `pending`. Returns the
/// error kind when it failed (already recorded).
pub(crate) async fn run_step(
    state: &Rc<ThreadState>,
    step: &StreamStep,
    pending: Pending,
    streams: &mut Streams,
    vars: &mut Vars,
    who: (u64, u64),
) -> Result<Ran, ErrorKind> {
    // Rendered before any await: the thread's random source is borrowed only here.
    let (url, headers, send, message) = {
        let mut rng = state.rng.borrow_mut();
        let mut ctx = RenderContext {
            rng: &mut rng,
            vars,
            user: who.0,
            iteration: who.1,
        };
        let mut render = |t: &Template| {
            let mut out = Vec::new();
            t.render(&mut ctx, &mut out);
            String::from_utf8_lossy(&out).into_owned()
        };
        let url = step.url.as_ref().map(&mut render);
        let headers: Vec<(String, String)> = step
            .headers
            .iter()
            .map(|(n, v)| (n.clone(), render(v)))
            .collect();
        let send = step.send.as_ref().map(&mut render);
        let mut headers = headers;
        let message = step.grpc.as_ref().map(|g| {
            headers.extend(g.metadata.iter().map(|(n, v)| (n.clone(), render(v))));
            render(&g.message)
        });
        (url, headers, send, message)
    };
    let began = Instant::now();
    // A stream still live is held: a `url:` (or a gRPC `call:` whose server stream is
    // still open) for it is not opened again. A unary call's stream ends with its reply,
    // so every unary call step makes a call.
    let held = streams.get(step.stream_id).is_some_and(|o| o.live());
    if url.is_some() && held {
        // The opening step of a stream this user already holds (a closed-model user's
        // later iterations): the whole step belongs to opening it, so it is skipped and
        // is not an operation.
        pending.cancel();
        return Ok(Ran::Skipped);
    }
    let reopen = url.is_some();
    // The step's timeout bounds this step's wait only; a call's own deadline, when
    // shorter, bounds its opening too (the server gives up on it then).
    let mut deadline = began + step.timeout_in(&state.plan);
    if let Some(d) = step.deadline.filter(|_| reopen) {
        deadline = deadline.min(began + d);
    }
    let opening = std::cell::Cell::new(false);
    let calling = std::cell::Cell::new(false);
    let work = act(
        state,
        step,
        url.filter(|_| reopen),
        headers,
        send,
        message,
        streams,
        vars,
        (&opening, &calling),
    );
    let outcome = tokio::time::timeout_at(deadline.into(), work).await;
    let done = Instant::now();
    let error = match outcome {
        Ok(Ok(())) => None,
        Ok(Err(f)) => Some(f.kind),
        // Out of time while connecting: the target did not take the stream.
        Err(_) if opening.get() => Some(ErrorKind::Connect),
        // A gRPC call that did not answer (a unary reply, a server stream's response
        // head) within the step's time: `timeout`, like DEADLINE_EXCEEDED.
        Err(_) if calling.get() => Some(ErrorKind::Timeout),
        // A message that did not come in time is a stream failure, not a slow response
        // (the stream itself lives on, held by its user).
        Err(_) => Some(ErrorKind::Stream),
    };
    if error.is_some() {
        // A failed step leaves the stream in an unknown state (a half-read expectation,
        // an unanswered close): later steps on it must not read its leftovers.
        if error == Some(ErrorKind::Connect) || step.close.is_some() {
            streams.remove(step.stream_id);
        }
    }
    pending.record(&Hit {
        name_id: step.name_id,
        corrected: done - began,
        uncorrected: done - began,
        error,
        timing: Timing::default(),
    });
    state.last_done.set(Some(done));
    error.map_or(Ok(Ran::Done), Err)
}

#[allow(clippy::too_many_arguments)]
async fn act(
    state: &Rc<ThreadState>,
    step: &StreamStep,
    url: Option<String>,
    headers: Vec<(String, String)>,
    send: Option<String>,
    message: Option<String>,
    streams: &mut Streams,
    vars: &mut Vars,
    (opening, calling): (&std::cell::Cell<bool>, &std::cell::Cell<bool>),
) -> Result<(), Failure> {
    if let Some(url) = url {
        streams.remove(step.stream_id);
        let endpoint = url::endpoint(&state.plan.target, &url)?;
        let since = Instant::now();
        let inbox = Rc::new(
            Inbox::new(Some(state.clone()), step.stream_id, since).with_cadence(step.every),
        );
        let cx = OpenCx {
            state,
            step,
            endpoint,
            headers,
            message,
            h2: streams.h2.clone(),
            opening,
            calling,
        };
        opening.set(true);
        let opened = proto::open(&cx, &inbox).await?;
        opening.set(false);
        state
            .recorder
            .borrow_mut()
            .streams
            .tally(step.stream_id)
            .opened(opened.connect);
        streams.insert(Open {
            id: step.stream_id,
            inbox,
            writer: opened.writer,
            pump: opened.pump,
            since,
            sink: Some(state.clone()),
        });
    }
    let open = streams
        .get(step.stream_id)
        .ok_or_else(|| Failure::stream("the stream is not open (its opening step failed)"))?;
    let mut sent_at = None;
    if let Some(text) = send {
        if let Some(end) = open.inbox.end() {
            return Err(ended(end));
        }
        let at = Instant::now();
        let bytes = open.writer.send(text).await?;
        state
            .recorder
            .borrow_mut()
            .streams
            .tally(step.stream_id)
            .sent(bytes);
        sent_at = Some(at);
    }
    if let Some(expect) = &step.expect {
        let mut left = expect.count.max(1);
        let mut last = None;
        while left > 0 {
            let mut captured = None;
            let at = open
                .inbox
                .next(|m, arrived| {
                    // A reply comes after its request: what was already buffered when
                    // the step sent is skipped, or the round trip would read 0.
                    if sent_at.is_some_and(|sent| arrived < sent) {
                        return false;
                    }
                    let ok = matches(expect, &step.captures, m, vars);
                    if let Some(values) = ok {
                        captured = Some(values);
                        true
                    } else {
                        false
                    }
                })
                .await?;
            for (capture, value) in step.captures.iter().zip(captured.unwrap_or_default()) {
                vars.set(&capture.var, value);
            }
            left -= 1;
            last = Some(at);
        }
        if let (Some(sent), Some(arrived)) = (sent_at, last) {
            let rt = arrived.saturating_duration_since(sent);
            state
                .recorder
                .borrow_mut()
                .streams
                .tally(step.stream_id)
                .round_trip(rt);
        }
    }
    if let Some(code) = step.close {
        let open = streams.get(step.stream_id).expect("still open");
        open.inbox.set_closing();
        open.writer.close(code).await?;
        // The close is complete when the peer answers it (the pump sees its close frame).
        open.inbox.ended().await;
        streams.remove(step.stream_id);
    }
    Ok(())
}

fn ended(end: super::inbox::End) -> Failure {
    match end {
        super::inbox::End::Closed(code) => {
            Failure::stream(format!("the peer closed the stream ({code})"))
        }
        super::inbox::End::Failed(f) => f,
    }
}

/// Whether `m` satisfies `expect`; if so, the captured values (in `captures` order).
pub(crate) fn matches(
    expect: &MessageExpect,
    captures: &[headroom_plan::Capture],
    m: &Message,
    _vars: &Vars,
) -> Option<Vec<String>> {
    if let Some(event) = &expect.event {
        if m.event.as_deref().unwrap_or("message") != event {
            return None;
        }
    }
    if let Some(re) = &expect.regex {
        if !re.is_match(&m.data) {
            return None;
        }
    }
    if expect.json.is_empty() && captures.is_empty() {
        return Some(Vec::new());
    }
    let json: Value = serde_json::from_str(&m.data).ok()?;
    for rule in &expect.json {
        let found = rule.path.query(&json).first()?;
        if let Some(want) = &rule.equals {
            // Stream expectations are literal values (compiled so).
            let headroom_plan::journey::Expected::Value(want) = want else {
                return None;
            };
            if !crate::check::json_equal(found, want) {
                return None;
            }
        }
    }
    captures
        .iter()
        .map(|c| {
            c.path.query(&json).first().map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
        })
        .collect()
}
