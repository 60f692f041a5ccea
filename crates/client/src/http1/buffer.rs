//! A connection's read buffer and kept body: reading more bytes (the buffer grows only
//! when one unconsumed part fills it, never past [`Limits::buffer`]), taking body bytes
//! through it, and keeping a body within its limit and the process's [`BodyBudget`].
//!
//! [`Limits::buffer`]: super::Limits::buffer
//! [`BodyBudget`]: super::BodyBudget

use std::time::Instant;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};

use super::{Conn, RoundTripError, TryIo};

impl<S: AsyncRead + AsyncWrite + TryIo + Unpin> Conn<S> {
    /// Reads more bytes into the buffer; returns how many (0 at end of stream). The
    /// buffer grows only when it is full of one unconsumed part, and never past
    /// [`Limits::buffer`]; callers check their part's own limit first.
    pub(super) async fn fill(&mut self) -> Result<usize, RoundTripError> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else if self.buf.len() < self.limits.buffer() {
                let grown = (self.buf.len() * 2).min(self.limits.buffer());
                self.buf.resize(grown, 0);
            } else {
                return Err(RoundTripError::too_large(
                    "read buffer",
                    self.limits.buffer(),
                ));
            }
        }
        if self.got_byte && self.first_byte.is_none() {
            // The read that brought the first byte did not bring the whole response.
            // Why the clock is read here and not when that read returned: nothing
            // awaited since, so this is the same instant give or take the parse, and
            // a response that comes whole in one read (most of them) then costs no
            // clock read at all: its first byte arrived when it ended.
            self.first_byte = Some(Instant::now());
        }
        let n = self
            .stream
            .read(&mut self.buf[self.end..])
            .await
            .map_err(|e| RoundTripError::io(&e))?;
        self.end += n;
        self.got_byte |= n > 0;
        Ok(n)
    }

    /// Takes up to `n` buffered bytes, keeping them if asked; returns how many.
    pub(super) fn take(&mut self, n: u64, keep: bool) -> Result<u64, RoundTripError> {
        let k = (self.end - self.start).min(usize::try_from(n).unwrap_or(usize::MAX));
        if keep {
            let want = self.body.len() + k;
            if want > self.limits.kept_body {
                return Err(RoundTripError::too_large(
                    "kept response body",
                    self.limits.kept_body,
                ));
            }
            if want > self.body.capacity() {
                // Grow by doubling, but never past the limit.
                let capacity = (self.body.capacity() * 2).clamp(want, self.limits.kept_body);
                self.reserve_body(capacity)?;
            }
            self.body
                .extend_from_slice(&self.buf[self.start..self.start + k]);
        }
        self.start += k;
        Ok(k as u64)
    }

    /// Makes room for a kept body of `capacity` bytes, charged to the budget.
    pub(super) fn reserve_body(&mut self, capacity: usize) -> Result<(), RoundTripError> {
        let more = capacity.saturating_sub(self.charged);
        if !self.budget.take(more) {
            return Err(RoundTripError::over_budget(self.budget.cap()));
        }
        self.charged += more;
        self.body.reserve_exact(capacity - self.body.len());
        Ok(())
    }

    /// Consumes exactly `n` body bytes, keeping them if asked; a peer that closes first
    /// fails the exchange as closed.
    pub(super) async fn consume_exact(&mut self, n: u64, keep: bool) -> Result<(), RoundTripError> {
        let mut left = n;
        loop {
            left -= self.take(left, keep)?;
            if left == 0 {
                return Ok(());
            }
            if self.fill().await? == 0 {
                return Err(RoundTripError::closed());
            }
        }
    }

    /// Consumes the body until the peer closes (a response framed by the close), keeping
    /// it if asked; returns its length.
    pub(super) async fn consume_until_close(&mut self, keep: bool) -> Result<u64, RoundTripError> {
        let mut total = 0;
        loop {
            total += self.take(u64::MAX, keep)?;
            if self.fill().await? == 0 {
                return Ok(total);
            }
        }
    }
}

impl<S> Drop for Conn<S> {
    fn drop(&mut self) {
        self.budget.give(self.charged);
    }
}
