//! [`State`]: everything the target's handlers share, made once per target.

use std::sync::Arc;

use super::admin::Stall;
use super::error::TargetError;
use super::graphql::{self, GraphqlErrors, TasksSchema};
use super::metrics::TargetMetrics;
use super::options::TargetOptions;
use super::postgres::PgTasks;
use super::protocols::Protocols;
use super::rooms::Rooms;
use super::scheduler::{Scheduler, DEFAULT_MAX_PENDING};
use super::sse::Tickers;
use super::tasks::{MemoryTasks, TaskStore};
use super::timer::PreciseTimer;
use super::work::WorkPool;

/// Everything the handlers share.
pub(crate) struct State {
    pub(crate) timer: PreciseTimer,
    pub(crate) work: WorkPool,
    pub(crate) tasks: Arc<TaskStore>,
    /// `POST /graphql`'s schema, over the same tasks.
    pub(crate) graphql: TasksSchema,
    /// Which `/graphql` requests get an injected error.
    pub(crate) graphql_errors: GraphqlErrors,
    pub(crate) metrics: TargetMetrics,
    pub(crate) stall: Stall,
    /// Deliveries of tasks posted with a `url`.
    pub(crate) scheduler: Scheduler,
    /// How connections are served (HTTP/1.1 and h2c, or TLS).
    pub(crate) protocols: Protocols,
    /// The open SSE tickers (bounded).
    pub(crate) tickers: Tickers,
    /// `/ws/room/{name}` broadcast rooms.
    pub(crate) rooms: Rooms,
}

impl State {
    pub(crate) async fn new(
        opts: &TargetOptions,
        tls: Option<Arc<rustls::ServerConfig>>,
        h3_port: Option<u16>,
    ) -> Result<Self, TargetError> {
        let metrics = TargetMetrics::new(opts.workers);
        let work = WorkPool::new(
            opts,
            metrics.queue_depth.clone(),
            metrics.workers_busy.clone(),
        );
        let tasks = match &opts.postgres {
            None => TaskStore::Memory(MemoryTasks::default()),
            Some(url) => TaskStore::Postgres(
                PgTasks::connect(url)
                    .await
                    .map_err(|e| TargetError::Postgres(e.to_string()))?,
            ),
        };
        let tasks = Arc::new(tasks);
        let scheduler = Scheduler::new(DEFAULT_MAX_PENDING, metrics.scheduler.clone());
        Ok(State {
            scheduler,
            timer: PreciseTimer::start().map_err(|source| TargetError::Start {
                what: "starting the target's timer thread",
                source,
            })?,
            work,
            graphql: graphql::schema(tasks.clone()),
            graphql_errors: GraphqlErrors::new(opts.graphql_error_share()),
            tasks,
            metrics,
            stall: Stall::new(),
            protocols: Protocols::new(opts.h2_max_streams, tls, h3_port),
            tickers: Tickers::default(),
            rooms: Rooms::default(),
        })
    }
}
