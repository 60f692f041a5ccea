//! A [`Recorder`] is one engine thread's record of everything it measured: HDR
//! histograms of latency (overall and per request name, corrected and uncorrected),
//! error counts by kind, dropped iterations, schedule lag, where each request's time
//! went ([`Breakdown`]: DNS, connect, TLS, time to first byte, receive) with the
//! connections opened and reused, and the current second's [`SecondBucket`]. Recorders are never shared: each thread owns one, hands finished
//! seconds to the engine as they end, and returns the whole recorder at the end, when
//! the engine merges them (histograms merge exactly, DESIGN.md rule 3).

use std::time::Duration;

use hdrhistogram::Histogram;

use crate::metrics::ErrorKind;

/// Significant digits of every run-level histogram (DESIGN.md rule 3).
const SIGFIG: u8 = 3;
/// Per-second histograms only feed the timeline's percentiles; two digits (1%) keep
/// them small, since one is allocated per thread per second.
const SECOND_SIGFIG: u8 = 2;
/// The timing breakdown's histograms take two digits (1%): five more per request name
/// and thread would otherwise more than double a [`Tally`]'s memory, and its phases
/// explain the latency, which keeps three digits.
const BREAKDOWN_SIGFIG: u8 = 2;

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

/// Where one request's time went. A phase that did not happen for this request is
/// `None` and records nothing: a request on a reused connection has no connect (nor
/// TLS) time, a request whose response was not read to its end has no ttfb nor
/// receive.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timing {
    /// TCP connect time of the connection this request opened.
    pub connect: Option<Duration>,
    /// TLS handshake time of the connection this request opened (TLS only).
    pub tls: Option<Duration>,
    /// From the start of the request's write to the first byte of the response.
    pub ttfb: Option<Duration>,
    /// From the first byte of the response to the end of its body.
    pub receive: Option<Duration>,
    /// True when the request was sent on a connection opened before it (kept alive).
    pub reused: bool,
}

/// Histograms of the phases of a request, microseconds ([`Timing`]).
#[derive(Debug, Clone)]
pub struct Breakdown {
    /// Name resolutions (the engine resolves the target once per run, not per request).
    pub dns: Histogram<u64>,
    /// TCP connects, one per connection opened.
    pub connect: Histogram<u64>,
    /// TLS handshakes, one per TLS connection opened.
    pub tls: Histogram<u64>,
    /// Time to first byte, one per response read to its end.
    pub ttfb: Histogram<u64>,
    /// Receive time, one per response read to its end.
    pub receive: Histogram<u64>,
}

impl Default for Breakdown {
    fn default() -> Self {
        Breakdown {
            dns: new_histogram(BREAKDOWN_SIGFIG),
            connect: new_histogram(BREAKDOWN_SIGFIG),
            tls: new_histogram(BREAKDOWN_SIGFIG),
            ttfb: new_histogram(BREAKDOWN_SIGFIG),
            receive: new_histogram(BREAKDOWN_SIGFIG),
        }
    }
}

impl Breakdown {
    fn record(&mut self, t: &Timing) {
        let phases = [
            (&mut self.connect, t.connect),
            (&mut self.tls, t.tls),
            (&mut self.ttfb, t.ttfb),
            (&mut self.receive, t.receive),
        ];
        for (h, d) in phases {
            if let Some(d) = d {
                put(h, d);
            }
        }
    }

    /// Adds another breakdown into this one.
    pub fn merge(&mut self, other: &Breakdown) {
        let pairs = [
            (&mut self.dns, &other.dns),
            (&mut self.connect, &other.connect),
            (&mut self.tls, &other.tls),
            (&mut self.ttfb, &other.ttfb),
            (&mut self.receive, &other.receive),
        ];
        for (a, b) in pairs {
            a.add(b).expect("auto-resizing histograms always merge");
        }
    }
}

/// Connections a run opened and requests that went on an already open one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Connections {
    /// New connections (successful connects).
    pub opened: u64,
    /// Requests sent on a connection opened before them.
    pub reused: u64,
    /// TLS handshakes completed (0 over plain TCP).
    pub handshakes: u64,
}

impl Connections {
    fn record(&mut self, t: &Timing) {
        self.opened += u64::from(t.connect.is_some());
        self.handshakes += u64::from(t.tls.is_some());
        self.reused += u64::from(t.reused);
    }
}

/// Counters and histograms for one request name (or the whole run).
#[derive(Debug, Clone)]
pub struct Tally {
    /// Corrected latency, microseconds.
    pub latency: Histogram<u64>,
    /// Uncorrected latency, microseconds.
    pub uncorrected: Histogram<u64>,
    /// Corrected latency of successful requests only, microseconds.
    pub success: Histogram<u64>,
    /// Errors by kind, indexed as [`ErrorKind::ALL`].
    pub errors: [u64; ErrorKind::COUNT],
    /// Where the time went.
    pub timing: Breakdown,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            latency: new_histogram(SIGFIG),
            uncorrected: new_histogram(SIGFIG),
            success: new_histogram(SIGFIG),
            errors: [0; ErrorKind::COUNT],
            timing: Breakdown::default(),
        }
    }
}

impl Tally {
    fn record(&mut self, hit: &Hit) {
        put(&mut self.latency, hit.corrected);
        put(&mut self.uncorrected, hit.uncorrected);
        match hit.error {
            Some(kind) => self.errors[kind as usize] += 1,
            None => put(&mut self.success, hit.corrected),
        }
        self.timing.record(&hit.timing);
    }

    /// Requests recorded.
    pub fn requests(&self) -> u64 {
        self.latency.len()
    }

    /// Requests that ended in an error.
    pub fn error_count(&self) -> u64 {
        self.errors.iter().sum()
    }

    /// Adds another tally into this one.
    pub fn merge(&mut self, other: &Tally) {
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
#[derive(Debug, Clone)]
pub struct SecondBucket {
    /// Second index since the start of the run.
    pub t: u64,
    /// Corrected latency of requests completed in this second, microseconds.
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
    }
}

/// One thread's record of a run.
#[derive(Debug, Clone)]
pub struct Recorder {
    /// All requests.
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
    pub lag: Histogram<u64>,
    /// The second being filled.
    pub second: SecondBucket,
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
        }
    }

    /// Records one finished request.
    pub fn record(&mut self, hit: &Hit) {
        self.overall.record(hit);
        self.by_name[hit.name_id].record(hit);
        self.connections.record(&hit.timing);
        put(&mut self.second.latency, hit.corrected);
        if hit.error.is_some() {
            self.second.errors += 1;
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

    /// Adds another thread's recorder into this one (not its current second).
    pub fn merge(&mut self, other: &Recorder) {
        self.overall.merge(&other.overall);
        for (a, b) in self.by_name.iter_mut().zip(&other.by_name) {
            a.merge(b);
        }
        self.dropped += other.dropped;
        self.scheduled += other.scheduled;
        self.abandoned += other.abandoned;
        self.retries += other.retries;
        self.connections.opened += other.connections.opened;
        self.connections.reused += other.connections.reused;
        self.connections.handshakes += other.connections.handshakes;
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
    fn large_values_grow_the_histogram_instead_of_clamping() {
        let mut r = Recorder::new(1);
        r.record(&hit(0, 1, None));
        r.record(&hit(0, 5_000, None));
        let max = r.overall.latency.max();
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
}

#[cfg(test)]
mod timing_tests {
    use super::*;

    fn timed(name_id: usize, connect_us: Option<u64>, ttfb_ms: u64, reused: bool) -> Hit {
        Hit {
            name_id,
            corrected: Duration::from_millis(ttfb_ms + 1),
            uncorrected: Duration::from_millis(ttfb_ms + 1),
            error: None,
            timing: Timing {
                connect: connect_us.map(Duration::from_micros),
                tls: None,
                ttfb: Some(Duration::from_millis(ttfb_ms)),
                receive: Some(Duration::from_millis(1)),
                reused,
            },
        }
    }

    #[test]
    fn phases_record_only_when_they_happened_and_connections_are_counted() {
        let mut r = Recorder::new(2);
        r.record(&timed(0, Some(300), 100, false));
        r.record(&timed(0, None, 100, true));
        r.record(&timed(1, None, 100, true));
        // A request that failed before any response: no phase, not reused.
        r.record(&Hit {
            timing: Timing::default(),
            error: Some(ErrorKind::Connect),
            ..timed(1, None, 1, false)
        });
        let t = &r.overall.timing;
        assert_eq!(
            t.connect.len(),
            1,
            "one connect, for the one new connection"
        );
        assert!(
            (297..=303).contains(&t.connect.max()),
            "{}",
            t.connect.max()
        );
        assert_eq!((t.ttfb.len(), t.receive.len(), t.tls.len()), (3, 3, 0));
        assert!((99_000..=101_000).contains(&t.ttfb.value_at_quantile(0.5)));
        assert_eq!(r.by_name[0].timing.connect.len(), 1);
        assert_eq!(r.by_name[1].timing.connect.len(), 0);
        assert_eq!(r.by_name[1].timing.ttfb.len(), 1);
        let c = r.connections;
        assert_eq!((c.opened, c.reused, c.handshakes), (1, 2, 0));
        r.record(&Hit {
            timing: Timing {
                tls: Some(Duration::from_millis(3)),
                ..timed(0, Some(300), 5, false).timing
            },
            ..timed(0, Some(300), 5, false)
        });
        assert_eq!((r.connections.opened, r.connections.handshakes), (2, 1));
        assert_eq!(r.by_name[0].timing.tls.len(), 1);
    }

    #[test]
    fn breakdowns_and_connections_merge_like_one_recorder() {
        let mut a = Recorder::new(1);
        let mut b = Recorder::new(1);
        let mut all = Recorder::new(1);
        for i in 0..500u64 {
            let h = timed(
                0,
                (i % 10 == 0).then_some(100 + i),
                1 + i % 150,
                i % 10 != 0,
            );
            if i % 2 == 0 {
                a.record(&h)
            } else {
                b.record(&h)
            }
            all.record(&h);
        }
        a.record_dns(Duration::from_millis(2));
        all.record_dns(Duration::from_millis(2));
        a.merge(&b);
        assert_eq!(a.connections, all.connections);
        assert_eq!((a.connections.opened, a.connections.reused), (50, 450));
        let (x, y) = (&a.overall.timing, &all.overall.timing);
        for (p, q) in [
            (&x.dns, &y.dns),
            (&x.connect, &y.connect),
            (&x.ttfb, &y.ttfb),
            (&x.receive, &y.receive),
        ] {
            assert_eq!(p.len(), q.len());
            for quantile in [0.5, 0.95, 0.99, 1.0] {
                assert_eq!(p.value_at_quantile(quantile), q.value_at_quantile(quantile));
            }
        }
        assert_eq!(x.dns.len(), 1);
        assert_eq!(a.by_name[0].timing.dns.len(), 0, "dns belongs to the run");
    }
}
