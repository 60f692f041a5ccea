//! Tests of the board: what the dashboard shows as a run or a search goes on.
use std::time::Duration;

use super::*;
use crate::metrics::recorder::{Hit, Recorder, Timing};
use crate::metrics::summary::Second;

fn meta() -> Meta {
    Meta {
        workloads: Vec::new(),
        command: "run",
        name: "t".into(),
        target: "http://127.0.0.1:9".into(),
        unit: "req/s",
        thresholds: vec![],
        threads: 2,
        names: vec!["a".into(), "b".into()],
    }
}

/// A second `t` with `ok` successes on name 0 and `bad` 5xx on name 1, 2 ms each.
pub(in crate::dashboard) fn live(t: u64, ok: u64, bad: u64) -> Live {
    let mut r = Recorder::new(2);
    let hit = |name_id, error| Hit {
        name_id,
        corrected: Duration::from_millis(2),
        uncorrected: Duration::from_millis(2),
        error,
        timing: Timing::default(),
    };
    (0..ok).for_each(|_| r.record(&hit(0, None)));
    (0..bad).for_each(|_| r.record(&hit(1, Some(ErrorKind::Status5xx))));
    Live {
        elapsed: Duration::from_secs(t + 1),
        total: Duration::from_secs(10),
        in_flight: 3,
        last: Second {
            t,
            requests: ok + bad,
            errors: bad,
            offered: 100.0,
            max_lag_ms: 0.5,
            generator_cpu_percent: 20.0,
            ..Second::default()
        },
        last_bucket: r.take_second(t + 1),
        ..Live::default()
    }
}

#[test]
fn seconds_become_rows_and_add_up_into_the_totals() {
    let mut b = Board::new(meta());
    b.second(&live(0, 90, 10));
    b.second(&live(1, 100, 0));
    let m = b.message(0, true).value();
    assert_eq!(m["meta"]["names"], json!(["a", "b"]));
    let rows = m["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["achieved"], 100);
    assert_eq!(rows[0]["error_kinds"], json!({"status_5xx": 10}));
    assert_eq!(rows[1]["error_kinds"], json!({}));
    let p95 = rows[0]["latency_ms"]["p95"].as_f64().unwrap();
    assert!((1.9..=2.1).contains(&p95), "{p95}");
    assert_eq!(m["error_kinds"], json!({"status_5xx": 10}));
    assert!(m["verdict"].as_str().unwrap().starts_with("Keeping up"));
    // A later message carries only the new rows, and no meta.
    let next = b.message(2, false).value();
    assert!(next["meta"].is_null() && next["rows"].as_array().unwrap().is_empty());
    let (totals, names) = b.totals();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(totals.by_name[0].requests, 190);
    assert_eq!(totals.by_name[1].errors[ErrorKind::Status5xx as usize], 10);
    assert_eq!((totals.latency.len(), totals.seconds), (200, 2));
}

#[test]
fn each_workload_adds_up_its_own_request_names() {
    let mut m = meta();
    m.workloads = vec![
        WorkloadMeta {
            name: "members".into(),
            names: vec![0],
        },
        WorkloadMeta {
            name: "anonymous".into(),
            names: vec![1],
        },
    ];
    let mut b = Board::new(m);
    b.second(&live(0, 90, 10));
    b.second(&live(1, 100, 5));
    let msg = b.message(0, true).value();
    assert_eq!(
        msg["workloads"],
        json!([
            {"name": "members", "requests": 190, "errors": 0},
            {"name": "anonymous", "requests": 15, "errors": 15}
        ])
    );
    // One load: no workload table.
    let plain = Board::new(meta());
    assert_eq!(plain.message(0, true).value()["workloads"], json!([]));
}
