//! What a response head says about its body and its connection (RFC 9112 §6.3, §9.6):
//! `Content-Length`, `Transfer-Encoding` and `Connection`, the last two read as
//! comma-separated, case-insensitive token lists.

use super::error::RoundTripError;

/// How the body of a response is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framing {
    /// No body (HEAD, 204, 304).
    None,
    /// Exactly this many bytes.
    Length(u64),
    /// Chunked transfer coding.
    Chunked,
    /// Everything until the peer closes.
    UntilClose,
}

/// The framing of a final response's body, and whether the connection closes after it.
pub(super) fn framing_of(
    status: u16,
    head: bool,
    headers: &[httparse::Header<'_>],
    version: Option<u8>,
) -> Result<(Framing, bool), RoundTripError> {
    let mut length: Option<u64> = None;
    // Transfer codings over every Transfer-Encoding field, in order.
    let mut codings = 0usize;
    let mut last_is_chunked = false;
    let (mut close, mut keep_alive) = (false, false);
    for h in headers {
        if is(h.name.as_bytes(), b"content-length") {
            // The usual value is one plain number: parsed as it is, without splitting a
            // list (this loop runs for every response of the hot path).
            if !h.value.is_empty() && h.value.iter().all(u8::is_ascii_digit) {
                let n = content_length(h.value)?;
                if length.is_some_and(|l| l != n) {
                    return Err(RoundTripError::protocol(
                        "conflicting content-length values",
                    ));
                }
                length = Some(n);
                continue;
            }
            // A list of identical values ("5, 5", or the field repeated) is one length
            // (RFC 9110 §8.6); lengths that disagree are a framing attack or a bug.
            for token in tokens(h.value) {
                let n = content_length(token)?;
                if length.is_some_and(|l| l != n) {
                    return Err(RoundTripError::protocol(
                        "conflicting content-length values",
                    ));
                }
                length = Some(n);
            }
            if tokens(h.value).next().is_none() {
                return Err(RoundTripError::protocol("empty content-length"));
            }
        } else if is(h.name.as_bytes(), b"transfer-encoding") {
            for token in tokens(h.value) {
                codings += 1;
                last_is_chunked = is(token, b"chunked");
            }
        } else if is(h.name.as_bytes(), b"connection") {
            // The usual values, whole, without splitting a list.
            if is(h.value, b"keep-alive") {
                keep_alive = true;
                continue;
            }
            if is(h.value, b"close") {
                close = true;
                continue;
            }
            for token in tokens(h.value) {
                if is(token, b"close") {
                    close = true;
                } else if is(token, b"keep-alive") {
                    keep_alive = true;
                }
            }
        }
    }
    // HTTP/1.0 closes unless told to keep alive; HTTP/1.1 keeps alive unless told to close.
    let mut close = close || (version == Some(0) && !keep_alive);
    if head || status == 204 || status == 304 {
        return Ok((Framing::None, close));
    }
    let framing = if codings > 0 {
        // Transfer-Encoding overrides Content-Length, but a response carrying both may be
        // an attempt at response splitting: take this one, then close (RFC 9112 §6.3).
        close |= length.is_some();
        if last_is_chunked {
            Framing::Chunked
        } else {
            // Chunked not last: the body runs until the server closes (RFC 9112 §6.3).
            close = true;
            Framing::UntilClose
        }
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        close = true;
        Framing::UntilClose
    };
    Ok((framing, close))
}

/// The non-empty elements of a comma-separated list, optional whitespace trimmed.
/// Whether `field` is `lower` (lowercase letters and `-`) in any ASCII case.
///
/// Why not `eq_ignore_ascii_case`: it folds and compares byte by byte, and these
/// compares were a twentieth of the closed loop's user-space instructions per
/// request. OR-ing 0x20 folds every letter of a word at once, so a name of 8 to 16
/// bytes takes two loads (the first and the last eight, overlapping). It is exact
/// here: the only other byte that folds onto a lowercase letter or `-` is CR (onto
/// `-`), and httparse admits no CR in a field's name or value.
fn is(field: &[u8], lower: &[u8]) -> bool {
    const FOLD: u64 = 0x2020_2020_2020_2020;
    let n = field.len();
    if n != lower.len() {
        return false;
    }
    if n < 8 {
        return field
            .iter()
            .zip(lower)
            .fold(0u8, |diff, (&a, &b)| diff | ((a | 0x20) ^ b))
            == 0;
    }
    let word = |s: &[u8], at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[at..at + 8]);
        u64::from_ne_bytes(w)
    };
    // Whole words from the start, then the last eight bytes (overlapping the one
    // before when `n` is not a multiple of 8).
    let mut at = 0;
    while at + 8 < n {
        if word(field, at) | FOLD != word(lower, at) {
            return false;
        }
        at += 8;
    }
    word(field, n - 8) | FOLD == word(lower, n - 8)
}

fn tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(|t| t.trim_ascii())
        .filter(|t| !t.is_empty())
}

/// A Content-Length value: one or more ASCII digits (no sign, no spaces), no overflow.
fn content_length(token: &[u8]) -> Result<u64, RoundTripError> {
    let bad = || RoundTripError::protocol("bad content-length");
    if token.is_empty() || !token.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    token.iter().try_fold(0u64, |n, &d| {
        n.checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(d - b'0')))
            .ok_or_else(bad)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The framing and whether the connection closes, or the error's detail.
    type Outcome = Result<(Framing, bool), String>;

    fn framing(head: &str) -> Outcome {
        let text = format!("{head}\r\n\r\n");
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut parsed = httparse::Response::new(&mut headers);
        let status = parsed.parse(text.as_bytes()).expect("valid head");
        assert!(status.is_complete(), "{head}");
        let code = parsed.code.unwrap();
        framing_of(code, false, parsed.headers, parsed.version).map_err(|e| e.detail)
    }

    #[test]
    fn header_semantics() {
        use Framing::*;
        let ok = |f, close| Ok::<_, String>((f, close));
        let cases: &[(&str, Outcome)] = &[
            ("HTTP/1.1 200 OK\r\nContent-Length: 5", ok(Length(5), false)),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 5, 5",
                ok(Length(5), false),
            ),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5",
                ok(Length(5), false),
            ),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6",
                Err("conflicting content-length values".into()),
            ),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 5, 7",
                Err("conflicting content-length values".into()),
            ),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: +5",
                Err("bad content-length".into()),
            ),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999",
                Err("bad content-length".into()),
            ),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: ",
                Err("empty content-length".into()),
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked",
                ok(Chunked, false),
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked",
                ok(Chunked, false),
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked",
                ok(Chunked, false),
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip",
                ok(UntilClose, true),
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3",
                ok(Chunked, true),
            ),
            ("HTTP/1.1 200 OK", ok(UntilClose, true)),
            (
                "HTTP/1.1 200 OK\r\nConnection: close, Upgrade\r\nContent-Length: 1",
                ok(Length(1), true),
            ),
            (
                "HTTP/1.1 200 OK\r\nConnection: Upgrade ,CLOSE\r\nContent-Length: 1",
                ok(Length(1), true),
            ),
            (
                "HTTP/1.1 200 OK\r\nConnection: closed\r\nContent-Length: 1",
                ok(Length(1), false),
            ),
            ("HTTP/1.0 200 OK\r\nContent-Length: 1", ok(Length(1), true)),
            (
                "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1",
                ok(Length(1), false),
            ),
            (
                "HTTP/1.0 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 1",
                ok(Length(1), true),
            ),
            (
                "HTTP/1.1 204 No Content\r\nContent-Length: 9",
                ok(None, false),
            ),
            (
                "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked",
                ok(None, false),
            ),
        ];
        for (head, want) in cases {
            assert_eq!(&framing(head), want, "{head:?}");
        }
    }

    #[test]
    fn field_compares_agree_with_eq_ignore_ascii_case_on_every_byte_but_cr() {
        for want in b"abcdefghijklmnopqrstuvwxyz-".iter() {
            for b in 0..=255u8 {
                if b == b'\r' {
                    continue;
                }
                assert_eq!(
                    is(&[b], &[*want]),
                    b.eq_ignore_ascii_case(want),
                    "{b:#04x} against {:?}",
                    *want as char
                );
            }
        }
        // Every length from 1 to 24, with the one differing byte at every place.
        let lower = b"abcdefghijklmnopqrstuvwx";
        for n in 1..=lower.len() {
            let want = &lower[..n];
            assert!(is(&want.to_ascii_uppercase(), want), "{n}");
            for at in 0..n {
                let mut other = want.to_ascii_uppercase();
                other[at] = b'_';
                assert!(!is(&other, want), "{n} {at}");
            }
        }
        assert!(is(b"Transfer-Encoding", b"transfer-encoding"));
        assert!(!is(b"Transfer-Encodinh", b"transfer-encoding"));
        assert!(is(b"Content-LENGTH", b"content-length"));
        assert!(!is(b"content_length", b"content-length"));
        assert!(!is(b"content-lengt", b"content-length"));
    }

    #[test]
    fn a_head_request_has_no_body_whatever_the_headers_say() {
        let headers = [httparse::Header {
            name: "Content-Length",
            value: b"1000",
        }];
        let (f, close) = framing_of(200, true, &headers, Some(1)).unwrap();
        assert_eq!((f, close), (Framing::None, false));
    }
}
