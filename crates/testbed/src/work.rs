//! [`WorkPool`]: the `/work` endpoint's workers and their bounded FIFO queue.
//!
//! A request takes one of `workers` permits, holds it for its service time, and gives
//! it back. When none is free it waits in line (tokio's semaphore hands permits out in
//! FIFO order); when `queue` requests are already waiting it is rejected at once. That
//! makes the target a textbook c-server queue whose capacity is exactly
//! workers / mean service time. Holding a worker is an async sleep on the
//! [`PreciseTimer`], so a waiting or served request costs no CPU.
//!
//! With `contention` on, a request then reconciles with the others in flight for a
//! time that grows with their number before it gives its worker back
//! ([`super::contention`]): throughput peaks and falls past it.
//!
//! The mean service time can be changed while the target runs
//! ([`WorkPool::set_service_time`], `POST /admin/service?ms=N`): a target that slows
//! down under way, as a database whose tables bloat does, for tests of `find --hold`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::{Semaphore, SemaphorePermit};

use super::contention::Contention;
use super::metrics::Held;
use super::options::{ServiceDist, TargetOptions};
use super::setting::DurationSetting;
use super::timer::PreciseTimer;

/// What became of one `/work` request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum WorkOutcome {
    /// Served: waited `queued` for a worker, then held it for `service`, then
    /// reconciled for `contended` (zero when the contention mode is off).
    Served {
        /// Time spent waiting for a worker.
        queued: Duration,
        /// Time the worker was held for the service itself.
        service: Duration,
        /// Time spent reconciling with the others in flight.
        contended: Duration,
    },
    /// The queue was full; the request was turned away without waiting.
    Rejected,
}

/// Workers as a FIFO permit pool plus a bounded count of waiters. Shared by reference
/// across all connections; the gauges it updates are the ones `/metrics` exposes.
pub(crate) struct WorkPool {
    permits: Semaphore,
    queue: i64,
    /// The mean service time; changed by [`WorkPool::set_service_time`].
    service: DurationSetting,
    dist: ServiceDist,
    /// When each free worker fell free (its last request's deadline), earliest first.
    free_at: Mutex<BinaryHeap<Reverse<Instant>>>,
    /// The contention mode's count of requests in flight and its cost.
    pub(crate) contention: Contention,
    waiting: Gauge,
    busy: Gauge,
}

impl WorkPool {
    /// A pool sized by `opts`, reporting its queue depth into `waiting` and its busy
    /// workers into `busy`.
    pub(crate) fn new(opts: &TargetOptions, waiting: Gauge, busy: Gauge) -> Self {
        WorkPool {
            permits: Semaphore::new(opts.workers),
            free_at: Mutex::new(vec![Reverse(Instant::now()); opts.workers].into()),
            queue: i64::try_from(opts.queue).unwrap_or(i64::MAX),
            service: DurationSetting::new(opts.service_time),
            dist: opts.service_dist,
            contention: Contention::new(opts.contention),
            waiting,
            busy,
        }
    }

    /// The mean service time of a request that does not ask for its own.
    pub(crate) fn service_time(&self) -> Duration {
        self.service.get()
    }

    /// Makes `mean` the service time of every request that starts service from now on
    /// (requests already in service keep theirs): the capacity becomes workers / `mean`.
    pub(crate) fn set_service_time(&self, mean: Duration) {
        self.service.set(mean);
    }

    /// Serves one request: waits for a worker (or is rejected when `queue` are already
    /// waiting), then holds it for a service time drawn around `mean` (the configured
    /// service time when `None`).
    pub(crate) async fn serve(&self, timer: &PreciseTimer, mean: Option<Duration>) -> WorkOutcome {
        let arrived = Instant::now();
        let _in_flight = self.contention.enter();
        let permit = match self.permits.try_acquire() {
            Ok(permit) => permit,
            Err(_) => {
                // The gauge doubles as the waiter count: increment first, then check,
                // so two racing arrivals cannot both take the last queue slot.
                let in_line = Held::inc(&self.waiting);
                if in_line.previous >= self.queue {
                    return WorkOutcome::Rejected;
                }
                match self.permits.acquire().await {
                    Ok(permit) => permit,
                    // The semaphore is never closed; treat it as a full queue if it were.
                    Err(_) => return WorkOutcome::Rejected,
                }
            }
        };
        let service = sample(self.dist, mean.unwrap_or_else(|| self.service_time()));
        let mut worker = Worker::take(self, permit, arrived, service);
        timer.sleep_until(worker.until).await;
        let (queued, service) = (worker.start - arrived, worker.until - worker.start);
        // The worker is still held: reconciling is part of its request.
        let contended = self.contention.hold(timer).await;
        if !contended.is_zero() {
            // It falls free now, not at the end of its service time.
            worker.until = Instant::now();
        }
        WorkOutcome::Served {
            queued,
            service,
            contended,
        }
    }

    fn free_at(&self) -> MutexGuard<'_, BinaryHeap<Reverse<Instant>>> {
        self.free_at.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One worker held by one request, from `start` until `until`. Dropping it (served or
/// abandoned) records when the worker falls free and then returns the permit.
struct Worker<'a> {
    pool: &'a WorkPool,
    start: Instant,
    until: Instant,
    _permit: SemaphorePermit<'a>,
    _busy: Held<'a>,
}

impl<'a> Worker<'a> {
    /// Service starts when the worker fell free, or at arrival if it was idle then.
    ///
    /// Why not `Instant::now()`: a queued request learns it has a worker only when its
    /// task is next polled, which on a loaded runtime is some microseconds to a
    /// millisecond after the previous request's deadline. Starting the clock then would
    /// add that scheduling delay to every service time and serve below capacity; starting
    /// it at the previous deadline gives the delay back, so the worker's timeline stays
    /// exactly `service_time` per request.
    fn take(
        pool: &'a WorkPool,
        permit: SemaphorePermit<'a>,
        arrived: Instant,
        service: Duration,
    ) -> Self {
        // Holding a permit guarantees an entry: the heap has one per free permit.
        let fell_free = pool.free_at().pop().map_or(arrived, |Reverse(at)| at);
        let start = fell_free.max(arrived);
        Worker {
            pool,
            start,
            until: start + service,
            _permit: permit,
            _busy: Held::inc(&pool.busy),
        }
    }
}

impl Drop for Worker<'_> {
    fn drop(&mut self) {
        // Runs before the fields drop, so the entry is back before the permit is.
        self.pool.free_at().push(Reverse(self.until));
    }
}

/// Draws one service time with the given mean.
pub(crate) fn sample(dist: ServiceDist, mean: Duration) -> Duration {
    match dist {
        ServiceDist::Fixed => mean,
        ServiceDist::Exp => {
            // Inverse transform: -ln(1 - U) is Exp(1) for U uniform in [0, 1).
            let u: f64 = rand::random();
            mean.mul_f64(-(1.0 - u).ln())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn pool(workers: usize, ms: u64, queue: usize) -> (Arc<WorkPool>, Gauge, Gauge) {
        let opts = TargetOptions {
            workers,
            service_time: Duration::from_millis(ms),
            queue,
            ..TargetOptions::loopback()
        };
        let (waiting, busy) = (Gauge::default(), Gauge::default());
        (
            Arc::new(WorkPool::new(&opts, waiting.clone(), busy.clone())),
            waiting,
            busy,
        )
    }

    #[test]
    fn exponential_samples_have_the_configured_mean() {
        let mean = Duration::from_millis(5);
        let n = 20_000;
        let total: f64 = (0..n)
            .map(|_| sample(ServiceDist::Exp, mean).as_secs_f64())
            .sum();
        let avg = total / n as f64;
        assert!((avg - 0.005).abs() < 0.000_25, "mean {avg}");
        assert_eq!(sample(ServiceDist::Fixed, mean), mean);
    }

    #[test]
    fn burst_is_served_at_capacity_and_overflow_is_rejected() {
        let timer = Arc::new(PreciseTimer::start().unwrap());
        let (pool, waiting, busy) = pool(4, 5, 100);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let start = Instant::now();
            let mut set = tokio::task::JoinSet::new();
            // 4 in service + 100 waiting; the other 16 must be rejected.
            for _ in 0..120 {
                let (pool, timer) = (Arc::clone(&pool), Arc::clone(&timer));
                set.spawn(async move { pool.serve(&timer, None).await });
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
            assert_eq!(busy.get(), 4);
            assert_eq!(waiting.get(), 100);
            let outcomes = set.join_all().await;
            let elapsed = start.elapsed();
            let rejected = outcomes
                .iter()
                .filter(|o| **o == WorkOutcome::Rejected)
                .count();
            assert_eq!(rejected, 16);
            // 104 served, 4 at a time, 5 ms each: 26 rounds = 130 ms.
            assert!(elapsed >= Duration::from_millis(130), "{elapsed:?}");
            assert!(elapsed < Duration::from_millis(170), "{elapsed:?}");
            assert_eq!((busy.get(), waiting.get()), (0, 0));
        });
    }

    #[test]
    fn per_request_mean_overrides_the_configured_time() {
        let timer = PreciseTimer::start().unwrap();
        let (pool, _, _) = pool(1, 500, 0);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let outcome = rt.block_on(pool.serve(&timer, Some(Duration::from_millis(2))));
        match outcome {
            WorkOutcome::Served { service, .. } => {
                assert!(service >= Duration::from_millis(2) && service < Duration::from_millis(20));
            }
            WorkOutcome::Rejected => panic!("an idle pool rejected a request"),
        }
    }
}
