//! The summary of a run so far, rebuilt at every second from what its parts handed
//! over ([`super::Timeline`]): what the run store keeps while a run goes, so that one
//! killed mid-run (`kill -9`, its pod lost) still has its percentiles, errors by kind
//! and figures per request name.

use std::time::Duration;

use super::summarize::{self, Span};
use headroom_metrics::recorder::Recorder;
use headroom_metrics::summary::{Generator, Partial, Summary};
use headroom_plan::Plan;

/// The summary of `so_far`, everything recorded in the run's first `covered` seconds
/// (in which the engine threads used `cpu_us` of CPU), marked partial. It has no
/// timeline: the seconds are stored one by one as they come.
///
/// Rules `over D` are judged on the covered span as a whole, not window by window:
/// judging every window again at every second would cost the run's length each
/// second. The run's own summary, when it writes one, judges them properly.
pub(crate) fn summary(plan: &Plan, so_far: &Recorder, covered: u64, cpu_us: u64) -> Summary {
    let span = Duration::from_secs(covered);
    let lag = &so_far.lag;
    let generator = Generator {
        cpu_percent: cpu_us as f64 / 1e4 / covered.max(1) as f64,
        max_lag_ms: lag.max() as f64 / 1000.0,
        p99_lag_ms: lag.value_at_quantile(0.99) as f64 / 1000.0,
        ..Generator::default()
    };
    let span = Span {
        scheduled: span,
        measured: span,
    };
    let mut summary = summarize::summarize(plan, so_far, Vec::new(), span, true, generator);
    super::workloads::complete(plan, so_far, span.scheduled, &mut summary);
    // Begun and not finished by the end of the covered span: abandoned, if the run
    // ends here. (The recorders count a request when it begins and when it ends.)
    summary.abandoned = summary
        .scheduled
        .saturating_sub(summary.requests + summary.dropped);
    summary.partial = Some(Partial {
        seconds: covered,
        last_second: covered.saturating_sub(1),
        step: None,
    });
    summary
}
