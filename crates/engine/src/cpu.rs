//! CPU use of the calling thread, for the generator's self-check, read from
//! `/proc/thread-self/schedstat`: time on a CPU and time spent runnable but waiting
//! for one. Their sum is how much CPU the thread *wanted*; a thread that wanted a
//! whole core was saturated even when other processes took part of that core.
//!
//! Beside it, the whole host's CPU ticks from `/proc/stat` ([`HostTicks`]): when every
//! core was busy and the thread spent much of its time waiting for one, other
//! processes starved the generator, and more engine threads would not help.

use std::io::{BufRead, BufReader, Read};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What the calling thread has used and waited for so far, and the host's CPU ticks
/// at the same moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ThreadTimes {
    /// Time running on a CPU.
    pub(crate) cpu: Duration,
    /// Time runnable but waiting for a CPU.
    pub(crate) waited: Duration,
    /// The host's CPU ticks.
    pub(crate) host: HostTicks,
}

impl std::ops::Sub for ThreadTimes {
    type Output = ThreadTimes;
    fn sub(self, rhs: ThreadTimes) -> ThreadTimes {
        ThreadTimes {
            cpu: self.cpu.saturating_sub(rhs.cpu),
            waited: self.waited.saturating_sub(rhs.waited),
            host: self.host - rhs.host,
        }
    }
}

/// The host's CPU time from `/proc/stat`'s `cpu` line, in clock ticks summed over all
/// cores, and how many cores it has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct HostTicks {
    /// Ticks not idle and not waiting for I/O: user, nice, system, irq, softirq, steal.
    pub(crate) busy: u64,
    /// All ticks (busy, idle, iowait).
    pub(crate) total: u64,
    /// Cores (`cpuN` lines).
    pub(crate) cpus: usize,
}

impl std::ops::Sub for HostTicks {
    type Output = HostTicks;
    fn sub(self, rhs: HostTicks) -> HostTicks {
        HostTicks {
            busy: self.busy.saturating_sub(rhs.busy),
            total: self.total.saturating_sub(rhs.total),
            cpus: self.cpus.max(rhs.cpus),
        }
    }
}

impl HostTicks {
    /// The busy share of all cores, 0 to 1; `None` without ticks to judge.
    pub(crate) fn busy_share(&self) -> Option<f64> {
        (self.total > 0).then(|| self.busy as f64 / self.total as f64)
    }

    /// Parses the `cpu` lines at the top of `/proc/stat` (`cpu  user nice system idle
    /// iowait irq softirq steal guest guest_nice`; guest time is already in user).
    /// Missing or malformed fields count as zero.
    pub(crate) fn parse(text: impl BufRead) -> HostTicks {
        let mut ticks = HostTicks::default();
        for line in text.lines().map_while(Result::ok) {
            let mut fields = line.split_whitespace();
            match fields.next() {
                Some("cpu") => {
                    let v: Vec<u64> = fields.take(8).map(|f| f.parse().unwrap_or(0)).collect();
                    let at = |i: usize| v.get(i).copied().unwrap_or(0);
                    let idle = at(3) + at(4);
                    ticks.busy = at(0) + at(1) + at(2) + at(5) + at(6) + at(7);
                    ticks.total = ticks.busy + idle;
                }
                Some(name) if name.starts_with("cpu") => ticks.cpus += 1,
                // The cpu lines come first; the rest (interrupt counts) can be long.
                _ => break,
            }
        }
        ticks
    }
}

/// The host's CPU ticks now; zero when /proc/stat is unreadable.
fn host_ticks() -> HostTicks {
    match std::fs::File::open("/proc/stat") {
        // The cpu lines are short; a bound keeps a strange /proc from costing memory.
        Ok(file) => HostTicks::parse(BufReader::new(file.take(1 << 20))),
        Err(_) => HostTicks::default(),
    }
}

/// The calling thread's times and the host's ticks so far; zero when /proc is
/// unreadable.
pub(crate) fn thread_times() -> ThreadTimes {
    ThreadTimes {
        host: host_ticks(),
        ..schedstat()
    }
}

fn schedstat() -> ThreadTimes {
    let Ok(text) = std::fs::read_to_string("/proc/thread-self/schedstat") else {
        return ThreadTimes::default();
    };
    let mut fields = text
        .split_whitespace()
        .map(|f| f.parse::<u64>().unwrap_or(0));
    let cpu = Duration::from_nanos(fields.next().unwrap_or(0));
    let waited = Duration::from_nanos(fields.next().unwrap_or(0));
    ThreadTimes {
        cpu,
        waited,
        host: HostTicks::default(),
    }
}

/// CPU time the calling thread has used so far.
pub(crate) fn thread_cpu_time() -> Duration {
    schedstat().cpu
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
        // The host was busy at least while this thread spun (ticks are 10 ms).
        assert!(used.host.cpus >= 1, "{used:?}");
        assert!(used.host.busy >= 5, "{used:?}");
        assert!(used.host.busy_share().unwrap() > 0.0, "{used:?}");
    }

    #[test]
    fn parses_the_cpu_lines_of_proc_stat() {
        let text = "cpu  100 5 50 800 40 3 2 0 7 0\ncpu0 50 0 25 400 20 1 1 0 0 0\ncpu1 50 5 25 400 20 2 1 0 7 0\nintr 1 2 3\nctxt 9\n";
        let t = HostTicks::parse(text.as_bytes());
        assert_eq!(
            t,
            HostTicks {
                busy: 160,
                total: 1000,
                cpus: 2
            }
        );
        assert_eq!(t.busy_share(), Some(0.16));
        let later = HostTicks {
            busy: 1150,
            total: 2000,
            cpus: 2,
        };
        assert_eq!((later - t).busy_share(), Some(0.99));
        // Garbage and truncation count as nothing, never as a panic.
        for bad in ["", "cpu", "cpu x y z\n", "intr 1\ncpu 1 2 3 4\n", "cpu 1 2"] {
            let t = HostTicks::parse(bad.as_bytes());
            assert!(t.total <= 10, "{bad:?}: {t:?}");
        }
        assert_eq!(HostTicks::default().busy_share(), None);
    }
}
