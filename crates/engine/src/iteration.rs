//! One iteration: pick a weighted item and run it — a single request, or a flow's
//! steps in order with captured variables — on the caller's connection, recording
//! every request in the thread's recorder. Hit errors are recorded, never returned.
//! A user's first iteration numbers it and gives it the run's `setup.` values; each
//! iteration fills the data rows its work reads.
//!
//! Every request is a [`Pending`] from the moment the run sets out to send it until
//! its result is recorded; one dropped unrecorded (the run ended first) counts as
//! abandoned. So each scheduled request lands in exactly one count (ARCHITECTURE.md rule 6).

use std::rc::Rc;

use crate::request::{send, Sent};
use crate::thread::{Pending, ThreadState};
use crate::user::{Flowed, Intended, Run, Scratch};
use crate::work::Work;
use headroom_client::session::Session;
use headroom_template::Vars;

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
    if scratch.user == 0 {
        begin_user(state, scratch);
    }
    if !work.reads().is_empty() {
        unique_rows(state, scratch, work.reads());
    }
    // The iteration's variables start from the user's own: its data row, the run's
    // setup values and what its `once:` steps captured.
    scratch.vars.clone_from(&scratch.kept);
    if !work.reads().is_empty() {
        data_rows(state, scratch, work.reads());
    }
    scratch.idle = false;
    let ok = match work {
        Work::Request(prepared) => {
            send(state, prepared, first, session, intended, scratch).await != Sent::ConnectFailed
        }
        Work::Flow(flow) => {
            let mut run = Run {
                state,
                session,
                scratch,
                first: Some(first),
                intended,
                idle: true,
            };
            let done = run.scratch.once_done.contains(&flow.index);
            let mut outcome = Flowed::Ok;
            if !done && !flow.once.is_empty() {
                run.idle = false;
                outcome = crate::flow::run_steps(&mut run, &flow.once).await;
                if outcome == Flowed::Ok {
                    // What `once` captured lives as long as the user.
                    run.scratch.kept.clone_from(&run.scratch.vars);
                    run.scratch.once_done.push(flow.index);
                }
            }
            if outcome == Flowed::Ok {
                outcome = crate::flow::run_steps(&mut run, &flow.steps).await;
            }
            if let Some(unused) = run.first.take() {
                unused.cancel();
            }
            let idle = run.idle && outcome == Flowed::Ok;
            scratch.idle = idle;
            outcome != Flowed::ConnectFailed
        }
    };
    scratch.iteration += 1;
    ok
}

/// A user's (or an arrival's) first iteration: its number and the run's `setup.`
/// values, kept for its life.
fn begin_user(state: &ThreadState, scratch: &mut Scratch) {
    let journey = &state.plan.journey;
    scratch.user = journey.next_user();
    for (name, value, json) in &journey.setup_values {
        if *json {
            scratch.kept.set_json(name, value.clone());
        } else {
            scratch.kept.set(name, value.clone());
        }
    }
}

/// Takes the user's own row of each `unique` file among `reads` it has none of yet,
/// kept for its life: a user takes a row only of a file its work reads, so another
/// workload's users (or arrivals) leave the rows alone.
fn unique_rows(state: &ThreadState, scratch: &mut Scratch, reads: &[usize]) {
    use headroom_plan::data::Pick;
    for &i in reads {
        let source = &state.plan.journey.data.sets[i];
        if source.pick() != Pick::Unique || scratch.rows.contains(&i) {
            continue;
        }
        scratch.rows.push(i);
        let set = source.set();
        if set.is_empty() {
            continue;
        }
        // Rows run out only when more users start than the load check counted (a
        // ramp that restarts users): they are then shared, never refused.
        let row = source
            .take_unique()
            .unwrap_or_else(|| (scratch.user as usize).saturating_sub(1) % set.len());
        set_row(
            &mut scratch.kept,
            &state.plan.journey.data_vars[i],
            set,
            row,
        );
    }
}

/// Sets `data.SET.COLUMN` for this iteration from each `sequential` or `random` file
/// among `reads`.
fn data_rows(state: &ThreadState, scratch: &mut Scratch, reads: &[usize]) {
    use headroom_plan::data::Pick;
    for &i in reads {
        let source = &state.plan.journey.data.sets[i];
        if source.pick() == Pick::Unique || source.set().is_empty() {
            continue;
        }
        let row = {
            let mut rng = state.rng.borrow_mut();
            source.next_row(&mut *rng).unwrap_or(0)
        };
        set_row(
            &mut scratch.vars,
            &state.plan.journey.data_vars[i],
            source.set(),
            row,
        );
    }
}

/// Sets `data.SET.COLUMN` for every column of `row`.
fn set_row(vars: &mut Vars, names: &[String], set: &headroom_plan::data::DataSet, row: usize) {
    for (col, name) in names.iter().enumerate() {
        vars.set(name, set.cell(row, col).to_string());
    }
}
