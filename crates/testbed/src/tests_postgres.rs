//! The tasks API on a real PostgreSQL: a throwaway cluster from `pg_cluster`, a target
//! with `postgres` set, driven over TCP.

use super::test_client::{get, send};
use super::*;
use crate::test_require::require;

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn tasks_round_trip_through_postgres() {
    let Some(cluster) = require("a PostgreSQL server", super::pg_cluster::Cluster::start()) else {
        return;
    };
    let t = spawn(TargetOptions {
        postgres: Some(cluster.url()),
        ..TargetOptions::loopback()
    })
    .expect("target connects to PostgreSQL");
    block_on(async {
        let addr = t.addr();
        let a = send(addr, "POST", "/tasks", &[], br#"{"name":"a","n":1}"#)
            .await
            .unwrap();
        assert_eq!(a.status, 201, "{}", a.text());
        let b = send(addr, "POST", "/tasks", &[], br#"{"name":"b"}"#)
            .await
            .unwrap()
            .json();
        let a = a.json();
        assert!(b["id"].as_u64() > a["id"].as_u64());
        assert!(
            humantime::parse_rfc3339(a["created_at"].as_str().unwrap()).is_ok(),
            "{a}"
        );

        let fetched = get(addr, &format!("/tasks/{}", a["id"])).await.unwrap();
        assert_eq!(fetched.json(), a, "read back exactly as created");
        let page = get(addr, "/tasks?limit=1&offset=1").await.unwrap().json();
        assert_eq!(page["total"], 2);
        assert_eq!(page["data"][0], b);

        let path = format!("/tasks/{}", a["id"]);
        assert_eq!(
            send(addr, "DELETE", &path, &[], b"").await.unwrap().status,
            204
        );
        assert_eq!(
            send(addr, "DELETE", &path, &[], b"").await.unwrap().status,
            404
        );
        assert_eq!(get(addr, &path).await.unwrap().status, 404);
        assert_eq!(get(addr, "/tasks").await.unwrap().json()["total"], 1);
    });
    t.shutdown();
    // A target pointed at a database that is gone fails to start rather than serving 500s.
    let url = cluster.url();
    drop(cluster);
    assert!(spawn(TargetOptions {
        postgres: Some(url),
        ..TargetOptions::loopback()
    })
    .is_err());
}
