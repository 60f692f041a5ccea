//! Who may use the dashboard. On loopback, anyone on this machine (as before); with a
//! token (`--dashboard-token`, or one made up when the dashboard listens beyond this
//! machine), only a request that carries it: `Authorization: Bearer TOKEN` (what a
//! Prometheus scrape config sends), the `headroom_token` cookie, or `?token=TOKEN`.
//! Opening the printed `http://ADDR/?token=TOKEN` sets the cookie, so the page's own
//! requests (its event stream, its Stop button) carry it without the page knowing it.

use std::net::SocketAddr;

use hyper::header::{AUTHORIZATION, COOKIE};
use hyper::Request;

/// The cookie the page gets when opened with the token.
pub const COOKIE_NAME: &str = "headroom_token";

/// The dashboard's access rule: open, or a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    token: Option<String>,
    /// Whether the user gave the token (`--dashboard-token`): then `/metrics` wants it
    /// too; a made-up one leaves `/metrics` open to scrapers that cannot know it.
    given: bool,
}

/// What a request may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// It carried the token (or none is needed).
    Allowed,
    /// It carried the token in its query: the response sets the cookie.
    AllowedSetCookie,
    /// It did not carry it.
    Denied,
}

impl Access {
    /// The rule for a dashboard bound to `addr`: `given` when the user gave a token;
    /// else a new random one when `addr` is reachable from other machines; else open.
    pub fn for_addr(addr: SocketAddr, given: Option<String>) -> Access {
        let was_given = given.is_some();
        let token = given.or_else(|| (!addr.ip().is_loopback()).then(new_token));
        Access {
            token,
            given: was_given,
        }
    }

    /// Open to anyone who reaches it.
    pub fn open() -> Access {
        Access {
            token: None,
            given: false,
        }
    }

    /// The token requests must carry, when there is one.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// Whether `req` may be served.
    pub fn check<B>(&self, req: &Request<B>) -> Grant {
        let Some(token) = self.token.as_deref() else {
            return Grant::Allowed;
        };
        // Prometheus' figures say nothing a scrape config could not; they are open
        // unless the user asked for a token everywhere.
        if !self.given && req.uri().path() == "/metrics" {
            return Grant::Allowed;
        }
        let headers = req.headers();
        let bearer = headers
            .get_all(AUTHORIZATION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(|v| v.strip_prefix("Bearer "))
            .any(|t| same(t.trim(), token));
        let cookie = headers
            .get_all(COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .any(|(name, value)| name == COOKIE_NAME && same(value, token));
        if bearer || cookie {
            return Grant::Allowed;
        }
        let query = req
            .uri()
            .query()
            .unwrap_or("")
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .any(|(name, value)| name == "token" && same(value, token));
        match query {
            true => Grant::AllowedSetCookie,
            false => Grant::Denied,
        }
    }

    /// The `Set-Cookie` value that lets the page's own requests carry the token.
    pub fn cookie(&self) -> Option<String> {
        self.token
            .as_deref()
            .map(|t| format!("{COOKIE_NAME}={t}; Path=/; HttpOnly; SameSite=Strict"))
    }
}

/// 128 random bits in hex, from the operating system's generator via `rand`.
fn new_token() -> String {
    let bytes: [u8; 16] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares without stopping at the first difference, so the time a refusal takes
/// does not say how much of a guess was right.
fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Checks a `--dashboard-token`: printable ASCII without spaces, `;` or `&` (it goes
/// into a cookie and a query), at least 16 characters.
pub fn parse_token(text: &str) -> Result<String, TokenError> {
    let fits = text.len() >= 16
        && text.len() <= 256
        && text
            .bytes()
            .all(|b| b.is_ascii_graphic() && !matches!(b, b';' | b'&' | b',' | b'"' | b'\\'));
    match fits {
        true => Ok(text.to_string()),
        false => Err(TokenError),
    }
}

/// A `--dashboard-token` that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "expected 16 to 256 printable characters without spaces, `;`, `&`, `,`, quotes or backslashes"
)]
pub struct TokenError;

#[cfg(test)]
mod tests {
    use super::*;

    fn req(headers: &[(&str, &str)], uri: &str) -> Request<()> {
        let mut b = Request::builder().uri(uri);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap()
    }

    #[test]
    fn loopback_is_open_and_beyond_it_a_token_is_made_up() {
        let local = Access::for_addr("127.0.0.1:5665".parse().unwrap(), None);
        assert_eq!(local.check(&req(&[], "/state")), Grant::Allowed);
        let wide = Access::for_addr("0.0.0.0:5665".parse().unwrap(), None);
        let token = wide.token().expect("a token").to_string();
        assert_eq!(token.len(), 32);
        let other = Access::for_addr("0.0.0.0:5665".parse().unwrap(), None);
        assert_ne!(other.token(), Some(token.as_str()), "a new one each time");
        assert_eq!(wide.check(&req(&[], "/state")), Grant::Denied);
        assert_eq!(wide.check(&req(&[], "/stop")), Grant::Denied);
        // A made-up token leaves the scrape open; a given one closes it too.
        assert_eq!(wide.check(&req(&[], "/metrics")), Grant::Allowed);
        let given = Access::for_addr(
            "0.0.0.0:5665".parse().unwrap(),
            Some("0123456789abcdef".into()),
        );
        assert_eq!(given.check(&req(&[], "/metrics")), Grant::Denied);
    }

    #[test]
    fn the_token_is_taken_from_a_bearer_header_the_cookie_or_the_query_only_whole() {
        let a = Access::for_addr(
            "127.0.0.1:1".parse().unwrap(),
            Some("0123456789abcdef".into()),
        );
        let bearer = req(&[("authorization", "Bearer 0123456789abcdef")], "/metrics");
        assert_eq!(a.check(&bearer), Grant::Allowed);
        let cookie = req(
            &[("cookie", "a=b; headroom_token=0123456789abcdef")],
            "/events",
        );
        assert_eq!(a.check(&cookie), Grant::Allowed);
        assert_eq!(
            a.check(&req(&[], "/?x=1&token=0123456789abcdef")),
            Grant::AllowedSetCookie
        );
        for wrong in [
            req(&[("authorization", "Bearer 0123456789abcde")], "/"),
            req(&[("authorization", "Basic 0123456789abcdef")], "/"),
            req(&[("cookie", "headroom_token=0123456789abcdeF")], "/"),
            req(&[("cookie", "other_token=0123456789abcdef")], "/"),
            req(&[], "/?token=0123456789abcdef0"),
            req(&[], "/?xtoken=0123456789abcdef"),
        ] {
            assert_eq!(a.check(&wrong), Grant::Denied, "{wrong:?}");
        }
        assert!(a.cookie().unwrap().contains("HttpOnly; SameSite=Strict"));
    }

    #[test]
    fn a_token_given_must_be_long_and_plain() {
        assert!(parse_token("0123456789abcdef").is_ok());
        for bad in [
            "short",
            "0123456789abcdef;x",
            "0123456789 abcdef",
            &"x".repeat(257),
        ] {
            assert!(parse_token(bad).is_err(), "{bad}");
        }
    }
}
