//! [`BodyBudget`]: the memory that kept bodies of all connections may hold together.
//!
//! A limit per body alone does not bound memory: a thousand requests in flight, each
//! receiving an endless body, would each hold up to the per-body limit. The budget
//! bounds the sum. A body that cannot be kept because others hold the budget fails as
//! the generator's error (its own limit), not the target's.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// What kept bodies of every connection of the process may hold together by default.
pub const DEFAULT_BODY_BUDGET: usize = 32 * 1024 * 1024;

/// Bytes reserved for kept bodies by every connection sharing this budget, and the cap.
#[derive(Debug, Clone)]
pub struct BodyBudget {
    held: Arc<AtomicUsize>,
    cap: usize,
}

impl BodyBudget {
    /// A budget of `cap` bytes, shared by the connections given a clone of it.
    pub fn new(cap: usize) -> BodyBudget {
        BodyBudget {
            held: Arc::default(),
            cap,
        }
    }

    /// The process-wide budget of [`DEFAULT_BODY_BUDGET`] that
    /// [`Conn::connect`](super::Conn::connect) uses.
    pub fn process() -> BodyBudget {
        static PROCESS: OnceLock<BodyBudget> = OnceLock::new();
        PROCESS
            .get_or_init(|| BodyBudget::new(DEFAULT_BODY_BUDGET))
            .clone()
    }

    /// The cap in bytes.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Bytes held now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Takes `n` bytes from the budget; false (and nothing taken) when that would go
    /// past the cap.
    pub(crate) fn take(&self, n: usize) -> bool {
        self.held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                held.checked_add(n).filter(|&total| total <= self.cap)
            })
            .is_ok()
    }

    /// Gives back `n` bytes taken earlier.
    pub(crate) fn give(&self, n: usize) {
        self.held.fetch_sub(n, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_shared_and_never_exceeded() {
        let a = BodyBudget::new(100);
        let b = a.clone();
        assert!(a.take(60));
        assert!(!b.take(41), "60 + 41 > 100");
        assert!(b.take(40));
        assert_eq!(a.held(), 100);
        a.give(60);
        assert!(b.take(60));
        assert_eq!(b.held(), 100);
    }
}
