//! A closed-model user's request timer: one tokio timer kept across the user's
//! requests, moved only when it fires.
//!
//! Why one timer per user and not one per request: a new tokio timer goes into the
//! runtime's timer wheel and out again, which measured as 8 % of the closed loop's
//! user-space time. Why not reset it for every request either: a reset and a poll of
//! a tokio `Sleep` per request (the new deadline stored, the task's budget checked,
//! its waker registered again) measured about 180 user-space instructions per
//! request, 3 % of the plain closed loop. Successive deadlines of one user only move
//! later, so the timer may keep an earlier request's deadline: when it fires, it is
//! moved to the deadline of the request then in flight, if that one has not passed.
//! It thus fires at most once per timeout period for nothing (nginx, likewise, leaves
//! a timer where it is when its deadline moves by little). A request whose deadline
//! is earlier than the timer's (a template with a shorter timeout) moves the timer at
//! once.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use tokio::time::Sleep;

/// One user's request timer (see the module's text).
pub(crate) struct RequestTimer {
    sleep: Pin<Box<Sleep>>,
    /// The deadline of the request in flight. The sleep may be set earlier.
    deadline: Instant,
    /// The waker the sleep last registered. While the sleep is pending with this
    /// waker, it will wake it when it fires, so it need not be polled again.
    registered: Option<Waker>,
}

impl RequestTimer {
    /// A timer for a first request due by `deadline`.
    pub(crate) fn new(deadline: Instant) -> RequestTimer {
        RequestTimer {
            sleep: Box::pin(tokio::time::sleep_until(deadline.into())),
            deadline,
            registered: None,
        }
    }

    /// Arms the timer for a request due by `deadline`.
    pub(crate) fn arm(&mut self, deadline: Instant) {
        self.deadline = deadline;
        if deadline < self.sleep.deadline().into_std() {
            // Firing late would let this request run past its timeout: move it now.
            self.sleep.as_mut().reset(deadline.into());
            self.registered = None;
        }
    }

    /// Ready when the armed deadline has passed; otherwise makes sure the task is
    /// woken when the timer fires.
    pub(crate) fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if let Some(waker) = &self.registered {
            // The usual case: the sleep is still pending and will wake this task.
            // `is_elapsed` is one load of the timer's state; no clock is read.
            if waker.will_wake(cx.waker()) && !self.sleep.is_elapsed() {
                return Poll::Pending;
            }
        }
        loop {
            match self.sleep.as_mut().poll(cx) {
                Poll::Pending => {
                    self.registered = Some(cx.waker().clone());
                    return Poll::Pending;
                }
                Poll::Ready(()) if self.sleep.deadline().into_std() >= self.deadline => {
                    self.registered = None;
                    return Poll::Ready(());
                }
                // It fired for an earlier request's deadline: move it to this one's.
                Poll::Ready(()) => self.sleep.as_mut().reset(self.deadline.into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::poll_fn;
    use std::time::Duration;

    const MS: Duration = Duration::from_millis(1);

    fn block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(f)
    }

    /// Registers the timer with the calling task, as a request still waiting does.
    async fn wait_a_moment(timer: &mut RequestTimer) {
        assert!(poll_fn(|cx| Poll::Ready(timer.poll_expired(cx)))
            .await
            .is_pending());
    }

    /// Waits for the timer to expire (5 s at most); returns how long after `from`.
    async fn expiry(timer: &mut RequestTimer, from: Instant) -> Duration {
        tokio::time::timeout(Duration::from_secs(5), poll_fn(|cx| timer.poll_expired(cx)))
            .await
            .expect("the timer never woke the task");
        from.elapsed()
    }

    #[test]
    fn a_later_deadline_holds_although_the_timer_first_fires_at_the_earlier_one() {
        block_on(async {
            let start = Instant::now();
            let mut timer = RequestTimer::new(start + 40 * MS);
            wait_a_moment(&mut timer).await;
            // The next request is due later: the timer keeps its 40 ms and moves on
            // when it fires then.
            timer.arm(start + 150 * MS);
            assert!(expiry(&mut timer, start).await >= 150 * MS);
        });
    }

    #[test]
    fn an_earlier_deadline_moves_the_timer_at_once() {
        block_on(async {
            let start = Instant::now();
            let mut timer = RequestTimer::new(start + Duration::from_secs(30));
            wait_a_moment(&mut timer).await;
            timer.arm(start + 50 * MS);
            let after = expiry(&mut timer, start).await;
            assert!(after >= 50 * MS, "{after:?}");
        });
    }

    #[test]
    fn a_timer_that_fired_is_armed_again_for_the_next_request() {
        block_on(async {
            let start = Instant::now();
            let mut timer = RequestTimer::new(start + 20 * MS);
            assert!(expiry(&mut timer, start).await >= 20 * MS);
            let next = Instant::now();
            timer.arm(next + 60 * MS);
            wait_a_moment(&mut timer).await;
            assert!(expiry(&mut timer, next).await >= 60 * MS);
        });
    }

    #[test]
    fn a_timer_registered_by_another_task_still_wakes_this_one() {
        block_on(async {
            let start = Instant::now();
            let mut timer = RequestTimer::new(start + 100 * MS);
            // Registered by a task that then ends...
            let mut timer = tokio::task::LocalSet::new()
                .run_until(async move {
                    tokio::task::spawn_local(async move {
                        wait_a_moment(&mut timer).await;
                        timer
                    })
                    .await
                    .unwrap()
                })
                .await;
            // ...so this task must register itself, or it would never be woken.
            assert!(expiry(&mut timer, start).await >= 100 * MS);
        });
    }
}
