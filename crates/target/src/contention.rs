//! [`Contention`]: the `/work` endpoint's contention mode (`headroom target
//! --contention D`, `POST /admin/contention?ms=N`), a target whose throughput peaks
//! and then falls as the load grows.
//!
//! With it on, each `/work` request, after its service time and still holding its
//! worker, takes one lock shared by every request and holds it for D × the number of
//! `/work` requests in the target at that moment, itself included: a critical section
//! whose work grows with the load, as a lock holder's does when it must bring every
//! other request in flight up to date (a hot row, a cache line, a global index).
//!
//! Why the hold grows with the requests in flight and not with those waiting for the
//! lock: a lock whose hold is only fixed merely caps throughput at 1/D (the Universal
//! Scalability Law's σ); with N in flight each hold costs D·N, so the lock serves at
//! most 1/(D·N) per second, and throughput falls past a peak near √(service / D)
//! (USL's κ). Counting the waiters instead would feed on itself (a longer hold, more
//! waiters, a longer hold) and drop throughput off a cliff rather than down a curve.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use super::timer::PreciseTimer;

/// The shared lock, the count of `/work` requests in the target, and the hold per
/// request in flight (zero: off). Shared by reference; the count is lock-free.
pub(crate) struct Contention {
    /// tokio's mutex queues its waiters in FIFO order, as a fair lock does.
    lock: Mutex<()>,
    in_flight: AtomicUsize,
    per_ns: AtomicU64,
}

/// One `/work` request counted in flight until dropped (served, rejected or abandoned).
pub(crate) struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Contention {
    /// A lock held `per` × in flight per request (`Duration::ZERO`: no lock taken).
    pub(crate) fn new(per: Duration) -> Self {
        Contention {
            lock: Mutex::new(()),
            in_flight: AtomicUsize::new(0),
            per_ns: AtomicU64::new(nanos(per)),
        }
    }

    /// The hold per request in flight.
    pub(crate) fn per(&self) -> Duration {
        Duration::from_nanos(self.per_ns.load(Ordering::Relaxed))
    }

    /// Makes `per` the hold per request in flight of every lock taken from now on.
    pub(crate) fn set_per(&self, per: Duration) {
        self.per_ns.store(nanos(per), Ordering::Relaxed);
    }

    /// Counts one more `/work` request in the target until the guard drops.
    pub(crate) fn enter(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(&self.in_flight)
    }

    /// Takes the lock (when the mode is on) and holds it for the hold per request ×
    /// the requests in flight now; returns the time spent waiting for and holding it.
    pub(crate) async fn hold(&self, timer: &PreciseTimer) -> Duration {
        let per = self.per();
        if per.is_zero() {
            return Duration::ZERO;
        }
        let arrived = Instant::now();
        let _guard = self.lock.lock().await;
        // Counted when the lock is won: the work to do is for those in flight now.
        let n = self.in_flight.load(Ordering::Relaxed).max(1);
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        timer.sleep_until(Instant::now() + per * n).await;
        arrived.elapsed()
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Completions per second of `n` requests looping for `window`, each holding the
    /// lock of `c` after `service` on its own (no worker pool: only the lock shared).
    fn throughput(
        c: &Arc<Contention>,
        timer: &Arc<PreciseTimer>,
        n: usize,
        service: Duration,
    ) -> f64 {
        let window = Duration::from_millis(400);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let done = rt.block_on(async {
            let end = Instant::now() + window;
            let mut set = tokio::task::JoinSet::new();
            for _ in 0..n {
                let (c, timer) = (Arc::clone(c), Arc::clone(timer));
                set.spawn(async move {
                    let mut done = 0u32;
                    while Instant::now() < end {
                        let _in = c.enter();
                        timer.sleep_until(Instant::now() + service).await;
                        c.hold(&timer).await;
                        done += 1;
                    }
                    done
                });
            }
            set.join_all().await.into_iter().sum::<u32>()
        });
        f64::from(done) / window.as_secs_f64()
    }

    #[test]
    fn throughput_peaks_and_then_falls_with_more_in_flight() {
        let timer = Arc::new(PreciseTimer::start().unwrap());
        let service = Duration::from_millis(4);
        let c = Arc::new(Contention::new(Duration::from_micros(250)));
        // N in flight: about N / (4 ms + 0.25 ms·N) below the peak (near √16 = 4), at
        // most 1 / (0.25 ms·N) past it: ~235/s at 1, ~700/s at 4, ≤ 250/s at 16.
        let x: Vec<f64> = [1, 4, 16]
            .iter()
            .map(|&n| throughput(&c, &timer, n, service))
            .collect();
        assert!(x[1] > 2.2 * x[0], "{x:?}");
        assert!(x[2] < 0.7 * x[1], "{x:?}");
        assert_eq!(
            c.in_flight.load(Ordering::Relaxed),
            0,
            "every guard dropped"
        );
    }

    #[test]
    fn off_takes_no_lock_and_the_hold_can_change() {
        let timer = PreciseTimer::start().unwrap();
        let c = Contention::new(Duration::ZERO);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        assert_eq!(rt.block_on(c.hold(&timer)), Duration::ZERO);
        c.set_per(Duration::from_millis(3));
        assert_eq!(c.per(), Duration::from_millis(3));
        // Three in flight: one hold of 3 × 3 ms.
        let (_a, _b, _c) = (c.enter(), c.enter(), c.enter());
        let held = rt.block_on(c.hold(&timer));
        assert!(
            held >= Duration::from_millis(9) && held < Duration::from_millis(30),
            "{held:?}"
        );
    }
}
