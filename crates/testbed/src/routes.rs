//! The target's router: maps a request to its [`Endpoint`] and runs its handler.
//!
//! | route | handler |
//! |---|---|
//! | `GET\|POST /work[?ms=N]` | hold a worker for the service time ([`super::work`]) |
//! | `POST /tasks` (with a `url`: delivered when due, [`super::scheduler`]), `GET /tasks[?limit&offset]`, `GET\|DELETE /tasks/{id}` | [`super::tasks`] |
//! | `GET /health` | `ok` |
//! | `GET /metrics` | [`super::metrics`] exposition |
//! | `/status/{code}`, `/echo`, `POST /admin/stall?ms=N` | [`super::admin`] |
//! | `POST /admin/service?ms=N` | `/work`'s service time from now on ([`super::work`]) |
//! | `POST /admin/contention?ms=N` | `/work`'s contention cost per exchange from now on, 0 off ([`super::contention`]) |
//! | `GET /slow?ms=N` | sleep N ms without a worker |
//! | `POST /graphql` | the tasks as GraphQL ([`super::graphql`]) |
//! | `GET /sse/ticker?every_ms=N&count=M&drop_after=K&retry_ms=R` | [`super::sse`] (served before this router) |
//! | `POST /headroom.Ticker/Ticks`, `/Echo` (gRPC, `tests/fixtures/ticker.proto`) | [`super::grpc_ticker`] (served before this router) |

use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::http::request::Parts;
use hyper::{Method, StatusCode};
use serde_json::json;

use super::admin;
use super::metrics::{Endpoint, CONTENT_TYPE};
use super::reply::{self, ms_param, parse_param, Reply};
use super::scheduler;
use super::state::State;
use super::task::TaskError;
use super::work::WorkOutcome;

/// Tasks listed when `limit` is not given.
const DEFAULT_LIMIT: u64 = 100;
/// Most tasks one list request returns.
const MAX_LIMIT: u64 = 1_000;

/// The endpoint a path belongs to (its first segment).
pub(crate) fn endpoint_of(path: &str) -> Endpoint {
    let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
    match first {
        "work" => Endpoint::Work,
        "tasks" => Endpoint::Tasks,
        "health" => Endpoint::Health,
        "metrics" => Endpoint::Metrics,
        "status" => Endpoint::Status,
        "echo" => Endpoint::Echo,
        "slow" => Endpoint::Slow,
        "admin" => Endpoint::Admin,
        "graphql" => Endpoint::Graphql,
        _ => Endpoint::NotFound,
    }
}

/// Runs the handler for `endpoint` on a request whose body has been read.
pub(crate) async fn route(state: &State, endpoint: Endpoint, parts: &Parts, body: Bytes) -> Reply {
    let path = parts.uri.path();
    let query = parts.uri.query();
    let method = &parts.method;
    let rest: Vec<&str> = path.trim_matches('/').split('/').skip(1).collect();
    match (endpoint, rest.as_slice()) {
        (Endpoint::Work, []) if is_get_or_post(method) => work(state, query).await,
        (Endpoint::Tasks, _) => tasks(state, method, &rest, query, &body).await,
        (Endpoint::Health, []) if method == Method::GET => reply::text(StatusCode::OK, "ok\n"),
        (Endpoint::Metrics, []) if method == Method::GET => {
            reply::with_body(StatusCode::OK, CONTENT_TYPE, state.metrics.encode())
        }
        (Endpoint::Status, [code]) => admin::status(code),
        (Endpoint::Echo, []) => admin::echo(parts, &body),
        (Endpoint::Slow, []) if method == Method::GET => slow(state, query).await,
        (Endpoint::Admin, ["stall"]) if method == Method::POST => stall(state, query),
        (Endpoint::Admin, ["service"]) if method == Method::POST => service(state, query),
        (Endpoint::Admin, ["contention"]) if method == Method::POST => contention(state, query),
        (Endpoint::Graphql, []) if method == Method::POST => {
            super::graphql::serve(&state.graphql, &state.graphql_errors, parts, &body).await
        }
        (Endpoint::NotFound, _) => reply::text(StatusCode::NOT_FOUND, "not found\n"),
        (_, []) => reply::text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n"),
        _ => reply::text(StatusCode::NOT_FOUND, "not found\n"),
    }
}

fn is_get_or_post(method: &Method) -> bool {
    method == Method::GET || method == Method::POST
}

fn bad_request(message: impl std::fmt::Display) -> Reply {
    reply::text(StatusCode::BAD_REQUEST, format!("{message}\n"))
}

async fn work(state: &State, query: Option<&str>) -> Reply {
    let mean = match ms_param(query) {
        Ok(mean) => mean,
        Err(message) => return bad_request(message),
    };
    match state.work.serve(&state.timer, mean).await {
        WorkOutcome::Served {
            queued,
            service,
            contended,
        } => reply::json(
            StatusCode::OK,
            &json!({"queued_ms": millis(queued), "service_ms": millis(service), "contended_ms": millis(contended)}),
        ),
        WorkOutcome::Rejected => reply::text(StatusCode::SERVICE_UNAVAILABLE, "queue full\n"),
    }
}

fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

async fn slow(state: &State, query: Option<&str>) -> Reply {
    match ms_param(query) {
        Ok(d) => {
            let d = d.unwrap_or(Duration::ZERO);
            state.timer.sleep_until(Instant::now() + d).await;
            reply::text(StatusCode::OK, "ok\n")
        }
        Err(message) => bad_request(message),
    }
}

fn stall(state: &State, query: Option<&str>) -> Reply {
    match ms_param(query) {
        Ok(Some(d)) => {
            state.stall.start(d);
            reply::json(StatusCode::OK, &json!({"stall_ms": millis(d)}))
        }
        Ok(None) => bad_request("`ms` is required"),
        Err(message) => bad_request(message),
    }
}

/// `POST /admin/service?ms=N`: `/work` requests served from now on hold a worker for N
/// ms (mean), so the capacity becomes workers / N; answers the old and new times.
fn service(state: &State, query: Option<&str>) -> Reply {
    match ms_param(query) {
        Ok(Some(d)) => {
            let was = state.work.service_time();
            state.work.set_service_time(d);
            reply::json(
                StatusCode::OK,
                &json!({"service_ms": millis(d), "was_ms": millis(was)}),
            )
        }
        Ok(None) => bad_request("`ms` is required"),
        Err(message) => bad_request(message),
    }
}

/// `POST /admin/contention?ms=N`: every `/work` request from now on reconciles with
/// the others in flight, exchanges of N ms × in flight (0 turns the mode off); answers
/// the old and new costs.
fn contention(state: &State, query: Option<&str>) -> Reply {
    match ms_param(query) {
        Ok(Some(d)) => {
            let was = state.work.contention.per();
            state.work.contention.set_per(d);
            reply::json(
                StatusCode::OK,
                &json!({"contention_ms": millis(d), "was_ms": millis(was)}),
            )
        }
        Ok(None) => bad_request("`ms` is required"),
        Err(message) => bad_request(message),
    }
}

async fn tasks(
    state: &State,
    method: &Method,
    rest: &[&str],
    query: Option<&str>,
    body: &Bytes,
) -> Reply {
    let id = match rest {
        [] => None,
        [id] => match id.parse::<u64>() {
            Ok(id) => Some(id),
            Err(_) => return reply::text(StatusCode::NOT_FOUND, "no such task\n"),
        },
        _ => return reply::text(StatusCode::NOT_FOUND, "not found\n"),
    };
    let result = match (method.clone(), id) {
        (Method::POST, None) => match serde_json::from_slice(body) {
            Ok(value) => return create_task(state, value).await,
            Err(e) => return bad_request(format!("body is not JSON: {e}")),
        },
        (Method::GET, None) => {
            let limit =
                parse_param(query, "limit").map(|l| l.unwrap_or(DEFAULT_LIMIT).min(MAX_LIMIT));
            let offset = parse_param(query, "offset").map(|o| o.unwrap_or(0));
            let (limit, offset) = match (limit, offset) {
                (Ok(l), Ok(o)) => (l, o),
                (Err(message), _) | (_, Err(message)) => return bad_request(message),
            };
            state.tasks.list(limit, offset).await.map(|page| {
                reply::json(
                    StatusCode::OK,
                    &json!({"data": page.data, "total": page.total}),
                )
            })
        }
        (Method::GET, Some(id)) => state.tasks.get(id).await.map(|task| match task {
            Some(task) => reply::json(StatusCode::OK, &task),
            None => reply::text(StatusCode::NOT_FOUND, "no such task\n"),
        }),
        (Method::DELETE, Some(id)) => state.tasks.delete(id).await.map(|gone| {
            if gone {
                reply::empty(StatusCode::NO_CONTENT)
            } else {
                reply::text(StatusCode::NOT_FOUND, "no such task\n")
            }
        }),
        _ => return reply::text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n"),
    };
    result.unwrap_or_else(|e| match e {
        TaskError::NotAnObject => bad_request(e.to_string()),
        TaskError::Database(_) => reply::text(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")),
    })
}

/// `POST /tasks`: stores the task and, when it has a `url`, schedules its delivery. A
/// bad `url` or delivery field is refused (400) and a full scheduler queue answers 503,
/// both before anything is stored.
async fn create_task(state: &State, value: serde_json::Value) -> Reply {
    // The delay runs from acceptance: taken before the store's own time.
    let accepted = Instant::now();
    let plan = match scheduler::plan_of(&value) {
        Ok(plan) => plan,
        Err(e) => return bad_request(e.to_string()),
    };
    let slot = match &plan {
        Some(_) => match state.scheduler.reserve() {
            Some(slot) => Some(slot),
            None => return reply::text(StatusCode::SERVICE_UNAVAILABLE, "scheduler full\n"),
        },
        None => None,
    };
    match state.tasks.create(value).await {
        Ok(task) => {
            if let (Some(plan), Some(slot)) = (plan, slot) {
                state.scheduler.schedule(slot, plan, &task, accepted);
            }
            reply::json(StatusCode::CREATED, &task)
        }
        Err(e @ TaskError::NotAnObject) => bad_request(e.to_string()),
        Err(e) => reply::text(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_map_to_endpoints() {
        assert_eq!(endpoint_of("/work"), Endpoint::Work);
        assert_eq!(endpoint_of("/tasks/12"), Endpoint::Tasks);
        assert_eq!(endpoint_of("/status/503"), Endpoint::Status);
        assert_eq!(endpoint_of("/admin/stall"), Endpoint::Admin);
        assert_eq!(endpoint_of("/"), Endpoint::NotFound);
        assert_eq!(endpoint_of("/workx"), Endpoint::NotFound);
    }

    #[test]
    fn millis_rounds_to_microseconds() {
        assert_eq!(millis(Duration::from_nanos(5_123_456)), 5.123);
    }
}
