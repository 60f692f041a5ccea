//! One request of a user, sent and recorded: its cookies attached, its redirects
//! followed (`chain.rs`), its latency from when it was meant to start, bounded by one
//! timeout, its checks, cookies and redirects counted beside its hit.

use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;

use crate::chain;
use crate::deadline::RequestTimer;
use crate::thread::{Pending, ThreadState};
use crate::user::{Intended, Scratch};
use crate::work::Prepared;
use headroom_client::session::{Note, Session, Trace};
use headroom_metrics::recorder::Hit;
use headroom_metrics::ErrorKind;
use headroom_plan::journey::CheckRule;
use headroom_plan::Think;
use headroom_template::{RenderContext, Vars};

/// How a request ended, for the flow that sent it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Sent {
    /// It passed.
    Ok,
    /// It failed (recorded).
    Failed,
    /// A connection could not be opened.
    ConnectFailed,
}

/// Sends one request (its redirects followed) and records it.
pub(crate) async fn send(
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
    let cookies = plan.client.cookies;
    let who = (scratch.user, scratch.iteration);
    let mut tally = chain::Tally::default();
    if !prepared.cookie_vars.is_empty() {
        cookie_vars(state, prepared, scratch);
    }
    // The request's URL when the user has cookies to send: they depend on its path.
    let url = if cookies && !scratch.jar.is_empty() {
        let mut path = Vec::new();
        match template.path.as_static() {
            Some(p) => path.extend_from_slice(p.as_bytes()),
            None => {
                let mut rng = state.rng.borrow_mut();
                template.path.render(
                    &mut RenderContext {
                        rng: &mut rng,
                        vars: &scratch.vars,
                        user: scratch.user,
                        iteration: scratch.iteration,
                    },
                    &mut path,
                );
            }
        }
        chain::target_url(&plan.target, &path)
    } else {
        None
    };
    let extra = chain::cookie_header(cookies, &scratch.jar, url.as_ref(), &mut tally);
    let extra: Vec<(&str, &[u8])> = extra.iter().map(|v| ("cookie", v.as_bytes())).collect();
    let payload = {
        // Rendered before any await: the thread's random source is borrowed only here.
        let mut rng = state.rng.borrow_mut();
        if let Some(sink) = sink {
            correlate(sink, template, &mut rng, &mut scratch.vars, who);
        }
        let mut ctx = RenderContext {
            rng: &mut rng,
            vars: &scratch.vars,
            user: scratch.user,
            iteration: scratch.iteration,
        };
        state
            .client
            .payload(&prepared.request, &mut ctx, &extra, &mut scratch.client)
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
    // A redirect chain is one request: one deadline for all its hops.
    let deadline = from + template.timeout_in(plan);
    let connecting = Cell::new(false);
    let mut trace = Trace::default();
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
        let user = chain::User {
            jar: &mut scratch.jar,
            vars: &scratch.vars,
            scratch: &mut scratch.hops,
            who: (scratch.user, scratch.iteration),
        };
        let mut exchange = pin!(chain::run(
            state,
            prepared,
            &payload,
            url,
            session,
            &connecting,
            &mut trace,
            user,
            &mut tally,
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
        Ok(Ok(Ok(captured))) => {
            crate::capture::store(captured, &mut scratch.vars);
            None
        }
        Ok(Ok(Err(kind))) => Some(kind),
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
    if !template.checks.is_empty() {
        // No response at all: every check of the request failed, as k6 counts a
        // check on a response that never came.
        let answered = matches!(
            error,
            None | Some(
                ErrorKind::Check | ErrorKind::Status4xx | ErrorKind::Status5xx | ErrorKind::Graphql
            )
        );
        for c in &template.checks {
            match c.rule {
                CheckRule::Duration(bound) => {
                    tally.checks.push((c.id, answered && corrected < bound))
                }
                _ if !answered => tally.checks.push((c.id, false)),
                _ => {}
            }
        }
    }
    if tally.redirects + tally.received + tally.sent + tally.dropped > 0 || !tally.checks.is_empty()
    {
        pending.also(|r| {
            r.redirects += tally.redirects;
            r.cookies.received += tally.received;
            r.cookies.sent += tally.sent;
            r.cookies.dropped += tally.dropped;
            for (id, passed) in &tally.checks {
                r.check(*id, *passed);
            }
        });
    }
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

/// Sets `cookie.NAME` for each cookie the request's templates read: the value the
/// user would send to the target, or empty.
fn cookie_vars(state: &ThreadState, prepared: &Prepared, scratch: &mut Scratch) {
    let origin = chain::target_url(&state.plan.target, b"/");
    for var in &prepared.cookie_vars {
        let name = &var["cookie.".len()..];
        let value = origin
            .as_ref()
            .and_then(|u| scratch.jar.value(name, u))
            .unwrap_or_default();
        scratch.vars.set(var, value);
    }
}

/// Sets the sink's variables for one request: `sink_url`, and `correlation_id` rendered
/// once from the request's `correlate:` so the body and the registry get the same id.
fn correlate(
    sink: &headroom_sink::Attached,
    template: &headroom_plan::RequestTemplate,
    rng: &mut SmallRng,
    vars: &mut Vars,
    who: (u64, u64),
) {
    if vars.get("sink_url") != Some(sink.url.as_str()) {
        vars.set("sink_url", sink.url.clone());
    }
    if let Some(c) = &template.correlate {
        let mut out = Vec::with_capacity(40);
        c.render(
            &mut RenderContext {
                rng,
                vars,
                user: who.0,
                iteration: who.1,
            },
            &mut out,
        );
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
