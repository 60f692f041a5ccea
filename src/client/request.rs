//! Renders a [`RequestTemplate`] into HTTP/1.1 wire bytes, and prepares it once per
//! plan ([`PreparedRequest`]). A request with no
//! placeholder is rendered once ([`static_wire`]) and its bytes reused for every send.

use crate::plan::{RequestTemplate, Target};
use crate::template::RenderContext;

/// Identifies the generator to the target.
const USER_AGENT: &str = concat!("headroom/", env!("CARGO_PKG_VERSION"));

/// The complete wire bytes of `request` when none of its parts holds a placeholder.
pub fn static_wire(request: &RequestTemplate, target: &Target) -> Option<Vec<u8>> {
    let path = request.path.as_static()?;
    let mut headers = Vec::with_capacity(request.headers.len());
    for (name, value) in &request.headers {
        headers.push((name.as_str(), value.as_static()?));
    }
    let body = match &request.body {
        Some(b) => Some(b.as_static()?),
        None => None,
    };
    let mut out = Vec::new();
    write_head(
        &mut out,
        request,
        target,
        path.as_bytes(),
        body.map(str::len),
    );
    for (name, value) in headers {
        write_header(&mut out, name, value.as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    if let Some(body) = body {
        out.extend_from_slice(body.as_bytes());
    }
    Some(out)
}

/// Renders `request` into `out` (cleared first). `scratch` is reused space for the
/// path, header values and body, so a warm thread renders without allocating.
pub fn render(
    request: &RequestTemplate,
    target: &Target,
    ctx: &mut RenderContext<'_>,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) {
    out.clear();
    scratch.clear();
    request.path.render(ctx, scratch);
    let path_end = scratch.len();
    if let Some(body) = &request.body {
        body.render(ctx, scratch);
    }
    let body_len = request.body.as_ref().map(|_| scratch.len() - path_end);
    write_head(out, request, target, &scratch[..path_end], body_len);
    let mut value = Vec::new();
    for (name, template) in &request.headers {
        value.clear();
        template.render(ctx, &mut value);
        write_header(out, name, &value);
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&scratch[path_end..]);
}

fn write_head(
    out: &mut Vec<u8>,
    request: &RequestTemplate,
    target: &Target,
    path: &[u8],
    body_len: Option<usize>,
) {
    out.extend_from_slice(request.method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.base_path.as_bytes());
    if !path.starts_with(b"/") {
        out.push(b'/');
    }
    out.extend_from_slice(path);
    out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    out.extend_from_slice(target.authority.as_bytes());
    out.extend_from_slice(b"\r\nUser-Agent: ");
    out.extend_from_slice(USER_AGENT.as_bytes());
    out.extend_from_slice(b"\r\n");
    if let Some(n) = body_len {
        out.extend_from_slice(b"Content-Length: ");
        out.extend_from_slice(n.to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
    }
}

fn write_header(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// A request made ready once per plan for the run's protocol: its template, its wire
/// form when nothing in it varies, and what handling its response needs.
#[derive(Debug)]
pub struct PreparedRequest {
    /// The compiled request.
    pub template: std::sync::Arc<RequestTemplate>,
    /// HTTP/1.1 wire bytes when nothing in the request varies.
    pub(crate) wire: Option<Vec<u8>>,
    /// Whether the body must be kept (for checks or captures).
    pub keep_body: bool,
    /// A HEAD request, whose response has no body.
    pub head: bool,
    /// Sending it twice cannot change the target more than once (RFC 9110 §9.2.2), so
    /// it may be sent again after a stale keep-alive connection or a refused stream.
    pub idempotent: bool,
}

impl PreparedRequest {
    /// Prepares `template` for `target` and `protocol`; `keep_body` when a check or
    /// capture reads the body.
    pub fn new(
        template: &std::sync::Arc<RequestTemplate>,
        target: &Target,
        protocol: super::Protocol,
        keep_body: bool,
    ) -> PreparedRequest {
        let http1 = protocol == super::Protocol::Http1;
        PreparedRequest {
            wire: static_wire(template, target).filter(|_| http1),
            keep_body,
            head: template.method == "HEAD",
            idempotent: matches!(
                template.method.as_str(),
                "GET" | "HEAD" | "OPTIONS" | "TRACE" | "PUT" | "DELETE"
            ),
            template: template.clone(),
        }
    }
}
