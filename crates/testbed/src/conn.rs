//! How one accepted connection is served, by the builders of [`Protocols`].
//!
//! Cleartext: hyper-util's automatic builder reads the first bytes and serves HTTP/2
//! when they are the prior-knowledge preface (h2c), HTTP/1.1 otherwise, so one port
//! answers both. TLS (`--tls`): the handshake first, then the protocol ALPN chose
//! (`h2` or `http/1.1`); a client that offered no ALPN gets the same detection as
//! cleartext. Every connection is counted (accepted, open, by protocol, handshakes).

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Either;
use hyper::header::ALT_SVC;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rustls::HandshakeKind;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::dispatch::handle;
use super::grpc_ticker;
use super::metrics::{Held, Protocol};
use super::sse;
use super::state::State;
use super::tls::{ALPN_H2, ALPN_HTTP1};

/// Longest a TLS handshake may take. A client that connects and never finishes its
/// handshake would otherwise hold a task and a socket for ever; hyper's own header
/// read timeout only starts once HTTP does.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves one accepted connection until it closes.
pub(crate) async fn serve(stream: TcpStream, state: Arc<State>) {
    let counters = state.metrics.connections.clone();
    counters.accepted.inc();
    let _open = Held::inc(&counters.open);
    // Responses are small and written whole; Nagle would only add delay.
    let _ = stream.set_nodelay(true);
    let Some(acceptor) = state.protocols.tls.clone() else {
        return serve_http(TokioIo::new(stream), &state.protocols.auto, state.clone()).await;
    };
    let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(_)) | Err(_) => {
            counters.tls_errors.inc();
            return;
        }
    };
    let session = tls.get_ref().1;
    match session.handshake_kind() {
        Some(HandshakeKind::Resumed) => counters.tls_resumed.inc(),
        _ => counters.tls_full.inc(),
    };
    let protocols = &state.protocols;
    let builder = match session.alpn_protocol() {
        Some(ALPN_H2) => &protocols.h2,
        Some(ALPN_HTTP1) => &protocols.http1,
        _ => &protocols.auto,
    };
    serve_http(TokioIo::new(tls), builder, state.clone()).await;
}

/// HTTP on an established connection: every request counted by protocol (and the
/// connection by the protocol of its first), then [`handle`]d.
async fn serve_http<I>(io: TokioIo<I>, builder: &auto::Builder<TokioExecutor>, state: Arc<State>)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let first = Arc::new(AtomicBool::new(true));
    let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
        let counters = &state.metrics.connections;
        let protocol = Protocol::of(req.version());
        counters.requests.inc(protocol);
        // A load, not a swap, on every later request: no write to a shared line.
        if first.load(Ordering::Relaxed) && first.swap(false, Ordering::Relaxed) {
            counters.by_protocol.inc(protocol);
        }
        let state = Arc::clone(&state);
        async move {
            // The SSE ticker streams its body, so it bypasses `handle` (which reads the
            // request body whole and records a latency at the end).
            if req.uri().path() == sse::TICKER_PATH {
                let res = sse::ticker(&state.tickers, &req);
                return Ok::<_, Infallible>(res.map(|b| match b {
                    Either::Left(full) => Either::Left(full),
                    Either::Right(ticker) => Either::Right(Either::Left(ticker)),
                }));
            }
            if req.uri().path().starts_with(grpc_ticker::SERVICE) {
                let res = grpc_ticker::call(&state.tickers, req).await;
                return Ok(res.map(|b| Either::Right(Either::Right(b))));
            }
            let mut reply = handle(state.clone(), req).await?;
            if let Some(alt_svc) = &state.protocols.alt_svc {
                reply.headers_mut().insert(ALT_SVC, alt_svc.clone());
            }
            Ok(reply.map(Either::Left))
        }
    });
    let _ = builder.serve_connection_with_upgrades(io, service).await;
}
