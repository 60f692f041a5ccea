//! `POST /graphql`: the tasks as a GraphQL schema, executed by async-graphql.
//!
//! ```graphql
//! type Task { id: Int!, created_at: String!, fields: JSON! }
//! type Query { task(id: Int!): Task, tasks(limit: Int! = 100, offset: Int! = 0): [Task!]! }
//! type Mutation { createTask(input: JSON!): Task! }
//! ```
//!
//! `fields` is the task's object without `id` and `created_at`. Variables are coerced
//! as any GraphQL server does: an `Int!` given the string `"5"` is an error, which is
//! what headroom's typed template values avoid.
//!
//! Limits on hostile queries: the body is already capped (1 MiB) by the server; the
//! query text at [`MAX_QUERY_BYTES`], its depth at [`MAX_DEPTH`], its complexity at
//! [`MAX_COMPLEXITY`] and the parser's recursion at [`MAX_RECURSION`].
//!
//! `--graphql-error-share S` answers a share S of requests (deterministically: the n-th
//! request fails when ⌊n·S⌋ grows, so any N requests hold ⌊N·S⌋ or ⌈N·S⌉ failures) with
//! HTTP 200 and `{"data": null, "errors": [...]}`, as a failing resolver does; the
//! header `x-graphql-error: 1` makes one request fail so.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_graphql::{
    Context, EmptySubscription, Json, Object, Request, Schema, SimpleObject, Variables,
};
use bytes::Bytes;
use hyper::http::request::Parts;
use hyper::StatusCode;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::reply::{self, Reply};
use super::tasks::TaskStore;

/// Longest query text accepted, bytes.
pub(crate) const MAX_QUERY_BYTES: usize = 64 * 1024;
/// Deepest selection accepted.
pub(crate) const MAX_DEPTH: usize = 8;
/// Most fields (complexity) one query may select.
pub(crate) const MAX_COMPLEXITY: usize = 1_000;
/// Deepest nesting the parser follows (values, selections).
pub(crate) const MAX_RECURSION: usize = 32;
/// Most tasks one `tasks` query returns.
const MAX_LIMIT: i64 = 1_000;
/// Parts per million in [`GraphqlErrors`].
const PPM: u64 = 1_000_000;

/// The message of an injected error.
pub(crate) const INJECTED: &str = "injected error (--graphql-error-share or x-graphql-error)";

/// The executable schema.
pub(crate) type TasksSchema = Schema<Query, Mutation, EmptySubscription>;

/// Builds the schema over `tasks`.
pub(crate) fn schema(tasks: Arc<TaskStore>) -> TasksSchema {
    Schema::build(Query, Mutation, EmptySubscription)
        .data(tasks)
        .limit_depth(MAX_DEPTH)
        .limit_complexity(MAX_COMPLEXITY)
        .limit_recursive_depth(MAX_RECURSION)
        .finish()
}

/// Which requests get an injected error: a deterministic share.
#[derive(Debug, Default)]
pub(crate) struct GraphqlErrors {
    /// Share in parts per million.
    ppm: u64,
    /// Requests seen.
    seen: AtomicU64,
}

impl GraphqlErrors {
    /// Fails `share` (0..=1) of requests.
    pub(crate) fn new(share: f64) -> Self {
        GraphqlErrors {
            ppm: (share.clamp(0.0, 1.0) * PPM as f64).round() as u64,
            seen: AtomicU64::new(0),
        }
    }

    /// Whether the next request fails: the n-th (from 0) does when ⌊(n+1)·S⌋ > ⌊n·S⌋.
    fn next(&self) -> bool {
        if self.ppm == 0 {
            return false;
        }
        let n = self.seen.fetch_add(1, Ordering::Relaxed);
        (n + 1) * self.ppm / PPM > n * self.ppm / PPM
    }
}

/// A task as GraphQL sees it.
#[derive(SimpleObject)]
#[graphql(rename_fields = "snake_case")]
struct Task {
    id: i64,
    created_at: String,
    /// The task's own fields (everything but `id` and `created_at`).
    fields: Json<Map<String, Value>>,
}

impl Task {
    fn from_value(value: Value) -> Task {
        let mut fields = match value {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let id = fields.remove("id").and_then(|v| v.as_i64()).unwrap_or(0);
        let created_at = match fields.remove("created_at") {
            Some(Value::String(s)) => s,
            _ => String::new(),
        };
        Task {
            id,
            created_at,
            fields: Json(fields),
        }
    }
}

/// Queries.
pub(crate) struct Query;

#[Object]
impl Query {
    /// The task with this id, or null.
    async fn task(&self, ctx: &Context<'_>, id: i64) -> async_graphql::Result<Option<Task>> {
        let Ok(id) = u64::try_from(id) else {
            return Ok(None);
        };
        let task = ctx.data::<Arc<TaskStore>>()?.get(id).await?;
        Ok(task.map(Task::from_value))
    }

    /// Up to `limit` tasks (at most 1000) in id order, skipping `offset`.
    async fn tasks(
        &self,
        ctx: &Context<'_>,
        #[graphql(default = 100)] limit: i64,
        #[graphql(default = 0)] offset: i64,
    ) -> async_graphql::Result<Vec<Task>> {
        if limit < 0 || offset < 0 {
            return Err("limit and offset must be >= 0".into());
        }
        let page = ctx
            .data::<Arc<TaskStore>>()?
            .list(limit.min(MAX_LIMIT) as u64, offset as u64)
            .await?;
        Ok(page.data.into_iter().map(Task::from_value).collect())
    }
}

/// Mutations.
pub(crate) struct Mutation;

#[Object]
impl Mutation {
    /// Stores `input` (a JSON object) as a new task.
    async fn create_task(
        &self,
        ctx: &Context<'_>,
        input: Json<Map<String, Value>>,
    ) -> async_graphql::Result<Task> {
        let task = ctx
            .data::<Arc<TaskStore>>()?
            .create(Value::Object(input.0))
            .await?;
        Ok(Task::from_value(task))
    }
}

/// The body of a GraphQL POST.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Body {
    query: String,
    #[serde(default)]
    variables: Option<Value>,
    #[serde(default)]
    operation_name: Option<String>,
}

/// Serves one `POST /graphql`.
pub(crate) async fn serve(
    schema: &TasksSchema,
    errors: &GraphqlErrors,
    parts: &Parts,
    body: &Bytes,
) -> Reply {
    let body: Body = match serde_json::from_slice(body) {
        Ok(b) => b,
        Err(e) => {
            return reply::text(
                StatusCode::BAD_REQUEST,
                format!("expected a JSON body with `query`: {e}\n"),
            )
        }
    };
    if body.query.len() > MAX_QUERY_BYTES {
        return reply::text(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("query longer than {MAX_QUERY_BYTES} bytes\n"),
        );
    }
    let forced = parts
        .headers
        .get("x-graphql-error")
        .is_some_and(|v| v.as_bytes() == b"1");
    // Counted for every well-formed request, so the share holds over any run.
    if errors.next() || forced {
        return reply::json(
            StatusCode::OK,
            &json!({"data": null, "errors": [{"message": INJECTED}]}),
        );
    }
    let mut request = Request::new(body.query);
    if let Some(vars) = body.variables {
        request = request.variables(Variables::from_json(vars));
    }
    if let Some(op) = body.operation_name {
        request = request.operation_name(op);
    }
    let response = schema.execute(request).await;
    match serde_json::to_value(&response) {
        Ok(value) => reply::json(StatusCode::OK, &value),
        Err(e) => reply::text(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")),
    }
}
