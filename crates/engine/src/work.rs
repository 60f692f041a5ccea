//! The engine's view of a plan's items: each request prepared by the client layer for
//! the run's protocol, with its flow step's captures, and a weighted picker over the
//! items.

use std::sync::Arc;

use rand::Rng;

use super::UnsendableRequest;
use crate::capture::Heads;
use headroom_client::prepared::PreparedRequest;
use headroom_plan::journey::{CaptureFrom, ResponseCapture};
use headroom_plan::{Item, Plan, RequestTemplate, Step, StreamStep, Think};

/// A request ready to send, with the captures its flow step takes from the response.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// The request in the form the client layer sends.
    pub(crate) request: PreparedRequest,
    /// Captures to take from its response (flow steps only).
    pub(crate) captures: Vec<ResponseCapture>,
    /// Which of the response's headers are kept, and for what.
    pub(crate) heads: Heads,
    /// The cookies its templates read: their variables (`cookie.NAME`), set before each
    /// send.
    pub(crate) cookie_vars: Vec<String>,
    /// For an item of its own: the data files its templates read (see [`Work::reads`]).
    pub(crate) reads: Vec<usize>,
}

impl Prepared {
    fn new(
        plan: &Plan,
        template: &Arc<RequestTemplate>,
        captures: &[ResponseCapture],
    ) -> Result<Prepared, UnsendableRequest> {
        let keep_body = template.needs_body(captures);
        let mut request =
            PreparedRequest::new(template, &plan.target, plan.client.protocol, keep_body).map_err(
                |source| UnsendableRequest {
                    name: plan.names[template.name_id].clone(),
                    source,
                },
            )?;
        let mut heads = Heads::default();
        let cookies_read = captures
            .iter()
            .any(|c| matches!(c.from, CaptureFrom::Cookie(_)));
        if plan.client.cookies || cookies_read {
            heads.names.push("set-cookie".into());
            heads.set_cookie = Some(heads.names.len() - 1);
        }
        if template.redirects.unwrap_or(plan.client.redirects) > 0 {
            heads.names.push("location".into());
            heads.location = Some(heads.names.len() - 1);
        }
        for c in captures {
            if let CaptureFrom::Header(name) = &c.from {
                if heads.index(name).is_none() {
                    heads.names.push(name.clone());
                }
            }
        }
        request.keep_headers = heads.names.clone();
        let mut cookie_vars: Vec<String> = Vec::new();
        let mut read = |t: &headroom_template::Template| {
            for v in t.variables() {
                if v.starts_with("cookie.") && !cookie_vars.iter().any(|c| c == v) {
                    cookie_vars.push(v.to_string());
                }
            }
        };
        read(&template.path);
        template.headers.iter().for_each(|(_, t)| read(t));
        if let Some(b) = &template.body {
            read(b);
        }
        if let Some(m) = &template.multipart {
            for p in &m.pieces {
                if let headroom_plan::journey::Piece::Text(t) = p {
                    read(t);
                }
            }
        }
        Ok(Prepared {
            request,
            captures: captures.to_vec(),
            heads,
            cookie_vars,
            reads: Vec::new(),
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
    /// Steps under `if:`, `repeat:` or `group:`.
    Block(PreparedBlock),
    /// Requests sent at once.
    Parallel(Vec<Prepared>),
}

/// A block's rule and its prepared steps.
#[derive(Debug)]
pub(crate) struct PreparedBlock {
    /// Run only when this holds.
    pub(crate) when: Option<headroom_template::Condition>,
    /// How many times (rendered per entry).
    pub(crate) repeat: Option<headroom_template::Template>,
    /// The group its duration is recorded under.
    pub(crate) group: Option<usize>,
    /// The steps.
    pub(crate) steps: Vec<PreparedStep>,
}

/// A prepared flow: its steps, and its `once:` steps.
#[derive(Debug)]
pub(crate) struct PreparedFlow {
    /// Index among the plan's items: which of a user's `once:` sets ran.
    pub(crate) index: usize,
    /// Steps run each iteration.
    pub(crate) steps: Vec<PreparedStep>,
    /// Steps run once per user before its first iteration.
    pub(crate) once: Vec<PreparedStep>,
    /// The data files its templates read (indexes into the plan's `data.sets`).
    pub(crate) reads: Vec<usize>,
}

impl Work {
    /// The data files the item's templates read.
    pub(crate) fn reads(&self) -> &[usize] {
        match self {
            Work::Request(p) => &p.reads,
            Work::Flow(f) => &f.reads,
        }
    }
}

/// A prepared item.
#[derive(Debug)]
pub(crate) enum Work {
    /// One request.
    Request(Prepared),
    /// Steps in order, sharing captured variables.
    Flow(PreparedFlow),
}

/// Prepares a flow's steps.
pub(crate) fn prepare_steps(
    plan: &Plan,
    steps: &[Step],
) -> Result<Vec<PreparedStep>, UnsendableRequest> {
    steps
        .iter()
        .map(|s| {
            Ok(match s {
                Step::Request { request, captures } => {
                    PreparedStep::Request(Prepared::new(plan, request, captures)?)
                }
                Step::Think(t) => PreparedStep::Think(*t),
                Step::Stream(s) => PreparedStep::Stream(s.clone()),
                Step::Block(b) => PreparedStep::Block(PreparedBlock {
                    when: b.when.clone(),
                    repeat: b.repeat.clone(),
                    group: b.group,
                    steps: prepare_steps(plan, &b.steps)?,
                }),
                Step::Parallel(p) => PreparedStep::Parallel(
                    p.requests
                        .iter()
                        .map(|(r, c)| Prepared::new(plan, r, c))
                        .collect::<Result<_, _>>()?,
                ),
            })
        })
        .collect()
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
        Workload::of(plan, &plan.items, &plan.weights)
    }

    /// Prepares `items` of `plan` (a workload's), picked by `weights`.
    pub(crate) fn of(
        plan: &Plan,
        items: &[Item],
        weights: &[u32],
    ) -> Result<Workload, UnsendableRequest> {
        let items = items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                let reads = plan.journey.data_sets_of(item);
                Ok(match item {
                    Item::Request(r) => Work::Request(Prepared {
                        reads,
                        ..Prepared::new(plan, r, &[])?
                    }),
                    Item::Flow(f) => Work::Flow(PreparedFlow {
                        index,
                        steps: prepare_steps(plan, &f.steps)?,
                        once: prepare_steps(plan, &f.once)?,
                        reads,
                    }),
                })
            })
            .collect::<Result<_, UnsendableRequest>>()?;
        let mut total = 0;
        let cumulative = weights
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
