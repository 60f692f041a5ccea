//! gRPC status: the code from `grpc-status` (trailers, or the headers of a trailers-only
//! response), the message from `grpc-message` (percent-decoded), the error kind each
//! code is counted under, and the `grpc-timeout` header.

use std::time::Duration;

use headroom_metrics::ErrorKind;

/// Longest `grpc-message` kept, in bytes after decoding (the rest is cut at a character
/// boundary): the message ends up in reports, one per failed call.
pub const MAX_MESSAGE: usize = 1024;

/// The status codes' names, in code order (0 = OK ... 16 = UNAUTHENTICATED).
const NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// A call's final status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The numeric code (`grpc-status`).
    pub code: u32,
    /// `grpc-message`, percent-decoded, at most [`MAX_MESSAGE`] bytes.
    pub message: String,
}

impl Status {
    /// The code's name (`OK`, `NOT_FOUND`), or `CODE_<n>` for a code gRPC does not define.
    pub fn name(&self) -> String {
        code_name(self.code)
    }

    /// Whether the call succeeded.
    pub fn is_ok(&self) -> bool {
        self.code == 0
    }

    /// The kind a failed call is counted under: DEADLINE_EXCEEDED → `timeout`, any
    /// other non-OK → `grpc`; `None` for OK.
    pub fn error_kind(&self) -> Option<ErrorKind> {
        match self.code {
            0 => None,
            4 => Some(ErrorKind::Timeout),
            _ => Some(ErrorKind::Grpc),
        }
    }

    /// Reads the status from a header map (trailers, or a trailers-only response's
    /// headers). `None` when `grpc-status` is absent; a value that is not a decimal
    /// code (at most 10 digits) reads as UNKNOWN, as the gRPC spec asks of clients.
    pub fn from_headers(headers: &http::HeaderMap) -> Option<Status> {
        let raw = headers.get("grpc-status")?.as_bytes();
        let code = parse_code(raw).unwrap_or(2);
        let message = headers
            .get("grpc-message")
            .map(|v| percent_decode(v.as_bytes()))
            .unwrap_or_default();
        Some(Status { code, message })
    }
}

/// A code's name, `CODE_<n>` past the defined ones.
pub fn code_name(code: u32) -> String {
    NAMES
        .get(code as usize)
        .map_or_else(|| format!("CODE_{code}"), |n| (*n).to_string())
}

fn parse_code(raw: &[u8]) -> Option<u32> {
    if raw.is_empty() || raw.len() > 10 || !raw.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(raw).ok()?.parse().ok()
}

/// Decodes `grpc-message` (`%XX` escapes of UTF-8 bytes); a malformed escape is kept
/// as written, invalid UTF-8 is replaced, and the result is cut to [`MAX_MESSAGE`].
pub fn percent_decode(raw: &[u8]) -> String {
    let mut out = Vec::with_capacity(raw.len().min(MAX_MESSAGE));
    let mut i = 0;
    while i < raw.len() && out.len() < MAX_MESSAGE {
        let hex = |b: u8| (b as char).to_digit(16);
        if raw[i] == b'%' && i + 2 < raw.len() {
            if let (Some(h), Some(l)) = (hex(raw[i + 1]), hex(raw[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(raw[i]);
        i += 1;
    }
    let mut text = String::from_utf8_lossy(&out).into_owned();
    if text.len() > MAX_MESSAGE {
        let mut end = MAX_MESSAGE;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// Encodes a deadline as `grpc-timeout`: at most 8 digits and a unit, in the finest
/// unit that fits (as grpc-go does), rounded up so the server never sees a shorter
/// deadline than ours.
pub fn encode_timeout(timeout: Duration) -> String {
    const MAX: u128 = 99_999_999;
    let nanos = timeout.as_nanos();
    let units: [(u128, char); 6] = [
        (1, 'n'),
        (1_000, 'u'),
        (1_000_000, 'm'),
        (1_000_000_000, 'S'),
        (60_000_000_000, 'M'),
        (3_600_000_000_000, 'H'),
    ];
    for (per, unit) in units {
        let value = nanos.div_ceil(per);
        if value <= MAX {
            return format!("{value}{unit}");
        }
    }
    format!("{MAX}H")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &[u8])]) -> http::HeaderMap {
        let mut map = http::HeaderMap::new();
        for (k, v) in pairs {
            map.insert(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                http::HeaderValue::from_bytes(v).unwrap(),
            );
        }
        map
    }

    #[test]
    fn status_and_message_are_read_and_mapped() {
        let s = Status::from_headers(&headers(&[
            ("grpc-status", b"5"),
            ("grpc-message", b"no%20such%20feature %E2%9C%93"),
        ]))
        .unwrap();
        assert_eq!(s.name(), "NOT_FOUND");
        assert_eq!(s.message, "no such feature ✓");
        assert_eq!(s.error_kind(), Some(ErrorKind::Grpc));
        let ok = Status::from_headers(&headers(&[("grpc-status", b"0")])).unwrap();
        assert!(ok.is_ok());
        assert_eq!(ok.error_kind(), None);
        let late = Status::from_headers(&headers(&[("grpc-status", b"4")])).unwrap();
        assert_eq!(late.name(), "DEADLINE_EXCEEDED");
        assert_eq!(late.error_kind(), Some(ErrorKind::Timeout));
        assert_eq!(Status::from_headers(&headers(&[])), None);
    }

    #[test]
    fn hostile_status_values_read_as_unknown_or_numbered() {
        for bad in [
            &b""[..],
            b"-1",
            b"0x1",
            b" 0",
            b"99999999999999999999",
            b"1e3",
        ] {
            let s = Status::from_headers(&headers(&[("grpc-status", bad)])).unwrap();
            assert_eq!(s.name(), "UNKNOWN", "{bad:?}");
        }
        let s = Status::from_headers(&headers(&[("grpc-status", b"4294967295")])).unwrap();
        assert_eq!(s.name(), "CODE_4294967295");
        assert_eq!(s.error_kind(), Some(ErrorKind::Grpc));
    }

    #[test]
    fn hostile_messages_are_decoded_safely_and_bounded() {
        assert_eq!(percent_decode(b"100%"), "100%");
        assert_eq!(percent_decode(b"%4"), "%4");
        assert_eq!(percent_decode(b"%zz%41"), "%zzA");
        assert_eq!(percent_decode(b"%FF%FE"), "\u{fffd}\u{fffd}");
        let long = "%41".repeat(100_000);
        assert_eq!(percent_decode(long.as_bytes()).len(), MAX_MESSAGE);
        let wide = "%E2%9C%93".repeat(1000);
        let text = percent_decode(wide.as_bytes());
        assert!(text.len() <= MAX_MESSAGE && text.chars().all(|c| c == '✓'));
    }

    #[test]
    fn timeouts_are_encoded_in_the_finest_unit_that_fits() {
        let cases = [
            (Duration::ZERO, "0n"),
            (Duration::from_nanos(1), "1n"),
            (Duration::from_millis(50), "50000000n"),
            (Duration::from_millis(100), "100000u"),
            (Duration::from_secs(2), "2000000u"),
            (Duration::from_secs(100), "100000m"),
            (Duration::from_secs(200_000), "200000S"),
            (Duration::from_secs(100_000_000), "1666667M"),
            (Duration::from_secs(u64::MAX), "99999999H"),
        ];
        for (d, want) in cases {
            assert_eq!(encode_timeout(d), want, "{d:?}");
        }
    }
}
