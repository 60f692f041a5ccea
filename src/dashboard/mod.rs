//! The live dashboard (`--dashboard [ADDR]` on `run` and `find`): a page that shows the
//! load as it goes — offered and achieved rate, latency percentiles, errors by kind,
//! in flight and dropped, the watches, the generator's verdict and, for a search, the
//! capacity curve growing step by step — with a stop button that stops the command as
//! Ctrl-C does, and a Prometheus `/metrics` endpoint beside it.
//!
//! Who drives whom: the command's thread feeds a [`Dashboard`] the same per-second
//! [`Live`] figures the terminal progress prints (and a search's steps, and the end);
//! they go on a [`board::Board`] behind a mutex, and each change wakes the `server`'s
//! event streams, which send the page what is new. The server runs on its own thread
//! and runtime; [`Dashboard::finish`] tells the page how the command ended, lets the
//! streams deliver it, and stops the server, so the process never waits on a browser.
//! The page and its chart library (uPlot, vendored under `assets/`) are embedded
//! ([`assets`]).

pub mod access;
pub mod assets;
pub mod board;
pub mod prom;
mod server;
pub mod verdict;

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, watch};

use crate::engine::{Control, Live};
use crate::metrics::summary::Summary;
use crate::plan::Plan;
use crate::search::{SearchResult, StepRecord, Unit};
use crate::watch::LiveWatches;
use board::{Board, Meta};
pub use server::{HEAD_TIMEOUT, MAX_BODY, MAX_CONNECTIONS, MAX_HEAD, MAX_HEADERS, STOP_HEADER};

/// The address `--dashboard` listens on when given none (k6's dashboard port).
pub const DEFAULT_ADDR: &str = "127.0.0.1:5665";

/// How long [`Dashboard::finish`] waits for open pages to receive the last message.
const LAST_MESSAGE_GRACE: Duration = Duration::from_secs(1);

/// A dashboard that cannot start: bad input, reported before any load is sent.
#[derive(Debug, thiserror::Error)]
pub enum DashboardError {
    /// The address cannot be listened on (in use, not ours).
    #[error("--dashboard {addr}: cannot listen there: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The server's thread or runtime could not start.
    #[error("--dashboard: cannot start the server: {0}")]
    Start(#[source] std::io::Error),
}

/// A `--dashboard` value that is neither `ADDRESS:PORT` nor a port.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "expected ADDRESS:PORT with an IP address (e.g. 127.0.0.1:5665) or a port, found {found:?}"
)]
pub struct AddrError {
    /// The value given.
    pub found: String,
}

/// Parses `--dashboard`'s value: `HOST:PORT` with an IP address (`127.0.0.1:5665`,
/// `[::1]:0`), or a bare port, which listens on 127.0.0.1.
pub fn parse_addr(text: &str) -> Result<SocketAddr, AddrError> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse().map_err(|_| AddrError {
        found: text.to_string(),
    })
}

/// A running dashboard. Feed it from the command's thread; [`Dashboard::finish`] (or
/// drop) stops its server.
pub struct Dashboard {
    addr: SocketAddr,
    board: Arc<Mutex<Board>>,
    changes: watch::Sender<u64>,
    streams: Arc<AtomicUsize>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Dashboard {
    /// Listens on `addr` and serves the page for `plan`, run by `command` (`run` or
    /// `find`); its stop button stops `control`. Prints the page's address on stderr
    /// (`dashboard: http://ADDR/`). Beyond loopback it answers only requests with a
    /// token made up now and printed in that address ([`access::Access`]).
    pub fn start(
        addr: SocketAddr,
        command: &'static str,
        plan: &Plan,
        control: &Control,
    ) -> Result<Dashboard, DashboardError> {
        Dashboard::start_with(addr, None, command, plan, control)
    }

    /// [`Dashboard::start`], answering only requests that carry `token` when given
    /// (`--dashboard-token`), on loopback too.
    pub fn start_with(
        addr: SocketAddr,
        token: Option<String>,
        command: &'static str,
        plan: &Plan,
        control: &Control,
    ) -> Result<Dashboard, DashboardError> {
        let listener =
            TcpListener::bind(addr).map_err(|source| DashboardError::Bind { addr, source })?;
        let bound = listener.local_addr().map_err(DashboardError::Start)?;
        let meta = Meta {
            command,
            name: plan.name.clone(),
            target: format!("{}://{}", plan.target.scheme, plan.target.authority),
            unit: Unit::of(plan).as_str(),
            thresholds: plan.thresholds.iter().map(|t| t.expr.clone()).collect(),
            threads: plan.threads.max(1),
            names: plan.names.clone(),
            workloads: plan
                .workloads
                .iter()
                .map(|w| board::WorkloadMeta {
                    name: w.name.clone(),
                    names: w.names.clone(),
                })
                .collect(),
        };
        let board = Arc::new(Mutex::new(Board::new(meta)));
        let (changes, watcher) = watch::channel(0u64);
        let streams = Arc::new(AtomicUsize::new(0));
        let access = access::Access::for_addr(bound, token.clone());
        let shared = Arc::new(server::Shared {
            board: board.clone(),
            changes: watcher,
            control: control.clone(),
            streams: streams.clone(),
            access: access.clone(),
        });
        let (stop, stopped) = oneshot::channel();
        let thread = server::spawn(listener, shared, stopped).map_err(DashboardError::Start)?;
        match (access.token(), token.is_some()) {
            (None, _) => eprintln!("dashboard: http://{bound}/"),
            // The user's own token is not echoed into logs.
            (Some(_), true) => eprintln!("dashboard: http://{bound}/?token=… (--dashboard-token)"),
            (Some(t), false) => {
                eprintln!("dashboard: http://{bound}/?token={t}");
                eprintln!(
                    "note: the dashboard listens beyond this machine ({bound}); it answers only requests with that token"
                );
            }
        }
        Ok(Dashboard {
            addr: bound,
            board,
            changes,
            streams,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The address it listens on (the real port when asked for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Changes the board and wakes the page's event streams.
    fn update(&self, change: impl FnOnce(&mut Board)) {
        change(&mut self.board.lock().unwrap_or_else(|p| p.into_inner()));
        self.changes.send_modify(|seq| *seq += 1);
    }

    /// A second of load completed (the figures the terminal progress prints).
    pub fn second(&self, live: &Live) {
        self.update(|b| b.second(live));
    }

    /// A search step starts.
    pub fn step_starting(&self, index: usize, value: f64, confirmation: bool) {
        self.update(|b| b.step_starting(index, value, confirmation));
    }

    /// The current step's measured window starts; `watches` are its running watches.
    pub fn step_measuring(&self, watches: Option<LiveWatches>) {
        self.update(|b| {
            b.step_measuring();
            if let Some(w) = watches {
                b.set_watches(w);
            }
        });
    }

    /// A search step finished.
    pub fn step_finished(&self, index: usize, step: &StepRecord) {
        self.update(|b| b.step_finished(index, step));
    }

    /// The watches running now (a run's, for its whole length).
    pub fn set_watches(&self, watches: LiveWatches) {
        self.update(|b| b.set_watches(watches));
    }

    /// The run ended: tells the page, then stops the server.
    pub fn run_finished(self, summary: &Summary, exit_code: i32) {
        self.update(|b| b.run_finished(summary, exit_code));
        self.close();
    }

    /// The search ended: tells the page, then stops the server.
    pub fn search_finished(self, result: &SearchResult, exit_code: i32) {
        self.update(|b| b.search_finished(result, exit_code));
        self.close();
    }

    /// The command failed: tells the page, then stops the server.
    pub fn failed(self, message: &str, exit_code: i32) {
        self.update(|b| b.failed(message, exit_code));
        self.close();
    }

    /// Waits (at most [`LAST_MESSAGE_GRACE`]) for the open pages to take the last
    /// message, then stops the server and joins its thread.
    fn close(mut self) {
        let deadline = Instant::now() + LAST_MESSAGE_GRACE;
        while self.streams.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.stop_server();
    }

    fn stop_server(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        self.stop_server();
    }
}

#[cfg(test)]
mod tests;
