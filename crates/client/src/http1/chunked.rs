//! Reading a chunked body (RFC 9112 §7.1): chunk-size lines with their extensions,
//! chunk data, and the trailer section, each within its limit.

use tokio::io::{AsyncRead, AsyncWrite};

use super::{Conn, RoundTripError};

impl<S: AsyncRead + AsyncWrite + super::TryIo + Unpin> Conn<S> {
    /// Consumes a chunked body, keeping it if asked; returns its length.
    pub(super) async fn consume_chunked(&mut self, keep: bool) -> Result<u64, RoundTripError> {
        let mut total = 0u64;
        loop {
            let size = self.chunk_size().await?;
            if size == 0 {
                self.skip_trailers().await?;
                return Ok(total);
            }
            self.consume_exact(size, keep).await?;
            total = total.saturating_add(size);
            self.expect_crlf().await?;
        }
    }

    /// Reads one chunk-size line (`1a;ext=1\r\n`) and returns the size.
    async fn chunk_size(&mut self) -> Result<u64, RoundTripError> {
        loop {
            let line = &self.buf[self.start..self.end];
            if let Some(&first) = line.first() {
                // httparse takes an empty size as 0; a size has at least one digit.
                if !first.is_ascii_hexdigit() {
                    return Err(RoundTripError::protocol("bad chunk size"));
                }
            }
            match httparse::parse_chunk_size(line) {
                Ok(httparse::Status::Complete((used, size))) => {
                    if used > self.limits.chunk_line {
                        return Err(RoundTripError::too_large(
                            "chunk-size line",
                            self.limits.chunk_line,
                        ));
                    }
                    self.start += used;
                    return Ok(size);
                }
                Ok(httparse::Status::Partial) => {
                    if line.len() >= self.limits.chunk_line {
                        return Err(RoundTripError::too_large(
                            "chunk-size line",
                            self.limits.chunk_line,
                        ));
                    }
                }
                Err(_) => return Err(RoundTripError::protocol("bad chunk size")),
            }
            if self.fill().await? == 0 {
                return Err(RoundTripError::closed());
            }
        }
    }

    async fn expect_crlf(&mut self) -> Result<(), RoundTripError> {
        while self.end - self.start < 2 {
            if self.fill().await? == 0 {
                return Err(RoundTripError::closed());
            }
        }
        if &self.buf[self.start..self.start + 2] != b"\r\n" {
            return Err(RoundTripError::protocol("chunk not followed by CRLF"));
        }
        self.start += 2;
        Ok(())
    }

    /// Skips optional trailer fields and the final empty line of a chunked body.
    async fn skip_trailers(&mut self) -> Result<(), RoundTripError> {
        let limit = self.limits.trailers;
        let mut seen = 0usize;
        loop {
            let pending = &self.buf[self.start..self.end];
            if let Some(pos) = pending.iter().position(|&b| b == b'\n') {
                seen += pos + 1;
                if seen > limit {
                    return Err(RoundTripError::too_large("trailers", limit));
                }
                let line = &pending[..pos];
                self.start += pos + 1;
                if line.is_empty() || line == b"\r" {
                    return Ok(());
                }
                continue;
            }
            if seen + pending.len() >= limit {
                return Err(RoundTripError::too_large("trailers", limit));
            }
            if self.fill().await? == 0 {
                return Err(RoundTripError::closed());
            }
        }
    }
}
