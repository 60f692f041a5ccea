//! Rendering of compiled parts. This runs once per request on the hot path: every
//! function writes straight into the output buffer, with no intermediate `String`.

use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rand::{Rng, RngCore};

use crate::number::write_micros;
use crate::part::Part;
use crate::write::{json_escape, write_i64, write_u64};
use crate::{Escape, RenderContext};

/// The process-wide `seq()` counter: every render anywhere takes the next value.
static SEQ: AtomicU64 = AtomicU64::new(0);

/// Takes the next `seq()` value.
pub(crate) fn next_seq() -> u64 {
    SEQ.fetch_add(1, Ordering::Relaxed)
}

/// The characters of `rand_string`.
const ALPHANUMERIC: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// Appends one part.
pub(crate) fn part(part: &Part, escape: Escape, ctx: &mut RenderContext<'_>, out: &mut Vec<u8>) {
    match part {
        Part::Literal(text) => out.extend_from_slice(text.as_bytes()),
        Part::RandInt(lo, hi) => write_i64(ctx.rng.random_range(*lo..=*hi), out),
        Part::RandFloat(lo, hi) => write_micros(ctx.rng.random_range(*lo..=*hi), out),
        Part::RandChoice(options) => {
            let i = ctx.rng.random_range(0..options.len());
            out.extend_from_slice(options[i].as_bytes());
        }
        Part::RandString(n) => {
            out.reserve(*n);
            for _ in 0..*n {
                out.push(ALPHANUMERIC[ctx.rng.random_range(0..ALPHANUMERIC.len())]);
            }
        }
        Part::Uuid => write_uuid(ctx.rng.next_u64(), ctx.rng.next_u64(), out),
        Part::Seq => write_u64(next_seq(), out),
        Part::User => write_u64(ctx.user, out),
        Part::Iteration => write_u64(ctx.iteration, out),
        Part::NowUnix => write_u64(unix_seconds(SystemTime::now()), out),
        Part::NowIso(offset) => write_iso(*offset, out),
        Part::NowFormat(format) => format.write(unix_seconds(SystemTime::now()), out),
        Part::Encode(encoding, inner) => {
            let start = out.len();
            self::part(inner, Escape::None, ctx, out);
            encoding.tail(out, start);
        }
        Part::Typed(inner) => typed(inner, ctx, out),
        Part::Var(name) => {
            let value = ctx.vars.get(name).unwrap_or("");
            match escape {
                Escape::None | Escape::Form => out.extend_from_slice(value.as_bytes()),
                Escape::Json => json_escape(value.as_bytes(), out),
            }
        }
    }
}

/// Appends `inner` as a JSON value: numbers bare, strings quoted and escaped, a
/// captured variable as the JSON it was captured as (an unset one as `null`).
fn typed(inner: &Part, ctx: &mut RenderContext<'_>, out: &mut Vec<u8>) {
    match inner {
        Part::RandInt(..)
        | Part::RandFloat(..)
        | Part::Seq
        | Part::User
        | Part::Iteration
        | Part::NowUnix => part(inner, Escape::Json, ctx, out),
        Part::Var(name) => match ctx.vars.entry(name) {
            Some((json, true)) => out.extend_from_slice(json.as_bytes()),
            Some((text, false)) => {
                out.push(b'"');
                json_escape(text.as_bytes(), out);
                out.push(b'"');
            }
            None => out.extend_from_slice(b"null"),
        },
        _ => {
            out.push(b'"');
            part(inner, Escape::Json, ctx, out);
            out.push(b'"');
        }
    }
}

/// Writes a version 4 (random) UUID made of two random words, in its hyphenated
/// lower-case form.
fn write_uuid(hi: u64, lo: u64, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    // Version nibble 4 in byte 6; variant bits 10 in byte 8 (RFC 9562).
    let hi = (hi & !0xf000) | 0x4000;
    let lo = (lo & !(0b11 << 62)) | (0b10 << 62);
    let bytes = ((hi as u128) << 64 | lo as u128).to_be_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push(b'-');
        }
        out.push(HEX[(b >> 4) as usize]);
        out.push(HEX[(b & 0xf) as usize]);
    }
}

/// Whole seconds since the epoch; 0 for a clock set before it.
pub(crate) fn unix_seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The last second RFC 3339 can write (9999-12-31T23:59:59Z), since the epoch.
const LAST_RFC3339_S: u64 = 253_402_300_799;

/// Writes now + `offset` seconds as RFC 3339 UTC with second precision, clamped to
/// 1970-01-01T00:00:00Z ..= 9999-12-31T23:59:59Z: the formatter panics before the
/// epoch and fails after year 9999, and a clock or offset can reach either.
fn write_iso(offset: i64, out: &mut Vec<u8>) {
    write_iso_at(unix_seconds(SystemTime::now()), offset, out);
}

/// [`write_iso`] at `now` seconds since the epoch.
pub(crate) fn write_iso_at(now: u64, offset: i64, out: &mut Vec<u8>) {
    let at = now.saturating_add_signed(offset).min(LAST_RFC3339_S);
    let at = UNIX_EPOCH + Duration::from_secs(at);
    // Writing into a Vec cannot fail, and the time is in the formatter's range.
    let _ = write!(out, "{}", humantime::format_rfc3339_seconds(at));
}
