//! Giving the heap's free pages back to the kernel, so that the generator's resident
//! memory follows what it holds rather than the most it ever held.
//!
//! Why: a pooled connection's buffers are heap. When the pool closes the connections
//! a burst needed, glibc keeps their freed pages in its arenas for the next
//! allocation, so resident memory stays at the largest pool the run has had so far. A
//! run of hours would show that as growth, a step with each new largest burst, though
//! nothing it holds grows (the soak, `bench/soak.sh`, measured it: three steps of 24,
//! 4 and 40 kB in half an hour, each with one more pooled connection).

/// Returns the allocator's free pages to the kernel: glibc's `malloc_trim(0)`, which
/// releases the free pages inside every arena (not only the top of the main heap's).
/// A no-op elsewhere.
///
/// Called by an engine thread after its pool closed idle connections, at most once
/// every 90 s per thread: it walks the arenas under their locks, some tens of
/// microseconds for a heap of a few megabytes, so it never runs per request.
pub(crate) fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `malloc_trim` takes no pointers and only works on glibc's own
        // allocator state, under its arena locks; any thread may call it at any time.
        #[allow(unsafe_code)]
        unsafe {
            libc::malloc_trim(0);
        }
    }
}

#[cfg(test)]
mod tests {
    /// A heap with freed pages inside it gives them back: resident anonymous memory
    /// falls by most of what was freed.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn freed_pages_inside_the_heap_go_back_to_the_kernel() {
        fn rss_anon_kb() -> u64 {
            let status = std::fs::read_to_string("/proc/self/status").unwrap();
            let line = status.lines().find(|l| l.starts_with("RssAnon:")).unwrap();
            line.split_whitespace().nth(1).unwrap().parse().unwrap()
        }
        // 4,000 blocks of 16 KiB (below glibc's mmap threshold, so they live in the
        // heap), touched; then every other one freed, which leaves holes no trim of the
        // heap's top could reach while the blocks between them stay.
        let mut blocks: Vec<Vec<u8>> = (0..4000).map(|i| vec![i as u8; 16 << 10]).collect();
        for b in blocks.iter_mut().step_by(2) {
            *b = Vec::new();
        }
        let before = rss_anon_kb();
        super::give_back();
        let after = rss_anon_kb();
        // About 31 MiB freed in holes; at least half of it must come back.
        assert!(
            before.saturating_sub(after) > 16 << 10,
            "RssAnon {before} kB before, {after} kB after"
        );
        drop(blocks);
    }
}
