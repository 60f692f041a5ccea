//! A virtual user's state, in the one place the engine keeps it: its [`Scratch`]
//! (variables, the ones it keeps across iterations, its cookie jar, its data rows,
//! its number, its open streams, its request timer), when its next request was meant
//! to start ([`Intended`]), and a [`Run`] of steps it is in. A leaf of the engine's
//! iteration: `request.rs`, `flow.rs`, `parallel.rs` and `iteration.rs` use it.

use std::rc::Rc;
use std::time::Instant;

use crate::deadline::RequestTimer;
use crate::thread::{Pending, ThreadState};
use headroom_client as client;
use headroom_client::session::Session;
use headroom_template::Vars;

/// Per-task scratch space, reused across iterations so a warm task does not allocate.
#[derive(Default)]
pub(crate) struct Scratch {
    pub(crate) client: client::session::Scratch,
    /// Rendering space for redirect hops (the first hop's payload borrows `client`).
    pub(crate) hops: client::session::Scratch,
    pub(crate) vars: Vars,
    /// The user's cookies: kept for a closed-model user's life, new for each arrival.
    pub(crate) jar: crate::cookies::Jar,
    /// The user's number (1-based, unique across shards: `user()`).
    pub(crate) user: u64,
    /// The user's iteration, from 0 (`iteration()`).
    pub(crate) iteration: u64,
    /// The variables the user keeps across iterations (data row, setup values,
    /// `once:` captures): each iteration starts from them.
    pub(crate) kept: Vars,
    /// The flows (by item index) whose `once:` steps this user ran.
    pub(crate) once_done: Vec<usize>,
    /// The `unique` data files (indexes) this user took its row of.
    pub(crate) rows: Vec<usize>,
    /// The user's open streams: kept across a closed-model user's iterations.
    pub(crate) streams: crate::stream::Streams,
    /// Whether the last iteration did nothing at all: every step was a `url:` for a
    /// stream the user already holds. Such an iteration never awaits, so a closed-model
    /// user must not loop on it (see `engine::attack::user`).
    pub(crate) idle: bool,
    /// Whether the task keeps one request timer across its requests (see [`arm`]): a
    /// closed-model user does; an open-model arrival, which sends one iteration, does
    /// not, so it allocates none.
    pub(crate) keeps_timer: bool,
    /// The kept request timer (see `crate::deadline`).
    pub(crate) timer: Option<RequestTimer>,
}

impl Scratch {
    /// Scratch space for a request sent beside the user's others (`parallel:`): its
    /// variables, cookies and number, with a timer of its own.
    pub(crate) fn beside(&self) -> Scratch {
        Scratch {
            vars: self.vars.clone(),
            jar: self.jar.clone(),
            user: self.user,
            iteration: self.iteration,
            ..Scratch::default()
        }
    }

    /// Takes back what a request sent beside the others learnt: its cookies.
    pub(crate) fn absorb(&mut self, other: Scratch) {
        self.jar.absorb(other.jar);
    }

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
    pub(crate) fn and_sent(self) -> (Instant, Instant) {
        match self {
            Intended::Scheduled(at) => (at, Instant::now()),
            Intended::Now(at) => (at, at),
        }
    }
}

/// How a run of steps ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flowed {
    /// Every step ran (or was skipped by its rule).
    Ok,
    /// A request or stream step failed: the iteration ends here.
    Failed,
    /// A connection could not be opened: the user backs off.
    ConnectFailed,
}

/// The state one iteration's steps share.
pub(crate) struct Run<'a> {
    pub(crate) state: &'a Rc<ThreadState>,
    pub(crate) session: &'a mut Session,
    pub(crate) scratch: &'a mut Scratch,
    /// The iteration's first request, until a step sends it.
    pub(crate) first: Option<Pending>,
    /// When the next request was meant to start.
    pub(crate) intended: Intended,
    /// Whether every step so far only held streams the user already had.
    pub(crate) idle: bool,
}

impl Run<'_> {
    pub(crate) fn pending(&mut self) -> Pending {
        self.first
            .take()
            .unwrap_or_else(|| Pending::begin(self.state))
    }
}
