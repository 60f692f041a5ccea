//! Serde for HDR histograms, in HdrHistogram's V2 serialization (the format the store
//! and other HdrHistogram implementations read), so a shard's recorders can travel to a
//! coordinator and merge there exactly. Use as `#[serde(with = "hdr_serde")]` on a
//! `Histogram<u64>` field.
//!
//! The bytes come from the network, so they are checked before the decoder sees them:
//! at most [`MAX_BYTES`], the uncompressed V2 cookie (a compressed payload could
//! inflate without bound), a payload length that matches the bytes given (the decoder
//! allocates what the header claims), and at most [`MAX_SIGFIG`] significant digits
//! (the counts array grows tenfold with each digit).

use std::fmt;

use hdrhistogram::serialization::{Deserializer as HdrDeserializer, Serializer as _, V2Serializer};
use hdrhistogram::Histogram;
use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserializer, Serializer};

/// Largest encoded histogram accepted. A 3-digit histogram spanning every value up to
/// an hour in microseconds with every bucket filled encodes to well under 1 MiB.
pub const MAX_BYTES: usize = 4 << 20;
/// Most significant digits accepted (headroom records with 2 or 3).
pub const MAX_SIGFIG: u32 = 3;
/// The V2 uncompressed cookie (`0x1c849303 | 0x10`).
const V2_COOKIE: u32 = 0x1c84_9313;
/// Cookie, payload length, normalizing offset, digits (u32 each), lowest, highest
/// (u64 each), integer-to-double ratio (f64).
const HEADER: usize = 40;

/// The V2 bytes of `h`.
pub fn encode(h: &Histogram<u64>) -> Vec<u8> {
    let mut buf = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut buf)
        .expect("serializing into memory cannot fail");
    buf
}

/// Why bytes are not a histogram this module accepts.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// More than [`MAX_BYTES`].
    #[error("histogram of {0} bytes is over the limit of {MAX_BYTES}")]
    TooLarge(usize),
    /// Shorter than the header, or not the uncompressed V2 format.
    #[error("not an uncompressed V2 HDR histogram")]
    Format,
    /// The header's payload length disagrees with the bytes given.
    #[error("histogram header claims {claimed} bytes of payload, {given} given")]
    Length {
        /// Payload length in the header.
        claimed: usize,
        /// Payload bytes actually present.
        given: usize,
    },
    /// More significant digits than [`MAX_SIGFIG`].
    #[error("histogram with {0} significant digits (at most {MAX_SIGFIG})")]
    Digits(u32),
    /// The decoder refused the payload.
    #[error("histogram payload: {0:?}")]
    Payload(hdrhistogram::serialization::DeserializeError),
}

/// Decodes V2 bytes after checking them against the limits above. The result grows
/// as larger values arrive, like every histogram headroom records into.
pub fn decode(bytes: &[u8]) -> Result<Histogram<u64>, DecodeError> {
    if bytes.len() > MAX_BYTES {
        return Err(DecodeError::TooLarge(bytes.len()));
    }
    if bytes.len() < HEADER {
        return Err(DecodeError::Format);
    }
    let word = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    if word(0) != V2_COOKIE {
        return Err(DecodeError::Format);
    }
    let (claimed, given) = (word(4) as usize, bytes.len() - HEADER);
    if claimed != given {
        return Err(DecodeError::Length { claimed, given });
    }
    if word(12) > MAX_SIGFIG {
        return Err(DecodeError::Digits(word(12)));
    }
    let mut h: Histogram<u64> = HdrDeserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(DecodeError::Payload)?;
    h.auto(true);
    Ok(h)
}

/// Serializes a histogram as its V2 bytes.
pub fn serialize<S: Serializer>(h: &Histogram<u64>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_bytes(&encode(h))
}

/// Deserializes a histogram from V2 bytes (a byte string, or a sequence of bytes as
/// JSON writes them), refusing input beyond the limits above.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Histogram<u64>, D::Error> {
    let bytes = deserializer.deserialize_byte_buf(BytesVisitor)?;
    decode(&bytes).map_err(de::Error::custom)
}

struct BytesVisitor;

impl<'de> Visitor<'de> for BytesVisitor {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an HDR histogram's V2 bytes (at most {MAX_BYTES})")
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
        if v.len() > MAX_BYTES {
            return Err(E::custom(DecodeError::TooLarge(v.len())));
        }
        Ok(v.to_vec())
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
        self.visit_bytes(&v)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
        // The size hint is the sender's word: trust it only up to the limit.
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(MAX_BYTES));
        while let Some(b) = seq.next_element::<u8>()? {
            if out.len() == MAX_BYTES {
                return Err(de::Error::custom(DecodeError::TooLarge(MAX_BYTES + 1)));
            }
            out.push(b);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::new_histogram;

    fn filled() -> Histogram<u64> {
        let mut h = new_histogram(3);
        for v in [1u64, 17, 250, 999, 12_345, 3_600_000_000] {
            h.record_n(v, v % 7 + 1).unwrap();
        }
        h
    }

    #[test]
    fn a_histogram_round_trips_exactly_and_keeps_growing() {
        let h = filled();
        let mut back = decode(&encode(&h)).unwrap();
        assert_eq!(back, h);
        for q in [0.0, 0.5, 0.99, 1.0] {
            assert_eq!(back.value_at_quantile(q), h.value_at_quantile(q));
        }
        back.record(u64::MAX / 4)
            .expect("auto-resizing after decoding");
        assert_eq!(decode(&encode(&new_histogram(2))).unwrap().len(), 0);
    }

    #[test]
    fn json_carries_the_bytes_and_reads_them_back() {
        #[derive(serde::Serialize, serde::Deserialize)]
        struct Wrap {
            #[serde(with = "super")]
            h: Histogram<u64>,
        }
        let text = serde_json::to_string(&Wrap { h: filled() }).unwrap();
        let back: Wrap = serde_json::from_str(&text).unwrap();
        assert_eq!(back.h, filled());
        let bad = serde_json::from_str::<Wrap>(r#"{"h":[1,2,3]}"#);
        assert!(bad.is_err());
    }

    #[test]
    fn hostile_bytes_are_refused_before_the_decoder_allocates() {
        let good = encode(&filled());
        // A header claiming a 4 GB payload: the decoder would allocate it.
        let mut huge = good.clone();
        huge[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(decode(&huge), Err(DecodeError::Length { .. })));
        // Five significant digits over the whole u64 range: a 50 MB counts array.
        let mut digits = good.clone();
        digits[12..16].copy_from_slice(&5u32.to_be_bytes());
        digits[24..32].copy_from_slice(&u64::MAX.to_be_bytes());
        assert!(matches!(decode(&digits), Err(DecodeError::Digits(5))));
        // The compressed format, truncated input, garbage, and too much of it.
        let mut compressed = good.clone();
        compressed[0..4].copy_from_slice(&0x1c84_9314u32.to_be_bytes());
        assert!(matches!(decode(&compressed), Err(DecodeError::Format)));
        assert!(matches!(decode(&good[..20]), Err(DecodeError::Format)));
        assert!(decode(&[0xff; 64]).is_err());
        let mut truncated = good.clone();
        truncated.truncate(good.len() - 1);
        assert!(decode(&truncated).is_err());
        assert!(matches!(
            decode(&vec![0; MAX_BYTES + 1]),
            Err(DecodeError::TooLarge(_))
        ));
        // A payload of garbage counts under a valid header is an error, not a panic.
        let mut noise = good[..HEADER].to_vec();
        noise.extend((0..200u32).map(|i| (i * 97 % 251) as u8));
        noise[4..8].copy_from_slice(&200u32.to_be_bytes());
        let _ = decode(&noise);
    }
}
