//! gRPC message framing over an HTTP/2 body: each message is a 5-byte prefix (a
//! compressed flag byte, then the message length as a big-endian u32) followed by the
//! message. [`Decoder`] cuts messages out of DATA frames as they arrive, buffering at
//! most one message (bounded by its limit) plus one prefix.

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Length of the prefix before every message.
pub const PREFIX_LEN: usize = 5;

/// Default limit on one received message: 4 MiB, grpc-go's and grpc-java's default
/// receive limit, so a server that works with their clients works here.
pub const DEFAULT_MAX_MESSAGE: usize = 4 * 1024 * 1024;

/// Why a body could not be cut into messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// A prefix announced a message longer than the limit (nothing of it is buffered).
    #[error("a message of {len} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The announced length.
        len: u64,
        /// The limit.
        limit: usize,
    },
    /// The compressed flag was set but the response named no `grpc-encoding`.
    #[error("compressed message without a grpc-encoding")]
    CompressedWithoutEncoding,
    /// A compressed message: headroom sends no `grpc-accept-encoding`, so a server may
    /// not compress, and none is decoded.
    #[error("compressed message (grpc-encoding {encoding}), which headroom does not accept")]
    Compressed {
        /// The response's `grpc-encoding`.
        encoding: String,
    },
    /// The flag byte was neither 0 nor 1.
    #[error("bad compressed flag {0:#04x}")]
    BadFlag(u8),
    /// The body ended inside a prefix or a message.
    #[error("the body ended inside a message ({0} bytes left over)")]
    Truncated(usize),
}

/// Frames one message for sending: prefix (uncompressed) and the message.
pub fn encode(message: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(PREFIX_LEN + message.len());
    out.put_u8(0);
    // A message over 4 GiB cannot be framed; the caller's messages come from a scenario.
    out.put_u32(u32::try_from(message.len()).unwrap_or(u32::MAX));
    out.put_slice(message);
    out.freeze()
}

/// Cuts messages out of a body received in pieces.
#[derive(Debug)]
pub struct Decoder {
    buf: BytesMut,
    limit: usize,
    /// The response's `grpc-encoding`, if any.
    encoding: Option<String>,
}

impl Decoder {
    /// A decoder refusing messages over `limit` bytes; `encoding` is the response's
    /// `grpc-encoding` header (`identity` counts as none).
    pub fn new(limit: usize, encoding: Option<String>) -> Decoder {
        Decoder {
            buf: BytesMut::new(),
            limit,
            encoding: encoding.filter(|e| e != "identity"),
        }
    }

    /// Adds received bytes. Errors as soon as any buffered prefix is invalid (too
    /// large, compressed, bad flag), so nothing past a bad prefix is ever kept: the
    /// buffer holds complete messages not yet taken plus at most one partial message
    /// within the limit.
    pub fn push(&mut self, data: &[u8]) -> Result<(), FrameError> {
        self.buf.extend_from_slice(data);
        let mut at = 0;
        while let Some(len) = self.check_prefix_at(at)? {
            at += PREFIX_LEN + len;
        }
        Ok(())
    }

    /// Checks the buffered prefix, if complete; returns the message length.
    fn check_prefix(&self) -> Result<Option<usize>, FrameError> {
        self.check_prefix_at(0)
    }

    /// Checks the prefix starting at `at`, if complete.
    fn check_prefix_at(&self, at: usize) -> Result<Option<usize>, FrameError> {
        let Some(p) = self.buf.get(at..at + PREFIX_LEN) else {
            return Ok(None);
        };
        match p[0] {
            0 => {}
            1 => {
                return Err(match &self.encoding {
                    None => FrameError::CompressedWithoutEncoding,
                    Some(e) => FrameError::Compressed {
                        encoding: e.clone(),
                    },
                })
            }
            flag => return Err(FrameError::BadFlag(flag)),
        }
        let len = u32::from_be_bytes([p[1], p[2], p[3], p[4]]);
        if len as u64 > self.limit as u64 {
            return Err(FrameError::TooLarge {
                len: len.into(),
                limit: self.limit,
            });
        }
        Ok(Some(len as usize))
    }

    /// The next complete message, if buffered.
    pub fn next_message(&mut self) -> Result<Option<Bytes>, FrameError> {
        let Some(len) = self.check_prefix()? else {
            return Ok(None);
        };
        if self.buf.len() < PREFIX_LEN + len {
            return Ok(None);
        }
        self.buf.advance(PREFIX_LEN);
        Ok(Some(self.buf.split_to(len).freeze()))
    }

    /// The body ended: an error if part of a message is left.
    pub fn finish(&self) -> Result<(), FrameError> {
        match self.buf.len() {
            0 => Ok(()),
            n => Err(FrameError::Truncated(n)),
        }
    }

    /// Bytes buffered now (at most one message and one prefix past the limit check).
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_cut_across_any_split() {
        let mut wire = Vec::new();
        for m in [&b"hello"[..], b"", b"a longer message"] {
            wire.extend_from_slice(&encode(m));
        }
        for split in 1..wire.len() {
            let mut d = Decoder::new(64, None);
            let mut got = Vec::new();
            for chunk in wire.chunks(split) {
                d.push(chunk).unwrap();
                while let Some(m) = d.next_message().unwrap() {
                    got.push(m);
                }
            }
            d.finish().unwrap();
            assert_eq!(
                got,
                vec![&b"hello"[..], b"", b"a longer message"],
                "{split}"
            );
        }
    }

    #[test]
    fn a_four_gib_length_prefix_fails_without_buffering() {
        let mut d = Decoder::new(DEFAULT_MAX_MESSAGE, None);
        let err = d.push(&[0, 0xff, 0xff, 0xff, 0xff, 1, 2, 3]).unwrap_err();
        assert_eq!(
            err,
            FrameError::TooLarge {
                len: u32::MAX.into(),
                limit: DEFAULT_MAX_MESSAGE
            }
        );
        assert!(d.buffered() <= 8);
        // Just over the limit fails too; at the limit is accepted.
        let mut d = Decoder::new(10, None);
        assert!(d.push(&[0, 0, 0, 0, 11]).is_err());
        let mut d = Decoder::new(10, None);
        d.push(&[0, 0, 0, 0, 10]).unwrap();
        d.push(&[7; 10]).unwrap();
        assert_eq!(d.next_message().unwrap().unwrap().len(), 10);
    }

    #[test]
    fn an_oversized_second_prefix_fails_when_the_first_message_is_taken() {
        let mut d = Decoder::new(10, None);
        d.push(&[0, 0, 0, 0, 1, 42, 0, 0, 0, 0, 200]).unwrap_err();
        let mut d = Decoder::new(10, None);
        d.push(&[0, 0, 0, 0, 1, 42, 0, 0, 0]).unwrap();
        d.push(&[0, 200]).unwrap_err();
    }

    #[test]
    fn truncated_frames_are_errors_at_the_end() {
        for wire in [&[0u8, 0, 0][..], &[0, 0, 0, 0, 4, 1, 2]] {
            let mut d = Decoder::new(64, None);
            d.push(wire).unwrap();
            assert_eq!(d.next_message().unwrap(), None);
            assert_eq!(d.finish(), Err(FrameError::Truncated(wire.len())));
        }
    }

    #[test]
    fn compressed_and_bad_flags_are_refused() {
        let mut d = Decoder::new(64, None);
        assert_eq!(
            d.push(&[1, 0, 0, 0, 1, 9]),
            Err(FrameError::CompressedWithoutEncoding)
        );
        let mut d = Decoder::new(64, Some("identity".into()));
        assert_eq!(
            d.push(&[1, 0, 0, 0, 1, 9]),
            Err(FrameError::CompressedWithoutEncoding)
        );
        let mut d = Decoder::new(64, Some("gzip".into()));
        assert_eq!(
            d.push(&[1, 0, 0, 0, 1, 9]),
            Err(FrameError::Compressed {
                encoding: "gzip".into()
            })
        );
        let mut d = Decoder::new(64, None);
        assert_eq!(d.push(&[0x80, 0, 0, 0, 0]), Err(FrameError::BadFlag(0x80)));
    }
}
