//! CPU time of the calling thread, read from `/proc/thread-self/stat`, for the
//! generator's self-check.

use std::time::Duration;

/// CPU time (user + system) the calling thread has used so far; zero if unreadable.
pub(crate) fn thread_cpu_time() -> Duration {
    let Ok(stat) = std::fs::read_to_string("/proc/thread-self/stat") else {
        return Duration::ZERO;
    };
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
        return Duration::ZERO;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let total = ticks(11) + ticks(12);
    let per_second = procfs::ticks_per_second().max(1);
    Duration::from_secs_f64(total as f64 / per_second as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_thread_accumulates_cpu() {
        let before = thread_cpu_time();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(120) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let used = thread_cpu_time() - before;
        assert!(used >= Duration::from_millis(50), "used {used:?}");
    }
}
