//! The generator's verdict in words, for the dashboard: a hint from each second while
//! the load runs ([`live_verdict`]), then the run's or step's own verdict
//! ([`generator_words`]), drawn by the engine's self-check over the whole window.

use crate::engine::{Live, BUSY_BOUND, LAG_BOUND};
use crate::metrics::summary::Summary;

/// The generator's verdict on the last second, in words: whether the schedule is kept
/// and how busy the engine threads are. A hint while the run goes; the verdict that
/// counts is the summary's ([`generator_words`]), drawn over the whole run.
pub fn live_verdict(live: &Live, threads: usize) -> String {
    let last = &live.last;
    let per_thread = last.generator_cpu_percent / threads.max(1) as f64;
    let lag_bound = LAG_BOUND.as_secs_f64() * 1000.0;
    if live.users.is_none() && last.max_lag_ms > lag_bound {
        format!(
            "Falling behind: an arrival in the last second started {:.1} ms late (bound {lag_bound:.0} ms). If this goes on, the generator, not the target, limits the run.",
            last.max_lag_ms
        )
    } else if per_thread >= BUSY_BOUND * 100.0 {
        format!(
            "Busy: the engine threads used {per_thread:.0}% of a core each in the last second (bound {:.0}%). More --threads or another machine may be needed.",
            BUSY_BOUND * 100.0
        )
    } else if live.users.is_none() {
        format!(
            "Keeping up: arrivals on schedule (largest lag {:.1} ms), engine threads at {per_thread:.0}% of a core each.",
            last.max_lag_ms
        )
    } else {
        format!("Keeping up: engine threads at {per_thread:.0}% of a core each.")
    }
}

/// The generator's verdict on a whole run or step, in words.
pub fn generator_words(s: &Summary) -> String {
    let g = &s.generator;
    if g.bound {
        format!("The generator, not the target, limited this: {}.", g.reason)
    } else {
        format!(
            "The generator kept up: p99 schedule lag {:.1} ms, {:.0}% CPU over {} thread(s).",
            g.p99_lag_ms, g.cpu_percent, g.threads
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dashboard::board::tests::live;

    #[test]
    fn a_late_arrival_reads_as_falling_behind() {
        let mut l = live(0, 1, 0);
        l.last.max_lag_ms = 25.0;
        assert!(live_verdict(&l, 1).starts_with("Falling behind"));
        l.last.max_lag_ms = 0.0;
        l.last.generator_cpu_percent = 190.0;
        assert!(
            live_verdict(&l, 2).starts_with("Busy"),
            "{}",
            live_verdict(&l, 2)
        );
    }
}
