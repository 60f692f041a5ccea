//! Renders a [`RequestTemplate`] into HTTP/1.1 wire bytes, or into an
//! `http::Request` for HTTP/2. A request with no placeholder is rendered once
//! ([`static_wire`], [`h2_static`]) and reused for every send; one with placeholders is
//! rendered per send ([`render`], [`h2_request`]).
//!
//! For HTTP/2 the target's scheme and authority become `:scheme` and `:authority` (a
//! user `Host` header replaces the authority), the connection-specific headers HTTP/2
//! forbids are dropped (`Connection`, `Keep-Alive`, `Proxy-Connection`,
//! `Transfer-Encoding`, `Upgrade`, and `TE` unless it is `trailers`), and
//! `content-length` is the body's real length.

use bytes::Bytes;
use http::header::{
    HeaderMap, HeaderName, HeaderValue, CONTENT_LENGTH, HOST, TE, USER_AGENT as UA,
};
use http::{Method, Uri};

use headroom_plan::{RequestTemplate, Target};
use headroom_template::RenderContext;

/// Identifies the generator to the target.
const USER_AGENT: &str = concat!("headroom/", env!("CARGO_PKG_VERSION"));

/// The complete wire bytes of `request` when none of its parts holds a placeholder.
pub fn static_wire(request: &RequestTemplate, target: &Target) -> Option<Vec<u8>> {
    let path = request.path.as_static()?;
    let mut headers = Vec::with_capacity(request.headers.len());
    for (name, value) in &request.headers {
        headers.push((name.as_str(), value.as_static()?));
    }
    let body = static_body(request)?;
    let mut out = Vec::new();
    write_head(
        &mut out,
        request,
        target,
        path.as_bytes(),
        body.as_ref().map(Vec::len),
    );
    for (name, value) in headers {
        write_header(&mut out, name, value.as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    if let Some(body) = body {
        out.extend_from_slice(&body);
    }
    Some(out)
}

/// The body of `request` when nothing in it varies: `None` when it varies, `Some(None)`
/// when there is no body.
fn static_body(request: &RequestTemplate) -> Option<Option<Vec<u8>>> {
    if let Some(multipart) = &request.multipart {
        return multipart.as_static().map(Some);
    }
    match &request.body {
        Some(b) => Some(Some(b.as_static()?.as_bytes().to_vec())),
        None => Some(None),
    }
}

/// Renders the body of `request` (a template or a multipart body) onto `out`; false
/// when it has none.
fn render_body(request: &RequestTemplate, ctx: &mut RenderContext<'_>, out: &mut Vec<u8>) -> bool {
    if let Some(multipart) = &request.multipart {
        multipart.render(ctx, out);
        return true;
    }
    match &request.body {
        Some(body) => {
            body.render(ctx, out);
            true
        }
        None => false,
    }
}

/// Renders `request` into `out` (cleared first), with `extra` headers after its own
/// (the user's `Cookie`). `scratch` is reused space for the path, header values and
/// body, so a warm thread renders without allocating.
pub fn render(
    request: &RequestTemplate,
    target: &Target,
    ctx: &mut RenderContext<'_>,
    extra: &[(&str, &[u8])],
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) {
    out.clear();
    scratch.clear();
    request.path.render(ctx, scratch);
    let path_end = scratch.len();
    let has_body = render_body(request, ctx, scratch);
    let body_len = has_body.then(|| scratch.len() - path_end);
    write_head(out, request, target, &scratch[..path_end], body_len);
    let mut value = Vec::new();
    for (name, template) in &request.headers {
        value.clear();
        template.render(ctx, &mut value);
        write_header(out, name, &value);
    }
    for (name, value) in extra {
        write_header(out, name, value);
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

/// A request that cannot be expressed as an HTTP/2 request.
#[derive(Debug, thiserror::Error)]
pub enum H2RequestError {
    /// The method is not a valid token.
    #[error("invalid method {method:?}")]
    Method {
        /// The method as written.
        method: String,
    },
    /// The scheme, authority or (rendered) path do not form a valid URI.
    #[error("invalid request URI {uri:?}: {source}")]
    Uri {
        /// What was put together.
        uri: String,
        /// Why it was refused.
        #[source]
        source: http::Error,
    },
    /// A header name or (rendered) value is not valid in HTTP/2.
    #[error("invalid header {name:?}")]
    Header {
        /// The header's name.
        name: String,
    },
}

/// An HTTP/2 request rendered once (no placeholders): each send clones its parts,
/// which only bumps reference counts (the header map's table is copied).
#[derive(Debug, Clone)]
pub struct Prebuilt {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Option<Bytes>,
}

impl Prebuilt {
    /// A rendered request kept for sending, possibly more than once.
    pub fn from_request(request: http::Request<()>, body: Option<Bytes>) -> Prebuilt {
        let (parts, ()) = request.into_parts();
        Prebuilt {
            method: parts.method,
            uri: parts.uri,
            headers: parts.headers,
            body,
        }
    }

    /// The request's path and query.
    pub fn path(&self) -> &str {
        self.uri.path_and_query().map_or("/", |p| p.as_str())
    }

    /// A new `http::Request` and its body for one send.
    pub fn request(&self) -> (http::Request<()>, Option<Bytes>) {
        let mut request = http::Request::new(());
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = self.uri.clone();
        *request.headers_mut() = self.headers.clone();
        (request, self.body.clone())
    }
}

/// The HTTP/2 form of `request` when none of its parts holds a placeholder (`None`
/// otherwise; then use [`h2_request`] per send).
pub fn h2_static(
    request: &RequestTemplate,
    target: &Target,
) -> Option<Result<Prebuilt, H2RequestError>> {
    let path = request.path.as_static()?;
    let mut headers = Vec::with_capacity(request.headers.len());
    for (name, value) in &request.headers {
        headers.push((name.as_str(), value.as_static()?.as_bytes()));
    }
    let body = static_body(request)?.map(Bytes::from);
    Some(
        h2_parts(
            request,
            target,
            path.as_bytes(),
            headers,
            body.as_ref().map(Bytes::len),
        )
        .map(|(method, uri, headers)| Prebuilt {
            method,
            uri,
            headers,
            body,
        }),
    )
}

/// Renders `request` for HTTP/2: the request head and its body. `scratch` is reused
/// space for the path and body.
pub fn h2_request(
    request: &RequestTemplate,
    target: &Target,
    ctx: &mut RenderContext<'_>,
    extra: &[(&str, &[u8])],
    scratch: &mut Vec<u8>,
) -> Result<(http::Request<()>, Option<Bytes>), H2RequestError> {
    scratch.clear();
    request.path.render(ctx, scratch);
    let path_end = scratch.len();
    let body =
        render_body(request, ctx, scratch).then(|| Bytes::copy_from_slice(&scratch[path_end..]));
    let mut values = Vec::with_capacity(request.headers.len());
    for (_, template) in &request.headers {
        let mut value = Vec::new();
        template.render(ctx, &mut value);
        values.push(value);
    }
    let headers = request
        .headers
        .iter()
        .zip(&values)
        .map(|((name, _), value)| (name.as_str(), value.as_slice()))
        .chain(extra.iter().copied());
    let (method, uri, headers) = h2_parts(
        request,
        target,
        &scratch[..path_end],
        headers,
        body.as_ref().map(Bytes::len),
    )?;
    let mut out = http::Request::new(());
    *out.method_mut() = method;
    *out.uri_mut() = uri;
    *out.headers_mut() = headers;
    Ok((out, body))
}

/// Connection-specific headers, meaningless (and malformed) in HTTP/2 (RFC 9113 8.2.2).
const HOP_BY_HOP: [&str; 5] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// The method, URI and headers of `request` for HTTP/2, from its rendered path and
/// header values.
fn h2_parts<'a>(
    request: &RequestTemplate,
    target: &Target,
    path: &[u8],
    user_headers: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    body_len: Option<usize>,
) -> Result<(Method, Uri, HeaderMap), H2RequestError> {
    let method =
        Method::from_bytes(request.method.as_bytes()).map_err(|_| H2RequestError::Method {
            method: request.method.clone(),
        })?;
    let mut authority = target.authority.clone();
    let mut headers = HeaderMap::with_capacity(request.headers.len() + 2);
    headers.insert(UA, HeaderValue::from_static(USER_AGENT));
    for (name, value) in user_headers {
        let bad = || H2RequestError::Header {
            name: name.to_string(),
        };
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
        if name == HOST {
            authority = String::from_utf8(value.to_vec()).map_err(|_| bad())?;
            continue;
        }
        if HOP_BY_HOP.contains(&name.as_str())
            || name == CONTENT_LENGTH
            || (name == TE && !value.eq_ignore_ascii_case(b"trailers"))
        {
            continue;
        }
        let value = HeaderValue::from_bytes(value).map_err(|_| bad())?;
        if name == UA {
            headers.insert(name, value);
        } else {
            headers.append(name, value);
        }
    }
    if let Some(n) = body_len {
        headers.insert(CONTENT_LENGTH, HeaderValue::from(n));
    }
    let mut path_and_query = target.base_path.clone().into_bytes();
    if !path.starts_with(b"/") {
        path_and_query.push(b'/');
    }
    path_and_query.extend_from_slice(path);
    let uri = Uri::builder()
        .scheme(target.scheme.as_str())
        .authority(authority.as_str())
        .path_and_query(path_and_query.as_slice())
        .build()
        .map_err(|e| H2RequestError::Uri {
            uri: format!(
                "{}://{}{}",
                target.scheme,
                authority,
                String::from_utf8_lossy(&path_and_query)
            ),
            source: e,
        })?;
    Ok((method, uri, headers))
}

#[cfg(test)]
mod tests;
