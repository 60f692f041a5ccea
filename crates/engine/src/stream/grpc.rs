//! gRPC as a stream protocol (`grpc:` steps): a step with `call:` opens the call on the
//! user's HTTP/2 connection to the target (h2c with prior knowledge on `http://`, h2 by
//! ALPN on `https://`; one per user, kept across its iterations and calls, opened again
//! when the server closed it). A unary call is complete when `open` returns: its reply
//! is in the inbox (for `expect`/`capture`) and its status counted, so the step's
//! latency is the call's. A server-streaming call returns at the response head; its pump
//! delivers each message to the inbox (messages, bytes, gaps, time to first message)
//! and ends it with the status name (`Inbox::closed`). Status → kind: OK none,
//! DEADLINE_EXCEEDED `timeout`, any other `grpc`; HTTP/2 failures keep their kinds.

use std::rc::Rc;
use std::time::Instant;

use http::{HeaderName, HeaderValue};

use super::proto::{OpenCx, Opened, Writer};
use super::{Failure, Inbox, Message};
use headroom_client::grpc::{call, frame, CallError, CallOptions, Responses};
use headroom_client::http2::Connection;
use headroom_metrics::ErrorKind;

/// Opens (makes) the call of `cx.step`.
pub(crate) async fn open(cx: &OpenCx<'_>, inbox: &Rc<Inbox>) -> Result<Opened, Failure> {
    let call = cx
        .step
        .grpc
        .as_ref()
        .ok_or_else(|| Failure::stream("a gRPC stream is opened by a step with `call`"))?;
    let began = Instant::now();
    let conn = connection(cx).await?;
    let connect = began.elapsed();
    cx.opening.set(false);
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
        // Why the step's timeout: the server may stop work the client no longer waits for.
        timeout: Some(cx.step.timeout_in(&cx.state.plan)),
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
    let pump = if call.method.server_streaming {
        let responses = call::start(&conn, &call.method, &message, &options)
            .await
            .map_err(failed)?;
        tokio::task::spawn_local(pump(responses, inbox.clone()))
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
        tokio::task::spawn_local(async {})
    };
    Ok(Opened {
        writer: Writer::ReceiveOnly,
        pump,
        connect,
    })
}

/// The HTTP/2 connection the call goes on ([`OpenCx::h2`]): the user's (shared with its
/// requests under `--http2`), the shared pool's, or one of its own, counted as `grpc`.
async fn connection(cx: &OpenCx<'_>) -> Result<Rc<Connection>, Failure> {
    cx.h2(headroom_metrics::recorder::Speaks::Grpc).await
}

/// Reads a server stream into `inbox` until its status (or the owner closes it, which
/// aborts this task and so resets the stream).
async fn pump(mut responses: Responses, inbox: Rc<Inbox>) {
    loop {
        match responses.next().await {
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
    match responses.status().await {
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
