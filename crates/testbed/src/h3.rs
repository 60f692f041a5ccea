//! `--tls`: HTTP/3 beside HTTP/1.1 and h2, on the same port number over UDP (QUIC by
//! `quinn`, HTTP/3 by `h3`). Every request goes through the same routes, work pool,
//! stall and metrics as over TCP; the TCP side advertises it with `Alt-Svc`.
//!
//! What a request may make the server hold is bounded as over TCP: its body by
//! [`MAX_BODY`] (413 past it), its header section by `h3`'s field-section limit, the
//! handshake by [`HANDSHAKE_TIMEOUT`], and the streams of one connection by QUIC's
//! stream credit ([`MAX_STREAMS`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use http_body_util::BodyExt;
use tokio::sync::oneshot;

use super::dispatch::{respond, BodyError, MAX_BODY};
use super::metrics::{Held, Protocol};
use super::state::State;

/// Longest a QUIC handshake may take (as TLS's over TCP).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Concurrent request streams a client may open on one connection.
const MAX_STREAMS: u32 = 256;

/// Largest request header section read (as hyper's default over TCP).
const MAX_FIELD_SECTION: u64 = 64 * 1024;

/// A QUIC endpoint on `addr` (UDP), presenting `tls` (TLS 1.3, ALPN `h3`). Must be
/// called inside the runtime that will serve it.
pub(crate) fn bind(
    addr: SocketAddr,
    tls: Arc<rustls::ServerConfig>,
) -> std::io::Result<quinn::Endpoint> {
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(quinn::VarInt::from_u32(MAX_STREAMS))
        .max_concurrent_uni_streams(quinn::VarInt::from_u32(16));
    config.transport_config(Arc::new(transport));
    quinn::Endpoint::server(config, addr)
}

/// Accepts QUIC connections until `stop` fires, each served on its own task.
pub(crate) async fn accept_loop(
    endpoint: quinn::Endpoint,
    state: Arc<State>,
    mut stop: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            _ = &mut stop => break,
            incoming = endpoint.accept() => match incoming {
                Some(incoming) => {
                    tokio::spawn(serve(incoming, Arc::clone(&state)));
                }
                None => break,
            },
        }
    }
    // H3_NO_ERROR to every open connection.
    endpoint.close(quinn::VarInt::from_u32(0x100), b"");
}

/// One QUIC connection: the handshake, HTTP/3's setup, then each request stream on a
/// task of its own, until the client closes it.
async fn serve(incoming: quinn::Incoming, state: Arc<State>) {
    let counters = state.metrics.connections.clone();
    counters.accepted.inc();
    let _open = Held::inc(&counters.open);
    let connecting = match incoming.accept() {
        Ok(c) => c,
        Err(_) => {
            counters.tls_errors.inc();
            return;
        }
    };
    // Requests are answered as soon as they arrive, a resumed client's 0-RTT early
    // data included (0.5-RTT: the target asks for no client certificate, so nothing
    // is sent before an authentication it would wait for). The handshake must still
    // complete within its limit.
    let Ok((conn, completed)) = connecting.into_0rtt() else {
        unreachable!("a server's connection always converts to 0.5-RTT")
    };
    let watched = conn.clone();
    let handshakes = counters.clone();
    tokio::spawn(async move {
        match tokio::time::timeout(HANDSHAKE_TIMEOUT, completed).await {
            Ok(_) => {
                handshakes.tls_quic.inc();
            }
            Err(_) => {
                handshakes.tls_errors.inc();
                watched.close(quinn::VarInt::from_u32(0x100), b"handshake timeout");
            }
        }
    });
    counters.by_protocol.inc(Protocol::H3);
    let built = h3::server::builder()
        .max_field_section_size(MAX_FIELD_SECTION)
        .build::<_, Bytes>(h3_quinn::Connection::new(conn))
        .await;
    let Ok(mut h3) = built else {
        return;
    };
    // Ends on the client's close, an error, or the endpoint closing.
    while let Ok(Some(resolver)) = h3.accept().await {
        let state = Arc::clone(&state);
        tokio::spawn(async move {
            if let Ok((req, stream)) = resolver.resolve_request().await {
                let _ = request(req, stream, &state).await;
            }
        });
    }
}

/// One request: its body read within [`MAX_BODY`], routed like any other, answered.
async fn request<S>(
    req: http::Request<()>,
    mut stream: h3::server::RequestStream<S, Bytes>,
    state: &State,
) -> Result<(), h3::error::StreamError>
where
    S: h3::quic::BidiStream<Bytes>,
{
    let received = Instant::now();
    let _in_flight = Held::inc(&state.metrics.in_flight);
    state.metrics.connections.requests.inc(Protocol::H3);
    let mut body = BytesMut::new();
    let mut outcome = Ok(());
    loop {
        match stream.recv_data().await {
            Ok(Some(chunk)) if body.len() + chunk.remaining() > MAX_BODY => {
                outcome = Err(BodyError::TooLarge);
                break;
            }
            Ok(Some(mut chunk)) => {
                let n = chunk.remaining();
                body.extend_from_slice(&chunk.copy_to_bytes(n));
            }
            Ok(None) => break,
            Err(_) => {
                outcome = Err(BodyError::Broken);
                break;
            }
        }
    }
    let (parts, ()) = req.into_parts();
    let reply = respond(state, &parts, outcome.map(|()| body.freeze()), received).await;
    let (head, body) = reply.into_parts();
    stream
        .send_response(http::Response::from_parts(head, ()))
        .await?;
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    if !body.is_empty() {
        stream.send_data(body).await?;
    }
    stream.finish().await
}
