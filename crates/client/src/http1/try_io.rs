//! Reads and writes that a plain TCP socket can answer at once, without the async
//! machinery around them.
//!
//! Why: a closed-model request on a kept connection polls its socket three times
//! (the idle check, the write, the read). Each poll through tokio checks the task's
//! budget in a thread-local and registers the task's waker; the idle check never
//! waits, and the write almost never does (the socket's send buffer is empty after
//! the last response). Asked directly, tokio answers from the socket's cached
//! readiness: no system call when it is known not ready, one when it may be. The
//! read that waits for the response still goes through a poll, which keeps the
//! task's budget and so the runtime's fairness between users.

use std::io;

use tokio::net::TcpStream;

/// A stream that may answer a read or a write without waiting.
pub trait TryIo {
    /// Reads what is there now: `None` when the stream has no such path (TLS, whose
    /// records must go through its own state), else the read's result, with
    /// `WouldBlock` when nothing is ready.
    fn try_read_now(&mut self, _buf: &mut [u8]) -> Option<io::Result<usize>> {
        None
    }

    /// Writes what the stream takes now, without buffering: `None` when the stream
    /// has no such path, else the write's result, with `WouldBlock` when nothing was
    /// taken. A stream with this path needs no flush after it.
    fn try_write_now(&mut self, _buf: &[u8]) -> Option<io::Result<usize>> {
        None
    }
}

impl TryIo for TcpStream {
    fn try_read_now(&mut self, buf: &mut [u8]) -> Option<io::Result<usize>> {
        Some(self.try_read(buf))
    }

    fn try_write_now(&mut self, buf: &[u8]) -> Option<io::Result<usize>> {
        Some(self.try_write(buf))
    }
}

impl TryIo for tokio::io::DuplexStream {}
