//! One iteration: pick a weighted item and run it — a single request, or a flow's
//! steps in order with captured variables — on the caller's connection, recording
//! every request in the thread's recorder. Hit errors are recorded, never returned.
//!
//! Every request is a [`Pending`] from the moment the run sets out to send it until
//! its result is recorded; one dropped unrecorded (the run ended first) counts as
//! abandoned. So each scheduled request lands in exactly one count (ARCHITECTURE.md rule 6).

use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;

use crate::check;
use crate::deadline::RequestTimer;
use crate::thread::{Pending, ThreadState, MEASURING};
use crate::work::{Prepared, PreparedStep, Work};
use headroom_client as client;
use headroom_client::session::{Note, Session, Trace};
use headroom_metrics::recorder::Hit;
use headroom_metrics::ErrorKind;
use headroom_plan::Think;
use headroom_template::{RenderContext, Vars};

/// Per-task scratch space, reused across iterations so a warm task does not allocate.
#[derive(Default)]
pub(crate) struct Scratch {
    client: client::session::Scratch,
    vars: Vars,
    /// The user's open streams: kept across a closed-model user's iterations.
    pub(crate) streams: crate::stream::Streams,
    /// Whether the last iteration did nothing at all: every step was a `url:` for a
    /// stream the user already holds. Such an iteration never awaits, so a closed-model
    /// user must not loop on it (see `engine::attack::user`).
    pub(crate) idle: bool,
    /// Whether the task keeps one request timer across its requests (see [`arm`]): a
    /// closed-model user does; an open-model arrival, which sends one iteration, does
    /// not, so it allocates none.
    keeps_timer: bool,
    /// The kept request timer (see `crate::deadline`).
    timer: Option<RequestTimer>,
}

impl Scratch {
    /// The scratch space of a closed-model user: it keeps its request timer.
    pub(crate) fn for_user() -> Scratch {
        Scratch {
            keeps_timer: true,
            ..Scratch::default()
        }
    }
}

/// When an iteration, or a step of its flow, was meant to start.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Intended {
    /// The schedule's instant (open model). The send reads the clock itself: the
    /// timer may wake a little early, and latency must never run from a point after
    /// the actual send.
    Scheduled(Instant),
    /// Read from the clock just now (a closed-model user, a step after the first):
    /// it is the send's instant too. Why not read it again: the only work between is
    /// rendering the request, and a clock read is a tenth of the closed loop's
    /// user-space time per request.
    Now(Instant),
}

impl Intended {
    /// The intended start, and the instant the request goes out.
    fn and_sent(self) -> (Instant, Instant) {
        match self {
            Intended::Scheduled(at) => (at, Instant::now()),
            Intended::Now(at) => (at, at),
        }
    }
}

/// Picks the next iteration's item by weight.
pub(crate) fn pick(state: &ThreadState) -> &Work {
    let mut rng = state.rng.borrow_mut();
    state.workload.pick(&mut *rng)
}

/// Runs one iteration of `work` through `session`. `intended`
/// is when the iteration was meant to start: the schedule in the open model, now in
/// the closed one. `first` is the iteration's first request, already counted as
/// scheduled. Returns false when a connection could not be opened, so closed users can
/// back off instead of spinning on a dead target.
pub(crate) async fn run_iteration(
    state: &Rc<ThreadState>,
    work: &Work,
    first: Pending,
    session: &mut Session,
    intended: Intended,
    scratch: &mut Scratch,
) -> bool {
    scratch.vars.clear();
    scratch.idle = false;
    match work {
        Work::Request(prepared) => {
            send(state, prepared, first, session, intended, scratch).await != Sent::ConnectFailed
        }
        Work::Flow(steps) => {
            let mut first = Some(first);
            let mut intended = intended;
            let mut idle = true;
            for step in steps {
                idle &= matches!(step, PreparedStep::Stream(_));
                match step {
                    PreparedStep::Request(prepared) => {
                        let pending = first.take().unwrap_or_else(|| Pending::begin(state));
                        match send(state, prepared, pending, session, intended, scratch).await {
                            Sent::Ok => intended = Intended::Now(Instant::now()),
                            Sent::Failed => return true,
                            Sent::ConnectFailed => return false,
                        }
                    }
                    PreparedStep::Think(think) => {
                        think_for(state, *think).await;
                        intended = Intended::Now(Instant::now());
                    }
                    PreparedStep::Stream(step) => {
                        let pending = first.take().unwrap_or_else(|| Pending::begin(state));
                        // gRPC calls and SSE streams may share the user's HTTP/2
                        // connection with its requests.
                        let grpc = step.protocol != headroom_plan::Protocol::Ws;
                        if grpc {
                            crate::stream::grpc::share_with_session(
                                state,
                                session,
                                &scratch.streams,
                            );
                        }
                        let outcome = crate::stream::step::run_step(
                            state,
                            step,
                            pending,
                            &mut scratch.streams,
                            &mut scratch.vars,
                        )
                        .await;
                        if grpc {
                            crate::stream::grpc::share_with_session(
                                state,
                                session,
                                &scratch.streams,
                            );
                        }
                        match outcome {
                            Ok(crate::stream::step::Ran::Done) => {
                                idle = false;
                                intended = Intended::Now(Instant::now());
                            }
                            Ok(crate::stream::step::Ran::Skipped) => {}
                            Err(ErrorKind::Connect) => return false,
                            Err(_) => return true,
                        }
                    }
                }
            }
            if let Some(unused) = first {
                unused.cancel();
            }
            scratch.idle = idle;
            true
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Sent {
    Ok,
    Failed,
    ConnectFailed,
}

async fn send(
    state: &Rc<ThreadState>,
    prepared: &Prepared,
    pending: Pending,
    session: &mut Session,
    intended: Intended,
    scratch: &mut Scratch,
) -> Sent {
    let plan = &state.plan;
    let template = prepared.template();
    let sink = plan.sink.as_ref().and_then(|s| s.attached.as_ref());
    let payload = {
        // Rendered before any await: the thread's random source is borrowed only here.
        let mut rng = state.rng.borrow_mut();
        if let Some(sink) = sink {
            correlate(sink, template, &mut rng, &mut scratch.vars);
        }
        let mut ctx = RenderContext {
            rng: &mut rng,
            vars: &scratch.vars,
        };
        state
            .client
            .payload(&prepared.request, &mut ctx, &mut scratch.client)
    };
    let (intended, sent) = intended.and_sent();
    if let (Some(sink), Some(_)) = (sink, &template.correlate) {
        // Registered before the request leaves: a delivery can never beat its id here.
        if let Some(id) = scratch.vars.get("correlation_id") {
            sink.tracker.register(id, sent);
        }
    }
    // Latency runs from the intended start, but never from a point after the actual
    // send: a send a few microseconds early (see timer.rs) must not shrink latency.
    let from = intended.min(sent);
    // The timeout runs from the same point: a request that waited for a pooled
    // connection or a stream, or started late, has had that long already. Its
    // corrected latency can then never exceed the timeout by more than the timer's slack.
    let deadline = from + template.timeout_in(plan);
    let connecting = Cell::new(false);
    let mut trace = Trace::default();
    let vars = &mut scratch.vars;
    let judge = |status: u16, body: &[u8]| {
        let verdict = check::judge(&template.expect, &prepared.captures, status, body, vars).err();
        // Warm-up failures are discarded with the warm-up's record, their message too.
        if verdict == Some(ErrorKind::Graphql) && state.phase.get() == MEASURING {
            // Only the first is kept: later failures lock an uncontended mutex, and
            // only the first one parses the body again for its message.
            let mut first = state
                .graphql_failure
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if first.is_none() {
                *first = Some(check::graphql_message(body));
            }
        }
        verdict
    };
    // Not registered with the runtime until polled: an unused one costs nothing.
    let mut fresh = pin!(None::<tokio::time::Sleep>);
    let mut kept = if scratch.keeps_timer {
        let timer = scratch
            .timer
            .get_or_insert_with(|| RequestTimer::new(deadline));
        timer.arm(deadline);
        Some(timer)
    } else {
        fresh.set(Some(tokio::time::sleep_until(deadline.into())));
        None
    };
    let outcome = {
        let mut exchange = pin!(state.client.send(
            session,
            &prepared.request,
            &payload,
            &connecting,
            &mut trace,
            judge,
        ));
        // The exchange first, as tokio's `timeout` does: a response that is ready
        // counts even when the deadline has just passed.
        std::future::poll_fn(|cx| match exchange.as_mut().poll(cx) {
            Poll::Ready(done) => Poll::Ready(Ok(done)),
            Poll::Pending => match kept.as_mut() {
                Some(timer) => timer.poll_expired(cx),
                None => fresh
                    .as_mut()
                    .as_pin_mut()
                    .expect("set when no timer is kept")
                    .poll(cx),
            }
            .map(|()| Err(())),
        })
        .await
    };
    let done = Instant::now();
    let error = match outcome {
        Err(()) if connecting.get() => {
            // The handshake never completed (a full accept backlog drops the SYN, a
            // host that does not answer): the target did not take the connection.
            // A TLS handshake that runs out of time counts alike: the connection was
            // never ready to carry a request, as with a dropped SYN, and the closed
            // model's users back off the same way.
            session.forget();
            let reason = if state.client.is_tls() {
                "connect or TLS handshake timed out"
            } else {
                "connect timed out"
            };
            state.note_connect_failure(reason);
            Some(ErrorKind::Connect)
        }
        Err(()) => {
            // The connection may still carry the unread rest of the response.
            session.forget();
            Some(ErrorKind::Timeout)
        }
        Ok(Err(failure)) => {
            match &failure.note {
                Some(Note::Connect(reason)) => state.note_connect_failure(reason),
                Some(Note::Tls(reason)) => state.note_tls_failure(reason),
                None => {}
            }
            Some(failure.kind)
        }
        Ok(Ok(verdict)) => verdict,
    };
    if trace.retried {
        state.recorder.borrow_mut().retries += 1;
    }
    // One subtraction for both latencies when the request went out when it was meant
    // to (the closed model's, and any open-model request not held for the pool).
    let sent_at = trace.sent(sent);
    let corrected = done - from;
    let uncorrected = if sent_at == from {
        corrected
    } else {
        done - sent_at
    };
    let since_sent = if sent_at == sent {
        uncorrected
    } else {
        done - sent
    };
    pending.record(&Hit {
        name_id: template.name_id,
        corrected,
        uncorrected,
        error,
        timing: trace.timing(sent, done, since_sent),
    });
    state.last_done.set(Some(done));
    match error {
        None => Sent::Ok,
        Some(ErrorKind::Connect) => Sent::ConnectFailed,
        Some(_) => Sent::Failed,
    }
}

/// Sets the sink's variables for one request: `sink_url`, and `correlation_id` rendered
/// once from the request's `correlate:` so the body and the registry get the same id.
fn correlate(
    sink: &headroom_sink::Attached,
    template: &headroom_plan::RequestTemplate,
    rng: &mut SmallRng,
    vars: &mut Vars,
) {
    if vars.get("sink_url") != Some(sink.url.as_str()) {
        vars.set("sink_url", sink.url.clone());
    }
    if let Some(c) = &template.correlate {
        let mut out = Vec::with_capacity(40);
        c.render(&mut RenderContext { rng, vars }, &mut out);
        vars.set("correlation_id", String::from_utf8_lossy(&out).into_owned());
    }
}

/// Keeps the run's first failure of one sort, as `address: reason`.
/// Sleeps for a think time, cut short when the run is stopping.
pub(crate) async fn think_for(state: &ThreadState, think: Think) {
    let pause = match think {
        Think::None => return,
        Think::Fixed(d) => d,
        Think::Uniform(lo, hi) => {
            use rand::Rng;
            let span = (hi - lo).as_nanos() as u64;
            lo + Duration::from_nanos(state.rng.borrow_mut().random_range(0..=span))
        }
    };
    let end = state.start + state.plan.duration();
    let until = (Instant::now() + pause).min(end.max(Instant::now()));
    tokio::time::sleep_until(until.into()).await;
}
