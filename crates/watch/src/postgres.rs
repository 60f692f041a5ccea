//! `postgres:URL`: a PostgreSQL database under load — connections by state against
//! `max_connections`, transactions per second, cache hit ratio, deadlocks, waiting
//! locks, live and dead tuples of the busiest tables, and the top statements of the
//! run (`pg_stat_statements`, see `pg_statements`).
//!
//! The sampler owns a small current-thread tokio runtime and one connection; it lives
//! on the watch thread, never on an engine thread. A lost connection is a gap, and the
//! next sample connects again (the database may have restarted).

use std::time::Duration;

use tokio::runtime::Runtime;
use tokio_postgres::{Client, NoTls};

use super::error::ProbeError;
use super::kept::{Kept, Running};
use super::live::LiveSample;
use super::pg_statements::{self, Snapshot, MARK};
use super::sampler::{Finished, RunView, Sampler};
use super::samples::PostgresSample;
use super::samples::TopQuery;
use super::summary::{round3, Detail};
pub use super::summary::{Connections, PostgresSummary, TableTuples};

/// Connect and query limit.
const TIMEOUT: Duration = Duration::from_secs(3);

/// Cumulative counters of `pg_stat_database`.
#[derive(Debug, Clone, Copy)]
struct Counters {
    xacts: i64,
    hit: i64,
    read: i64,
    deadlocks: i64,
}

const SAMPLE_SQL: &str = "SELECT d.xact_commit + d.xact_rollback, d.blks_hit, d.blks_read, d.deadlocks, \
    (SELECT count(*) FROM pg_locks WHERE NOT granted), \
    (SELECT count(*) FROM pg_stat_activity a WHERE a.backend_type = 'client backend' AND a.pid <> pg_backend_pid()), \
    (SELECT count(*) FROM pg_stat_activity a WHERE a.backend_type = 'client backend' AND a.pid <> pg_backend_pid() AND a.state = 'active'), \
    (SELECT count(*) FROM pg_stat_activity a WHERE a.backend_type = 'client backend' AND a.pid <> pg_backend_pid() AND a.state = 'idle'), \
    (SELECT count(*) FROM pg_stat_activity a WHERE a.backend_type = 'client backend' AND a.pid <> pg_backend_pid() AND a.state LIKE 'idle in transaction%') \
    FROM pg_stat_database d WHERE d.datname = current_database()";

const TABLES_SQL: &str = "SELECT schemaname || '.' || relname, n_live_tup, n_dead_tup \
    FROM pg_stat_user_tables ORDER BY n_tup_ins + n_tup_upd + n_tup_del DESC, relname LIMIT 10";

/// Watches one database.
pub(crate) struct PostgresSampler {
    rt: Runtime,
    url: String,
    client: Option<Client>,
    version: i32,
    limit: u64,
    reserved: u64,
    statements: Option<Snapshot>,
    first: Option<Counters>,
    prev: Option<(f64, Counters)>,
    /// Thinned on long runs; `connections`, `tps` and `waiting` keep exact figures.
    samples: Kept<PostgresSample>,
    connections: u64,
    tps: Running,
    waiting: Running,
    notices: Vec<String>,
    /// The top statements since the baseline, as of `live_top_at` (for the dashboard).
    live_top: Vec<TopQuery>,
    live_top_at: Option<f64>,
}

/// How often the top statements are recounted while the load runs (the dashboard's
/// view; the summary's are counted once, at the end). Why not every sample: reading
/// `pg_stat_statements` costs the server a scan of every statement it keeps.
const LIVE_TOP_EVERY_S: f64 = 2.0;

async fn connect(url: &str) -> Result<Client, ProbeError> {
    let (client, connection) = tokio::time::timeout(TIMEOUT, tokio_postgres::connect(url, NoTls))
        .await
        .map_err(|_| ProbeError::NoAnswer { within: TIMEOUT })??;
    // Driven whenever this runtime runs a query; ends when the client is dropped.
    tokio::spawn(connection);
    Ok(client)
}

impl PostgresSampler {
    /// Connects, reads `max_connections` and the server version, and takes the
    /// `pg_stat_statements` baseline (a notice, not a failure, when it is missing).
    pub(crate) fn start(url: &str) -> Result<PostgresSampler, ProbeError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(ProbeError::Runtime)?;
        let (client, version, limit, reserved) = rt.block_on(async {
            let client = connect(url).await?;
            let row = client
                .query_one(
                    &format!("{MARK} SELECT current_setting('server_version_num')::int, current_setting('max_connections')::bigint, \
                     current_setting('superuser_reserved_connections')::bigint + coalesce(current_setting('reserved_connections', true)::bigint, 0)"),
                    &[],
                )
                .await?;
            Ok::<_, ProbeError>((
                client,
                row.get::<_, i32>(0),
                row.get::<_, i64>(1),
                row.get::<_, i64>(2),
            ))
        })?;
        let mut s = PostgresSampler {
            rt,
            url: url.to_string(),
            client: Some(client),
            version,
            limit: u64::try_from(limit).unwrap_or(0),
            reserved: u64::try_from(reserved).unwrap_or(0),
            statements: None,
            first: None,
            prev: None,
            samples: Kept::default(),
            connections: 0,
            tps: Running::default(),
            waiting: Running::default(),
            notices: Vec::new(),
            live_top: Vec::new(),
            live_top_at: None,
        };
        match s.statements_now() {
            Ok(snap) => s.statements = Some(snap),
            Err(e) => s.notices.push(format!(
                "no top queries: pg_stat_statements is not usable in this database ({e}); \
                 add it to shared_preload_libraries and run CREATE EXTENSION pg_stat_statements"
            )),
        }
        Ok(s)
    }

    /// Recounts the top statements since the baseline, at most every
    /// [`LIVE_TOP_EVERY_S`]. A failed read keeps the previous list: the dashboard's view
    /// may lag, the summary's count does not depend on it.
    fn recount_live_top(&mut self, t: f64) {
        let Some(start) = self.statements.take() else {
            return;
        };
        if self.live_top_at.is_none_or(|at| t - at >= LIVE_TOP_EVERY_S) {
            if let Ok(now) = self.statements_now() {
                self.live_top = pg_statements::top(&start, &now);
                self.live_top_at = Some(t);
            }
        }
        self.statements = Some(start);
    }

    fn statements_now(&mut self) -> Result<Snapshot, ProbeError> {
        let client = self.client.as_ref().ok_or(ProbeError::NotConnected)?;
        let version = self.version;
        Ok(self
            .rt
            .block_on(async { pg_statements::snapshot(client, version).await })?)
    }

    /// The client, connecting again if the last one was lost.
    fn ensure_client(&mut self) -> Result<(), ProbeError> {
        if self.client.as_ref().is_some_and(|c| !c.is_closed()) {
            return Ok(());
        }
        self.client = None;
        let url = self.url.clone();
        let client = self.rt.block_on(async { connect(&url).await })?;
        self.client = Some(client);
        Ok(())
    }

    fn tables(&mut self) -> Result<Vec<TableTuples>, ProbeError> {
        self.ensure_client()?;
        let client = self.client.as_ref().ok_or(ProbeError::NotConnected)?;
        let rows = self.rt.block_on(async {
            tokio::time::timeout(TIMEOUT, client.query(&format!("{MARK} {TABLES_SQL}"), &[]))
                .await
                .map_err(|_| ProbeError::QueryTimedOut)?
                .map_err(ProbeError::from)
        })?;
        Ok(rows
            .iter()
            .map(|r| TableTuples {
                name: r.get(0),
                live: r.get(1),
                dead: r.get(2),
            })
            .collect())
    }
}

impl Sampler for PostgresSampler {
    fn sample(&mut self, t: f64) -> Result<(), ProbeError> {
        self.ensure_client()?;
        let client = self.client.as_ref().ok_or(ProbeError::NotConnected)?;
        let row = self.rt.block_on(async {
            tokio::time::timeout(
                TIMEOUT,
                client.query_one(&format!("{MARK} {SAMPLE_SQL}"), &[]),
            )
            .await
            .map_err(|_| ProbeError::QueryTimedOut)?
            .map_err(ProbeError::from)
        });
        let row = match row {
            Ok(row) => row,
            Err(e) => {
                // Drop a broken connection so that the next sample opens a new one.
                self.client = None;
                return Err(e);
            }
        };
        let now = Counters {
            xacts: row.get(0),
            hit: row.get(1),
            read: row.get(2),
            deadlocks: row.get(3),
        };
        let count = |i: usize| u64::try_from(row.get::<_, i64>(i)).unwrap_or(0);
        let tps = self.prev.and_then(|(t0, before)| {
            let dt = t - t0;
            // Leave out the watch's own transaction of each sample. A restart resets the
            // counters; that interval has no figure.
            let done = now.xacts - before.xacts - 1;
            (dt > 0.0 && now.xacts >= before.xacts).then(|| round3(done.max(0) as f64 / dt))
        });
        self.first.get_or_insert(now);
        self.prev = Some((t, now));
        let sample = PostgresSample {
            t: round3(t),
            connections: count(5),
            active: count(6),
            idle: count(7),
            idle_in_transaction: count(8),
            tps,
            waiting_locks: count(4),
        };
        self.connections = self.connections.max(sample.connections);
        if let Some(tps) = sample.tps {
            self.tps.add(tps);
        }
        self.waiting.add(sample.waiting_locks as f64);
        self.samples.push(sample);
        self.recount_live_top(t);
        Ok(())
    }

    fn latest(&self) -> Option<LiveSample> {
        Some(LiveSample::Postgres {
            sample: self.samples.newest()?.clone(),
            max_connections: self.limit,
            top_queries: self.live_top.clone(),
        })
    }

    fn finish(mut self: Box<Self>, _run: Option<&dyn RunView>) -> Finished {
        let mut notices = std::mem::take(&mut self.notices);
        let top_queries = match self.statements.take() {
            Some(start) => match self.ensure_client().and_then(|()| self.statements_now()) {
                Ok(end) => pg_statements::top(&start, &end),
                Err(e) => {
                    notices.push(format!("no top queries: the closing snapshot failed ({e})"));
                    Vec::new()
                }
            },
            None => Vec::new(),
        };
        let tables = self.tables().unwrap_or_else(|e| {
            notices.push(format!("no table figures: {e}"));
            Vec::new()
        });
        let (first, last) = (self.first, self.prev.map(|(_, c)| c));
        let (cache_hit_ratio, deadlocks) = match (first, last) {
            (Some(a), Some(b)) => {
                let (hit, read) = (b.hit - a.hit, b.read - a.read);
                let ratio = (hit + read > 0).then(|| round3(hit as f64 / (hit + read) as f64));
                (ratio, (b.deadlocks - a.deadlocks).max(0))
            }
            _ => (None, 0),
        };
        let summary = PostgresSummary {
            connections: Connections {
                max: self.connections,
                limit: self.limit,
                reserved: self.reserved,
            },
            tps: self.tps.avg_max(),
            cache_hit_ratio,
            deadlocks,
            waiting_locks: self.waiting.max(),
            tables,
            top_queries,
            samples: std::mem::take(&mut self.samples).into_vec(),
        };
        let mut warnings = Vec::new();
        if summary.connections.limit > 0
            && summary.connections.max as f64 >= 0.9 * summary.connections.limit as f64
        {
            warnings.push(format!(
                "connections reached {} of max_connections {}",
                summary.connections.max, summary.connections.limit
            ));
        }
        Finished {
            detail: Detail::Postgres(summary),
            warnings,
            notices,
        }
    }
}
