//! The control channel between a coordinator and its shards: length-prefixed JSON
//! messages over one TCP connection per shard.
//!
//! Each frame is a 4-byte big-endian length, then that many bytes of JSON. The reader
//! is told the most it will take: a few KiB until the peer has proved it knows the
//! run's secret (an unauthenticated peer cannot make the coordinator allocate), then
//! [`MAX_FRAME`], which bounds a whole share with its per-second histograms.

use std::io::{Read, Write};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::engine::Share;
use crate::metrics::recorder::{Recorder, SecondBucket};
use crate::scenario;

/// Most bytes a frame may hold before the peer is authenticated.
pub const MAX_HANDSHAKE: usize = 4 << 10;
/// Most bytes a frame may hold from an authenticated peer. A share carries one HDR
/// histogram set per second of the run (a few KiB each as JSON): an hour-long run
/// stays well under it.
pub const MAX_FRAME: usize = 256 << 20;
/// Protocol version: a shard and a coordinator of different versions refuse each
/// other by name instead of misreading each other's messages. (2: [`Setup`] carries
/// the coordinator's `scenario::Setup` instead of its argv.)
pub const VERSION: &str = concat!("headroom-shard/2 ", env!("CARGO_PKG_VERSION"));

/// What a shard sends its coordinator.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromShard {
    /// First message: who it is, and a fresh nonce the coordinator must sign.
    Hello {
        /// [`VERSION`] of the shard.
        version: String,
        /// Shard index, `0..count`.
        index: u64,
        /// How many shards the shard was told the run has.
        count: u64,
        /// 32 random bytes, hex.
        nonce: String,
    },
    /// Proof that the shard knows the run's secret (see [`super::auth`]).
    Proof {
        /// HMAC, hex.
        mac: String,
    },
    /// The shard built the job's plan and its engine threads are ready to start.
    Ready {
        /// The plan's request names (the coordinator's must be the same).
        names: Vec<String>,
        /// The plan's whole length, warm-up included, in milliseconds.
        length_ms: u64,
        /// Engine threads the shard runs.
        threads: usize,
        /// The shard's host name, for the output.
        host: String,
    },
    /// The shard's warm-up ended; its measured window began.
    Measuring,
    /// One second of the measured window completed on every engine thread of the shard.
    Second {
        /// The second's merged counts and histograms.
        bucket: Box<SecondBucket>,
        /// What the shard recorded during it (merged over its threads): the run's
        /// figures so far are the sum, which the coordinator's store keeps.
        #[serde(default)]
        delta: Option<Box<Recorder>>,
    },
    /// The shard is alive (sent every [`HEARTBEAT`] whatever else happens).
    Alive,
    /// The job ended: the shard's raw result.
    Done {
        /// Everything the shard measured.
        share: Box<Share>,
        /// How long before the start instant the shard heard it, in microseconds
        /// (negative: it heard it late and started late).
        heard_ahead_us: i64,
    },
    /// The job could not run at all; the message says why.
    Failed {
        /// Why.
        error: String,
    },
}

/// What a coordinator sends a shard.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToShard {
    /// Reply to [`FromShard::Hello`]: the coordinator's proof and its own nonce.
    Challenge {
        /// The coordinator's HMAC over the shard's nonce, hex.
        mac: String,
        /// 32 random bytes, hex, for the shard's proof.
        nonce: String,
    },
    /// The run: the setup (scenario text and overrides) every shard builds its plan from.
    Setup(Box<Setup>),
    /// Build the plan for this job, get the engine threads ready, reply
    /// [`FromShard::Ready`], then wait for [`ToShard::Start`].
    Job {
        /// `None`: the set-up plan as it is (`run`); a search step otherwise.
        step: Option<crate::engine::Step>,
    },
    /// Start the job's schedule at this absolute time.
    Start {
        /// Nanoseconds since the Unix epoch.
        at_unix_ns: u64,
    },
    /// Stop the job now (as Ctrl-C would), or give it up before its start.
    Stop,
    /// No more jobs: close and exit 0.
    Bye,
    /// The shard may not join, and why (sent instead of a challenge or the setup).
    Refused {
        /// Why.
        reason: String,
    },
}

/// The run a shard sets up: the coordinator's own [`scenario::Setup`] (the scenario's
/// text and the flags' overrides, never its argv), so every shard compiles its plan
/// with the very function the coordinator did ([`scenario::Setup::plan`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Setup {
    /// What the coordinator compiled its plan from.
    pub setup: scenario::Setup,
    /// Engine threads per shard when the flags do not say (`--threads`).
    pub threads: Option<usize>,
}

/// How often a shard says it is alive.
pub const HEARTBEAT: Duration = Duration::from_secs(1);

/// Why a frame could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The connection failed or closed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A frame longer than the reader takes.
    #[error("a message of {len} bytes, over the limit of {limit}")]
    TooLarge {
        /// Length announced.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// A frame that is not the JSON of a message.
    #[error("a malformed message: {0}")]
    Malformed(#[from] serde_json::Error),
}

impl WireError {
    /// Whether the peer closed the connection (as opposed to sending garbage).
    pub fn is_closed(&self) -> bool {
        matches!(self, WireError::Io(e) if e.kind() == std::io::ErrorKind::UnexpectedEof)
    }
}

/// Writes `msg` as one frame.
pub fn send(w: &mut impl Write, msg: &impl Serialize) -> Result<(), WireError> {
    let body = serde_json::to_vec(msg)?;
    let len = u32::try_from(body.len()).map_err(|_| WireError::TooLarge {
        len: body.len(),
        limit: MAX_FRAME,
    })?;
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(&body);
    w.write_all(&frame)?;
    w.flush()?;
    Ok(())
}

/// Reads one frame of at most `limit` bytes as a `T`.
pub fn recv<T: DeserializeOwned>(r: &mut impl Read, limit: usize) -> Result<T, WireError> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > limit {
        return Err(WireError::TooLarge { len, limit });
    }
    // Read in pieces: the length is the peer's word, the bytes must really come.
    let mut body = Vec::with_capacity(len.min(64 << 10));
    r.take(len as u64).read_to_end(&mut body)?;
    if body.len() < len {
        return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into());
    }
    Ok(serde_json::from_slice(&body)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_goes_through_a_frame_and_back() {
        let mut buf = Vec::new();
        send(&mut buf, &ToShard::Start { at_unix_ns: 42 }).unwrap();
        let back: ToShard = recv(&mut buf.as_slice(), MAX_HANDSHAKE).unwrap();
        assert!(matches!(back, ToShard::Start { at_unix_ns: 42 }));
    }

    #[test]
    fn hostile_frames_are_refused_without_allocating_what_they_claim() {
        // A length far over the limit: refused before anything is read.
        let mut huge = u32::MAX.to_be_bytes().to_vec();
        huge.extend_from_slice(b"{}");
        let e = recv::<ToShard>(&mut huge.as_slice(), MAX_FRAME).unwrap_err();
        assert!(matches!(e, WireError::TooLarge { .. }), "{e}");
        // Over the handshake limit, though well under the frame limit.
        let mut big = ((MAX_HANDSHAKE + 1) as u32).to_be_bytes().to_vec();
        big.resize(4 + MAX_HANDSHAKE + 1, b' ');
        let e = recv::<FromShard>(&mut big.as_slice(), MAX_HANDSHAKE).unwrap_err();
        assert!(e.to_string().contains("over the limit of 4096"), "{e}");
        // A length that promises more than comes: the connection's end, not a hang.
        let mut short = 1000u32.to_be_bytes().to_vec();
        short.extend_from_slice(b"{\"type\":");
        let e = recv::<FromShard>(&mut short.as_slice(), MAX_FRAME).unwrap_err();
        assert!(e.is_closed(), "{e}");
        // Bytes that are not a message, and a message of another kind.
        for body in [&b"\xff\xfe"[..], b"{\"type\":\"nonsense\"}", b"[1,2]"] {
            let mut frame = (body.len() as u32).to_be_bytes().to_vec();
            frame.extend_from_slice(body);
            let e = recv::<FromShard>(&mut frame.as_slice(), MAX_FRAME).unwrap_err();
            assert!(matches!(e, WireError::Malformed(_)), "{e}");
        }
        // Nothing at all.
        assert!(recv::<FromShard>(&mut &b""[..], MAX_FRAME)
            .unwrap_err()
            .is_closed());
    }
}
