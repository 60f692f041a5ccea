//! PostgreSQL watches: the target's queries and dead tuples, a missing
//! `pg_stat_statements` as a notice, and an unreachable server as bad input.

use headroom::target::{self, TargetOptions};
use headroom::watch::Detail;

use super::{run, run_watching, watch, LIMIT};
use crate::support::{assert_exit, postgres_cluster, run_headroom, stdout, Nginx};

#[test]
fn postgres_watch_shows_the_targets_insert_and_dead_tuples_after_deletes() {
    // Dead tuples must still be there when the run ends.
    let Some(cluster) = crate::support::statements_cluster(&["autovacuum=off"]) else {
        return;
    };
    let t = target::spawn(TargetOptions {
        postgres: Some(cluster.url()),
        ..TargetOptions::loopback()
    })
    .expect("target on PostgreSQL");
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("tasks.yaml");
    std::fs::write(
        &scenario,
        format!(
            "name: tasks\ntarget: {}\nload: {{model: arrival-rate, rate: 100, duration: 3s}}\n\
             watch: [\"postgres:{}\"]\n\
             requests:\n  - {{name: create, method: POST, path: /tasks, json: {{name: a}}}}\n\
             flows:\n  - name: create_delete\n    steps:\n\
             \x20     - request: {{method: POST, path: /tasks, json: {{name: b}}}}\n\
             \x20       capture: {{id: \"$.id\"}}\n\
             \x20     - request: {{method: DELETE, path: \"/tasks/{{{{ id }}}}\"}}\n",
            t.url(),
            cluster.url()
        ),
    )
    .unwrap();
    let (out, s) = run(dir.path(), &[scenario.to_str().unwrap()]);
    assert_exit(&out, 0);
    assert_eq!(s.errors.count, 0, "{:?}", s.errors);
    let w = watch(&s, &format!("postgres:{}", cluster.url()));
    assert!(w.notices.is_empty(), "{:?}", w.notices);
    let Detail::Postgres(p) = &w.detail else {
        panic!("not a postgres watch: {w:?}")
    };
    let insert = p
        .top_queries
        .iter()
        .find(|q| q.query.to_uppercase().starts_with("INSERT"))
        .unwrap_or_else(|| panic!("no INSERT among {:?}", p.top_queries));
    assert!(insert.calls > 0 && insert.total_ms > 0.0, "{insert:?}");
    let dead: i64 = p.tables.iter().map(|t| t.dead).sum();
    assert!(dead > 0, "no dead tuples after deletes: {:?}", p.tables);
    assert!(
        p.connections.limit > 0 && p.connections.max >= 1,
        "{:?}",
        p.connections
    );
    assert!(p.tps.max > 0.0, "{:?}", p.tps);
    assert!(
        stdout(&out).contains("top queries during the run"),
        "{}",
        stdout(&out)
    );
    t.shutdown();
}

#[test]
fn a_postgres_without_the_extension_is_a_notice_and_an_unreachable_one_is_bad_input() {
    let Some(cluster) = postgres_cluster() else {
        return;
    };
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let spec = format!("postgres:{}", cluster.url());
    let (out, s) = run_watching(dir.path(), &nginx.url(), "50", "2s", &spec);
    assert_exit(&out, 0);
    let w = watch(&s, &spec);
    assert!(
        w.notices.iter().any(|n| n.contains("pg_stat_statements")),
        "{:?}",
        w.notices
    );
    drop(cluster);
    let out = run_headroom(
        [
            "run",
            "--url",
            &nginx.url(),
            "--rate",
            "50",
            "--duration",
            "2s",
            "--watch",
            &spec,
        ],
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&spec));
}
