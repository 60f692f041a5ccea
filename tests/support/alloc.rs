//! Test builds only: the global allocator counts, per thread, the bytes held and the
//! most held at once, so a test can check that parsing hostile input allocates within a
//! bound instead of trusting that it does. Tests run on parallel threads; counting per
//! thread keeps them from measuring each other.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator with per-thread accounting.
struct Counting;

thread_local! {
    /// Bytes allocated and not yet freed by this thread (frees of memory another thread
    /// allocated count too, so this can dip below zero).
    static HELD: Cell<isize> = const { Cell::new(0) };
    /// The most `HELD` has been since the last [`peak_during`] began.
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn add(delta: isize) {
    // `try_with`: the thread-locals are gone while a thread shuts down; allocations
    // then are simply not counted.
    let _ = HELD.try_with(|held| {
        let now = held.get() + delta;
        held.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// The one allocator of the test binary: it only forwards to `System` and counts.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add(layout.size() as isize);
        // SAFETY: forwarded as is; the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add(-(layout.size() as isize));
        // SAFETY: `ptr` came from `alloc`/`realloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        add(new_size as isize - layout.size() as isize);
        // SAFETY: as for `dealloc`; `new_size` is the caller's, per the contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Runs `f` and returns its result with the most bytes it held at once on this thread
/// (beyond what the thread held before).
pub(crate) fn peak_during<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let base = HELD.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let r = f();
    let peak = PEAK.with(Cell::get);
    (r, (peak - base).max(0) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_what_a_closure_holds_at_most() {
        let ((), peak) = peak_during(|| {
            let a = vec![0u8; 1 << 20];
            drop(a);
            let b = vec![0u8; 1 << 10];
            drop(b);
        });
        assert!((1 << 20..(1 << 20) + 4096).contains(&peak), "{peak}");
        let (v, peak) = peak_during(|| vec![1u8; 100]);
        assert!(peak >= 100 && v.len() == 100);
    }
}
