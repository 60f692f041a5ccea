//! Target URLs: `http[s]://host[:port][/base]` into a [`Target`], keeping the path and
//! query apart for `--url` runs with no scenario file.

use http::Uri;

use super::field_errors::TargetError;
use headroom_plan::Target;

/// Parses a target URL. Returns the target (its `base_path` is the URL's path without
/// a trailing slash) and the URL's path and query as written (`/` when absent).
pub(crate) fn parse_target(url: &str) -> Result<(Target, String), TargetError> {
    let relative = || TargetError::Relative {
        url: url.to_string(),
    };
    let uri: Uri = url.parse().map_err(|source| TargetError::Parse {
        url: url.to_string(),
        source,
    })?;
    let (scheme, default_port) = match uri.scheme_str() {
        Some("http") => ("http", 80),
        Some("https") => ("https", 443),
        Some(other) => {
            return Err(TargetError::Scheme {
                scheme: other.to_string(),
            })
        }
        None => return Err(relative()),
    };
    let authority = uri.authority().ok_or_else(relative)?;
    if authority.as_str().contains('@') {
        return Err(TargetError::UserInfo {
            url: url.to_string(),
        });
    }
    let host = authority.host();
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if host.is_empty() {
        return Err(TargetError::NoHost {
            url: url.to_string(),
        });
    }
    let target = Target {
        scheme: scheme.into(),
        host: host.to_string(),
        port: authority.port_u16().unwrap_or(default_port),
        authority: authority.as_str().to_string(),
        base_path: uri.path().trim_end_matches('/').to_string(),
    };
    let path_and_query = uri
        .path_and_query()
        .map_or("/".to_string(), |pq| pq.as_str().to_string());
    Ok((target, path_and_query))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_and_base_path() {
        let (t, pq) = parse_target("http://127.0.0.1:4000/api/?x=1").unwrap();
        assert_eq!(
            t,
            Target {
                scheme: "http".into(),
                host: "127.0.0.1".into(),
                port: 4000,
                authority: "127.0.0.1:4000".into(),
                base_path: "/api".into(),
            }
        );
        assert_eq!(pq, "/api/?x=1");

        let (t, pq) = parse_target("http://localhost").unwrap();
        assert_eq!(
            (
                t.host.as_str(),
                t.port,
                t.authority.as_str(),
                t.base_path.as_str()
            ),
            ("localhost", 80, "localhost", "")
        );
        assert_eq!(pq, "/");

        let (t, _) = parse_target("http://[::1]:8080/").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.authority.as_str()),
            ("::1", 8080, "[::1]:8080")
        );
    }

    #[test]
    fn https_targets_default_to_port_443() {
        let (t, pq) = parse_target("https://example.test/api").unwrap();
        assert_eq!(
            (
                t.scheme.as_str(),
                t.host.as_str(),
                t.port,
                t.authority.as_str()
            ),
            ("https", "example.test", 443, "example.test")
        );
        assert_eq!(pq, "/api");
        let (t, _) = parse_target("https://127.0.0.1:8443/").unwrap();
        assert_eq!((t.port, t.authority.as_str()), (8443, "127.0.0.1:8443"));
    }

    #[test]
    fn refused_urls_say_why() {
        for bad in ["127.0.0.1:4000", "/path", "ftp://x", "http://", "not a url"] {
            let err = parse_target(bad).unwrap_err().to_string();
            assert!(
                err.contains("expected an absolute http:// or https:// URL"),
                "{bad}: {err}"
            );
        }
    }
}
