//! Numbers: literals read as integers or millionths (`rand_float`), text read as a
//! number (a condition's operands), and millionths written as decimals.

use std::cmp::Ordering;
use std::fmt;

use crate::error::MAX_RAND_FLOAT;

/// A number a condition compares: integers exactly, anything else as a float.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Num {
    Int(i64),
    /// Always finite.
    Float(f64),
}

impl Num {
    /// `n`, as an integer when it fits.
    pub(crate) fn from_u64(n: u64) -> Num {
        i64::try_from(n).map_or(Num::Float(n as f64), Num::Int)
    }

    pub(crate) fn as_f64(self) -> f64 {
        match self {
            Num::Int(n) => n as f64,
            Num::Float(x) => x,
        }
    }

    /// Numeric order: two integers exactly, otherwise as floats.
    pub(crate) fn compare(self, other: Num) -> Ordering {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => a.cmp(&b),
            (a, b) => a
                .as_f64()
                .partial_cmp(&b.as_f64())
                .unwrap_or(Ordering::Equal),
        }
    }

    /// Whether it is zero.
    pub(crate) fn is_zero(self) -> bool {
        self.as_f64() == 0.0
    }
}

/// Integers as decimal digits; floats in Rust's shortest form, which never uses an
/// exponent and reads back as the same number, with a `.0` when it has no decimals
/// (so it reads back as a float: `5.0`, `-0.0`).
impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Num::Int(n) => write!(f, "{n}"),
            Num::Float(x) if x.fract() == 0.0 => write!(f, "{x}.0"),
            Num::Float(x) => write!(f, "{x}"),
        }
    }
}

/// Reads `text` as a number: `-?[0-9]+(.[0-9]+)?([eE][+-]?[0-9]+)?` and finite;
/// an integer that fits 64 bits is exact. Nothing else is a number (no spaces, no `+`,
/// no `inf`).
pub(crate) fn read(text: &str) -> Option<Num> {
    let b = text.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > start
    };
    if !digits(&mut i) {
        return None;
    }
    let mut integer = true;
    if b.get(i) == Some(&b'.') {
        i += 1;
        if !digits(&mut i) {
            return None;
        }
        integer = false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(&mut i) {
            return None;
        }
        integer = false;
    }
    if i != b.len() {
        return None;
    }
    if integer {
        if let Ok(n) = text.parse::<i64>() {
            return Some(Num::Int(n));
        }
    }
    let x: f64 = text.parse().ok()?;
    x.is_finite().then_some(Num::Float(x))
}

/// The millionths of a number literal (`-?[0-9]+(.[0-9]+)?`), rounded up (towards
/// +∞) or down; `None` when its magnitude is beyond `MAX_RAND_FLOAT`. Exact decimal
/// arithmetic: `0.1` is 100000 millionths, not 100000.00000000001.
pub(crate) fn micros(literal: &str, up: bool) -> Option<i64> {
    let (negative, digits) = match literal.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, literal),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let int: i64 = int.parse().ok()?;
    let mut six = [b'0'; 6];
    for (slot, b) in six.iter_mut().zip(frac.bytes()) {
        *slot = b;
    }
    let six: i64 = std::str::from_utf8(&six).ok()?.parse().ok()?;
    let inexact = frac.bytes().skip(6).any(|b| b != b'0');
    if int > MAX_RAND_FLOAT || int == MAX_RAND_FLOAT && (six > 0 || inexact) {
        return None;
    }
    let magnitude = int * 1_000_000 + six;
    // The value is ±(magnitude + a fraction of a millionth when inexact).
    Some(match (negative, up) {
        (false, false) => magnitude,
        (false, true) => magnitude + i64::from(inexact),
        (true, false) => -(magnitude + i64::from(inexact)),
        (true, true) => -magnitude,
    })
}

/// Writes `micros` millionths as a decimal: no exponent, at most 6 decimals, no
/// trailing zeros (`1500000` → `1.5`, `-3000000` → `-3`).
pub(crate) fn write_micros(micros: i64, out: &mut Vec<u8>) {
    if micros < 0 {
        out.push(b'-');
    }
    let abs = micros.unsigned_abs();
    crate::write::write_u64(abs / 1_000_000, out);
    let mut frac = abs % 1_000_000;
    if frac == 0 {
        return;
    }
    let mut width = 6;
    while frac.is_multiple_of(10) {
        frac /= 10;
        width -= 1;
    }
    out.push(b'.');
    let mut digits = [b'0'; 6];
    for slot in digits[..width].iter_mut().rev() {
        *slot = b'0' + (frac % 10) as u8;
        frac /= 10;
    }
    out.extend_from_slice(&digits[..width]);
}

/// [`write_micros`] into a string.
pub(crate) fn micros_text(micros: i64) -> String {
    let mut out = Vec::new();
    write_micros(micros, &mut out);
    String::from_utf8(out).expect("digits are ASCII")
}
