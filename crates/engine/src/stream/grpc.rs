//! gRPC as a stream protocol (`grpc:` steps): a step with `call:` opens the call on an
//! HTTP/2 connection to the target (h2c with prior knowledge on `http://`, h2 by ALPN
//! on `https://`): the user's, kept across its iterations and calls and opened again
//! when the server closed it, or under `--http2 --connection shared` one of the pool's
//! ([`OpenCx::h2`]). A unary call is complete when `open` returns: its reply
//! is in the inbox (for `expect`/`capture`) and its status counted, so the step's
//! latency is the call's. A server-streaming call returns at the response head; its pump
//! delivers each message to the inbox (messages, bytes, gaps, time to first message)
//! and ends it with the status name (`Inbox::closed`). The user holds it across its
//! iterations, as a WebSocket, until a `close` step or the user's end cancels it
//! ([`Writer`], counted as `CANCELLED`), the server's status ends it, or its
//! `deadline:` passes (`DEADLINE_EXCEEDED`, enforced here as well as sent). Status →
//! kind: OK none, DEADLINE_EXCEEDED `timeout`, any other `grpc`; HTTP/2 failures keep
//! their kinds.

use std::rc::Rc;
use std::time::{Duration, Instant};

use http::{HeaderName, HeaderValue};

use super::cx::{OpenCx, Opened};
use super::{Failure, Inbox, Message};
use headroom_client::grpc::{call, frame, CallError, CallOptions, Responses};
use headroom_client::http2::Connection;
use headroom_metrics::ErrorKind;

/// Opens (makes) the call of `cx.step`.
pub(crate) async fn open(
    cx: &OpenCx<'_>,
    inbox: &Rc<Inbox>,
) -> Result<Opened<Option<GrpcWriter>>, Failure> {
    let call = cx
        .step
        .grpc
        .as_ref()
        .ok_or_else(|| Failure::stream("a gRPC stream is opened by a step with `call`"))?;
    let began = Instant::now();
    let conn = connection(cx).await?;
    let connect = began.elapsed();
    cx.opening.set(false);
    cx.calling.set(true);
    // A message with placeholders is checked here, once rendered; without, at load time.
    let json: serde_json::Value = serde_json::from_str(cx.message.as_deref().unwrap_or("{}"))
        .map_err(|e| Failure::new(ErrorKind::Grpc, format!("message is not JSON: {e}")))?;
    let message = call
        .method
        .encode(&json)
        .map_err(|e| Failure::new(ErrorKind::Grpc, e.to_string()))?;
    let mut metadata = Vec::with_capacity(cx.headers.len());
    for (name, value) in &cx.headers {
        let name = HeaderName::from_bytes(name.as_bytes());
        let value = HeaderValue::from_str(value);
        if let (Ok(n), Ok(v)) = (name, value) {
            metadata.push((n, v));
        }
    }
    let options = CallOptions {
        base: format!(
            "{}://{}",
            if cx.endpoint.tls { "https" } else { "http" },
            cx.endpoint.authority
        )
        .parse()
        .map_err(|e| Failure::stream(format!("target authority: {e}")))?,
        timeout: deadline(cx.step, &cx.state.plan, call.method.server_streaming),
        metadata,
        max_message: frame::DEFAULT_MAX_MESSAGE,
    };
    cx.state
        .recorder
        .borrow_mut()
        .streams
        .tally(cx.step.stream_id)
        .sent(call::framed_len(&message));
    let failed = |e: CallError| {
        if let Some(name) = e.status_name() {
            inbox.closed(name);
        }
        Failure::new(e.kind(), format!("{}: {e}", call.method.path))
    };
    // The deadline runs from the call's start, as the server counts `grpc-timeout`.
    let until = options.timeout.map(|d| Instant::now() + d);
    let (pump, writer) = if call.method.server_streaming {
        let responses = call::start(&conn, &call.method, &message, &options)
            .await
            .map_err(failed)?;
        let pump = tokio::task::spawn_local(pump(responses, inbox.clone(), until));
        let writer = Some(GrpcWriter {
            inbox: inbox.clone(),
        });
        (pump, writer)
    } else {
        let reply = call::unary(&conn, &call.method, &message, &options)
            .await
            .map_err(failed)?;
        inbox.message(Message {
            event: None,
            data: reply.json.to_string(),
            wire_bytes: reply.wire_bytes,
        });
        inbox.closed("OK".into());
        (tokio::task::spawn_local(async {}), None)
    };
    cx.calling.set(false);
    Ok(Opened {
        writer,
        pump,
        connect,
    })
}

/// The deadline a call sends as `grpc-timeout` and keeps: the step's `deadline:`; else,
/// for a unary call, the step's timeout (the step ends the call then: the server may
/// stop work nobody waits for), and none for a server stream (it lives as long as its
/// user holds it, so the step's timeout, which bounds only the step's wait, is not its
/// deadline).
pub(crate) fn deadline(
    step: &headroom_plan::StreamStep,
    plan: &headroom_plan::Plan,
    server_streaming: bool,
) -> Option<Duration> {
    match step.deadline {
        Some(d) => Some(d),
        None if server_streaming => None,
        None => Some(step.timeout_in(plan)),
    }
}

/// The sending side of a server stream: nothing to send; closing cancels the call
/// (counted as `CANCELLED`, as a gRPC client reports its own cancel), and the stream is
/// reset when its pump is stopped.
pub(crate) struct GrpcWriter {
    inbox: Rc<Inbox>,
}

impl GrpcWriter {
    /// Cancels the call.
    pub(crate) fn close(&self) {
        self.inbox.closed("CANCELLED".into());
    }
}

/// The HTTP/2 connection the call goes on ([`OpenCx::h2`]): the user's (shared with its
/// requests under `--http2`), the shared pool's, or one of its own, counted as `grpc`.
async fn connection(cx: &OpenCx<'_>) -> Result<Rc<Connection>, Failure> {
    cx.h2(headroom_metrics::recorder::Speaks::Grpc).await
}

/// Reads a server stream into `inbox` until its status, its deadline `until` (then
/// DEADLINE_EXCEEDED, and the stream is reset as this task returns), or the owner closes
/// it (which aborts this task and so resets the stream).
async fn pump(mut responses: Responses, inbox: Rc<Inbox>, until: Option<Instant>) {
    let expired = |inbox: &Inbox| {
        // The failure first, as for the server's own status below.
        inbox.failed(
            ErrorKind::Timeout,
            "DEADLINE_EXCEEDED: the call's deadline passed".into(),
        );
        inbox.closed("DEADLINE_EXCEEDED".into());
    };
    loop {
        let Some(next) = within(until, responses.next()).await else {
            return expired(&inbox);
        };
        match next {
            Ok(Some(reply)) => inbox.message(Message {
                event: None,
                data: reply.json.to_string(),
                wire_bytes: reply.wire_bytes,
            }),
            Ok(None) => break,
            Err(e) => return inbox.failed(e.kind(), e.to_string()),
        }
        if inbox.closing() {
            return;
        }
    }
    let Some(status) = within(until, responses.status()).await else {
        return expired(&inbox);
    };
    match status {
        Ok(status) => inbox.closed(status.name()),
        Err(CallError::Status(status)) => {
            let kind = status.error_kind().unwrap_or(ErrorKind::Grpc);
            // The failure first: a waiting step fails with the status's kind, and the
            // status is still counted by name.
            inbox.failed(kind, format!("{} {}", status.name(), status.message));
            inbox.closed(status.name());
        }
        Err(e) => inbox.failed(e.kind(), e.to_string()),
    }
}

/// `f`'s output, or `None` when `until` came first.
async fn within<T>(until: Option<Instant>, f: impl std::future::Future<Output = T>) -> Option<T> {
    match until {
        Some(until) => tokio::time::timeout_at(until.into(), f).await.ok(),
        None => Some(f.await),
    }
}

/// Seed 002's pattern under `--http2`: a user's gRPC calls (and SSE streams) and its
/// requests share one connection. Before a gRPC or SSE step, the user's own HTTP/2
/// connection (if it has one, open) becomes the one its streams use; after it, a
/// connection the step opened becomes the user's for its requests. Under `shared` the
/// streams take the pool's connections themselves ([`OpenCx::h2`]); under
/// `per-request`, and in HTTP/1.1 runs, they keep a connection of their own per user.
pub(crate) fn share_with_session(
    state: &crate::thread::ThreadState,
    session: &mut headroom_client::session::Session,
    streams: &super::Streams,
) {
    use headroom_client::session::{Link, Session};
    if state.client.protocol() != headroom_client::Protocol::Http2 {
        return;
    }
    let Session::Own(slot) = session else {
        return;
    };
    let mut ours = streams.h2.borrow_mut();
    match slot {
        Some(Link::H2(theirs)) if theirs.is_open() => {
            if !ours.as_ref().is_some_and(|c| Rc::ptr_eq(c, theirs)) {
                *ours = Some(theirs.clone());
            }
        }
        _ => {
            if let Some(c) = ours.as_ref().filter(|c| c.is_open()) {
                *slot = Some(Link::H2(c.clone()));
            }
        }
    }
}
