//! The scenario's `sink:` around a run: started before the load, waited on for the
//! grace period after it, then counted into the summary's `delivery` object and
//! judged with the thresholds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::metrics::summary::Summary;
use crate::metrics::threshold::evaluate_all;
use crate::plan::Plan;
use crate::sink::{self, Attached, RunningSink, Tracker};

use super::error::Chain;

/// Starts the plan's sink, if it has one, and attaches it to the plan. An error (its
/// address cannot be listened on...) comes with its causes.
pub fn start(plan: &mut Plan) -> Result<Option<RunningSink>, Chain> {
    let Some(sink_plan) = plan.sink.as_mut() else {
        return Ok(None);
    };
    let opts = sink_plan.options.clone();
    let tracker = Arc::new(Tracker::new(Instant::now(), opts.max_ids, opts.fail, false));
    let running = sink::spawn(opts, tracker.clone()).map_err(Chain::new)?;
    sink_plan.attached = Some(Attached {
        url: running.url(),
        tracker,
    });
    Ok(Some(running))
}

/// Waits up to the grace period for outstanding deliveries (less when none is left),
/// then puts the `delivery` object in `summary` and judges the thresholds again with it.
pub fn finish(sink: RunningSink, plan: &Plan, summary: &mut Summary, quiet: bool) {
    let grace = plan.sink.as_ref().map_or(Duration::ZERO, |s| s.grace);
    let end = Instant::now() + grace;
    if !quiet && sink.tracker().outstanding() > 0 {
        eprintln!(
            "waiting up to {:?} for {} deliveries...",
            grace,
            sink.tracker().outstanding()
        );
    }
    // Polled: the wait ends early once every registered id is delivered and the sink
    // has been quiet for `settle` (so a retry's duplicate just behind its first copy is
    // still counted); a run whose deliveries are all in pays little for a long grace.
    let settle = plan.sink.as_ref().map_or(Duration::ZERO, |s| s.settle);
    let settled = || {
        let t = sink.tracker();
        t.outstanding() == 0 && t.last_delivery().is_none_or(|l| l.elapsed() >= settle)
    };
    while Instant::now() < end && !settled() {
        std::thread::sleep(Duration::from_millis(20).min(end - Instant::now()));
    }
    let delivery = sink.tracker().summary(grace);
    sink.shutdown();
    summary.delivery = Some(delivery);
    summary.thresholds = evaluate_all(&plan.thresholds, summary);
}
