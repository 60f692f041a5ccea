//! CPU use of the calling thread, for the generator's self-check, read from
//! `/proc/thread-self/schedstat`: time on a CPU and time spent runnable but waiting
//! for one. Their sum is how much CPU the thread *wanted*; a thread that wanted a
//! whole core was saturated even when other processes took part of that core.

use std::time::Duration;

/// What the calling thread has used and waited for so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ThreadTimes {
    /// Time running on a CPU.
    pub(crate) cpu: Duration,
    /// Time runnable but waiting for a CPU.
    pub(crate) waited: Duration,
}

impl std::ops::Sub for ThreadTimes {
    type Output = ThreadTimes;
    fn sub(self, rhs: ThreadTimes) -> ThreadTimes {
        ThreadTimes {
            cpu: self.cpu.saturating_sub(rhs.cpu),
            waited: self.waited.saturating_sub(rhs.waited),
        }
    }
}

/// The calling thread's times so far; zero when /proc is unreadable.
pub(crate) fn thread_times() -> ThreadTimes {
    let Ok(text) = std::fs::read_to_string("/proc/thread-self/schedstat") else {
        return ThreadTimes::default();
    };
    let mut fields = text
        .split_whitespace()
        .map(|f| f.parse::<u64>().unwrap_or(0));
    let cpu = Duration::from_nanos(fields.next().unwrap_or(0));
    let waited = Duration::from_nanos(fields.next().unwrap_or(0));
    ThreadTimes { cpu, waited }
}

/// CPU time the calling thread has used so far.
pub(crate) fn thread_cpu_time() -> Duration {
    thread_times().cpu
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_thread_accumulates_cpu() {
        let before = thread_times();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(120) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let used = thread_times() - before;
        // On a shared machine part of the spin may be spent waiting for a core, but
        // the thread wanted the CPU the whole time.
        assert!(
            used.cpu + used.waited >= Duration::from_millis(100),
            "{used:?}"
        );
        assert!(used.cpu > Duration::ZERO);
    }
}
