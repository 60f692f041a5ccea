//! Several workloads at once (a scenario's `workloads:`): each its own items, load
//! model and start offset, run side by side on every engine thread, with its own
//! thresholds judged on its own requests.
//!
//! A plan with workloads keeps the concatenation of their items in [`Plan::items`]
//! (what walks every request: timeouts, the outline) and each workload's in its
//! [`WorkloadPlan`]; request names are unique across workloads, so a workload's figures
//! are the sum of its names' ([`WorkloadPlan::names`]).

use std::time::Duration;

use headroom_metrics::threshold::Threshold;

use super::{Item, Load, Plan, Step};

/// One workload of `workloads:`.
#[derive(Debug, Clone)]
pub struct WorkloadPlan {
    /// Its `name:`, the key of `by_workload` in the summary.
    pub name: String,
    /// The weighted items its iterations pick from.
    pub items: Vec<Item>,
    /// Weight of each entry of `items` (same length, every weight > 0).
    pub weights: Vec<u32>,
    /// Its load; `None` runs the plan's own [`Plan::load`] (the workload a search
    /// varies: the search sets `Plan::load` at each step and leaves this alone).
    pub load: Option<Load>,
    /// When it starts, from the start of the run (`start:`).
    pub start: Duration,
    /// Its own pass/fail rules, judged on its requests alone.
    pub thresholds: Vec<Threshold>,
    /// The request names (indices into [`Plan::names`]) its items send, in order.
    pub names: Vec<usize>,
    /// The non-fatal checks (indices into [`Plan::checks`]) its items run, in order.
    pub checks: Vec<usize>,
}

impl Plan {
    /// The load `workload` runs: its own, or the plan's when it has none.
    pub fn load_of<'a>(&'a self, workload: &'a WorkloadPlan) -> &'a Load {
        workload.load.as_ref().unwrap_or(&self.load)
    }

    /// Every load of the run with its start offset: the plan's own load from 0 for a
    /// plan without workloads, else each workload's in order.
    pub fn loads(&self) -> impl Iterator<Item = (&Load, Duration)> + '_ {
        let single = self
            .workloads
            .is_empty()
            .then_some((&self.load, Duration::ZERO));
        let each = self.workloads.iter().map(|w| (self.load_of(w), w.start));
        single.into_iter().chain(each)
    }

    /// Whether the run ends by counting iterations: every load is a users load with
    /// `iterations` (its schedule's length is then only an upper bound).
    pub fn ends_by_count(&self) -> bool {
        self.loads().all(|(l, _)| l.iterations().is_some())
    }
}

/// The request names and the checks (sorted, each once) that `items` send and run,
/// their `once:` steps and every nested step included.
pub fn ids_of(items: &[Item]) -> (Vec<usize>, Vec<usize>) {
    let mut names = Vec::new();
    let mut checks = Vec::new();
    let mut request = |r: &super::RequestTemplate| {
        names.push(r.name_id);
        checks.extend(r.checks.iter().map(|c| c.id));
    };
    for item in items {
        match item {
            Item::Request(r) => request(r),
            Item::Flow(f) => {
                walk(&f.steps, &mut request);
                walk(&f.once, &mut request);
            }
        }
    }
    for ids in [&mut names, &mut checks] {
        ids.sort_unstable();
        ids.dedup();
    }
    (names, checks)
}

/// Calls `each` for every request among `steps`, nested ones included.
fn walk(steps: &[Step], each: &mut impl FnMut(&super::RequestTemplate)) {
    for step in steps {
        match step {
            Step::Request { request, .. } => each(request),
            Step::Block(b) => walk(&b.steps, each),
            Step::Parallel(p) => p.requests.iter().for_each(|(r, _)| each(r)),
            Step::Think(_) | Step::Stream(_) => {}
        }
    }
}
