//! A [`Recorder`] is one engine thread's record of everything it measured: HDR
//! histograms of latency (overall and per request name, corrected and uncorrected),
//! error counts by kind, dropped iterations, schedule lag, where each request's time
//! went ([`Breakdown`]: DNS, connect, TLS, time to first byte, receive) with the
//! connections opened and reused, and the current second's [`SecondBucket`]. Recorders
//! are never shared: each thread owns one, hands finished seconds to the engine as they
//! end, and returns the whole recorder at the end, when the engine merges them
//! (histograms merge exactly, ARCHITECTURE.md rule 3).

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::ErrorKind;

pub mod hdr_serde;
pub mod streams;
mod timing;

pub use timing::{Breakdown, ByProtocol, Connections, Speaks, Timing};

/// Significant digits of every run-level histogram (ARCHITECTURE.md rule 3).
const SIGFIG: u8 = 3;
/// Per-second histograms only feed the timeline's percentiles; two digits (1%) keep
/// them small, since one is allocated per thread per second.
const SECOND_SIGFIG: u8 = 2;

/// A latency histogram in microseconds that grows as larger values arrive.
pub fn new_histogram(sigfig: u8) -> Histogram<u64> {
    let mut h = Histogram::new(sigfig).expect("sigfig within 0..=5");
    h.auto(true);
    h
}

fn micros(d: Duration) -> u64 {
    d.as_micros().min(u64::MAX as u128) as u64
}

/// Records `d` in microseconds, growing the histogram as needed. (`saturating_record`
/// alone would clamp to the current top instead of growing.)
fn put(h: &mut Histogram<u64>, d: Duration) {
    let v = micros(d);
    if h.record(v).is_err() {
        h.saturating_record(v);
    }
}

/// One finished request, as the engine hands it to [`Recorder::record`].
#[derive(Debug, Clone, Copy)]
pub struct Hit {
    /// Index into the plan's request names.
    pub name_id: usize,
    /// From the intended start (the schedule, open model) to the end of the response.
    pub corrected: Duration,
    /// From the actual send to the end of the response.
    pub uncorrected: Duration,
    /// The error, if the request failed.
    pub error: Option<ErrorKind>,
    /// Where the request's time went, and on which connection.
    pub timing: Timing,
}

/// Counters and histograms for one request name (or the whole run).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tally {
    /// Corrected latency, microseconds.
    #[serde(with = "hdr_serde")]
    pub latency: Histogram<u64>,
    /// Uncorrected latency, microseconds.
    #[serde(with = "hdr_serde")]
    pub uncorrected: Histogram<u64>,
    /// Corrected latency of successful requests only, microseconds.
    #[serde(with = "hdr_serde")]
    pub success: Histogram<u64>,
    /// Errors by kind, indexed as [`ErrorKind::ALL`].
    pub errors: [u64; ErrorKind::COUNT],
    /// Where the time went.
    pub timing: Breakdown,
    /// Histograms still equal to `latency` and not yet written (see [`Pending`]).
    #[serde(skip)]
    pending: Pending,
}

/// Which of a tally's histograms are, so far, exactly its `latency` histogram, and so
/// are not recorded request by request but copied from it once ([`Tally::settle`]).
/// In the closed model a request's uncorrected latency is its corrected one, and most
/// runs have no errors, so `uncorrected` and `success` would take two histogram
/// records per request of the hot path to hold a copy of `latency`. The first request
/// that differs (sent late, or failed) copies `latency` as it stands into the
/// histogram and from then on it is recorded as usual. A tally read back from JSON is
/// whole: nothing pending.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Pending {
    uncorrected: bool,
    success: bool,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            latency: new_histogram(SIGFIG),
            uncorrected: new_histogram(SIGFIG),
            success: new_histogram(SIGFIG),
            errors: [0; ErrorKind::COUNT],
            timing: Breakdown::default(),
            pending: Pending {
                uncorrected: true,
                success: true,
            },
        }
    }
}

impl Tally {
    fn record(&mut self, hit: &Hit) {
        // Copies first, so that they hold only the requests before this one.
        if self.pending.uncorrected && hit.uncorrected != hit.corrected {
            self.uncorrected.clone_from(&self.latency);
            self.pending.uncorrected = false;
        }
        if self.pending.success && hit.error.is_some() {
            self.success.clone_from(&self.latency);
            self.pending.success = false;
        }
        put(&mut self.latency, hit.corrected);
        if !self.pending.uncorrected {
            put(&mut self.uncorrected, hit.uncorrected);
        }
        match hit.error {
            Some(kind) => self.errors[kind as usize] += 1,
            None if !self.pending.success => put(&mut self.success, hit.corrected),
            None => {}
        }
        self.timing.record(&hit.timing);
    }

    /// Writes out the histograms still pending as copies of `latency`: every tally is
    /// settled before anyone reads or merges it ([`Recorder::finish`]).
    fn settle(&mut self) {
        if std::mem::take(&mut self.pending.uncorrected) {
            self.uncorrected.clone_from(&self.latency);
        }
        if std::mem::take(&mut self.pending.success) {
            self.success.clone_from(&self.latency);
        }
    }

    /// Requests recorded.
    pub fn requests(&self) -> u64 {
        self.latency.len()
    }

    /// Requests that ended in an error.
    pub fn error_count(&self) -> u64 {
        self.errors.iter().sum()
    }

    /// Adds another tally into this one. Both are settled: made by a finished recorder
    /// ([`Recorder::finish`]), read back, or merged from such.
    pub fn merge(&mut self, other: &Tally) {
        self.settle();
        assert_eq!(
            other.pending,
            Pending::default(),
            "a tally is merged only once settled"
        );
        self.latency
            .add(&other.latency)
            .expect("auto-resizing histograms always merge");
        self.uncorrected
            .add(&other.uncorrected)
            .expect("auto-resizing histograms always merge");
        self.success
            .add(&other.success)
            .expect("auto-resizing histograms always merge");
        for (a, b) in self.errors.iter_mut().zip(other.errors) {
            *a += b;
        }
        self.timing.merge(&other.timing);
    }
}

/// What one thread saw during one second of the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SecondBucket {
    /// Second index since the start of the run.
    pub t: u64,
    /// Corrected latency of requests completed in this second, microseconds.
    #[serde(with = "hdr_serde")]
    pub latency: Histogram<u64>,
    /// Of those, errors.
    pub errors: u64,
    /// Iterations dropped in this second.
    pub dropped: u64,
    /// Iterations in flight when the second ended.
    pub in_flight: u64,
    /// Users running when the second ended (closed model).
    pub users: u64,
    /// Largest schedule lag of an arrival started in this second, microseconds.
    pub max_lag_us: u64,
    /// CPU time the engine thread(s) used in this second, microseconds.
    pub cpu_us: u64,
    /// Of the errors, how many of each kind, indexed as [`ErrorKind::ALL`].
    pub error_kinds: [u64; ErrorKind::COUNT],
    /// Requests completed in this second per request name, indexed by `name_id` (a
    /// name with no request yet in this second may be missing from the end).
    pub by_name: Vec<NameCounts>,
}

/// Requests one name completed, and its errors by kind: a second's counts, which the
/// live dashboard adds up into its `/metrics` counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct NameCounts {
    /// Requests completed, successful or not.
    pub requests: u64,
    /// Errors by kind, indexed as [`ErrorKind::ALL`].
    pub errors: [u64; ErrorKind::COUNT],
}

impl NameCounts {
    /// The counts by outcome, as `/metrics` and OTLP label them: `ok` (always, zero
    /// included), then each error kind that occurred.
    pub fn outcomes(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        let failed: u64 = self.errors.iter().sum();
        std::iter::once(("ok", self.requests - failed)).chain(
            ErrorKind::ALL
                .iter()
                .map(|k| (k.as_str(), self.errors[*k as usize]))
                .filter(|&(_, n)| n > 0),
        )
    }

    /// Adds `other` into these counts.
    pub fn add(&mut self, other: &NameCounts) {
        self.requests += other.requests;
        for (a, b) in self.errors.iter_mut().zip(other.errors) {
            *a += b;
        }
    }
}

/// Adds `from` into `into` name by name, growing `into` to the longer of the two.
pub fn add_by_name(into: &mut Vec<NameCounts>, from: &[NameCounts]) {
    if into.len() < from.len() {
        into.resize(from.len(), NameCounts::default());
    }
    for (a, b) in into.iter_mut().zip(from) {
        a.add(b);
    }
}

impl Default for SecondBucket {
    /// An empty bucket for second 0.
    fn default() -> Self {
        SecondBucket::new(0)
    }
}

impl SecondBucket {
    /// An empty bucket for second `t`.
    pub fn new(t: u64) -> SecondBucket {
        SecondBucket {
            t,
            latency: new_histogram(SECOND_SIGFIG),
            errors: 0,
            dropped: 0,
            in_flight: 0,
            users: 0,
            max_lag_us: 0,
            cpu_us: 0,
            error_kinds: [0; ErrorKind::COUNT],
            by_name: Vec::new(),
        }
    }

    /// Adds another thread's bucket for the same second.
    pub fn merge(&mut self, other: &SecondBucket) {
        self.latency
            .add(&other.latency)
            .expect("auto-resizing histograms always merge");
        self.errors += other.errors;
        self.dropped += other.dropped;
        self.in_flight += other.in_flight;
        self.users += other.users;
        self.max_lag_us = self.max_lag_us.max(other.max_lag_us);
        self.cpu_us += other.cpu_us;
        for (a, b) in self.error_kinds.iter_mut().zip(other.error_kinds) {
            *a += b;
        }
        add_by_name(&mut self.by_name, &other.by_name);
    }
}

/// One thread's record of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Recorder {
    /// All requests: the sum of `by_name`, added up once by [`Recorder::finish`] (until
    /// then it holds only the DNS timings).
    pub overall: Tally,
    /// Per request name, indexed by `name_id`.
    pub by_name: Vec<Tally>,
    /// Scheduled iterations dropped at the in-flight cap.
    pub dropped: u64,
    /// Requests begun plus iterations dropped: what the run set out to send.
    pub scheduled: u64,
    /// Requests begun that never finished: still in flight when the run ended.
    pub abandoned: u64,
    /// Requests sent again on a fresh connection after a stale keep-alive one.
    pub retries: u64,
    /// Connections opened and reused.
    pub connections: Connections,
    /// Delay between scheduled and actual start of each iteration, microseconds.
    #[serde(with = "hdr_serde")]
    pub lag: Histogram<u64>,
    /// The second being filled.
    pub second: SecondBucket,
    /// What streams saw between their operations (see [`streams`]).
    pub streams: streams::StreamRecorders,
}

impl Recorder {
    /// An empty recorder for a plan with `names` request names.
    pub fn new(names: usize) -> Recorder {
        Recorder {
            overall: Tally::default(),
            by_name: vec![Tally::default(); names],
            dropped: 0,
            scheduled: 0,
            abandoned: 0,
            retries: 0,
            connections: Connections::default(),
            lag: new_histogram(SIGFIG),
            second: SecondBucket::new(0),
            streams: streams::StreamRecorders::default(),
        }
    }

    /// Records one finished request (into its name's tally; see [`Recorder::finish`]).
    pub fn record(&mut self, hit: &Hit) {
        self.by_name[hit.name_id].record(hit);
        self.connections.record(&hit.timing);
        let second = &mut self.second;
        put(&mut second.latency, hit.corrected);
        // Grown on the first request of a name in this second: one small allocation
        // per thread per second, none per request after it.
        if second.by_name.len() <= hit.name_id {
            second
                .by_name
                .resize(hit.name_id + 1, NameCounts::default());
        }
        let name = &mut second.by_name[hit.name_id];
        name.requests += 1;
        if let Some(kind) = hit.error {
            second.errors += 1;
            second.error_kinds[kind as usize] += 1;
            name.errors[kind as usize] += 1;
        }
    }

    /// Records a resolution of the target's name. It belongs to the run, not to a
    /// request, so it goes into the overall breakdown only.
    pub fn record_dns(&mut self, d: Duration) {
        put(&mut self.overall.timing.dns, d);
    }

    /// Records an iteration that could not start because the in-flight cap was reached.
    pub fn record_dropped(&mut self) {
        self.scheduled += 1;
        self.dropped += 1;
        self.second.dropped += 1;
    }

    /// Records how late an iteration started against its schedule.
    pub fn record_lag(&mut self, lag: Duration) {
        put(&mut self.lag, lag);
        self.second.max_lag_us = self.second.max_lag_us.max(micros(lag));
    }

    /// Ends the current second and starts second `next`; returns the finished bucket.
    pub fn take_second(&mut self, next: u64) -> SecondBucket {
        std::mem::replace(&mut self.second, SecondBucket::new(next))
    }

    /// The recorder as it is handed over, with `overall` added up from the names.
    ///
    /// Why not record every request into `overall` as it comes: that was five more
    /// histogram records per request (a tenth of the closed loop's user-space
    /// instructions), for a sum that one merge per thread gives at the end.
    pub fn finish(mut self) -> Recorder {
        for tally in &mut self.by_name {
            tally.settle();
        }
        for tally in &self.by_name {
            self.overall.merge(tally);
        }
        self
    }

    /// Adds another thread's recorder into this one (not its current second). Both
    /// are finished ([`Recorder::finish`]), or made by merging finished ones.
    pub fn merge(&mut self, other: &Recorder) {
        let named: u64 = other.by_name.iter().map(Tally::requests).sum();
        assert_eq!(
            other.overall.requests(),
            named,
            "a recorder is merged only once finished"
        );
        self.overall.merge(&other.overall);
        for (a, b) in self.by_name.iter_mut().zip(&other.by_name) {
            a.merge(b);
        }
        self.dropped += other.dropped;
        self.scheduled += other.scheduled;
        self.abandoned += other.abandoned;
        self.retries += other.retries;
        self.connections.merge(&other.connections);
        self.streams.merge(&other.streams);
        self.lag
            .add(&other.lag)
            .expect("auto-resizing histograms always merge");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(name_id: usize, ms: u64, error: Option<ErrorKind>) -> Hit {
        let d = Duration::from_millis(ms);
        Hit {
            name_id,
            corrected: d,
            uncorrected: d / 2,
            error,
            timing: Timing::default(),
        }
    }

    #[test]
    fn merging_recorders_equals_recording_everything_in_one() {
        let mut a = Recorder::new(2);
        let mut b = Recorder::new(2);
        let mut all = Recorder::new(2);
        for i in 0..1000u64 {
            let h = hit(
                (i % 2) as usize,
                i % 97 + 1,
                (i % 10 == 0).then_some(ErrorKind::Timeout),
            );
            if i % 3 == 0 {
                a.record(&h)
            } else {
                b.record(&h)
            }
            all.record(&h);
        }
        let (mut a, b, all) = (a.finish(), b.finish(), all.finish());
        a.merge(&b);
        assert_eq!(a.overall.requests(), 1000);
        assert_eq!(a.overall.error_count(), 100);
        assert_eq!(a.overall.errors[ErrorKind::Timeout as usize], 100);
        for q in [0.5, 0.95, 0.99, 1.0] {
            assert_eq!(
                a.overall.latency.value_at_quantile(q),
                all.overall.latency.value_at_quantile(q)
            );
        }
        assert_eq!(a.by_name[1].requests(), 500);
        assert_eq!(a.overall.uncorrected.max(), all.overall.uncorrected.max());
    }

    #[test]
    fn uncorrected_and_success_copied_late_hold_exactly_what_recording_each_would() {
        // Closed-model hits (uncorrected = corrected), an error at the 300th, a late
        // send from the 600th on: the lazily copied histograms must equal histograms
        // recorded request by request.
        let mut r = Recorder::new(1);
        let (mut latency, mut uncorrected, mut success) = (
            new_histogram(SIGFIG),
            new_histogram(SIGFIG),
            new_histogram(SIGFIG),
        );
        for i in 0..1000u64 {
            let d = Duration::from_micros(100 + i % 89);
            let h = Hit {
                name_id: 0,
                corrected: d,
                uncorrected: if i >= 600 { d / 2 } else { d },
                error: (i == 300 || i == 700).then_some(ErrorKind::Timeout),
                timing: Timing::default(),
            };
            put(&mut latency, h.corrected);
            put(&mut uncorrected, h.uncorrected);
            if h.error.is_none() {
                put(&mut success, h.corrected);
            }
            r.record(&h);
        }
        let r = r.finish();
        for t in [&r.overall, &r.by_name[0]] {
            assert_eq!(t.latency, latency);
            assert_eq!(t.uncorrected, uncorrected);
            assert_eq!(t.success, success);
            assert_eq!(t.success.len(), 998);
        }
        // A run with neither: both copies are the latency histogram.
        let mut r = Recorder::new(1);
        for i in 0..10 {
            let d = Duration::from_micros(100 + i);
            r.record(&Hit {
                name_id: 0,
                corrected: d,
                uncorrected: d,
                error: None,
                timing: Timing::default(),
            });
        }
        let r = r.finish();
        assert_eq!(r.overall.uncorrected, r.overall.latency);
        assert_eq!(r.overall.success, r.overall.latency);
        assert_eq!(r.by_name[0].success.len(), 10);
    }

    #[test]
    fn large_values_grow_the_histogram_instead_of_clamping() {
        let mut r = Recorder::new(1);
        r.record(&hit(0, 1, None));
        r.record(&hit(0, 5_000, None));
        let max = r.finish().overall.latency.max();
        assert!((4_990_000..=5_010_000).contains(&max), "max {max} µs");
    }

    #[test]
    fn seconds_are_handed_over_and_restarted() {
        let mut r = Recorder::new(1);
        r.record(&hit(0, 5, None));
        r.record_dropped();
        let first = r.take_second(1);
        assert_eq!((first.t, first.latency.len(), first.dropped), (0, 1, 1));
        assert_eq!((r.second.t, r.second.latency.len()), (1, 0));
        assert_eq!(r.dropped, 1, "run totals survive the hand-over");
    }

    #[test]
    fn a_second_counts_errors_by_kind_and_requests_by_name_and_merges_them() {
        let mut a = Recorder::new(3);
        a.record(&hit(2, 5, Some(ErrorKind::Status5xx)));
        a.record(&hit(0, 5, None));
        let mut b = Recorder::new(3);
        b.record(&hit(0, 5, Some(ErrorKind::Timeout)));
        let (mut first, other) = (a.take_second(1), b.take_second(1));
        assert_eq!(first.by_name.len(), 3, "grown to the highest name seen");
        assert_eq!(other.by_name.len(), 1);
        first.merge(&other);
        assert_eq!(first.errors, 2);
        assert_eq!(first.error_kinds[ErrorKind::Status5xx as usize], 1);
        assert_eq!(first.error_kinds[ErrorKind::Timeout as usize], 1);
        let requests: Vec<u64> = first.by_name.iter().map(|n| n.requests).collect();
        assert_eq!(requests, [2, 0, 1]);
        assert_eq!(first.by_name[0].errors[ErrorKind::Timeout as usize], 1);
        assert_eq!(first.by_name[2].errors[ErrorKind::Status5xx as usize], 1);
        assert_eq!(a.second.by_name.len(), 0, "the next second starts empty");
    }
}
