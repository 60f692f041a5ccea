//! Property tests of the response parser: whatever bytes a server sends, split
//! however the network likes, a [`Conn`] never panics, always ends (a response or an
//! error, in a bounded number of reads), and buffers no more than its limits.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use proptest::prelude::*;
use tokio::io::{duplex, AsyncRead, AsyncWrite, AsyncWriteExt, DuplexStream, ReadBuf};

use super::*;

/// Small limits, so arbitrary input reaches them.
const SMALL: Limits = Limits {
    head: 512,
    chunk_line: 32,
    trailers: 128,
    kept_body: 1024,
};

/// Heads that lead the parser into each framing, followed by arbitrary bytes.
const PREFIXES: &[&str] = &[
    "",
    "HTTP/1.1 200 OK\r\n",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n",
    "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n",
    "HTTP/1.1 200 OK\r\n\r\n",
    "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx",
    "HTTP/1.1 100 Continue\r\n\r\n",
    "HTTP/1.1 204 No Content\r\n\r\n",
    "HTTP/1.1 200 OK\r\nX-Long: ",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-Trailer: ",
];

/// A stream that counts the reads that returned data or end of stream.
struct Counting {
    inner: DuplexStream,
    reads: usize,
}

impl super::TryIo for Counting {}

impl AsyncRead for Counting {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        if poll.is_ready() {
            self.reads += 1;
        }
        poll
    }
}

impl AsyncWrite for Counting {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Feeds `input` in pieces cut at `cuts`, then closes; runs round trips until one
/// fails or the connection cannot be reused. Returns the number of exchanges.
fn feed(input: &[u8], cuts: &[usize], keep: bool, head: bool) -> usize {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, mut server) = duplex(1 << 20);
        let mut pieces = Vec::new();
        let mut at = 0;
        for &cut in cuts {
            let end = (at + cut).min(input.len());
            pieces.push(input[at..end].to_vec());
            at = end;
        }
        pieces.push(input[at..].to_vec());
        let writer = tokio::spawn(async move {
            for piece in pieces {
                if server.write_all(&piece).await.is_err() {
                    return;
                }
                // A pause between pieces lets the reader see each one separately.
                tokio::task::yield_now().await;
            }
            // Closing our half ends the stream for the reader.
            drop(server);
        });
        let stream = Counting {
            inner: client,
            reads: 0,
        };
        let mut conn = Conn::new(stream, SMALL, BodyBudget::new(SMALL.kept_body * 2));
        let mut exchanges = 0;
        // Each exchange consumes at least one byte, so a few more than the input allows.
        for _ in 0..=input.len() + 1 {
            let request = b"GET / HTTP/1.1\r\n\r\n";
            let outcome =
                tokio::time::timeout(Duration::from_secs(5), conn.round_trip(request, keep, head))
                    .await
                    .expect("a finite response ends the exchange");
            exchanges += 1;
            assert!(
                conn.buf.len() <= SMALL.buffer(),
                "buffer {}",
                conn.buf.len()
            );
            assert!(conn.body.len() <= SMALL.kept_body);
            assert!(conn.body.capacity() <= SMALL.kept_body);
            assert!(
                conn.stream.reads <= input.len() + 2 * exchanges,
                "{} reads for {} bytes",
                conn.stream.reads,
                input.len()
            );
            if outcome.is_err() || !conn.reusable() {
                break;
            }
        }
        writer.abort();
        exchanges
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_end_without_unbounded_buffering(
        prefix in prop::sample::select(PREFIXES),
        // A run of one byte reaches the limits that random bytes would not (a header
        // value or a chunk extension of 3000 `a`s); the tail then goes anywhere.
        run in (prop_oneof![Just(b'a'), Just(b' '), Just(b'0'), any::<u8>()], 0..3000usize),
        tail in prop::collection::vec(any::<u8>(), 0..2048),
        cuts in prop::collection::vec(1usize..300, 0..12),
        keep in any::<bool>(),
        head in any::<bool>(),
    ) {
        let mut input = prefix.as_bytes().to_vec();
        input.extend(std::iter::repeat_n(run.0, run.1));
        input.extend_from_slice(&tail);
        feed(&input, &cuts, keep, head);
    }

    #[test]
    fn responses_built_from_http_pieces_end_without_unbounded_buffering(
        parts in prop::collection::vec(prop::sample::select(&[
            "HTTP/1.1 200 OK\r\n", "HTTP/1.0 404 Nope\r\n", "HTTP/1.1 100 Continue\r\n",
            "Content-Length: 3\r\n", "Content-Length: 99999\r\n", "Transfer-Encoding: chunked\r\n",
            "Transfer-Encoding: gzip, chunked\r\n", "Connection: close, Upgrade\r\n",
            "Connection: keep-alive\r\n", "\r\n", "3\r\nabc\r\n", "0\r\n", "ff;ext\r\n",
            "abc", "X-Trailer: 1\r\n", ";;;;;;;;", "\n", "\r",
        ][..]), 0..40),
        cuts in prop::collection::vec(1usize..64, 0..8),
        keep in any::<bool>(),
        head in any::<bool>(),
    ) {
        feed(parts.concat().as_bytes(), &cuts, keep, head);
    }
}
