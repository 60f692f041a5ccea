//! The engine's view of a plan's items: each request paired with the wire bytes it
//! can reuse (when it has no placeholder) and what its response handling needs, and
//! a weighted picker over the items.

use std::sync::Arc;

use rand::Rng;

use crate::client::request::static_wire;
use crate::plan::{Capture, Item, Plan, RequestTemplate, Step, Think};

/// A request ready to send.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// The compiled request.
    pub(crate) template: Arc<RequestTemplate>,
    /// Captures to take from its response (flow steps only).
    pub(crate) captures: Vec<Capture>,
    /// Prebuilt wire bytes when nothing in the request varies.
    pub(crate) wire: Option<Vec<u8>>,
    /// Whether the body must be kept for checks or captures.
    pub(crate) keep_body: bool,
    /// A HEAD request, whose response has no body.
    pub(crate) head: bool,
    /// Sending it twice cannot change the target more than once (RFC 9110 §9.2.2), so
    /// it may be retried after a stale keep-alive connection.
    pub(crate) idempotent: bool,
}

impl Prepared {
    fn new(plan: &Plan, template: &Arc<RequestTemplate>, captures: &[Capture]) -> Prepared {
        Prepared {
            wire: static_wire(template, &plan.target),
            keep_body: template.needs_body(captures),
            head: template.method == "HEAD",
            idempotent: matches!(
                template.method.as_str(),
                "GET" | "HEAD" | "OPTIONS" | "TRACE" | "PUT" | "DELETE"
            ),
            captures: captures.to_vec(),
            template: template.clone(),
        }
    }
}

/// One step of a prepared flow.
#[derive(Debug)]
pub(crate) enum PreparedStep {
    /// Send a request.
    Request(Prepared),
    /// Pause.
    Think(Think),
}

/// A prepared item.
#[derive(Debug)]
pub(crate) enum Work {
    /// One request.
    Request(Prepared),
    /// Steps in order, sharing captured variables.
    Flow(Vec<PreparedStep>),
}

/// The prepared items of a plan and their cumulative weights.
#[derive(Debug)]
pub(crate) struct Workload {
    items: Vec<Work>,
    cumulative: Vec<u64>,
}

impl Work {
    /// The timeout of the first request the item sends, and its name id.
    pub(crate) fn first_request(&self, plan: &Plan) -> (usize, std::time::Duration) {
        let first = match self {
            Work::Request(p) => Some(p),
            Work::Flow(steps) => steps.iter().find_map(|s| match s {
                PreparedStep::Request(p) => Some(p),
                PreparedStep::Think(_) => None,
            }),
        };
        match first {
            Some(p) => (p.template.name_id, p.template.timeout_in(plan)),
            None => (0, plan.timeout),
        }
    }
}

impl Workload {
    /// Prepares every item of `plan`.
    pub(crate) fn new(plan: &Plan) -> Workload {
        let items = plan
            .items
            .iter()
            .map(|item| match item {
                Item::Request(r) => Work::Request(Prepared::new(plan, r, &[])),
                Item::Flow(f) => Work::Flow(
                    f.steps
                        .iter()
                        .map(|s| match s {
                            Step::Request { request, captures } => {
                                PreparedStep::Request(Prepared::new(plan, request, captures))
                            }
                            Step::Think(t) => PreparedStep::Think(*t),
                        })
                        .collect(),
                ),
            })
            .collect();
        let mut total = 0;
        let cumulative = plan
            .weights
            .iter()
            .map(|w| {
                total += u64::from(*w);
                total
            })
            .collect();
        Workload { items, cumulative }
    }

    /// Picks an item with probability proportional to its weight.
    pub(crate) fn pick(&self, rng: &mut impl Rng) -> &Work {
        if self.items.len() == 1 {
            return &self.items[0];
        }
        let total = *self
            .cumulative
            .last()
            .expect("a plan has at least one item");
        let x = rng.random_range(0..total);
        let i = self.cumulative.partition_point(|&c| c <= x);
        &self.items[i]
    }
}
