//! The generator's verdict on itself (DESIGN.md rule 5): did the generator, rather
//! than the target, limit what this run measured?

use std::time::Duration;

/// Schedule lag (p99) beyond which the open model no longer follows its schedule.
pub const LAG_BOUND: Duration = Duration::from_millis(10);
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
    /// CPU each engine thread wanted (time running plus time runnable but waiting for
    /// a core) divided by the run's wall time.
    pub thread_busy: Vec<f64>,
}

/// `Some(reason)` when the generator limited the result.
pub fn generator_bound(e: &Evidence) -> Option<String> {
    let mut reasons = Vec::new();
    if e.open_model && e.p99_lag > LAG_BOUND {
        reasons.push(format!(
            "requests started behind schedule (p99 lag {:.1} ms, max {:.1} ms; bound {} ms)",
            ms(e.p99_lag),
            ms(e.max_lag),
            LAG_BOUND.as_millis()
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

    fn evidence(open: bool, lag_ms: u64, busy: &[f64]) -> Evidence {
        let lag = Duration::from_millis(lag_ms);
        Evidence {
            open_model: open,
            p99_lag: lag,
            max_lag: lag * 2,
            thread_busy: busy.to_vec(),
        }
    }

    #[test]
    fn verdict_table() {
        let cases = [
            (evidence(true, 1, &[0.3, 0.2]), false),
            (evidence(true, 50, &[0.3]), true),
            (evidence(false, 50, &[0.3]), false), // closed model keeps no schedule
            (evidence(false, 0, &[0.2, 0.95]), true),
            (evidence(true, 0, &[0.89]), false),
        ];
        for (e, bound) in cases {
            assert_eq!(generator_bound(&e).is_some(), bound, "{e:?}");
        }
        let reason = generator_bound(&evidence(true, 50, &[0.99])).unwrap();
        assert!(
            reason.contains("behind schedule") && reason.contains("CPU 99%"),
            "{reason}"
        );
    }
}
