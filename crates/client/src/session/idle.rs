//! The shared pool's idle HTTP/1.1 connections: a stack that knows which of them no
//! request took lately, without reading a clock on the request path.

/// Idle connections, most recently used on top: a request takes the top one, so
/// those at the bottom are the ones no request needed. The fewest held since the
/// last [`IdleStack::close_unused`] is the count at the bottom not taken since.
#[derive(Debug)]
pub(super) struct IdleStack<T> {
    items: Vec<T>,
    low: usize,
}

impl<T> Default for IdleStack<T> {
    fn default() -> Self {
        IdleStack {
            items: Vec::new(),
            low: 0,
        }
    }
}

impl<T> IdleStack<T> {
    /// Takes the most recently returned item.
    pub(super) fn take(&mut self) -> Option<T> {
        let item = self.items.pop();
        self.low = self.low.min(self.items.len());
        item
    }

    /// Returns an item after use (or a new one), on top.
    pub(super) fn put(&mut self, item: T) {
        self.items.push(item);
    }

    /// Drops the items not taken since the previous call (for the first call, since
    /// the stack was made) and returns how many. Items put since the previous call are
    /// above the low-water mark and stay for one more period.
    pub(super) fn close_unused(&mut self) -> usize {
        let unused = self.low.min(self.items.len());
        self.items.drain(..unused);
        self.low = self.items.len();
        unused
    }

    /// Items held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.items.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bursts_extra_connections_go_after_two_quiet_periods_and_the_used_ones_stay() {
        let mut s = IdleStack::default();
        // A burst: eight requests at once find no idle connection and open eight.
        for _ in 0..8 {
            assert!(s.take().is_none());
        }
        for c in 0..8 {
            s.put(c);
        }
        // Nothing is closed at the end of the period the burst came in.
        let steady = |s: &mut IdleStack<i32>| {
            for _ in 0..100 {
                let c = s.take().unwrap();
                s.put(c);
            }
        };
        steady(&mut s);
        assert_eq!(s.close_unused(), 0);
        // A steady period of one request at a time uses one; the other seven go.
        steady(&mut s);
        assert_eq!(s.close_unused(), 7);
        assert_eq!(s.len(), 1);
        // The one in use stays, period after period.
        steady(&mut s);
        assert_eq!(s.close_unused(), 0);
        // A quiet period with no request at all closes it too.
        assert_eq!(s.close_unused(), 1);
        assert!(s.take().is_none());
    }

    #[test]
    fn two_at_a_time_keeps_two() {
        let mut s = IdleStack::default();
        for c in 0..5 {
            s.put(c);
        }
        s.close_unused();
        for _ in 0..50 {
            let (a, b) = (s.take().unwrap(), s.take().unwrap());
            s.put(a);
            s.put(b);
        }
        assert_eq!(s.close_unused(), 3);
        assert_eq!(s.len(), 2);
    }
}
