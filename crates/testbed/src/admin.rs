//! Fault and inspection helpers: [`Stall`] (`POST /admin/stall?ms=N`), `/echo` and
//! `/status/{code}`.
//!
//! A stall models a server that freezes: every response that is ready before the
//! stall's end waits until then before it is written. `/admin/*` and `/health` are
//! exempt so the stall can be set and the target probed while it lasts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::http::request::Parts;
use hyper::StatusCode;
use serde_json::{Map, Value};

use super::reply::{self, Reply};

/// The end of the current stall, if any. Shared by reference; lock-free.
pub(crate) struct Stall {
    base: Instant,
    /// Nanoseconds after `base` at which the stall ends; 0 when none was ever set.
    until_ns: AtomicU64,
}

impl Stall {
    /// No stall.
    pub(crate) fn new() -> Self {
        Stall {
            base: Instant::now(),
            until_ns: AtomicU64::new(0),
        }
    }

    /// Stalls responses until now + `length`, replacing any stall in progress
    /// (`length` zero ends it).
    pub(crate) fn start(&self, length: Duration) {
        let until = (Instant::now() + length).duration_since(self.base);
        let ns = u64::try_from(until.as_nanos()).unwrap_or(u64::MAX).max(1);
        self.until_ns.store(ns, Ordering::Release);
    }

    /// When the stall in progress ends; `None` if there is none.
    pub(crate) fn until(&self) -> Option<Instant> {
        match self.until_ns.load(Ordering::Acquire) {
            0 => None,
            ns => Some(self.base + Duration::from_nanos(ns)).filter(|at| *at > Instant::now()),
        }
    }
}

/// `GET /status/{code}`: an empty response with that status (200–599), else 400.
pub(crate) fn status(code: &str) -> Reply {
    match code.parse::<u16>().ok().filter(|c| (200..600).contains(c)) {
        Some(code) => reply::empty(StatusCode::from_u16(code).unwrap_or(StatusCode::OK)),
        None => reply::text(
            StatusCode::BAD_REQUEST,
            format!("status must be a number from 200 to 599, got `{code}`\n"),
        ),
    }
}

/// `/echo`: the request as JSON `{method, path, query, headers, body}`. `query` is the
/// raw query string (empty if none); `headers` maps each lower-case name to its value,
/// repeated headers joined by `, `; `body` is the body as text (invalid UTF-8 replaced).
pub(crate) fn echo(parts: &Parts, body: &Bytes) -> Reply {
    let mut headers = Map::new();
    for (name, value) in &parts.headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        match headers.get_mut(name.as_str()) {
            Some(Value::String(seen)) => {
                seen.push_str(", ");
                seen.push_str(&value);
            }
            _ => {
                headers.insert(name.as_str().to_owned(), Value::String(value));
            }
        }
    }
    let echoed = serde_json::json!({
        "method": parts.method.as_str(),
        "path": parts.uri.path(),
        "query": parts.uri.query().unwrap_or(""),
        "headers": headers,
        "body": String::from_utf8_lossy(body),
    });
    reply::json(StatusCode::OK, &echoed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stall_ends_when_its_time_is_up() {
        let stall = Stall::new();
        assert_eq!(stall.until(), None);
        stall.start(Duration::from_millis(200));
        let until = stall.until().expect("a stall in progress");
        let left = until - Instant::now();
        assert!(left > Duration::from_millis(150) && left <= Duration::from_millis(200));
        stall.start(Duration::ZERO);
        assert_eq!(stall.until(), None);
    }

    #[test]
    fn status_accepts_only_final_codes() {
        assert_eq!(status("418").status(), StatusCode::IM_A_TEAPOT);
        assert_eq!(status("503").status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(status("100").status(), StatusCode::BAD_REQUEST);
        assert_eq!(status("abc").status(), StatusCode::BAD_REQUEST);
    }

    #[test]
    fn echo_joins_repeated_headers() {
        let (parts, ()) = hyper::Request::post("/echo?a=1")
            .header("x-k", "1")
            .header("x-k", "2")
            .body(())
            .unwrap()
            .into_parts();
        let res = echo(&parts, &Bytes::from_static(b"hi"));
        assert_eq!(res.status(), StatusCode::OK);
        let body = res.into_body();
        let bytes = futures_body(body);
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["method"], "POST");
        assert_eq!(v["path"], "/echo");
        assert_eq!(v["query"], "a=1");
        assert_eq!(v["headers"]["x-k"], "1, 2");
        assert_eq!(v["body"], "hi");
    }

    fn futures_body(body: http_body_util::Full<Bytes>) -> Bytes {
        use http_body_util::BodyExt;
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(body.collect())
            .unwrap()
            .to_bytes()
    }
}
