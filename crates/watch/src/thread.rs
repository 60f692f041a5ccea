//! The sampling thread: wakes once per interval, asks every [`Watched`] for a sample,
//! and hands them all back when told to stop. It is the only place samplers run, so a
//! slow database or endpoint delays the next sample, never a request of the load.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::live::LiveWatches;
use super::sampler::Watched;

/// A running sampling thread.
pub(crate) struct SamplingThread {
    stop: Sender<()>,
    handle: JoinHandle<(Vec<Watched>, f64, Duration)>,
}

impl SamplingThread {
    /// Starts sampling `watched` every `interval`, the first sample one interval from
    /// now, and a last one when stopped (unless the latest is under half an interval old).
    pub(crate) fn spawn(
        mut watched: Vec<Watched>,
        interval: Duration,
        start: Instant,
        live: LiveWatches,
    ) -> std::io::Result<SamplingThread> {
        let (stop, stopped) = mpsc::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("headroom-watch".into())
            .spawn(move || {
                let mut next = start + interval;
                let mut last = 0.0;
                loop {
                    let wait = next.saturating_duration_since(Instant::now());
                    let stopping =
                        !matches!(stopped.recv_timeout(wait), Err(RecvTimeoutError::Timeout));
                    let t = start.elapsed().as_secs_f64();
                    // The stop closes the run with a last sample unless one was just
                    // taken, so a run shorter than the interval still has one.
                    if !stopping || t - last >= interval.as_secs_f64() / 2.0 {
                        for w in &mut watched {
                            w.sample(t);
                        }
                        live.set(watched.iter().filter_map(Watched::latest).collect());
                        last = t;
                    }
                    if stopping {
                        break;
                    }
                    next += interval;
                    // A round that overran (a slow endpoint) skips the ticks it missed
                    // rather than sampling in a burst to catch up.
                    let now = Instant::now();
                    if next < now {
                        next = now + interval;
                    }
                }
                (watched, start.elapsed().as_secs_f64(), thread_cpu())
            })?;
        Ok(SamplingThread { stop, handle })
    }

    /// Stops the thread and returns the samplers, the time (s since start) it stopped,
    /// and the CPU time it used.
    pub(crate) fn stop(self) -> (Vec<Watched>, f64, Duration) {
        let _ = self.stop.send(());
        self.handle
            .join()
            .unwrap_or_else(|_| (Vec::new(), 0.0, Duration::ZERO))
    }
}

/// CPU time the calling thread has used so far (zero if the clock is unreadable).
pub(crate) fn thread_cpu() -> Duration {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map_or(Duration::ZERO, Duration::from)
}
