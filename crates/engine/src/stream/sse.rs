//! SSE streams (`sse:` steps): opened with [`headroom_client::sse`] and read by a pump
//! that parses events ([`headroom_client::sse::Parser`]) into the [`Inbox`] and, when
//! the stream ends or drops, reconnects after the server's `retry:` with
//! `Last-Event-ID` (counted as a reconnect, not an error), as an `EventSource` does.
//! 204 on a reconnect ends the stream (closed `"204"`); a non-200 status or another
//! content type, or an event or line over its limit, fails it.
//!
//! In an HTTP/1.1 run (and to another origin than the target's) a stream has a
//! connection of its own (ALPN http/1.1, like a WebSocket upgrade). In an `--http2`
//! run it is a stream of an HTTP/2 connection to the target (h2 by ALPN, h2c with prior
//! knowledge): the user's own, which its requests use too, or the shared pool's, as
//! the connection model says ([`OpenCx::h2`]); reconnections go on that connection
//! while it is open, else on a new one of the stream's own.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::cx::{OpenCx, Opened};
use super::{Failure, Inbox, Message};
use headroom_client::connect::{ConnectError, Connector, Opens};
use headroom_client::http2::Connection;
use headroom_client::sse::{self, OpenError, Parser, Response, SseRequest};
use headroom_client::Protocol;
use headroom_metrics::recorder::Speaks;
use headroom_metrics::ErrorKind;

/// Reconnection delay until the server sends `retry:`: what Chrome uses (Firefox 5 s).
pub(crate) const DEFAULT_RETRY: Duration = Duration::from_secs(3);

/// Longest reconnection delay honoured: a server's `retry: 86400000` would otherwise
/// park a user for a day inside a load test.
pub(crate) const MAX_RETRY: Duration = Duration::from_secs(30);

/// The sending side of an SSE stream: nothing to send; closing ends it at once.
pub(crate) struct Writer {
    inbox: Rc<Inbox>,
}

impl Writer {
    /// Closes the stream (the connection is dropped when the stream is finished).
    pub(crate) fn close(&self) {
        self.inbox.closed("client".into());
    }
}

/// How a stream's GET goes out.
pub(crate) enum Via {
    /// HTTP/1.1: on a new connection of its own from this connector, each time.
    Http1(Arc<Connector>),
    /// HTTP/2: as a stream of `conn` while it is open; else (or with none yet) of a
    /// new connection of the stream's own from `connector`, which then takes its place.
    Http2 {
        /// The connection streams go on.
        conn: RefCell<Option<Rc<Connection>>>,
        /// Opens a new one (h2 by ALPN over TLS, h2c over TCP).
        connector: Arc<Connector>,
    },
}

/// Where a stream is opened (and opened again by its pump).
pub(crate) struct Reopen {
    /// The protocol and connection.
    pub(crate) via: Via,
    /// The GET.
    pub(crate) request: SseRequest,
    /// Bound on one reconnection attempt (the step's timeout).
    pub(crate) timeout: Duration,
    /// Where the connections it opens are counted: the thread's.
    pub(crate) opens: Rc<Opens>,
}

impl Reopen {
    /// Sends the GET (resuming after `last_event_id`) and checks the response.
    async fn open(&self, last_event_id: Option<&str>) -> Result<Response, OpenError> {
        match &self.via {
            Via::Http1(connector) => {
                sse::open(connector, &self.opens, &self.request, last_event_id).await
            }
            Via::Http2 {
                conn: slot,
                connector,
            } => {
                let open = slot.borrow().clone().filter(|c| c.is_open());
                let conn = match open {
                    Some(c) => c,
                    None => {
                        let c = sse::connect_h2(connector, &self.opens).await?;
                        *slot.borrow_mut() = Some(c.clone());
                        c
                    }
                };
                sse::open_h2(conn, &self.request, last_event_id).await
            }
        }
    }
}

/// Connects (or takes the user's HTTP/2 connection), sends the GET, checks the
/// response, and starts the pump.
pub(crate) async fn open(cx: &OpenCx<'_>, inbox: &Rc<Inbox>) -> Result<Opened<Writer>, Failure> {
    let began = Instant::now();
    let e = &cx.endpoint;
    let mut headers = Vec::with_capacity(cx.headers.len());
    for (name, value) in &cx.headers {
        let name = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|err| Failure::stream(format!("header {name:?}: {err}")))?;
        let value = http::HeaderValue::from_str(value)
            .map_err(|err| Failure::stream(format!("header {name}: {err}")))?;
        headers.push((name, value));
    }
    let request = SseRequest {
        scheme: if e.tls { "https" } else { "http" },
        authority: e.authority.clone(),
        path: e.path.clone(),
        headers,
    };
    let via = if cx.state.plan.client.protocol == Protocol::Http2 && e.same_origin {
        Via::Http2 {
            conn: Some(cx.h2(Speaks::Sse).await?).into(),
            connector: cx.state.streams.h2(),
        }
    } else {
        Via::Http1(cx.state.streams.http1(&cx.state.plan, e).await?)
    };
    let reopen = Reopen {
        via,
        request,
        timeout: cx.step.timeout_in(&cx.state.plan),
        opens: cx.state.client.opens().clone(),
    };
    let pump = start(reopen, sse::Limits::default(), inbox)
        .await
        .inspect_err(|f| match f.kind {
            // The run's first connect or TLS failure, as a request's is kept.
            ErrorKind::Connect => cx.state.note_connect_failure(&f.reason),
            ErrorKind::Tls => cx.state.note_tls_failure(&f.reason),
            _ => {}
        })?;
    let connect = began.elapsed();
    Ok(Opened {
        writer: Writer {
            inbox: inbox.clone(),
        },
        pump,
        connect,
    })
}

/// Opens the stream once and spawns (`spawn_local`) its pump into `inbox`. No timeout:
/// the step's bounds the first opening.
pub(crate) async fn start(
    reopen: Reopen,
    limits: sse::Limits,
    inbox: &Rc<Inbox>,
) -> Result<tokio::task::JoinHandle<()>, Failure> {
    let response = reopen.open(None).await.map_err(failure)?;
    let parser = Parser::new(limits);
    Ok(tokio::task::spawn_local(pump(
        response,
        parser,
        reopen,
        inbox.clone(),
    )))
}

fn failure(e: OpenError) -> Failure {
    match e {
        // The connect failure's own words, as a request's (the run's first is kept).
        OpenError::Connect(ConnectError::Tcp(_) | ConnectError::Tls(_)) => {
            Failure::new(e.kind(), e.to_string())
        }
        e => Failure::new(e.kind(), format!("SSE: {e}")),
    }
}

/// The delay before reconnecting: the server's `retry:`, else the default, capped.
fn retry_delay(parser: &Parser) -> Duration {
    parser
        .retry_ms()
        .map_or(DEFAULT_RETRY, Duration::from_millis)
        .min(MAX_RETRY)
}

/// Reads events into `inbox` until the owner closes the stream (the task is also
/// aborted then), reconnecting whenever the stream ends or drops.
async fn pump(mut response: Response, mut parser: Parser, reopen: Reopen, inbox: Rc<Inbox>) {
    loop {
        // Read this connection to its end.
        loop {
            if inbox.closing() {
                return;
            }
            match response.chunk().await {
                Ok(Some(bytes)) => {
                    let fed = parser.feed(&bytes, |ev| {
                        inbox.message(Message {
                            event: ev.event,
                            data: ev.data,
                            wire_bytes: ev.wire_bytes,
                        })
                    });
                    if let Err(e) = fed {
                        inbox.failed(ErrorKind::Protocol, format!("SSE: {e}"));
                        return;
                    }
                }
                // Ended by the server, or the connection dropped: reconnect either way
                // (the spec's "reestablish the connection").
                Ok(None) | Err(_) => break,
            }
        }
        drop(response);
        // Open it again, as often as it takes, after the retry delay each time.
        response = loop {
            // Why a sleep before the first attempt too: a server that ends every stream
            // at once would otherwise be hammered in a tight loop.
            tokio::time::sleep(retry_delay(&parser)).await;
            if inbox.closing() {
                return;
            }
            parser = parser.resume();
            let attempt = reopen.open(parser.last_event_id());
            match tokio::time::timeout(reopen.timeout, attempt).await {
                Ok(Ok(response)) => {
                    inbox.reconnected();
                    break response;
                }
                Ok(Err(OpenError::NoContent)) => {
                    inbox.closed("204".into());
                    return;
                }
                // The spec fails the stream for a bad status or content type, and tries
                // again after network errors (and so do we after a timeout).
                Ok(Err(e @ (OpenError::Status(_) | OpenError::ContentType { .. }))) => {
                    let f = failure(e);
                    inbox.failed(f.kind, f.reason);
                    return;
                }
                Ok(Err(_)) | Err(_) => {}
            }
        };
    }
}

#[cfg(test)]
#[path = "sse_tests.rs"]
mod tests;
