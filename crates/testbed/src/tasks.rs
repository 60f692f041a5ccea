//! [`TaskStore`]: the tasks API's storage, in memory or in PostgreSQL.
//!
//! A task is whatever JSON object the client posted, plus the `id` (an increasing
//! integer) and `created_at` (RFC 3339, UTC) the store assigns; fields of those names in
//! the posted body are overwritten. The in-memory store is a map behind a mutex; the
//! PostgreSQL store ([`super::postgres`]) keeps the same shape in a `jsonb` column.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::{Map, Value};

use super::postgres::PgTasks;
use super::task::{now_rfc3339, stamp, Page, TaskError};

/// Where tasks live. Shared by reference across connections.
pub(crate) enum TaskStore {
    /// In this process; lost when the target stops.
    Memory(MemoryTasks),
    /// In a PostgreSQL table, through a connection pool.
    Postgres(PgTasks),
}

impl TaskStore {
    /// Stores `body` as a new task and returns it with its `id` and `created_at`.
    pub(crate) async fn create(&self, body: Value) -> Result<Value, TaskError> {
        let Value::Object(fields) = body else {
            return Err(TaskError::NotAnObject);
        };
        match self {
            TaskStore::Memory(m) => Ok(m.create(fields)),
            TaskStore::Postgres(p) => p.create(fields).await,
        }
    }

    /// Up to `limit` tasks in id order, skipping the first `offset`.
    pub(crate) async fn list(&self, limit: u64, offset: u64) -> Result<Page, TaskError> {
        match self {
            TaskStore::Memory(m) => Ok(m.list(limit, offset)),
            TaskStore::Postgres(p) => p.list(limit, offset).await,
        }
    }

    /// The task with this id, if any.
    pub(crate) async fn get(&self, id: u64) -> Result<Option<Value>, TaskError> {
        match self {
            TaskStore::Memory(m) => Ok(m.get(id)),
            TaskStore::Postgres(p) => p.get(id).await,
        }
    }

    /// Deletes the task; `false` if there was none with this id.
    pub(crate) async fn delete(&self, id: u64) -> Result<bool, TaskError> {
        match self {
            TaskStore::Memory(m) => Ok(m.delete(id)),
            TaskStore::Postgres(p) => p.delete(id).await,
        }
    }
}

/// Tasks in a map ordered by id.
#[derive(Default)]
pub(crate) struct MemoryTasks {
    inner: Mutex<MemoryInner>,
}

#[derive(Default)]
struct MemoryInner {
    next_id: u64,
    tasks: BTreeMap<u64, Value>,
}

impl MemoryTasks {
    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn create(&self, fields: Map<String, Value>) -> Value {
        let mut inner = self.lock();
        inner.next_id += 1;
        let id = inner.next_id;
        let task = stamp(fields, id, now_rfc3339());
        inner.tasks.insert(id, task.clone());
        task
    }

    fn list(&self, limit: u64, offset: u64) -> Page {
        let inner = self.lock();
        let skip = usize::try_from(offset).unwrap_or(usize::MAX);
        let take = usize::try_from(limit).unwrap_or(usize::MAX);
        Page {
            data: inner
                .tasks
                .values()
                .skip(skip)
                .take(take)
                .cloned()
                .collect(),
            total: inner.tasks.len() as u64,
        }
    }

    fn get(&self, id: u64) -> Option<Value> {
        self.lock().tasks.get(&id).cloned()
    }

    fn delete(&self, id: u64) -> bool {
        self.lock().tasks.remove(&id).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn memory_store_round_trip() {
        let store = TaskStore::Memory(MemoryTasks::default());
        block_on(async {
            let a = store.create(json!({"name": "a", "id": 99})).await.unwrap();
            let b = store.create(json!({"name": "b"})).await.unwrap();
            assert_eq!(a["id"], 1, "the store assigns ids, whatever the body says");
            assert_eq!(b["id"], 2);
            assert_eq!(a["name"], "a");
            let created = a["created_at"].as_str().unwrap();
            assert!(humantime::parse_rfc3339(created).is_ok(), "{created}");

            assert_eq!(store.get(2).await.unwrap(), Some(b.clone()));
            let page = store.list(1, 1).await.unwrap();
            assert_eq!(
                page,
                Page {
                    data: vec![b],
                    total: 2
                }
            );

            assert!(store.delete(1).await.unwrap());
            assert!(!store.delete(1).await.unwrap());
            assert_eq!(store.get(1).await.unwrap(), None);
            assert_eq!(store.list(10, 0).await.unwrap().total, 1);
            let c = store.create(json!({})).await.unwrap();
            assert_eq!(c["id"], 3, "ids are never reused");
        });
    }

    #[test]
    fn rejects_bodies_that_are_not_objects() {
        let store = TaskStore::Memory(MemoryTasks::default());
        let err = block_on(store.create(json!([1, 2]))).unwrap_err();
        assert!(matches!(err, TaskError::NotAnObject));
    }
}
