//! The generator's verdict on itself (ARCHITECTURE.md rule 5): did the generator, rather
//! than the target, limit what this run measured? And if it did, was it short of
//! threads, or starved of CPU by other processes on a saturated host ([`starved`])?
//! The advice differs: more `--threads` help the first, only another machine helps
//! the second.

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
/// Busy share of all the host's cores (not idle, not waiting for I/O) at which the
/// host counts as saturated.
pub const HOST_SATURATED: f64 = 0.95;
/// Share of the CPU time the engine threads wanted that they spent runnable but
/// waiting for a core, beyond which they were starved. An engine thread on a machine
/// with a free core waits a few percent (wake-up latency).
pub const STARVED_WAIT: f64 = 0.25;
/// Share of the host's cores that processes other than the engine threads kept busy
/// for them to be the cause: a host saturated by the engine threads alone needs
/// shards on more machines, not a quieter one.
pub const OTHERS_SHARE: f64 = 0.25;

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
    /// Of that, the time each engine thread was runnable but waiting for a core,
    /// divided by the run's wall time (same order as `thread_busy`).
    pub thread_waited: Vec<f64>,
    /// Busy share of all the host's cores over the run, 0 to 1 (`None`: unknown).
    pub host_busy: Option<f64>,
    /// The host's cores.
    pub cpus: usize,
    /// Requests that failed in the generator itself (no file descriptor or local
    /// port left): its own limit, however idle its threads were.
    pub own_errors: u64,
}

/// `Some(reason)` when the generator limited the result. When it was [`starved`], the
/// reason says so first.
pub fn generator_bound(e: &Evidence) -> Option<String> {
    let mut reasons: Vec<String> = Vec::new();
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
    if e.own_errors > 0 {
        reasons.push(format!(
            "{} requests failed in the generator itself: it ran out of file descriptors \
             or local ports (raise `ulimit -n`, cap --connections, or spread the load \
             over more machines)",
            e.own_errors
        ));
    }
    if reasons.is_empty() {
        return None;
    }
    if let Some(starved) = starved(e) {
        reasons.insert(0, starved);
    }
    Some(reasons.join("; "))
}

/// `Some(sentence)` when the host's CPU was saturated ([`HOST_SATURATED`]), mostly by
/// other processes ([`OTHERS_SHARE`]), and the engine threads spent much of the time
/// they wanted a core waiting for one ([`STARVED_WAIT`]): the generator was starved,
/// not short of threads. Says nothing about whether the run was bound.
pub fn starved(e: &Evidence) -> Option<String> {
    let host = e.host_busy.filter(|h| h.is_finite())?;
    let wanted: f64 = e.thread_busy.iter().sum();
    let waited: f64 = e.thread_waited.iter().sum();
    if host < HOST_SATURATED || wanted <= 0.0 || waited / wanted < STARVED_WAIT {
        return None;
    }
    // Cores the engine threads ran on, as a share of the host; the rest of the busy
    // share was other processes'.
    let engine = (wanted - waited).max(0.0) / e.cpus.max(1) as f64;
    if host - engine < OTHERS_SHARE {
        return None;
    }
    Some(format!(
        "starved of CPU: host CPU {:.0}% busy, {:.0}% of it by other processes, and the engine threads waited for a core {:.0}% of the time they wanted one: the generator competes with the target for CPU — run headroom on another machine",
        host * 100.0,
        (host - engine) * 100.0,
        waited / wanted * 100.0
    ))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `late` of `arrivals` started more than the bound late, on an idle 2-core host.
    fn evidence(open: bool, late: u64, arrivals: u64, busy: &[f64]) -> Evidence {
        let lag = Duration::from_millis(if late > 0 { 50 } else { 1 });
        Evidence {
            open_model: open,
            p99_lag: lag,
            max_lag: lag * 2,
            arrivals,
            late,
            thread_busy: busy.to_vec(),
            thread_waited: busy.iter().map(|b| b * 0.02).collect(),
            host_busy: Some(0.3),
            cpus: 2,
            own_errors: 0,
        }
    }

    #[test]
    fn requests_failed_in_the_generator_itself_bind_it_even_when_idle() {
        let mut e = evidence(true, 0, 1000, &[0.1]);
        assert_eq!(generator_bound(&e), None);
        e.own_errors = 120;
        let reason = generator_bound(&e).unwrap();
        assert!(
            reason.starts_with("120 requests failed in the generator itself"),
            "{reason}"
        );
    }

    /// `evidence` on a host `host` busy whose engine threads waited `waited` of the
    /// wall time each.
    fn on_host(mut e: Evidence, host: f64, waited: f64) -> Evidence {
        e.host_busy = Some(host);
        e.thread_waited = vec![waited; e.thread_busy.len()];
        e
    }

    #[test]
    fn a_saturated_host_that_kept_the_engine_waiting_is_starvation() {
        // Late arrivals; one engine thread ran 30 % of a core and waited 40 % more,
        // on a host 98 % busy: 15 % of it the engine's, 83 % other processes'.
        let e = on_host(evidence(true, 500, 5000, &[0.7]), 0.98, 0.4);
        let why = starved(&e).expect("starved");
        assert!(
            why.starts_with("starved of CPU: host CPU 98% busy, 83% of it by other processes, and the engine threads waited for a core 57% of the time")
                && why.ends_with("run headroom on another machine"),
            "{why}"
        );
        let reason = generator_bound(&e).unwrap();
        assert!(
            reason.starts_with("starved of CPU") && reason.contains("behind schedule"),
            "{reason}"
        );
        assert!(!reason.contains("--threads"), "{reason}");

        let cases = [
            // Host not saturated: the engine is short of threads, not starved.
            (on_host(evidence(true, 500, 5000, &[0.7]), 0.80, 0.4), false),
            // Saturated, but the engine threads hardly waited.
            (
                on_host(evidence(true, 500, 5000, &[0.95]), 0.99, 0.05),
                false,
            ),
            // Saturated by the engine itself (two threads running 90 % each of 2 cores).
            (
                on_host(evidence(true, 500, 5000, &[1.2, 1.2]), 0.99, 0.3),
                false,
            ),
            // Unknown host figures.
            (
                Evidence {
                    host_busy: None,
                    ..on_host(evidence(true, 500, 5000, &[0.7]), 0.98, 0.4)
                },
                false,
            ),
        ];
        for (e, want) in cases {
            assert_eq!(starved(&e).is_some(), want, "{e:?}");
        }
        // Starvation without a bound run is no verdict at all.
        let calm = on_host(evidence(true, 0, 5000, &[0.3]), 0.99, 0.2);
        assert!(starved(&calm).is_some());
        assert_eq!(generator_bound(&calm), None);
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
