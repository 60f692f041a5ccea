//! `base64(x)` and `urlencode(x)`: applied once to constant text when the template
//! compiles, otherwise to the tail of the output buffer, in place, at render time.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

/// An encoding a template function applies to its argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// Standard base64 (RFC 4648 section 4) with `=` padding.
    Base64,
    /// Percent-encoding of every byte but RFC 3986's unreserved characters
    /// (`A-Z a-z 0-9 - . _ ~`), with upper-case hex digits; a space is `%20`.
    Url,
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

impl Encoding {
    /// The template function's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Encoding::Base64 => "base64",
            Encoding::Url => "urlencode",
        }
    }

    /// Encodes `out[start..]` in place. The result is ASCII that needs no JSON escaping.
    pub(crate) fn tail(self, out: &mut Vec<u8>, start: usize) {
        match self {
            Encoding::Base64 => base64_tail(out, start),
            Encoding::Url => url_tail(out, start),
        }
    }

    /// `text` encoded.
    pub(crate) fn text(self, text: &str) -> String {
        let mut out = text.as_bytes().to_vec();
        self.tail(&mut out, 0);
        String::from_utf8(out).expect("encodings write ASCII")
    }
}

/// Base64 of `out[start..]`, written after it and moved down over it.
fn base64_tail(out: &mut Vec<u8>, start: usize) {
    let end = out.len();
    let len = base64::encoded_len(end - start, true).expect("a buffer's length times 4/3 fits");
    out.resize(end + len, 0);
    let (input, output) = out.split_at_mut(end);
    let written = STANDARD
        .encode_slice(&input[start..], output)
        .expect("sized by encoded_len");
    out.copy_within(end..end + written, start);
    out.truncate(start + written);
}

fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Percent-encodes `out[start..]`, growing the buffer and filling it from the end, so
/// every byte is read before its place is written.
fn url_tail(out: &mut Vec<u8>, start: usize) {
    let reserved = out[start..].iter().filter(|&&b| !unreserved(b)).count();
    if reserved == 0 {
        return;
    }
    let mut read = out.len();
    out.resize(read + 2 * reserved, 0);
    let mut write = out.len();
    while read > start {
        read -= 1;
        let b = out[read];
        if unreserved(b) {
            write -= 1;
            out[write] = b;
        } else {
            write -= 3;
            out[write] = b'%';
            out[write + 1] = HEX[usize::from(b >> 4)];
            out[write + 2] = HEX[usize::from(b & 0xf)];
        }
    }
}
