//! The generator's verdict on itself (DESIGN.md rule 5): did the generator, rather
//! than the target, limit what this run measured?

use std::time::Duration;

/// Schedule lag beyond which an arrival counts as late.
pub const LAG_BOUND: Duration = Duration::from_millis(10);
/// Share of late arrivals beyond which the open model no longer follows its schedule
/// (with [`LAG_BOUND`]: a p99 lag above 10 ms).
pub const LATE_SHARE: f64 = 0.01;
/// Fewest late arrivals that can make a run generator-bound. In a short run at a low
/// rate 1 % is a handful of arrivals, which one stall of the machine (not of the
/// generator) delays together: at 200/s for 1 s, a 20 ms pause makes four arrivals
/// late and would flag the run, though it moved neither p95 nor the achieved rate.
pub const MIN_LATE: u64 = 10;
/// Share of one core an engine thread may use before it is the bottleneck.
pub const BUSY_BOUND: f64 = 0.90;

/// What the self-check looks at.
#[derive(Debug, Clone)]
pub struct Evidence {
    /// Open model (a schedule to keep) or closed.
    pub open_model: bool,
    /// 99th percentile of the delay between scheduled and actual starts.
    pub p99_lag: Duration,
    /// Largest such delay.
    pub max_lag: Duration,
    /// Arrivals started (the lag's sample count).
    pub arrivals: u64,
    /// Of those, arrivals started more than [`LAG_BOUND`] late.
    pub late: u64,
    /// CPU each engine thread wanted (time running plus time runnable but waiting for
    /// a core) divided by the run's wall time.
    pub thread_busy: Vec<f64>,
}

/// `Some(reason)` when the generator limited the result.
pub fn generator_bound(e: &Evidence) -> Option<String> {
    let mut reasons = Vec::new();
    let late_share = e.late as f64 / e.arrivals.max(1) as f64;
    if e.open_model && late_share > LATE_SHARE && e.late >= MIN_LATE {
        reasons.push(format!(
            "requests started behind schedule ({} of {} more than {} ms late; p99 lag {:.1} ms, max {:.1} ms)",
            e.late,
            e.arrivals,
            LAG_BOUND.as_millis(),
            ms(e.p99_lag),
            ms(e.max_lag),
        ));
    }
    let busiest = e.thread_busy.iter().copied().fold(0.0, f64::max);
    if busiest >= BUSY_BOUND {
        reasons.push(format!(
            "an engine thread wanted the CPU {:.0}% of the run (bound {:.0}%)",
            busiest * 100.0,
            BUSY_BOUND * 100.0
        ));
    }
    (!reasons.is_empty()).then(|| reasons.join("; "))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `late` of `arrivals` started more than the bound late.
    fn evidence(open: bool, late: u64, arrivals: u64, busy: &[f64]) -> Evidence {
        let lag = Duration::from_millis(if late > 0 { 50 } else { 1 });
        Evidence {
            open_model: open,
            p99_lag: lag,
            max_lag: lag * 2,
            arrivals,
            late,
            thread_busy: busy.to_vec(),
        }
    }

    #[test]
    fn verdict_table() {
        let cases = [
            (evidence(true, 0, 5000, &[0.3, 0.2]), false),
            (evidence(true, 500, 5000, &[0.3]), true),
            (evidence(true, 50, 5000, &[0.3]), false), // exactly 1 %: p99 on time
            (evidence(true, 51, 5000, &[0.3]), true),
            (evidence(true, 4, 200, &[0.3]), false), // one short stall in a short run
            (evidence(true, 10, 200, &[0.3]), true),
            (evidence(false, 500, 5000, &[0.3]), false), // closed model keeps no schedule
            (evidence(false, 0, 5000, &[0.2, 0.95]), true),
            (evidence(true, 0, 5000, &[0.89]), false),
        ];
        for (e, bound) in cases {
            assert_eq!(generator_bound(&e).is_some(), bound, "{e:?}");
        }
        let reason = generator_bound(&evidence(true, 500, 5000, &[0.99])).unwrap();
        assert!(
            reason.contains("500 of 5000 more than 10 ms late") && reason.contains("CPU 99%"),
            "{reason}"
        );
    }
}
