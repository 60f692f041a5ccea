//! Values that must never leave the process in anything headroom writes: the headers
//! that carry credentials by their nature ([`SECRET_HEADERS`]), and [`scrub`], which
//! masks known secret values in a text that came from elsewhere (a server's error
//! message may echo the token it refused).

/// What a masked value is replaced with.
pub const MASK: &str = "***";

/// Header names whose values are secrets without being marked (compared
/// case-insensitively); a scenario's `secrets.headers` adds its own.
pub const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "cookie",
    "proxy-authorization",
    "x-api-key",
];

/// Shortest value [`scrub`] masks, bytes: masking a two-letter value would garble a
/// message for a value worth nothing to a reader.
pub const MIN_SECRET_BYTES: usize = 4;

/// Whether `name` is one of [`SECRET_HEADERS`].
pub fn is_secret_header(name: &str) -> bool {
    SECRET_HEADERS
        .iter()
        .any(|h| h.eq_ignore_ascii_case(name.trim()))
}

/// Whether `name` is a credential header or one of `marked` (lower-case names, a
/// scenario's `secrets.headers`).
pub fn is_secret_header_in(name: &str, marked: &[String]) -> bool {
    let name = name.trim();
    is_secret_header(name) || marked.iter().any(|m| m.eq_ignore_ascii_case(name))
}

/// The parts of a credential header's value that are secret on their own: the whole
/// value, the credentials after an auth scheme (`Bearer TOKEN` → `TOKEN`), and each
/// cookie's value (`a=1; b=2` → `1`, `2`), since a server that echoes one rarely
/// echoes the whole header.
pub fn credential_parts(value: &str) -> Vec<&str> {
    let value = value.trim();
    let mut parts = vec![value];
    if let Some((_, credentials)) = value.split_once(' ') {
        parts.push(credentials.trim());
    }
    if value.contains('=') {
        for pair in value.split(';') {
            if let Some((_, v)) = pair.split_once('=') {
                parts.push(v.trim());
            }
        }
    }
    parts
}

/// `text` with every occurrence of each of `values` of at least [`MIN_SECRET_BYTES`]
/// replaced by [`MASK`], longest first (so a value that holds a shorter one is masked
/// whole).
pub fn scrub<'a>(text: &str, values: impl IntoIterator<Item = &'a str>) -> String {
    let mut values: Vec<&str> = values
        .into_iter()
        .filter(|v| v.len() >= MIN_SECRET_BYTES)
        .collect();
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values.dedup();
    let mut out = text.to_string();
    for v in values {
        if out.contains(v) {
            out = out.replace(v, MASK);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_token_echoed_alone_is_masked_and_short_values_are_left() {
        let parts = credential_parts("Bearer s3cr3t-token");
        let message = "token s3cr3t-token expired for Bearer s3cr3t-token";
        assert_eq!(
            scrub(message, parts.iter().copied()),
            "token *** expired for ***"
        );
        assert_eq!(scrub("a b abc", ["a", "abc"]), "a b abc");
        assert_eq!(scrub("no secret here", ["", "zzzz"]), "no secret here");
    }

    #[test]
    fn cookie_values_are_secret_one_by_one() {
        let parts = credential_parts("session=abcd1234; theme=dark");
        assert!(parts.contains(&"abcd1234") && parts.contains(&"dark"));
        assert_eq!(scrub("bad session abcd1234", parts), "bad session ***");
    }

    #[test]
    fn a_longer_value_holding_a_shorter_one_is_masked_whole() {
        assert_eq!(scrub("key=abcdefgh", ["abcd", "abcdefgh"]), "key=***");
    }

    #[test]
    fn names_are_compared_without_case() {
        assert!(is_secret_header(" Authorization"));
        assert!(is_secret_header("X-API-KEY"));
        assert!(!is_secret_header("x-request-id"));
    }
}
