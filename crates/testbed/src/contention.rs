//! [`Contention`]: the `/work` endpoint's contention mode (`headroom target
//! --contention D`, `POST /admin/contention?ms=N`), a target whose throughput peaks
//! and then falls as the load grows, the way the Universal Scalability Law's
//! coherency term (κ) says a system does.
//!
//! With it on, each `/work` request, after its service time and still holding its
//! worker, reconciles with every other `/work` request in flight: with n in flight
//! (itself included), n − 1 exchanges of D × n each, each slowed by the traffic of all
//! n (cache lines bouncing between cores, a replicated log, a hot row everyone
//! updates). A request then takes s + D·n(n−1), and n users in a loop complete
//! n / (s + D·n(n−1)) per second: the USL with λ = 1/s, σ = 0 and κ = D/s, rising to
//! a peak at n* = √(s/D) and falling as 1/n past it.
//!
//! Why a cost that grows with the requests in flight and not a lock held longer the
//! more requests wait for it: a lock only caps throughput (σ), and a hold that grows
//! with its own queue feeds on itself (a longer hold, more waiters, a longer hold), so
//! throughput drops off a cliff rather than down the curve a capacity model fits. The
//! count is taken when the reconciling starts; the time is slept on the
//! [`PreciseTimer`], so it costs no CPU and the target's own threads never limit it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::setting::DurationSetting;
use super::timer::PreciseTimer;

/// The count of `/work` requests in the target and the cost D of one exchange per
/// request in flight (zero: off). Shared by reference; lock-free.
pub(crate) struct Contention {
    in_flight: AtomicUsize,
    per: DurationSetting,
}

/// One `/work` request counted in flight until dropped (served, rejected or abandoned).
pub(crate) struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Contention {
    /// Exchanges of `per` × in flight (`Duration::ZERO`: off).
    pub(crate) fn new(per: Duration) -> Self {
        Contention {
            in_flight: AtomicUsize::new(0),
            per: DurationSetting::new(per),
        }
    }

    /// D, the cost of one exchange per request in flight.
    pub(crate) fn per(&self) -> Duration {
        self.per.get()
    }

    /// Makes `per` the D of every request that starts reconciling from now on.
    pub(crate) fn set_per(&self, per: Duration) {
        self.per.set(per);
    }

    /// Counts one more `/work` request in the target until the guard drops.
    pub(crate) fn enter(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(&self.in_flight)
    }

    /// Reconciles with the others in flight (when the mode is on): D·n(n−1) with n
    /// in flight now; returns the time it took.
    pub(crate) async fn hold(&self, timer: &PreciseTimer) -> Duration {
        let per = self.per();
        if per.is_zero() {
            return Duration::ZERO;
        }
        let started = Instant::now();
        let n = self.in_flight.load(Ordering::Relaxed).max(1);
        let pairs = u32::try_from(n * (n - 1)).unwrap_or(u32::MAX);
        timer.sleep_until(started + per.saturating_mul(pairs)).await;
        started.elapsed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Completions per second of `n` requests looping for `window`, each reconciling
    /// through `c` after `service` on its own (no worker pool).
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
        // N in flight complete N / (4 ms + 0.25 ms·N(N−1)): 250/s at 1, 571/s at 4
        // (the peak, √16), 250/s at 16.
        let x: Vec<f64> = [1, 4, 16]
            .iter()
            .map(|&n| throughput(&c, &timer, n, service))
            .collect();
        assert!(x[1] > 1.8 * x[0], "{x:?}");
        assert!(x[2] < 0.6 * x[1], "{x:?}");
        assert_eq!(
            c.in_flight.load(Ordering::Relaxed),
            0,
            "every guard dropped"
        );
    }

    #[test]
    fn off_costs_nothing_and_the_cost_can_change() {
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
