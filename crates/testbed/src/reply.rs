//! Small helpers shared by the target's handlers: building responses and reading
//! query parameters.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};

/// The response type of every handler.
pub(crate) type Reply = Response<Full<Bytes>>;

/// A response with this status, content type and body.
pub(crate) fn with_body(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> Reply {
    let mut res = Response::new(Full::new(body.into()));
    *res.status_mut() = status;
    res.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    res
}

/// A plain-text response.
pub(crate) fn text(status: StatusCode, body: impl Into<Bytes>) -> Reply {
    with_body(status, "text/plain; charset=utf-8", body)
}

/// A JSON response.
pub(crate) fn json(status: StatusCode, value: &serde_json::Value) -> Reply {
    with_body(status, "application/json", value.to_string())
}

/// A response with no body.
pub(crate) fn empty(status: StatusCode) -> Reply {
    let mut res = Response::new(Full::new(Bytes::new()));
    *res.status_mut() = status;
    res
}

/// The raw value of the first `name=value` pair in a query string. Values are not
/// percent-decoded: the parameters read this way are numbers.
pub(crate) fn query_param<'q>(query: Option<&'q str>, name: &str) -> Option<&'q str> {
    query?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// A query parameter that is present but does not say what it must.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ParamError {
    /// Not a value of the parameter's type.
    #[error("query parameter `{name}` has a bad value `{raw}`")]
    Bad {
        /// The parameter.
        name: String,
        /// Its value as sent.
        raw: String,
    },
    /// `ms` outside 0 to one hour.
    #[error("`ms` must be between 0 and 3600000, got {ms}")]
    MsRange {
        /// The value sent.
        ms: f64,
    },
}

/// A query parameter parsed as `T`: `Ok(None)` if absent, an error if present but
/// malformed.
pub(crate) fn parse_param<T: std::str::FromStr>(
    query: Option<&str>,
    name: &str,
) -> Result<Option<T>, ParamError> {
    match query_param(query, name) {
        None => Ok(None),
        Some(raw) => raw.parse().map(Some).map_err(|_| ParamError::Bad {
            name: name.into(),
            raw: raw.into(),
        }),
    }
}

/// `?ms=N` as a duration: a non-negative number of milliseconds, fractions allowed.
pub(crate) fn ms_param(query: Option<&str>) -> Result<Option<std::time::Duration>, ParamError> {
    match parse_param::<f64>(query, "ms")? {
        None => Ok(None),
        Some(ms) if ms.is_finite() && (0.0..=3_600_000.0).contains(&ms) => {
            Ok(Some(std::time::Duration::from_secs_f64(ms / 1000.0)))
        }
        Some(ms) => Err(ParamError::MsRange { ms }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn reads_query_parameters() {
        let q = Some("limit=10&offset=5&flag&ms=2.5");
        assert_eq!(query_param(q, "limit"), Some("10"));
        assert_eq!(query_param(q, "flag"), None);
        assert_eq!(query_param(None, "limit"), None);
        assert_eq!(parse_param::<u64>(q, "offset"), Ok(Some(5)));
        assert_eq!(parse_param::<u64>(q, "missing"), Ok(None));
        assert!(parse_param::<u64>(Some("limit=x"), "limit").is_err());
        assert_eq!(ms_param(q), Ok(Some(Duration::from_micros(2_500))));
        assert!(ms_param(Some("ms=-1")).is_err());
        assert!(ms_param(Some("ms=NaN")).is_err());
    }
}
