//! A task of the tasks API as every store returns it, the page a listing returns, and
//! why an operation failed: the types the in-memory and the PostgreSQL stores share.

use std::time::SystemTime;

use serde_json::{Map, Value};

/// Why a tasks operation failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TaskError {
    /// The posted body is not a JSON object.
    #[error("task body must be a JSON object")]
    NotAnObject,
    /// The database failed or could not be reached.
    #[error("database: {0}")]
    Database(String),
}

/// One page of tasks and the total number stored.
#[derive(Debug, PartialEq)]
pub(crate) struct Page {
    /// The tasks of the page, in id order.
    pub(crate) data: Vec<Value>,
    /// How many tasks exist in all.
    pub(crate) total: u64,
}

/// Adds the stored fields to a posted body.
pub(crate) fn stamp(mut fields: Map<String, Value>, id: u64, created_at: String) -> Value {
    fields.insert("id".into(), Value::from(id));
    fields.insert("created_at".into(), Value::from(created_at));
    Value::Object(fields)
}

/// Now as RFC 3339 with milliseconds, UTC.
pub(crate) fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}
