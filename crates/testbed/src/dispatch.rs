//! One request of any protocol, once its head has arrived: its body read (within
//! [`MAX_BODY`]), routed, held through a stall, and recorded in the target's metrics.
//! HTTP/1.1 and HTTP/2 come through [`handle`], HTTP/3 through [`respond`].

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::{Request, StatusCode};

use super::metrics::{Endpoint, Held};
use super::reply::{self, Reply};
use super::routes;
use super::state::State;

/// Largest request body the target reads; larger ones get 413.
pub(crate) const MAX_BODY: usize = 1 << 20;

/// One request: read its body, route it, wait out any stall, record it.
pub(crate) async fn handle(state: Arc<State>, req: Request<Incoming>) -> Result<Reply, Infallible> {
    if super::ws::is_ws(&req) {
        // A WebSocket is not a request/response: it is answered (101) at once and served
        // on its own task, outside the request metrics.
        return Ok(super::ws::upgrade(state, req));
    }
    let received = Instant::now();
    let _in_flight = Held::inc(&state.metrics.in_flight);
    let (parts, body) = req.into_parts();
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(body) => Ok(body.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(BodyError::TooLarge),
        Err(_) => Err(BodyError::Broken),
    };
    Ok(respond(&state, &parts, body, received).await)
}

/// Why a request's body could not be read.
pub(crate) enum BodyError {
    /// Longer than [`MAX_BODY`]: answered 413.
    TooLarge,
    /// The stream failed: answered 400.
    Broken,
}

/// Routes a request whose body was read (HTTP/1.1, HTTP/2 or HTTP/3), waits out any
/// stall, and records it. `received`: when its head arrived.
pub(crate) async fn respond(
    state: &State,
    parts: &hyper::http::request::Parts,
    body: Result<bytes::Bytes, BodyError>,
    received: Instant,
) -> Reply {
    let endpoint = routes::endpoint_of(parts.uri.path());
    let reply = match body {
        Ok(body) => routes::route(state, endpoint, parts, body).await,
        Err(BodyError::TooLarge) => reply::text(StatusCode::PAYLOAD_TOO_LARGE, "body too large\n"),
        Err(BodyError::Broken) => reply::empty(StatusCode::BAD_REQUEST),
    };
    if !matches!(endpoint, Endpoint::Admin | Endpoint::Health) {
        if let Some(until) = state.stall.until() {
            state.timer.sleep_until(until).await;
        }
    }
    state
        .metrics
        .observe(endpoint, reply.status().as_u16(), received.elapsed());
    reply
}
