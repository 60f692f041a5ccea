//! [`PgTasks`]: the tasks API on PostgreSQL, through a deadpool connection pool.
//!
//! One table, `headroom_tasks (id bigserial, created_at timestamptz, body jsonb)`,
//! created if missing. The posted body is stored as is; `id` and `created_at` come from
//! the row, so the JSON a client reads back has the same shape as the in-memory store's.

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use serde_json::{Map, Value};
use tokio_postgres::types::Json;
use tokio_postgres::{NoTls, Row};

use super::task::{stamp, Page, TaskError};

/// Most connections the pool opens.
const POOL_SIZE: usize = 16;

const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS headroom_tasks (
    id bigserial PRIMARY KEY,
    created_at timestamptz NOT NULL DEFAULT now(),
    body jsonb NOT NULL)";

/// `created_at` rendered as RFC 3339 UTC with milliseconds, like the in-memory store.
const CREATED_AT: &str =
    r#"to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')"#;

/// Tasks in PostgreSQL. Shared by reference; the pool hands each query a connection.
pub(crate) struct PgTasks {
    pool: Pool,
}

impl From<tokio_postgres::Error> for TaskError {
    fn from(e: tokio_postgres::Error) -> Self {
        TaskError::Database(e.to_string())
    }
}

impl From<deadpool_postgres::PoolError> for TaskError {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        TaskError::Database(e.to_string())
    }
}

impl PgTasks {
    /// Connects to `url` (a libpq URL or key=value string), checks the connection works
    /// and creates the table if missing. Must run inside a tokio runtime.
    pub(crate) async fn connect(url: &str) -> Result<Self, TaskError> {
        let config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| TaskError::Database(format!("bad PostgreSQL URL: {e}")))?;
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .build()
            .map_err(|e| TaskError::Database(e.to_string()))?;
        pool.get().await?.batch_execute(CREATE_TABLE).await?;
        Ok(PgTasks { pool })
    }

    pub(crate) async fn create(&self, fields: Map<String, Value>) -> Result<Value, TaskError> {
        let client = self.pool.get().await?;
        let sql =
            format!("INSERT INTO headroom_tasks (body) VALUES ($1) RETURNING id, {CREATED_AT}");
        let stmt = client.prepare_cached(&sql).await?;
        let row = client.query_one(&stmt, &[&Json(&fields)]).await?;
        Ok(stamp(fields, id_of(&row), row.get(1)))
    }

    pub(crate) async fn list(&self, limit: u64, offset: u64) -> Result<Page, TaskError> {
        let client = self.pool.get().await?;
        let sql = format!(
            "SELECT id, {CREATED_AT}, body FROM headroom_tasks ORDER BY id LIMIT $1 OFFSET $2"
        );
        let stmt = client.prepare_cached(&sql).await?;
        let (limit, offset) = (clamp(limit), clamp(offset));
        let rows = client.query(&stmt, &[&limit, &offset]).await?;
        let count = client
            .prepare_cached("SELECT count(*) FROM headroom_tasks")
            .await?;
        let total: i64 = client.query_one(&count, &[]).await?.get(0);
        Ok(Page {
            data: rows.iter().map(task_of).collect(),
            total: u64::try_from(total).unwrap_or(0),
        })
    }

    pub(crate) async fn get(&self, id: u64) -> Result<Option<Value>, TaskError> {
        let client = self.pool.get().await?;
        let sql = format!("SELECT id, {CREATED_AT}, body FROM headroom_tasks WHERE id = $1");
        let stmt = client.prepare_cached(&sql).await?;
        let row = client.query_opt(&stmt, &[&clamp(id)]).await?;
        Ok(row.as_ref().map(task_of))
    }

    pub(crate) async fn delete(&self, id: u64) -> Result<bool, TaskError> {
        let client = self.pool.get().await?;
        let stmt = client
            .prepare_cached("DELETE FROM headroom_tasks WHERE id = $1")
            .await?;
        Ok(client.execute(&stmt, &[&clamp(id)]).await? > 0)
    }
}

/// A u64 from the API as a bigint; values past i64::MAX match nothing anyway.
fn clamp(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn id_of(row: &Row) -> u64 {
    u64::try_from(row.get::<_, i64>(0)).unwrap_or(0)
}

/// A row of `SELECT id, created_at, body` as the task JSON.
fn task_of(row: &Row) -> Value {
    let fields = match row.get::<_, Value>(2) {
        Value::Object(fields) => fields,
        // Only objects are ever inserted; keep anything else visible rather than lose it.
        other => Map::from_iter([("body".to_string(), other)]),
    };
    stamp(fields, id_of(row), row.get(1))
}
