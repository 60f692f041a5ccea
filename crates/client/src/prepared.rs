//! [`PreparedRequest`]: a request made ready once per plan, in the form the run's
//! protocol sends, with what handling its response needs.

use std::sync::Arc;

use super::request::{h2_static, static_wire, H2RequestError, Prebuilt};
use super::Protocol;
use headroom_plan::{RequestTemplate, Target};

/// A request made ready once per plan for the run's protocol: its template, its
/// prebuilt form when nothing in it varies, and what handling its response needs.
#[derive(Debug)]
pub struct PreparedRequest {
    /// The compiled request.
    pub template: Arc<RequestTemplate>,
    /// HTTP/1.1 wire bytes when nothing in the request varies (HTTP/1.1 runs only).
    pub(crate) wire: Option<Vec<u8>>,
    /// The HTTP/2 request when nothing in it varies (HTTP/2 runs only).
    pub(crate) h2: Option<Box<Prebuilt>>,
    /// Whether the body must be kept (for checks or captures).
    pub keep_body: bool,
    /// A HEAD request, whose response has no body.
    pub head: bool,
    /// Response headers kept for the caller, by lower-case name (`set-cookie` for the
    /// jar, `location` for redirects, a header a capture reads); empty: none.
    pub keep_headers: Vec<String>,
    /// Sending it twice cannot change the target more than once (RFC 9110 §9.2.2), so
    /// it may be sent again after a stale keep-alive connection or a refused stream.
    pub idempotent: bool,
}

impl PreparedRequest {
    /// Prepares `template` for `target` and `protocol`; `keep_body` when a check or
    /// capture reads the body. Fails when a request with nothing to render cannot be
    /// an HTTP/2 request (a header value HTTP/2 forbids): bad input, before any load.
    pub fn new(
        template: &Arc<RequestTemplate>,
        target: &Target,
        protocol: Protocol,
        keep_body: bool,
    ) -> Result<PreparedRequest, H2RequestError> {
        let (wire, h2) = match protocol {
            Protocol::Http1 => (static_wire(template, target), None),
            Protocol::Http2 | Protocol::Http3 => {
                (None, h2_static(template, target).transpose()?.map(Box::new))
            }
        };
        Ok(PreparedRequest {
            wire,
            h2,
            keep_body,
            keep_headers: Vec::new(),
            head: template.method == "HEAD",
            idempotent: matches!(
                template.method.as_str(),
                "GET" | "HEAD" | "OPTIONS" | "TRACE" | "PUT" | "DELETE"
            ),
            template: template.clone(),
        })
    }
}
