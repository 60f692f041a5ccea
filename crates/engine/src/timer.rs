//! A precise sleep for the open-model pacer. tokio's timer wheel works in whole
//! milliseconds and rounds deadlines up, so an arrival due 200 µs from now would start
//! up to a millisecond late, and that lateness would be charged to the target's
//! latency (it is measured from the scheduled start). A `timerfd` registered with the
//! runtime wakes the thread within microseconds of the deadline instead.

use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::{Duration, Instant};

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use tokio::io::unix::AsyncFd;

/// Waits shorter than this are not worth a timer: the arrival starts now.
const SPIN_FREE: Duration = Duration::from_micros(20);

/// A one-shot timer owned by one engine thread.
pub(crate) struct PreciseTimer {
    fd: AsyncFd<Owned>,
}

/// The timer descriptor, exposed as a raw fd for registration with the runtime.
struct Owned(TimerFd);

impl AsRawFd for Owned {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

impl PreciseTimer {
    /// Creates the timer; must be called inside a tokio runtime.
    pub(crate) fn new() -> io::Result<PreciseTimer> {
        let fd = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )
        .map_err(io::Error::from)?;
        // SAFETY: `Owned` owns the descriptor (an `OwnedFd` inside `TimerFd`) and lives
        // inside the `AsyncFd` for as long as the registration does; nothing else can
        // close or reuse it while registered.
        #[allow(unsafe_code)]
        let fd = unsafe { AsyncFd::register(Owned(fd)) }.map_err(io::Error::from)?;
        Ok(PreciseTimer { fd })
    }

    /// Returns at `deadline` (or at once if it is past or within a few microseconds).
    pub(crate) async fn sleep_until(&mut self, deadline: Instant) -> io::Result<()> {
        let wait = deadline.saturating_duration_since(Instant::now());
        if wait < SPIN_FREE {
            return Ok(());
        }
        let spec = TimeSpec::from_duration(wait);
        self.fd
            .get_ref()
            .0
            .set(Expiration::OneShot(spec), TimerSetTimeFlags::empty())
            .map_err(io::Error::from)?;
        loop {
            let mut guard = self.fd.readable().await?;
            let mut buf = [0u8; 8];
            match guard
                .try_io(|fd| nix::unistd::read(&fd.get_ref().0, &mut buf).map_err(io::Error::from))
            {
                Ok(Ok(_)) => {
                    // The read took every expiration: the descriptor is drained, so
                    // forget its readiness now rather than learn it from a read that
                    // fails with EAGAIN at the next sleep.
                    guard.clear_ready();
                    return Ok(());
                }
                Ok(Err(e)) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => continue,
            }
        }
    }
}
