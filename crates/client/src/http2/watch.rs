//! [`GoawayWatch`]: notices a GOAWAY frame in the bytes the server sends, as they are read.
//!
//! `h2` applies a GOAWAY inside its connection task and keeps no trace of it once the
//! connection then fails (a later I/O error replaces it), and it never tells which
//! `last_stream_id` the server named. Both decide how a failed stream is counted: a
//! stream the server shut out (id above `last_stream_id`) was certainly not processed,
//! and a stream cut off by the connection closing after a GOAWAY is `goaway`, not
//! `reset`. So the read side of the connection is wrapped and the frame headers are
//! followed (9 bytes each, then the payload skipped): a GOAWAY's first 4 payload bytes
//! are its last stream id. State is a few bytes, whatever the peer sends; `h2` does the
//! real parsing and validation.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// No GOAWAY seen yet (stream ids are 31 bits, so no real id equals it).
const NONE: u32 = u32::MAX;
/// An HTTP/2 frame header's length.
const HEADER: usize = 9;
/// The GOAWAY frame type.
const GOAWAY: u8 = 0x7;

/// The lowest `last_stream_id` of the GOAWAY frames received on one connection.
#[derive(Debug, Clone)]
pub(super) struct GoawayWatch(Arc<AtomicU32>);

impl GoawayWatch {
    fn new() -> GoawayWatch {
        GoawayWatch(Arc::new(AtomicU32::new(NONE)))
    }

    /// The `last_stream_id` of the GOAWAY received, if any (the lowest, if several).
    pub(super) fn last_stream_id(&self) -> Option<u32> {
        match self.0.load(Ordering::Relaxed) {
            NONE => None,
            id => Some(id),
        }
    }

    fn record(&self, id: u32) {
        self.0.fetch_min(id & 0x7fff_ffff, Ordering::Relaxed);
    }
}

/// Where the scanner is in the frame sequence.
#[derive(Debug, Default)]
struct Scan {
    /// Bytes of the current frame header read so far.
    header: [u8; HEADER],
    /// How many of `header` are filled.
    have: usize,
    /// Payload bytes of the current frame still to pass.
    skip: u32,
    /// Bytes of a GOAWAY's last stream id read so far (valid while `want_id > 0`).
    id: u32,
    /// Bytes of a GOAWAY's last stream id still to read.
    want_id: u8,
}

impl Scan {
    /// Follows the frames in `bytes`, recording GOAWAYs in `watch`.
    fn feed(&mut self, mut bytes: &[u8], watch: &GoawayWatch) {
        while !bytes.is_empty() {
            if self.want_id > 0 {
                self.id = self.id << 8 | u32::from(bytes[0]);
                bytes = &bytes[1..];
                self.skip -= 1;
                self.want_id -= 1;
                if self.want_id == 0 {
                    watch.record(self.id);
                }
            } else if self.skip > 0 {
                let n = bytes.len().min(self.skip as usize);
                bytes = &bytes[n..];
                self.skip -= n as u32;
            } else {
                let n = bytes.len().min(HEADER - self.have);
                self.header[self.have..self.have + n].copy_from_slice(&bytes[..n]);
                self.have += n;
                bytes = &bytes[n..];
                if self.have == HEADER {
                    self.have = 0;
                    let h = &self.header;
                    self.skip = u32::from_be_bytes([0, h[0], h[1], h[2]]);
                    // A GOAWAY shorter than its 8 fixed bytes is h2's to reject.
                    if h[3] == GOAWAY && self.skip >= 8 {
                        self.want_id = 4;
                        self.id = 0;
                    }
                }
            }
        }
    }
}

/// The connection's stream, with GOAWAY frames noticed on the way in.
#[derive(Debug)]
pub(super) struct Watched<S> {
    io: S,
    scan: Scan,
    watch: GoawayWatch,
}

impl<S> Watched<S> {
    /// Wraps `io`; the returned watch reports the GOAWAYs read through it.
    pub(super) fn new(io: S) -> (Watched<S>, GoawayWatch) {
        let watch = GoawayWatch::new();
        let io = Watched {
            io,
            scan: Scan::default(),
            watch: watch.clone(),
        };
        (io, watch)
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.io).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            this.scan.feed(&buf.filled()[before..], &this.watch);
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut out = len.to_be_bytes()[1..].to_vec();
        out.extend_from_slice(&[kind, 0]);
        out.extend_from_slice(&stream.to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    fn goaway(last: u32) -> Vec<u8> {
        let mut payload = last.to_be_bytes().to_vec();
        payload.extend_from_slice(&0u32.to_be_bytes());
        payload.extend_from_slice(b"bye");
        frame(GOAWAY, 0, &payload)
    }

    /// Frames split at every possible boundary give the same answer as one read.
    #[test]
    fn goaway_is_found_whatever_the_read_boundaries() {
        let mut bytes = frame(0x4, 0, &[0; 6]); // SETTINGS
        bytes.extend(frame(0x0, 1, &[7u8; 300])); // DATA whose payload holds 0x07 bytes
        bytes.extend(goaway(5));
        bytes.extend(frame(0x0, 3, b"after"));
        bytes.extend(goaway(7)); // a later, higher id does not raise the recorded one
        for split in 0..bytes.len() {
            let watch = GoawayWatch::new();
            let mut scan = Scan::default();
            scan.feed(&bytes[..split], &watch);
            scan.feed(&bytes[split..], &watch);
            assert_eq!(watch.last_stream_id(), Some(5), "split at {split}");
        }
        let watch = GoawayWatch::new();
        let mut scan = Scan::default();
        for b in &bytes {
            scan.feed(std::slice::from_ref(b), &watch);
        }
        assert_eq!(watch.last_stream_id(), Some(5));
    }

    proptest::proptest! {
        /// Arbitrary bytes (a hostile or broken server), read in arbitrary pieces: no
        /// panic, and the same answer as one read.
        #[test]
        fn arbitrary_bytes_in_arbitrary_reads(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..2048),
            cuts in proptest::collection::vec(0usize..2048, 0..16),
        ) {
            let whole = GoawayWatch::new();
            Scan::default().feed(&bytes, &whole);
            let pieces = GoawayWatch::new();
            let mut scan = Scan::default();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            let mut at = 0;
            for cut in cuts.into_iter().chain([bytes.len()]) {
                scan.feed(&bytes[at..cut], &pieces);
                at = cut;
            }
            proptest::prop_assert_eq!(whole.last_stream_id(), pieces.last_stream_id());
        }
    }

    #[test]
    fn no_goaway_no_id_and_the_reserved_bit_is_ignored() {
        let watch = GoawayWatch::new();
        let mut scan = Scan::default();
        scan.feed(&frame(0x1, 1, &[0x88]), &watch);
        scan.feed(&frame(GOAWAY, 0, &[0; 4]), &watch); // too short: not a GOAWAY we trust
        assert_eq!(watch.last_stream_id(), None);
        scan.feed(&goaway(0x8000_0003), &watch);
        assert_eq!(watch.last_stream_id(), Some(3));
    }
}
