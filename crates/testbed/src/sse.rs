//! `GET /sse/ticker`: a Server-Sent Events ticker, the target's stream for SSE tests
//! and the demo.
//!
//! `?every_ms=N` (default 1000, at least [`MIN_EVERY_MS`]) between events,
//! `&count=M` (ids 1..=M, then the stream ends; default endless), `&drop_after=K` (the
//! connection is cut, without the end of the body, one period after its K-th event: what a
//! client's reconnection is tested with), `&retry_ms=R` (the `retry:` field sent
//! first, default 1000). Each event is `event: tick`, `id: k`, `data:
//! {"n": k, "sent_at_ms": <Unix time in ms>}`. A `Last-Event-ID: k` request resumes
//! at k + 1; one at or past `count` gets 204 (the spec's "stop reconnecting").
//! At most [`MAX_STREAMS`] tickers are open at once; more get 503.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{Either, Full};
use hyper::body::{Body, Frame};
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use tokio::time::{Interval, MissedTickBehavior};

use super::reply::{self, parse_param, Reply};

/// The path of the ticker.
pub(crate) const TICKER_PATH: &str = "/sse/ticker";

/// Shortest interval between events: 100 events/s per stream at most, so a handful of
/// streams cannot turn the target into a CPU sink.
pub(crate) const MIN_EVERY_MS: u64 = 10;

/// Most tickers open at once on one target.
pub(crate) const MAX_STREAMS: usize = 10_000;

/// A response of the router or a ticker's stream.
pub(crate) type MaybeStream = Response<Either<Full<Bytes>, Ticker>>;

/// The open tickers of one target.
#[derive(Debug, Default)]
pub(crate) struct Tickers {
    open: Arc<AtomicUsize>,
}

impl Tickers {
    /// One of the open-stream slots (shared with the gRPC ticker), or `None` when
    /// [`MAX_STREAMS`] are open.
    pub(crate) fn take(&self) -> Option<Slot> {
        let open = Arc::clone(&self.open);
        if open.fetch_add(1, Ordering::AcqRel) >= MAX_STREAMS {
            open.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Slot(open))
    }
}

/// `GET /sse/ticker` (any other method: 405).
pub(crate) fn ticker<B>(tickers: &Tickers, req: &Request<B>) -> MaybeStream {
    match start(tickers, req) {
        Ok(ticker) => {
            let mut res = Response::new(Either::Right(ticker));
            let headers = res.headers_mut();
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            res
        }
        Err(reply) => reply.map(Either::Left),
    }
}

/// The ticker `req` asks for, or the refusal (boxed: a response is large).
fn start<B>(tickers: &Tickers, req: &Request<B>) -> Result<Ticker, Box<Reply>> {
    if req.method() != hyper::Method::GET {
        return Err(Box::new(reply::text(
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed\n",
        )));
    }
    let query = req.uri().query();
    let bad = |m: String| Box::new(reply::text(StatusCode::BAD_REQUEST, m + "\n"));
    let bad_param = |e: reply::ParamError| bad(e.to_string());
    let every = parse_param::<u64>(query, "every_ms")
        .map_err(bad_param)?
        .unwrap_or(1000);
    if !(MIN_EVERY_MS..=3_600_000).contains(&every) {
        return Err(bad(format!(
            "`every_ms` must be between {MIN_EVERY_MS} and 3600000, got {every}"
        )));
    }
    let count = parse_param::<u64>(query, "count").map_err(bad_param)?;
    let drop_after = parse_param::<u64>(query, "drop_after").map_err(bad_param)?;
    if drop_after == Some(0) {
        return Err(bad("`drop_after` must be at least 1".into()));
    }
    let retry = parse_param::<u64>(query, "retry_ms")
        .map_err(bad_param)?
        .unwrap_or(1000);
    // An id we did not send (not a number) starts the stream over, as a fresh client.
    let resume = req
        .headers()
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    if count.is_some_and(|c| resume >= c) {
        return Err(Box::new(reply::empty(StatusCode::NO_CONTENT)));
    }
    let open = Arc::clone(&tickers.open);
    if open.fetch_add(1, Ordering::AcqRel) >= MAX_STREAMS {
        open.fetch_sub(1, Ordering::AcqRel);
        return Err(Box::new(reply::text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("too many open SSE streams (at most {MAX_STREAMS})\n"),
        )));
    }
    let mut interval = tokio::time::interval(Duration::from_millis(every));
    // A late tick is not followed by a burst of catch-up events: a ticker keeps its
    // period, as a real feed would.
    interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
    Ok(Ticker {
        interval,
        preamble: Some(Bytes::from(format!("retry: {retry}\n\n"))),
        next: resume + 1,
        last: count,
        drop_after,
        sent: 0,
        _slot: Slot(open),
    })
}

/// The body of one ticker stream: an event per interval tick, bounded by nothing but
/// `count` (no buffering: each event is made when the connection can take it).
#[derive(Debug)]
pub(crate) struct Ticker {
    interval: Interval,
    /// The `retry:` field, written first.
    preamble: Option<Bytes>,
    next: u64,
    last: Option<u64>,
    drop_after: Option<u64>,
    /// Events sent on this connection.
    sent: u64,
    _slot: Slot,
}

/// One of the open-ticker slots, given back on drop (connection closed or finished).
#[derive(Debug)]
pub(crate) struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The error that cuts a ticker's connection (`drop_after`).
#[derive(Debug, thiserror::Error)]
#[error("drop_after reached: the connection is cut")]
pub(crate) struct Dropped;

impl Body for Ticker {
    type Data = Bytes;
    type Error = Dropped;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Dropped>>> {
        let this = self.get_mut();
        if let Some(preamble) = this.preamble.take() {
            return Poll::Ready(Some(Ok(Frame::data(preamble))));
        }
        if this.last.is_some_and(|last| this.next > last) {
            return Poll::Ready(None);
        }
        if this.interval.poll_tick(cx).is_pending() {
            return Poll::Pending;
        }
        if this.drop_after.is_some_and(|k| this.sent >= k) {
            // Cut one period after the K-th event, not right behind it: hyper aborts the
            // connection at once (HTTP/1.1: no last chunk; h2: RST_STREAM) and could
            // discard the K-th event still in its write buffer.
            return Poll::Ready(Some(Err(Dropped)));
        }
        let n = this.next;
        this.next += 1;
        this.sent += 1;
        let sent_at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| (d.as_micros() as f64) / 1000.0);
        let event = format!(
            "event: tick\nid: {n}\ndata: {}\n\n",
            serde_json::json!({"n": n, "sent_at_ms": sent_at_ms})
        );
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(event)))))
    }

    fn is_end_stream(&self) -> bool {
        self.preamble.is_none() && self.last.is_some_and(|last| self.next > last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn request(query: &str, last_id: Option<&str>) -> Request<()> {
        let mut b = Request::get(format!("{TICKER_PATH}?{query}"));
        if let Some(id) = last_id {
            b = b.header("last-event-id", id);
        }
        b.body(()).unwrap()
    }

    async fn body_text(res: MaybeStream) -> (StatusCode, Result<String, String>) {
        let status = res.status();
        let mut body = res.into_body();
        let mut text = String::new();
        while let Some(frame) = body.frame().await {
            match frame {
                Ok(f) => text.push_str(std::str::from_utf8(f.data_ref().unwrap()).unwrap()),
                Err(e) => return (status, Err(format!("{text}|{e}"))),
            }
        }
        (status, Ok(text))
    }

    #[tokio::test]
    async fn ticks_resume_after_the_last_id_and_stop_at_count() {
        let tickers = Tickers::default();
        let res = ticker(
            &tickers,
            &request("every_ms=50&count=3&retry_ms=20", Some("1")),
        );
        assert_eq!(res.headers()[CONTENT_TYPE], "text/event-stream");
        let (status, text) = body_text(res).await;
        assert_eq!(status, StatusCode::OK);
        let text = text.unwrap();
        assert!(
            text.starts_with("retry: 20\n\nevent: tick\nid: 2\ndata: {\"n\":2,"),
            "{text}"
        );
        assert!(text.contains("id: 3\n"));
        assert!(!text.contains("id: 4\n"));
        assert_eq!(
            tickers.open.load(Ordering::Acquire),
            0,
            "the slot is given back"
        );
        // Past the end: 204, stop reconnecting.
        let res = ticker(&tickers, &request("count=3", Some("3")));
        assert_eq!(res.status(), StatusCode::NO_CONTENT);
    }

    #[tokio::test]
    async fn drop_after_cuts_the_connection() {
        let tickers = Tickers::default();
        let res = ticker(&tickers, &request("every_ms=10&drop_after=2", Some("7")));
        let (_, text) = body_text(res).await;
        let text = text.unwrap_err();
        assert!(
            text.contains("id: 8\n") && text.contains("id: 9\n"),
            "{text}"
        );
        assert!(
            text.ends_with("|drop_after reached: the connection is cut"),
            "{text}"
        );
    }

    #[test]
    fn bad_parameters_and_too_many_streams_are_refused() {
        let tickers = Tickers::default();
        for q in ["every_ms=5", "every_ms=x", "drop_after=0", "count=-1"] {
            assert_eq!(
                ticker(&tickers, &request(q, None)).status(),
                StatusCode::BAD_REQUEST,
                "{q}"
            );
        }
        let post = Request::post(TICKER_PATH).body(()).unwrap();
        assert_eq!(
            ticker(&tickers, &post).status(),
            StatusCode::METHOD_NOT_ALLOWED
        );
        tickers.open.store(MAX_STREAMS, Ordering::Release);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _enter = rt.enter();
        assert_eq!(
            ticker(&tickers, &request("every_ms=10", None)).status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(tickers.open.load(Ordering::Acquire), MAX_STREAMS);
    }
}
