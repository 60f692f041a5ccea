//! [`PreciseTimer`]: sub-millisecond sleeps for async tasks.
//!
//! tokio's timer wheel has 1 ms granularity and rounds every deadline *up* to the next
//! tick, so a 5 ms `sleep` lasts 5–6 ms and a 4-worker × 5 ms target would serve
//! ~730/s instead of the 800/s it promises. The target's capacity must be what its
//! options say, so service times and stalls sleep on this timer instead: one OS thread
//! keeps a heap of deadlines and waits on a condition variable with a nanosecond
//! timeout (a futex wait, accurate to the kernel's ~50 µs timer slack), then wakes the
//! waiting tasks through oneshot channels. The thread sleeps when nothing is due, so
//! an idle target costs no CPU.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;

use tokio::sync::oneshot;

/// A timer thread that wakes async tasks at precise instants. Shared by reference
/// across tasks and runtime threads; dropping it wakes every pending sleeper early and
/// joins the thread.
pub(crate) struct PreciseTimer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    due: BinaryHeap<Reverse<Entry>>,
    next_seq: u64,
    closed: bool,
}

/// One sleeper; ordered by deadline, then by arrival so equal deadlines wake in FIFO order.
struct Entry {
    at: Instant,
    seq: u64,
    waker: oneshot::Sender<()>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

impl PreciseTimer {
    /// Starts the timer thread.
    pub(crate) fn start() -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
        });
        let for_thread = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("headroom-target-timer".into())
            .spawn(move || run(&for_thread))?;
        Ok(PreciseTimer {
            shared,
            thread: Some(thread),
        })
    }

    /// Completes at `at` (within the kernel's timer slack), at once if `at` has passed,
    /// or early if the timer is being dropped. Dropping the future forgets the sleep.
    pub(crate) async fn sleep_until(&self, at: Instant) {
        if at <= Instant::now() {
            return;
        }
        let (tx, rx) = oneshot::channel();
        {
            let mut state = self.lock();
            if state.closed {
                return;
            }
            let seq = state.next_seq;
            state.next_seq += 1;
            let earliest = state.due.peek().is_none_or(|Reverse(e)| at < e.at);
            state.due.push(Reverse(Entry { at, seq, waker: tx }));
            // Only a new earliest deadline shortens the thread's current wait.
            if earliest {
                self.shared.wake.notify_one();
            }
        }
        // An error means the timer closed: wake now rather than never.
        let _ = rx.await;
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for PreciseTimer {
    fn drop(&mut self) {
        {
            let mut state = self.lock();
            state.closed = true;
            state.due.clear();
        }
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The timer thread: fire everything due, then wait until the next deadline or a new
/// earlier one.
fn run(shared: &Shared) {
    let mut state = shared.state.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        if state.closed {
            return;
        }
        let now = Instant::now();
        while state.due.peek().is_some_and(|Reverse(e)| e.at <= now) {
            if let Some(Reverse(entry)) = state.due.pop() {
                // The sleeper may have gone away (client disconnected); nothing to do then.
                let _ = entry.waker.send(());
            }
        }
        let next = state.due.peek().map(|Reverse(e)| e.at);
        state = match next {
            None => shared.wake.wait(state).unwrap_or_else(|p| p.into_inner()),
            Some(at) => {
                let wait = at.saturating_duration_since(now);
                match shared.wake.wait_timeout(state, wait) {
                    Ok((s, _)) => s,
                    Err(p) => p.into_inner().0,
                }
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn sleeps_are_precise_to_a_fraction_of_a_millisecond() {
        let timer = PreciseTimer::start().unwrap();
        runtime().block_on(async {
            let mut late = Vec::new();
            for _ in 0..20 {
                let at = Instant::now() + Duration::from_micros(2_500);
                timer.sleep_until(at).await;
                let now = Instant::now();
                assert!(now >= at, "woke before the deadline");
                late.push(now - at);
            }
            late.sort();
            let median = late[late.len() / 2];
            assert!(
                median < Duration::from_micros(500),
                "median lateness {median:?}"
            );
        });
    }

    #[test]
    fn many_concurrent_sleepers_wake_in_deadline_order() {
        let timer = Arc::new(PreciseTimer::start().unwrap());
        runtime().block_on(async {
            let start = Instant::now();
            let order = Arc::new(Mutex::new(Vec::new()));
            let mut tasks = tokio::task::JoinSet::new();
            for i in (0..50u64).rev() {
                let (timer, order) = (Arc::clone(&timer), Arc::clone(&order));
                tasks.spawn(async move {
                    timer
                        .sleep_until(start + Duration::from_millis(10 + i))
                        .await;
                    order.lock().unwrap().push(i);
                });
            }
            tasks.join_all().await;
            let order = order.lock().unwrap().clone();
            assert_eq!(order, (0..50).collect::<Vec<_>>());
            assert!(start.elapsed() >= Duration::from_millis(50));
        });
    }

    #[test]
    fn past_deadlines_and_drop_do_not_hang() {
        let timer = PreciseTimer::start().unwrap();
        runtime().block_on(timer.sleep_until(Instant::now() - Duration::from_millis(1)));
        drop(timer);
    }
}
