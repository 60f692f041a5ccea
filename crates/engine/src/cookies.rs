//! A virtual user's cookie jar: RFC 6265 matching (domain, path, expiry, `Secure`,
//! host-only) by `cookie_store`, bounded as browsers bound theirs: at most
//! [`CookieLimits::per_domain`] cookies per domain and [`CookieLimits::size`] bytes
//! each. A `Set-Cookie` past a limit, or one that does not parse or match its request,
//! is counted as dropped, never stored, so a flood of them costs nothing to keep.

use cookie_store::{Cookie, CookieStore};
use url::Url;

use headroom_plan::journey::CookieLimits;

/// What storing a response's cookies did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stored {
    /// `Set-Cookie` headers stored (new, updated or expiring one).
    pub(crate) received: u64,
    /// `Set-Cookie` headers refused: over a limit, unparsable, or not for this URL.
    pub(crate) dropped: u64,
}

/// One user's cookies.
#[derive(Debug, Default, Clone)]
pub(crate) struct Jar {
    store: CookieStore,
    /// Whether anything was ever stored: a jar that never was skips every lookup.
    used: bool,
    limits: CookieLimits,
}

impl Jar {
    /// Whether the jar holds nothing to send.
    pub(crate) fn is_empty(&self) -> bool {
        !self.used
    }

    /// Stores the `Set-Cookie` values of a response to `url`.
    pub(crate) fn store<'a>(
        &mut self,
        values: impl Iterator<Item = &'a [u8]>,
        url: &Url,
    ) -> Stored {
        let mut stored = Stored::default();
        for value in values {
            match self.insert(value, url) {
                true => stored.received += 1,
                false => stored.dropped += 1,
            }
        }
        stored
    }

    fn insert(&mut self, value: &[u8], url: &Url) -> bool {
        let Ok(text) = std::str::from_utf8(value) else {
            return false;
        };
        let pair = text.split(';').next().unwrap_or("");
        if pair.len() > self.limits.size {
            return false;
        }
        let Ok(cookie) = Cookie::parse(text, url) else {
            return false;
        };
        let domain = cookie.domain.as_cow().map(|d| d.into_owned());
        let name = cookie.name().to_string();
        let path = String::from(&cookie.path);
        let known = domain
            .as_deref()
            .is_some_and(|d| self.store.contains_any(d, &path, &name));
        if !known {
            let held = self
                .store
                .iter_any()
                .filter(|c| c.domain.as_cow().map(|d| d.into_owned()) == domain)
                .count();
            if held >= self.limits.per_domain {
                return false;
            }
        }
        match self.store.insert(cookie.into_owned(), url) {
            Ok(_) => {
                self.used = true;
                true
            }
            Err(_) => false,
        }
    }

    /// Takes the cookies of `other`, a copy of this jar that a request sent beside
    /// the user's others stored into: what it added or changed replaces this jar's.
    pub(crate) fn absorb(&mut self, other: Jar) {
        if !other.used {
            return;
        }
        for cookie in other.store.iter_any() {
            let Some(domain) = cookie.domain.as_cow() else {
                continue;
            };
            let scheme = if cookie.secure().unwrap_or(false) {
                "https"
            } else {
                "http"
            };
            let path = String::from(&cookie.path);
            let Ok(url) = Url::parse(&format!(
                "{scheme}://{}{path}",
                domain.trim_start_matches('.')
            )) else {
                continue;
            };
            if self.store.insert(cookie.clone(), &url).is_ok() {
                self.used = true;
            }
        }
    }

    /// The `Cookie` header value for a request to `url` (`a=1; b=2`) and how many
    /// cookies it holds; `None` when no cookie matches.
    pub(crate) fn header(&self, url: &Url) -> Option<(String, u64)> {
        if !self.used {
            return None;
        }
        let mut out = String::new();
        let mut n = 0;
        for (name, value) in self.store.get_request_values(url) {
            if n > 0 {
                out.push_str("; ");
            }
            out.push_str(name);
            out.push('=');
            out.push_str(value);
            n += 1;
        }
        (n > 0).then_some((out, n))
    }

    /// The value of cookie `name` the user would send to `url`'s origin, whatever the
    /// path: the one with the longest path wins, as it is sent first.
    pub(crate) fn value(&self, name: &str, url: &Url) -> Option<String> {
        if !self.used {
            return None;
        }
        let host = url.host_str()?;
        let secure = url.scheme() == "https";
        self.store
            .iter_unexpired()
            .filter(|c| c.name() == name)
            .filter(|c| secure || !c.secure().unwrap_or(false))
            .filter(|c| match c.domain.as_cow() {
                Some(d) => {
                    let d = d.trim_start_matches('.');
                    host.eq_ignore_ascii_case(d)
                        || (host.len() > d.len()
                            && host.ends_with(d)
                            && host.as_bytes()[host.len() - d.len() - 1] == b'.')
                }
                None => false,
            })
            .max_by_key(|c| String::from(&c.path).len())
            .map(|c| c.value().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn store(jar: &mut Jar, values: &[&str], at: &str) -> Stored {
        jar.store(values.iter().map(|v| v.as_bytes()), &url(at))
    }

    #[test]
    fn cookies_follow_path_domain_secure_and_expiry() {
        let mut jar = Jar::default();
        assert!(jar.is_empty());
        let s = store(
            &mut jar,
            &[
                "session=abc; Path=/",
                "scoped=1; Path=/app",
                "secret=2; Secure",
                "gone=3; Max-Age=0",
                "other=4; Domain=example.org",
            ],
            "http://app.test:8080/login",
        );
        // `secret` is never sent over http to a host that is not loopback (cookie_store
        // treats loopback as a secure context, as browsers do), `other` is for another
        // domain; `gone` expires at once.
        assert_eq!(s.received + s.dropped, 5);
        assert!(s.dropped >= 1, "{s:?}");
        let (h, n) = jar.header(&url("http://app.test:8080/app/x")).unwrap();
        assert!(h.contains("session=abc") && h.contains("scoped=1"), "{h}");
        assert!(!h.contains("gone") && !h.contains("other"), "{h}");
        assert_eq!(n, 2, "{h}");
        let (h, n) = jar.header(&url("http://app.test:8080/")).unwrap();
        assert_eq!((h.as_str(), n), ("session=abc", 1));
        // Host-only: another host gets nothing.
        assert!(jar.header(&url("http://other.test:8080/")).is_none());
        assert_eq!(
            jar.value("session", &url("http://app.test:8080/")),
            Some("abc".into())
        );
        assert_eq!(
            jar.value("scoped", &url("http://app.test:8080/")),
            Some("1".into())
        );
        assert_eq!(jar.value("nope", &url("http://app.test:8080/")), None);
        // An update replaces, an expiry removes.
        store(&mut jar, &["session=def"], "http://app.test:8080/");
        assert_eq!(
            jar.value("session", &url("http://app.test:8080/")),
            Some("def".into())
        );
        store(&mut jar, &["session=; Max-Age=0"], "http://app.test:8080/");
        assert_eq!(jar.value("session", &url("http://app.test:8080/")), None);
    }

    #[test]
    fn a_set_cookie_flood_is_counted_not_stored() {
        let mut jar = Jar::default();
        let names: Vec<String> = (0..10_000).map(|i| format!("c{i}=v")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let s = store(&mut jar, &refs, "http://127.0.0.1/");
        assert_eq!((s.received, s.dropped), (50, 9_950));
        // Updating a held cookie is not refused by the count.
        assert_eq!(store(&mut jar, &["c0=w"], "http://127.0.0.1/").received, 1);
        let big = format!("big={}", "x".repeat(4096));
        assert_eq!(store(&mut jar, &[&big], "http://127.0.0.1/").dropped, 1);
        let (_, n) = jar.header(&url("http://127.0.0.1/")).unwrap();
        assert_eq!(n, 50);
        // Bytes that are not text, and no cookie at all, are dropped.
        let s = jar.store(
            [&[0xff, 0xfe][..], b""].into_iter(),
            &url("http://127.0.0.1/"),
        );
        assert_eq!(s.dropped, 2);
    }
}
