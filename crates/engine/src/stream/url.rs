//! Where a stream step's `url:` points: a path joined to the target (ws/wss from
//! http/https), or a full URL (`ws://`, `wss://`, `http://`, `https://`).

use super::failure::Failure;
use headroom_plan::Target;

/// A stream's endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    /// TLS (`wss://`, `https://`).
    pub(crate) tls: bool,
    /// Host, without brackets.
    pub(crate) host: String,
    /// Port.
    pub(crate) port: u16,
    /// `Host` header value.
    pub(crate) authority: String,
    /// Path and query.
    pub(crate) path: String,
    /// Same scheme, host and port as the target: the run's connector applies.
    pub(crate) same_origin: bool,
}

/// Resolves a rendered `url:` against the target.
pub(crate) fn endpoint(target: &Target, url: &str) -> Result<Endpoint, Failure> {
    let target_tls = target.scheme == "https";
    if url.starts_with('/') {
        return Ok(Endpoint {
            tls: target_tls,
            host: target.host.clone(),
            port: target.port,
            authority: target.authority.clone(),
            path: format!("{}{url}", target.base_path),
            same_origin: true,
        });
    }
    let uri: http::Uri = url
        .parse()
        .map_err(|e| Failure::stream(format!("url {url:?}: {e}")))?;
    let tls = match uri.scheme_str() {
        Some("ws" | "http") => false,
        Some("wss" | "https") => true,
        _ => {
            return Err(Failure::stream(format!(
                "url {url:?}: expected a path or a ws://, wss://, http:// or https:// URL"
            )))
        }
    };
    let host = uri
        .host()
        .ok_or_else(|| Failure::stream(format!("url {url:?} has no host")))?;
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    let authority = uri
        .authority()
        .map(|a| a.to_string())
        .unwrap_or_else(|| host.clone());
    let same_origin =
        tls == target_tls && host.eq_ignore_ascii_case(&target.host) && port == target.port;
    Ok(Endpoint {
        tls,
        host,
        port,
        authority,
        path,
        same_origin,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Target {
        Target {
            scheme: "http".into(),
            host: "127.0.0.1".into(),
            port: 8080,
            authority: "127.0.0.1:8080".into(),
            base_path: "/api".into(),
        }
    }

    #[test]
    fn paths_join_the_target_and_full_urls_stand_alone() {
        let e = endpoint(&target(), "/ws/echo?delay_ms=5").unwrap();
        assert_eq!(
            (e.path.as_str(), e.same_origin, e.tls),
            ("/api/ws/echo?delay_ms=5", true, false)
        );
        let e = endpoint(&target(), "ws://127.0.0.1:8080/x").unwrap();
        assert!(e.same_origin);
        let e = endpoint(&target(), "wss://example.com/room").unwrap();
        assert_eq!((e.port, e.tls, e.same_origin), (443, true, false));
        assert!(endpoint(&target(), "ftp://x/").is_err());
        assert!(endpoint(&target(), "ws://").is_err());
    }
}
