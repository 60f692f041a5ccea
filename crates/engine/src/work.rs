//! The engine's view of a plan's items: each request prepared by the client layer for
//! the run's protocol, with its flow step's captures, and a weighted picker over the
//! items.

use std::sync::Arc;

use rand::Rng;

use super::UnsendableRequest;
use headroom_client::prepared::PreparedRequest;
use headroom_plan::{Capture, Item, Plan, RequestTemplate, Step, StreamStep, Think};

/// A request ready to send, with the captures its flow step takes from the response.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// The request in the form the client layer sends.
    pub(crate) request: PreparedRequest,
    /// Captures to take from its response (flow steps only).
    pub(crate) captures: Vec<Capture>,
}

impl Prepared {
    fn new(
        plan: &Plan,
        template: &Arc<RequestTemplate>,
        captures: &[Capture],
    ) -> Result<Prepared, UnsendableRequest> {
        let keep_body = template.needs_body(captures);
        let request = PreparedRequest::new(template, &plan.target, plan.client.protocol, keep_body)
            .map_err(|source| UnsendableRequest {
                name: plan.names[template.name_id].clone(),
                source,
            })?;
        Ok(Prepared {
            request,
            captures: captures.to_vec(),
        })
    }

    /// The compiled request.
    pub(crate) fn template(&self) -> &RequestTemplate {
        &self.request.template
    }
}

/// One step of a prepared flow.
#[derive(Debug)]
pub(crate) enum PreparedStep {
    /// Send a request.
    Request(Prepared),
    /// Pause.
    Think(Think),
    /// A stream step.
    Stream(Arc<StreamStep>),
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

impl Workload {
    /// Prepares every item of `plan`; fails (with the reason in words) when a request
    /// cannot be sent in the run's protocol.
    pub(crate) fn new(plan: &Plan) -> Result<Workload, UnsendableRequest> {
        let items = plan
            .items
            .iter()
            .map(|item| {
                Ok(match item {
                    Item::Request(r) => Work::Request(Prepared::new(plan, r, &[])?),
                    Item::Flow(f) => Work::Flow(
                        f.steps
                            .iter()
                            .map(|s| {
                                Ok(match s {
                                    Step::Request { request, captures } => PreparedStep::Request(
                                        Prepared::new(plan, request, captures)?,
                                    ),
                                    Step::Think(t) => PreparedStep::Think(*t),
                                    Step::Stream(s) => PreparedStep::Stream(s.clone()),
                                })
                            })
                            .collect::<Result<_, UnsendableRequest>>()?,
                    ),
                })
            })
            .collect::<Result<_, UnsendableRequest>>()?;
        let mut total = 0;
        let cumulative = plan
            .weights
            .iter()
            .map(|w| {
                total += u64::from(*w);
                total
            })
            .collect();
        Ok(Workload { items, cumulative })
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
