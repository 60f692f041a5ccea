//! Summarising and judging any number of [`Share`]s of one plan: their recorders merge
//! exactly (HDR `add`, never percentiles of percentiles), counts add up, seconds align
//! by their index, and the thresholds are judged once, on the merged data. A single
//! process is the case of one share.

use std::collections::BTreeMap;
use std::time::Duration;

use super::share::Share;
use super::summarize::{self, Span};
use super::Outcome;
use crate::metrics::recorder::{Recorder, SecondBucket};
use crate::metrics::summary::{Generator, Second};
use crate::plan::Plan;

/// Merges the shares of `plan`'s run into one [`Outcome`]: one summary, judged by the
/// plan's thresholds, with each share's generator verdict beside it. The shares should
/// have passed [`Share::check`]; with none, the outcome is an empty run.
pub fn merge(plan: &Plan, shares: &[Share]) -> Outcome {
    let mut recorder = Recorder::new(plan.names.len());
    for share in shares {
        recorder.merge(&share.recorder);
    }
    let timeline = merge_seconds(plan, shares.iter().map(|s| s.seconds.as_slice()));
    // The shards share the measured window's start: the run ran as long as its
    // longest share, and served requests until the last of them drained.
    let scheduled = shares.iter().map(|s| s.scheduled).max();
    let scheduled = scheduled.unwrap_or_else(|| plan.measured());
    let last_done = shares.iter().filter_map(|s| s.last_done).max();
    let fastest = Duration::from_micros(recorder.overall.latency.min());
    let span = Span {
        scheduled,
        measured: measured_span(scheduled, last_done, fastest),
    };
    let interrupted = shares.iter().any(|s| s.interrupted);
    let shards: Vec<Generator> = shares.iter().map(|s| s.generator(plan)).collect();
    let generator = combine(&shards, &recorder);
    let mut summary = summarize::summarize(plan, &recorder, timeline, span, interrupted, generator);
    let first = |f: fn(&Share) -> &Option<String>| shares.iter().find_map(|s| f(s).clone());
    if let Some(message) = first(|s| &s.failures.graphql) {
        summary
            .errors
            .first_message
            .insert("graphql".into(), message);
    }
    Outcome {
        summary,
        connect_failure: first(|s| &s.failures.connect),
        tls_failure: first(|s| &s.failures.tls),
        recorder,
        shards,
    }
}

/// The run's timeline from each share's seconds, second `t` of every share merged
/// into second `t` of the run.
fn merge_seconds<'a>(plan: &Plan, parts: impl Iterator<Item = &'a [SecondBucket]>) -> Vec<Second> {
    let mut seconds: BTreeMap<u64, SecondBucket> = BTreeMap::new();
    for bucket in parts.flatten() {
        seconds
            .entry(bucket.t)
            .or_insert_with(|| SecondBucket::new(bucket.t))
            .merge(bucket);
    }
    seconds
        .values()
        .map(|b| summarize::second(b, plan))
        .collect()
}

/// The run's generator figures from each share's verdict: bound when any share was
/// (each bound share named, when there are several), CPU and threads summed over the
/// shares, lag from the merged lag histogram, the busiest host.
fn combine(shards: &[Generator], merged: &Recorder) -> Generator {
    let several = shards.len() > 1;
    let reason = shards
        .iter()
        .enumerate()
        .filter(|(_, g)| g.bound)
        .map(|(i, g)| match several {
            true => format!("shard {i}: {}", g.reason),
            false => g.reason.clone(),
        })
        .collect::<Vec<_>>()
        .join("; ");
    let lag = &merged.lag;
    Generator {
        cpu_percent: shards.iter().map(|g| g.cpu_percent).sum(),
        threads: shards.iter().map(|g| g.threads).sum(),
        max_lag_ms: lag.max() as f64 / 1000.0,
        p99_lag_ms: lag.value_at_quantile(0.99) as f64 / 1000.0,
        bound: shards.iter().any(|g| g.bound),
        reason,
        host_cpu_percent: shards
            .iter()
            .map(|g| g.host_cpu_percent)
            .fold(0.0, f64::max),
        starved: shards.iter().any(|g| g.bound && g.starved),
    }
}

/// How long the run served requests, for the achieved rate: the schedule, plus the
/// time requests kept completing after it beyond what one request takes anyway.
/// `last_done` is when the last request ended, from the start of the measured window.
///
/// A backlog drained after the schedule extends the span, so it cannot inflate the
/// rate; the last requests of a target that kept up end one latency after the
/// schedule, as the first ones ended one latency after its start, and do not shrink it.
fn measured_span(scheduled: Duration, last_done: Option<Duration>, fastest: Duration) -> Duration {
    let Some(last_done) = last_done else {
        return scheduled;
    };
    let after = last_done.saturating_sub(scheduled);
    scheduled + after.saturating_sub(fastest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_span_grows_by_the_drain_beyond_one_request() {
        let ms = Duration::from_millis;
        let s = Duration::from_secs(2);
        let fastest = ms(10);
        // The last request ended one latency after the schedule: the target kept up.
        assert_eq!(measured_span(s, Some(s + ms(9)), fastest), s);
        // A 500 ms backlog drained after the schedule counts, less one latency.
        assert_eq!(measured_span(s, Some(s + ms(510)), fastest), s + ms(500));
        // Nothing completed (or everything before the end): the schedule alone.
        assert_eq!(measured_span(s, None, fastest), s);
        assert_eq!(measured_span(s, Some(ms(300)), fastest), s);
    }
}
