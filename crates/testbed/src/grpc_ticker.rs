//! `/headroom.Ticker/*`: a gRPC service (h2c or h2), the target's server stream for
//! held gRPC streams, deadlines and cadence (`tests/fixtures/ticker.proto`):
//!
//! ```proto
//! service Ticker {
//!   rpc Ticks(TickRequest) returns (stream Tick);
//!   rpc Echo(Tick) returns (Tick);
//! }
//! message TickRequest { uint32 every_ms = 1; uint32 count = 2; }
//! message Tick { uint64 n = 1; }
//! ```
//!
//! `Ticks`: one `Tick` with n = 1, 2, 3, … every `every_ms` (default 1000, at least
//! [`sse::MIN_EVERY_MS`]); after `count` ticks (0: endless) status OK; it shares the
//! SSE ticker's bound on open streams. `Echo`: the `Tick` it was sent, at once (a unary
//! call to make beside a held stream). A request that is not one small well-framed
//! message gets INVALID_ARGUMENT; another method UNIMPLEMENTED. Hand-encoded: varint
//! fields do not need a protobuf library in the target.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::{Body, Frame, Incoming};
use hyper::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use tokio::time::{Interval, MissedTickBehavior};

use super::sse::{self, Tickers};

/// The service's path prefix.
pub(crate) const SERVICE: &str = "/headroom.Ticker/";

/// Most request bytes read: a `TickRequest` is at most 17 bytes framed.
const MAX_REQUEST: usize = 64;

/// A gRPC reply: a status alone (trailers-only), a unary reply, or the ticker's stream.
pub(crate) type GrpcReply = Response<http_body_util::Either<Unary, GrpcTicker>>;

/// Answers a call to a method of [`SERVICE`].
pub(crate) async fn call(tickers: &Tickers, req: Request<Incoming>) -> GrpcReply {
    let method = req.uri().path()[SERVICE.len()..].to_string();
    let body = Limited::new(req.into_body(), MAX_REQUEST).collect().await;
    let fields = body.ok().and_then(|b| parse(&b.to_bytes()));
    let Some(fields) = fields else {
        return status_only(3, "expected one small uncompressed message");
    };
    match method.as_str() {
        "Ticks" => ticks(tickers, fields),
        "Echo" => {
            let n = fields.get(&1).copied().unwrap_or(0);
            let mut res = Response::new(http_body_util::Either::Left(Unary(Some(tick(n)), true)));
            res.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
            res
        }
        _ => status_only(12, "unknown method"),
    }
}

/// Starts `Ticks` with the fields of its `TickRequest`.
fn ticks(tickers: &Tickers, fields: Fields) -> GrpcReply {
    let every = fields.get(&1).copied().unwrap_or(1000);
    let count = fields.get(&2).copied().unwrap_or(0);
    if !(sse::MIN_EVERY_MS..=3_600_000).contains(&every) {
        return status_only(3, "every_ms must be between 10 and 3600000");
    }
    let Some(slot) = tickers.take() else {
        return status_only(8, "too many open streams");
    };
    let mut interval = tokio::time::interval(Duration::from_millis(every));
    // As the SSE ticker: a late tick is not followed by a burst of catch-up messages.
    interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut res = Response::new(http_body_util::Either::Right(GrpcTicker {
        interval,
        next: 1,
        last: (count > 0).then_some(count),
        done: false,
        _slot: slot,
    }));
    res.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    res
}

/// A trailers-only response with gRPC status `code`.
fn status_only(code: u32, message: &'static str) -> GrpcReply {
    let mut res = Response::new(http_body_util::Either::Left(Unary(None, false)));
    *res.status_mut() = StatusCode::OK;
    let h = res.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    h.insert("grpc-status", HeaderValue::from(code));
    h.insert("grpc-message", HeaderValue::from_static(message));
    res
}

/// The varint fields of a message, by field number (1 and 2; others are skipped).
type Fields = std::collections::BTreeMap<u64, u64>;

/// The fields of one framed message of varint fields, or `None` if it is not one.
fn parse(framed: &[u8]) -> Option<Fields> {
    let (&[compressed, a, b, c, d], message) = framed.split_first_chunk::<5>()?;
    if compressed != 0 || u32::from_be_bytes([a, b, c, d]) as usize != message.len() {
        return None;
    }
    let (mut fields, mut rest) = (Fields::new(), message);
    while !rest.is_empty() {
        let (key, after) = varint(rest)?;
        let (value, after) = match key & 7 {
            0 => varint(after)?,
            _ => return None,
        };
        if matches!(key >> 3, 1 | 2) {
            fields.insert(key >> 3, value);
        }
        rest = after;
    }
    Some(fields)
}

/// A protobuf varint (at most 10 bytes) and what follows it.
fn varint(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, &bytes[i + 1..]));
        }
    }
    None
}

/// The body of a unary reply (its message, then the OK trailers) or of a trailers-only
/// response (nothing: its status is in the head).
#[derive(Debug)]
pub(crate) struct Unary(Option<Bytes>, bool);

impl Body for Unary {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if let Some(message) = this.0.take() {
            return Poll::Ready(Some(Ok(Frame::data(message))));
        }
        if std::mem::take(&mut this.1) {
            let mut trailers = HeaderMap::new();
            trailers.insert("grpc-status", HeaderValue::from_static("0"));
            return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
        }
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_none() && !self.1
    }
}

/// The body of one `Ticks` call: a framed `Tick` per interval tick, then the OK
/// trailers.
#[derive(Debug)]
pub(crate) struct GrpcTicker {
    interval: Interval,
    next: u64,
    last: Option<u64>,
    done: bool,
    _slot: sse::Slot,
}

impl Body for GrpcTicker {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        if this.last.is_some_and(|last| this.next > last) {
            this.done = true;
            let mut trailers = HeaderMap::new();
            trailers.insert("grpc-status", HeaderValue::from_static("0"));
            return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
        }
        if this.interval.poll_tick(cx).is_pending() {
            return Poll::Pending;
        }
        let n = this.next;
        this.next += 1;
        Poll::Ready(Some(Ok(Frame::data(tick(n)))))
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

/// `Tick { n }`, framed.
fn tick(n: u64) -> Bytes {
    let mut message = vec![0x08];
    let mut v = n;
    while v >= 0x80 {
        message.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    message.push(v as u8);
    let mut framed = vec![0];
    framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
    framed.extend_from_slice(&message);
    Bytes::from(framed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(message: &[u8]) -> Vec<u8> {
        let mut f = vec![0];
        f.extend_from_slice(&(message.len() as u32).to_be_bytes());
        f.extend_from_slice(message);
        f
    }

    #[test]
    fn requests_parse_and_hostile_ones_are_refused() {
        assert_eq!(parse(&framed(&[])), Some(Fields::new()));
        // every_ms = 300 (varint ac 02), count = 5, an unknown varint field skipped.
        assert_eq!(
            parse(&framed(&[0x08, 0xac, 0x02, 0x10, 5, 0x18, 1])),
            Some(Fields::from([(1, 300), (2, 5)]))
        );
        for bad in [
            vec![],
            vec![1, 0, 0, 0, 0],       // compressed
            vec![0, 0, 0, 0, 9, 0x08], // length past the end
            framed(&[0x08]),           // truncated varint
            framed(&[
                0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            ]),
            framed(&[0x0a, 1, b'x']), // a length-delimited field
        ] {
            assert_eq!(parse(&bad), None, "{bad:?}");
        }
    }

    #[test]
    fn ticks_are_framed_varints() {
        assert_eq!(&tick(1)[..], &[0, 0, 0, 0, 2, 0x08, 1]);
        assert_eq!(&tick(300)[..], &[0, 0, 0, 0, 3, 0x08, 0xac, 0x02]);
    }
}
