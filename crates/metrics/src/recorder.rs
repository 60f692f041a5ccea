//! A [`Recorder`] is one engine thread's record of everything it measured: HDR
//! histograms of latency (overall and per request name, corrected and uncorrected),
//! error counts by kind, dropped iterations, schedule lag, where each request's time
//! went ([`Breakdown`]: DNS, connect, TLS, time to first byte, receive) with the
//! connections opened and reused, what flows did besides requests ([`CheckCounts`],
//! redirects, [`CookieCounts`], [`GroupTally`]) and the current second's
//! [`SecondBucket`]. Recorders are never shared: each thread owns one, hands finished
//! seconds to the engine as they end, and returns the whole recorder at the end, when
//! the engine merges them (histograms merge exactly, ARCHITECTURE.md rule 3).

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::ErrorKind;

mod flows;
pub mod hdr_serde;
mod second;
pub mod streams;
mod timing;

pub use flows::{CheckCounts, CookieCounts, GroupTally};
pub use second::{add_by_name, NameCounts, SecondBucket};
pub use timing::{
    Breakdown, ByProtocol, Connections, Opening, QuicSample, QuicTally, Speaks, Timing,
};

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
///
/// The time to first byte is kept alike. A closed-model request whose response came
/// whole in one read (its first byte arrived when it ended, and its write began when
/// it was sent) has the corrected latency as its time to first byte. Only the others
/// (the first request of each connection, a response read in parts, a failure without
/// one) are recorded, in `timing.ttfb` and, their latency, in `ttfb_apart`; at the end
/// `timing.ttfb` gains `latency` less `ttfb_apart`. Such a response's receive time is
/// zero, so those zeros are counted, not recorded, and added in one record.
#[derive(Debug, Clone, Default, PartialEq)]
struct Pending {
    uncorrected: bool,
    success: bool,
    /// The corrected latencies of the requests whose time to first byte was not their
    /// corrected latency; `None` once settled.
    ttfb_apart: Option<Histogram<u64>>,
    /// Zero receive times not yet recorded in `timing.receive`.
    receive_zeros: u64,
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
                ttfb_apart: Some(new_histogram(SIGFIG)),
                receive_zeros: 0,
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
        let t = &hit.timing;
        for (h, d) in [
            (&mut self.timing.connect, t.connect),
            (&mut self.timing.tls, t.tls),
        ] {
            if let Some(d) = d {
                put(h, d);
            }
        }
        match &mut self.pending.ttfb_apart {
            // Its time to first byte is its latency: settled from `latency`.
            Some(_) if t.ttfb == Some(hit.corrected) => {}
            apart => {
                if let Some(apart) = apart {
                    put(apart, hit.corrected);
                }
                if let Some(d) = t.ttfb {
                    put(&mut self.timing.ttfb, d);
                }
            }
        }
        match t.receive {
            Some(Duration::ZERO) => self.pending.receive_zeros += 1,
            Some(d) => put(&mut self.timing.receive, d),
            None => {}
        }
    }

    /// Writes out the histograms still pending as copies of `latency`, and the zero
    /// receive times counted: every tally is settled before anyone reads or merges it
    /// ([`Recorder::finish`]).
    fn settle(&mut self) {
        if std::mem::take(&mut self.pending.uncorrected) {
            self.uncorrected.clone_from(&self.latency);
        }
        if std::mem::take(&mut self.pending.success) {
            self.success.clone_from(&self.latency);
        }
        if let Some(apart) = self.pending.ttfb_apart.take() {
            // Added, not cloned: the breakdown keeps fewer significant digits, and an
            // HDR histogram's coarser buckets each hold whole finer ones, so the counts
            // come out as recording each value would give.
            let mut same = self.latency.clone();
            same.subtract(&apart)
                .expect("every latency set apart was recorded in `latency` too");
            self.timing
                .ttfb
                .add(&same)
                .expect("auto-resizing histograms always merge");
        }
        let zeros = std::mem::take(&mut self.pending.receive_zeros);
        if zeros > 0 {
            self.timing
                .receive
                .record_n(0, zeros)
                .expect("zero is within every histogram's range");
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
    /// Non-fatal checks' outcomes, indexed by check id (the plan's `checks`); grown
    /// on demand by [`Recorder::check`], empty while no check ran.
    #[serde(default)]
    pub checks: Vec<CheckCounts>,
    /// Redirect hops followed (the engine adds each request's).
    #[serde(default)]
    pub redirects: u64,
    /// What the cookie jars stored, sent and refused.
    #[serde(default)]
    pub cookies: CookieCounts,
    /// `group:` steps' durations and failures, indexed by group id (the plan's
    /// `groups`); grown on demand by [`Recorder::group`].
    #[serde(default)]
    pub groups: Vec<GroupTally>,
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
            checks: Vec::new(),
            redirects: 0,
            cookies: CookieCounts::default(),
            groups: Vec::new(),
        }
    }

    /// Records one finished request (into its name's tally; see [`Recorder::finish`]).
    pub fn record(&mut self, hit: &Hit) {
        self.by_name[hit.name_id].record(hit);
        self.connections
            .record(&hit.timing, hit.uncorrected, hit.error.is_none());
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
        self.merge_flows(other);
        self.lag
            .add(&other.lag)
            .expect("auto-resizing histograms always merge");
    }
}

#[cfg(test)]
mod tests;
