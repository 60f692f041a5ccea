//! The attack loop of one engine thread. One loop serves both load models: a driver
//! decides when iterations start — on the pacer's schedule (open model) or whenever a
//! user is free (closed model) — and everything else (connections, iterations,
//! recording, the per-second hand-over of `handover.rs`) is shared.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use tokio::task::LocalSet;

use crate::cpu::thread_times;
use crate::handover::{enter_measured, hand_over_seconds, Gauges, Report};
use crate::iteration::{pick, run_iteration};
use crate::lanes::{Lane, LaneSeed};
use crate::pacer::Pacer;
use crate::request::think_for;
use crate::start::StartLine;
use crate::thread::{Pending, Seed, ThreadState, MEASURING, WARMING};
use crate::timer::PreciseTimer;
use crate::user::{Intended, Scratch};
use headroom_client::ConnectionModel;
use headroom_metrics::recorder::Recorder;
use headroom_plan::{Load, Schedule, Slice, Think};

/// Arrivals due within this much of a wake-up start with it (see `drive_open`).
const EARLY_WINDOW: Duration = Duration::from_millis(2);

/// The early window, overridable for measurements through `HEADROOM_EARLY_WINDOW_US`.
fn early_window() -> Duration {
    std::env::var("HEADROOM_EARLY_WINDOW_US")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_micros)
        .unwrap_or(EARLY_WINDOW)
}
/// How long in-flight iterations may finish after the schedule ends, at most.
const DRAIN_LIMIT: Duration = Duration::from_secs(30);
/// How long they may finish after the run is interrupted.
const INTERRUPT_GRACE: Duration = Duration::from_secs(1);
/// How often the closed model re-reads its user-count schedule.
const USER_TICK: Duration = Duration::from_millis(50);
/// Pause of a closed-model user after a connection could not be opened, so a dead
/// target is probed steadily rather than in a tight loop.
const CONNECT_BACKOFF: Duration = Duration::from_millis(50);

/// This thread's identity within the run: which shard of the run, which thread of the
/// shard; and what it is given for each of the run's loads.
#[derive(Clone)]
pub(crate) struct Slot {
    /// The shard's part of the whole run ([`Slice::WHOLE`] in a single process).
    pub(crate) shard: Slice,
    /// This thread's part of the shard.
    pub(crate) thread: Slice,
    /// Each load's items and iteration budget, in the order of `Plan::loads`.
    pub(crate) loads: Vec<LaneSeed>,
}

impl Slot {
    /// This thread's share of a total spread over all shards and their threads (the
    /// first ones take the remainder): users, the in-flight cap, a capped pool.
    fn share(&self, total: u64) -> u64 {
        self.thread.users(self.shard.users(total))
    }

    /// This thread's arrivals of the run's schedule: every n-th of its shard's.
    fn arrivals(&self) -> Slice {
        self.shard.within(self.thread)
    }
}

/// Runs this thread's share of the plan to completion, reporting through `tx`.
pub(crate) fn run_thread(
    seed: Seed,
    slot: Slot,
    start_line: &StartLine,
    tx: Sender<Report>,
) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    // Even a thread whose runtime failed must reach the start line, or the others
    // would wait for it forever.
    let Some(start) = start_line.wait() else {
        return Ok(()); // The run was given up before it started.
    };
    // A capped shared pool is split over the threads like the load.
    let pool = match seed.plan.client.connection {
        ConnectionModel::Shared(Some(n)) => Some(slot.share(n as u64).max(1) as usize),
        _ => None,
    };
    let state = seed.grow(start, pool);
    state.phase.set(if state.plan.warmup.is_zero() {
        MEASURING
    } else {
        WARMING
    });
    let runtime = runtime?;
    let times_before = thread_times();
    let state = Rc::new(state);
    let lanes: Vec<Rc<Lane>> = (slot.loads.iter().cloned())
        .zip(state.plan.loads())
        .map(|(seed, (_, offset))| Rc::new(Lane::new(seed, start + offset)))
        .collect();
    let gauges = Rc::new(Gauges::new(tx.clone(), lanes.clone()));
    let local = LocalSet::new();
    let result = local.block_on(&runtime, async {
        tokio::task::spawn_local(hand_over_seconds(state.clone(), gauges.clone()));
        if state.plan.workloads.is_empty() {
            let load = state.plan.load.clone();
            let lane = lanes[0].clone();
            return drive(state.clone(), gauges.clone(), slot.clone(), load, lane).await;
        }
        // Each workload's driver runs beside the others on this thread.
        let loads: Vec<Load> = state.plan.loads().map(|(l, _)| l.clone()).collect();
        let drivers: Vec<_> = (loads.into_iter().zip(lanes))
            .map(|(load, lane)| {
                let run = drive(state.clone(), gauges.clone(), slot.clone(), load, lane);
                tokio::task::spawn_local(run)
            })
            .collect();
        let mut result = Ok(());
        for driver in drivers {
            let done = driver
                .await
                .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
            result = result.and(done);
        }
        result
    });
    // Dropping the tasks drops their pending requests: those still in flight are
    // counted as abandoned here, before the recorder is handed over.
    drop(local);
    // The users' own connections went with their tasks; the shared pool's go now, so
    // what QUIC measured on each is in the tally taken next.
    state.client.close_shared();
    // Connections are counted as they open (by the connector), not per request.
    state.take_opened(true);
    let times = thread_times() - gauges.measuring_since.get().unwrap_or(times_before);
    let mut recorder = state.recorder.borrow_mut();
    let t = recorder.second.t;
    let last = recorder.take_second(t + 1);
    let names = recorder.by_name.len();
    let whole = Box::new(std::mem::replace(&mut *recorder, Recorder::new(names)).finish());
    let _ = tx.send(Report::Done(whole, last, times, state.last_done.get()));
    result
}

/// Runs one load on this thread through its lane: the open or the closed model.
async fn drive(
    state: Rc<ThreadState>,
    gauges: Rc<Gauges>,
    slot: Slot,
    load: Load,
    lane: Rc<Lane>,
) -> std::io::Result<()> {
    match load {
        Load::ArrivalRate {
            schedule,
            max_in_flight,
        } => {
            let cap = slot.share(max_in_flight as u64).max(1);
            let pacer = Pacer::new(schedule, slot.arrivals());
            drive_open(&state, &gauges, &lane, pacer, cap).await
        }
        Load::Users {
            schedule, think, ..
        } => {
            drive_closed(&state, &lane, &schedule, think, &slot).await;
            Ok(())
        }
    }
}

/// Open model: start iterations on the pacer's schedule, whatever the target does.
async fn drive_open(
    state: &Rc<ThreadState>,
    gauges: &Rc<Gauges>,
    lane: &Rc<Lane>,
    pacer: Pacer,
    cap: u64,
) -> std::io::Result<()> {
    let mut timer = PreciseTimer::new()?;
    let window = early_window();
    let mut sent = 0u64;
    // No batch yet: the first arrival, due at the start itself, must wait for it too
    // (the start may be well ahead: a shard's is named by its coordinator).
    let mut batch_end: Option<Instant> = None;
    let measured_from = state.start + state.plan.warmup;
    while !state.stopping() {
        let Some(offset) = pacer.due(sent) else { break };
        let scheduled = lane.at + offset;
        if batch_end.is_none_or(|end| scheduled > end) {
            // Wake once for this arrival and start, with it, every arrival due within
            // the window: never late, at most 2 ms early. Early costs no accuracy
            // (latency then runs from the actual send, see iteration.rs; only late
            // starts hide queueing) and saves wake-ups, the open model's main CPU
            // cost. Each batch costs two wake-ups of this thread (the timer, then the
            // responses) and one of the target; measured here at 5000/s on one
            // thread, CPU per request was ~55 µs with no window, ~16 µs with 1 ms
            // and ~12.6 µs with 2 ms.
            timer.sleep_until(scheduled).await?;
            batch_end = Some(Instant::now() + window);
        }
        // Entered once this arrival starts, not before its wait: another workload's
        // driver on this thread may start arrivals of the warm-up meanwhile.
        if scheduled >= measured_from {
            enter_measured(state, gauges);
        }
        sent += 1;
        state
            .recorder
            .borrow_mut()
            .record_lag(Instant::now().saturating_duration_since(scheduled));
        if lane.in_flight.get() >= cap {
            // The schedule never waits on slow responses: it drops and counts instead.
            state.recorder.borrow_mut().record_dropped();
            continue;
        }
        lane.in_flight.set(lane.in_flight.get() + 1);
        let pending = Pending::begin(state);
        let (state, lane) = (state.clone(), lane.clone());
        tokio::task::spawn_local(async move {
            let work = pick_in(&state, &lane);
            // Each arrival is a session of its own: with the shared pool (the open
            // model's default) every request takes a pooled connection, and waiting
            // for one is part of it, timed from the schedule.
            let mut session = state.client.session();
            let mut scratch = Scratch::default();
            run_iteration(
                &state,
                work,
                pending,
                &mut session,
                Intended::Scheduled(scheduled),
                &mut scratch,
            )
            .await;
            // An arrival's streams end with its iteration.
            scratch.streams.close_all(STREAM_CLOSE_GRACE).await;
            lane.in_flight.set(lane.in_flight.get() - 1);
        });
    }
    drain(state, || lane.in_flight.get() == 0).await;
    Ok(())
}

/// Picks the next iteration's item from the lane's items (a workload's), else the
/// plan's.
fn pick_in<'a>(state: &'a ThreadState, lane: &'a Lane) -> &'a crate::work::Work {
    match &lane.items {
        None => pick(state),
        Some(items) => items.pick(&mut *state.rng.borrow_mut()),
    }
}

/// Closed model: keep the scheduled number of users looping iteration → think. A
/// user of a load counted in iterations stops for good once its budget is spent, and
/// the load ends when all of its users have.
async fn drive_closed(
    state: &Rc<ThreadState>,
    lane: &Rc<Lane>,
    schedule: &Schedule,
    think: Think,
    slot: &Slot,
) {
    // The start may be well ahead (a shard's is named by its coordinator): users begin
    // at it, not when this thread happens to be ready.
    tokio::time::sleep_until(lane.at.into()).await;
    let end = lane.at + schedule.duration();
    let counted = lane.quota.counted();
    let active = Rc::new(Cell::new(0u64));
    let alive: Rc<RefCell<Vec<bool>>> = Rc::default();
    while !state.stopping() && Instant::now() < end {
        let elapsed = lane.at.elapsed();
        let want = slot.thread.users(slot.shard.users_at(schedule, elapsed));
        active.set(want);
        for id in 0..want as usize {
            let mut alive_now = alive.borrow_mut();
            if alive_now.len() <= id {
                alive_now.resize(id + 1, false);
            }
            if alive_now[id] {
                continue;
            }
            alive_now[id] = true;
            lane.users.set(lane.users.get() + 1);
            let (state, lane, active, alive) =
                (state.clone(), lane.clone(), active.clone(), alive.clone());
            tokio::task::spawn_local(async move {
                user(&state, id as u64, &active, end, think, &lane).await;
                // A user whose iterations are done is not started again.
                if !counted {
                    alive.borrow_mut()[id] = false;
                }
                lane.users.set(lane.users.get() - 1);
            });
        }
        if counted && lane.users.get() == 0 {
            break; // Every user of this thread ran its iterations.
        }
        let next = (Instant::now() + USER_TICK).min(end);
        tokio::time::sleep_until(next.into()).await;
    }
    active.set(0);
    drain(state, || lane.users.get() == 0).await;
}

/// One closed-model user: its own session (its own connections, by default), looping
/// until told to stop.
async fn user(
    state: &Rc<ThreadState>,
    id: u64,
    active: &Cell<u64>,
    end: Instant,
    think: Think,
    lane: &Lane,
) {
    let mut session = state.client.session();
    let mut scratch = Scratch::for_user();
    let mut done = 0u64;
    loop {
        // One clock read both bounds the loop and starts the iteration.
        let now = Instant::now();
        if id >= active.get() || state.stopping() || now >= end || !lane.quota.take(done) {
            break;
        }
        done += 1;
        let work = pick_in(state, lane);
        let pending = Pending::begin(state);
        if !run_iteration(
            state,
            work,
            pending,
            &mut session,
            Intended::Now(now),
            &mut scratch,
        )
        .await
        {
            tokio::time::sleep(CONNECT_BACKOFF).await;
            continue;
        }
        if scratch.idle {
            // The flow only holds streams this user already has open, so the iteration
            // never awaited: looping on it would spin a core and starve every other user
            // on the thread. Wait for a stream to end (the next iteration reopens it);
            // the recheck bound lets a ramp-down, the run's end or Ctrl-C through.
            let until = Instant::now() + IDLE_RECHECK;
            let _ =
                tokio::time::timeout_at(until.min(end).into(), scratch.streams.any_ended()).await;
        }
        if think != Think::None {
            // Skipped, not awaited, without a think time: a future made and polled
            // only to return at once cost 32 instructions per request (0.6 %).
            think_for(state, think).await;
        }
    }
    // A user's streams live across its iterations and end with it (its own end, the
    // run's end, or the drain).
    scratch.streams.close_all(STREAM_CLOSE_GRACE).await;
}

/// How often a user whose flow only holds streams looks at whether it should stop.
const IDLE_RECHECK: Duration = Duration::from_millis(50);

/// Longest a user's or arrival's streams wait for their peers to answer a close at its
/// end: a close handshake is a round trip, and a peer that does not answer must not
/// hold up the drain.
const STREAM_CLOSE_GRACE: Duration = Duration::from_millis(200);

/// Waits for in-flight work to finish: up to the request timeout (capped) after a
/// normal end, a short grace after an interruption; unfinished work is abandoned.
async fn drain(state: &ThreadState, finished: impl Fn() -> bool) {
    // A request in flight ends by its timeout at the latest; the margin lets that
    // timeout fire and be recorded before the thread gives up on it.
    let limit = if state.stopping() {
        INTERRUPT_GRACE
    } else {
        (state.plan.longest_timeout() + INTERRUPT_GRACE).min(DRAIN_LIMIT)
    };
    let mut deadline = Instant::now() + limit;
    while !finished() && Instant::now() < deadline {
        if state.stopping() {
            deadline = deadline.min(Instant::now() + INTERRUPT_GRACE);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
