//! What one exchange of a [`super::Client`] takes and gives: the request rendered
//! for sending ([`Payload`]) and the response as the caller's judge sees it ([`Reply`]).

use super::super::http2;
use super::super::prepared::PreparedRequest;
use super::super::request::Prebuilt;
use super::super::trace::{FirstByte, Trace};

/// A request rendered for sending: borrowed prebuilt bytes, or this send's rendering.
pub enum Payload<'a> {
    /// HTTP/1.1 wire bytes.
    H1(&'a [u8]),
    /// An HTTP/2 request and its body, made anew for each attempt.
    H2(H2Payload<'a>),
}

impl Payload<'_> {
    /// The request target as sent (path and query, the target's base path included);
    /// `None` for a request that could not be rendered.
    pub fn path(&self) -> Option<&[u8]> {
        match self {
            Payload::H1(bytes) => {
                let start = bytes.iter().position(|&b| b == b' ')? + 1;
                let len = bytes[start..].iter().position(|&b| b == b' ')?;
                Some(&bytes[start..start + len])
            }
            Payload::H2(H2Payload::Prebuilt(p)) => Some(p.path().as_bytes()),
            Payload::H2(H2Payload::Rendered(p)) => Some(p.path().as_bytes()),
            Payload::H2(H2Payload::Invalid(_)) => None,
        }
    }
}

/// An HTTP/2 request to send, made anew (cheaply) for each attempt.
pub enum H2Payload<'a> {
    /// Nothing in the request varies.
    Prebuilt(&'a Prebuilt),
    /// Rendered for this send.
    Rendered(Box<Prebuilt>),
    /// The rendering failed: a rendered path or header value HTTP/2 cannot carry.
    Invalid(String),
}

impl H2Payload<'_> {
    /// The request to send (HTTP/2's and HTTP/3's), or `None` when its rendering
    /// failed (counted as `protocol`).
    pub(super) fn prebuilt(&self) -> Option<&Prebuilt> {
        match self {
            H2Payload::Prebuilt(p) => Some(p),
            H2Payload::Rendered(p) => Some(p),
            H2Payload::Invalid(_) => None,
        }
    }
}

/// A response as the caller's `judge` sees it, while its connection is still held.
pub struct Reply<'a> {
    /// Status code.
    pub status: u16,
    /// The response headers the request asked to keep ([`PreparedRequest::keep_headers`]):
    /// (index into that list, value), in the order they came.
    pub headers: &'a [(usize, Vec<u8>)],
    /// The body when the request keeps it, else empty.
    pub body: &'a [u8],
}

impl Reply<'_> {
    /// The values of the kept header at `index` of [`PreparedRequest::keep_headers`].
    pub fn header(&self, index: usize) -> impl Iterator<Item = &[u8]> {
        self.headers
            .iter()
            .filter(move |(i, _)| *i == index)
            .map(|(_, v)| v.as_slice())
    }
}

/// Judges an HTTP/2 or HTTP/3 response read to its end: its status, the response
/// headers the request keeps, and its body.
pub(super) fn judge_muxed<R>(
    request: &PreparedRequest,
    response: &http2::Response,
    trace: &mut Trace,
    judge: impl FnOnce(&Reply<'_>) -> R,
) -> R {
    trace.first_byte = Some(FirstByte::At(response.first_byte));
    let mut kept = Vec::new();
    for (i, name) in request.keep_headers.iter().enumerate() {
        for value in response.headers.get_all(name.as_str()) {
            kept.push((i, value.as_bytes().to_vec()));
        }
    }
    judge(&Reply {
        status: response.status,
        headers: &kept,
        body: &response.body,
    })
}
