//! A flow's steps in order: requests, think times, stream steps, blocks (`if:`,
//! `repeat:`, `group:`) and `parallel:` requests, sharing the iteration's variables.
//!
//! Accounting: the iteration's first request (already counted as scheduled when the
//! iteration was) goes to the first step that sends; every later request begins its
//! own [`Pending`]. A step that does not run (its `if:` is false, `repeat: 0`) counts
//! nothing. A failed request ends the iteration, as before.

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use crate::request::{send, think_for, Sent};
use crate::user::{Flowed, Intended, Run};
use crate::work::{PreparedBlock, PreparedStep};
use headroom_metrics::ErrorKind;
use headroom_plan::journey::MAX_REPEAT;

/// Runs `steps` in order.
pub(crate) async fn run_steps(run: &mut Run<'_>, steps: &[PreparedStep]) -> Flowed {
    for step in steps {
        let outcome = match step {
            PreparedStep::Request(prepared) => {
                run.idle = false;
                let pending = run.pending();
                match send(
                    run.state,
                    prepared,
                    pending,
                    run.session,
                    run.intended,
                    run.scratch,
                )
                .await
                {
                    Sent::Ok => {
                        run.intended = Intended::Now(Instant::now());
                        Flowed::Ok
                    }
                    Sent::Failed => Flowed::Failed,
                    Sent::ConnectFailed => Flowed::ConnectFailed,
                }
            }
            PreparedStep::Think(think) => {
                run.idle = false;
                think_for(run.state, *think).await;
                run.intended = Intended::Now(Instant::now());
                Flowed::Ok
            }
            PreparedStep::Stream(step) => stream(run, step).await,
            PreparedStep::Block(block) => {
                run.idle = false;
                // Boxed: a block holds steps, so the future is recursive.
                let boxed: Pin<Box<dyn Future<Output = Flowed> + '_>> =
                    Box::pin(run_block(run, block));
                boxed.await
            }
            PreparedStep::Parallel(requests) => {
                run.idle = false;
                crate::parallel::run(run, requests).await
            }
        };
        if outcome != Flowed::Ok {
            return outcome;
        }
    }
    Flowed::Ok
}

/// Runs a block: its condition, then its steps as many times as `repeat` says, timed
/// as a group when it is one.
async fn run_block(run: &mut Run<'_>, block: &PreparedBlock) -> Flowed {
    let who = (run.scratch.user, run.scratch.iteration);
    let (go, times) = run.state.render(&run.scratch.vars, who, |ctx| {
        let go = block.when.as_ref().is_none_or(|c| c.eval(ctx));
        let times = match &block.repeat {
            None => 1,
            Some(t) => {
                let mut out = Vec::new();
                t.render(ctx, &mut out);
                // A count that does not read as one runs nothing: the rendering came
                // from a captured value the scenario could not check at load.
                std::str::from_utf8(&out)
                    .ok()
                    .and_then(|s| s.trim().parse::<u64>().ok())
                    .unwrap_or(0)
                    .min(MAX_REPEAT)
            }
        };
        (go, times)
    });
    if !go || times == 0 {
        return Flowed::Ok;
    }
    let began = Instant::now();
    let mut outcome = Flowed::Ok;
    for _ in 0..times {
        outcome = run_steps(run, &block.steps).await;
        if outcome != Flowed::Ok || run.state.stopping() {
            break;
        }
    }
    if let Some(group) = block.group {
        let took = began.elapsed();
        let failed = outcome != Flowed::Ok;
        // A group that began in the warm-up is discarded with it, as its requests are.
        run.state.recorder.borrow_mut().group(group, took, failed);
    }
    outcome
}

/// A stream step.
async fn stream(run: &mut Run<'_>, step: &headroom_plan::StreamStep) -> Flowed {
    let pending = run.pending();
    let state = run.state;
    // gRPC calls and SSE streams may share the user's HTTP/2 connection with its requests.
    let grpc = step.protocol != headroom_plan::Protocol::Ws;
    if grpc {
        crate::stream::grpc::share_with_session(state, run.session, &run.scratch.streams);
    }
    let outcome = crate::stream::step::run_step(
        state,
        step,
        pending,
        &mut run.scratch.streams,
        &mut run.scratch.vars,
        (run.scratch.user, run.scratch.iteration),
    )
    .await;
    if grpc {
        crate::stream::grpc::share_with_session(state, run.session, &run.scratch.streams);
    }
    match outcome {
        Ok(crate::stream::step::Ran::Done) => {
            run.idle = false;
            run.intended = Intended::Now(Instant::now());
            Flowed::Ok
        }
        Ok(crate::stream::step::Ran::Skipped) => Flowed::Ok,
        Err(ErrorKind::Connect) => Flowed::ConnectFailed,
        Err(_) => Flowed::Failed,
    }
}
