//! The attribution rules, one row per kind and per confidence, on summaries built by
//! hand (the real watches are exercised by `tests/find_cli/bottleneck.rs`).

use std::collections::BTreeMap;

use super::*;
use crate::watch::{
    BusiestProcess, CgroupSample, CgroupSummary, Connections, FdUse, Max, PostgresSummary,
    ProcessSample, ProcessSummary, PrometheusSample, PrometheusSummary, SeriesSummary,
    WatchSummary,
};

fn watch(spec: &str, detail: Detail) -> WatchSummary {
    WatchSummary {
        spec: spec.into(),
        detail,
        gaps: Vec::new(),
        warnings: Vec::new(),
        notices: Vec::new(),
    }
}

fn summary(watches: Vec<WatchSummary>) -> Summary {
    let mut s = Summary::empty("t", 1.0);
    s.watches = watches;
    s
}

/// A process watch whose busiest member (single-threaded unless `threads`) used
/// `cpu` cores, with `fds` open of `limit`.
fn process(cpu: f64, threads: u64, cap: f64, fds: u64, limit: u64) -> WatchSummary {
    let sample = |t| ProcessSample {
        t,
        cpu_cores: Some(cpu),
        rss_mb: 1.0,
        threads,
        fds,
        fd_limit: Some(limit),
        processes: 2,
        busiest: Some(BusiestProcess {
            pid: 4242,
            command: "nginx".into(),
            cpu_cores: cpu,
            wait_cores: None,
            threads,
            cpu_cap_cores: cap,
        }),
    };
    watch(
        "pid:4241",
        Detail::Process(ProcessSummary {
            command: Some("nginx".into()),
            fds: FdUse {
                max: fds,
                limit: Some(limit),
            },
            processes: 2,
            samples: vec![sample(1.0), sample(2.0)],
            ..ProcessSummary::default()
        }),
    )
}

/// [`process`] on a shared core: single-threaded, using `cpu` and waiting `wait`.
fn contended(cpu: f64, wait: f64) -> WatchSummary {
    let mut w = process(cpu, 1, 1.0, 10, 1024);
    if let Detail::Process(p) = &mut w.detail {
        for s in &mut p.samples {
            s.busiest.as_mut().unwrap().wait_cores = Some(wait);
        }
    }
    w
}

fn cgroup(cpu: f64, cap: Option<f64>, throttled: Option<f64>) -> WatchSummary {
    watch(
        "cgroup:/web",
        Detail::Cgroup(CgroupSummary {
            path: "/sys/fs/cgroup/web".into(),
            cpu_cap_cores: cap,
            samples: vec![CgroupSample {
                t: 1.0,
                cpu_cores: cpu,
                memory_mb: None,
                throttled_share: throttled,
                throttled_ms_per_s: None,
            }],
            ..CgroupSummary::default()
        }),
    )
}

fn postgres(max: u64, limit: u64, waiting: f64) -> WatchSummary {
    watch(
        "postgres:postgresql://127.0.0.1/db",
        Detail::Postgres(PostgresSummary {
            connections: Connections {
                max,
                limit,
                reserved: 0,
            },
            waiting_locks: Max { max: waiting },
            ..PostgresSummary::default()
        }),
    )
}

fn workers(busy: &[f64], of: f64) -> WatchSummary {
    let series = |name: &str, v: f64| SeriesSummary {
        series: name.into(),
        kind: "gauge".into(),
        first: v,
        last: v,
        max: v,
        rate_per_s: None,
    };
    watch(
        "prometheus:http://127.0.0.1:1/metrics",
        Detail::Prometheus(PrometheusSummary {
            url: "http://127.0.0.1:1/metrics".into(),
            series: vec![
                series("headroom_target_workers", of),
                series("headroom_target_workers_busy", busy[0]),
            ],
            samples: busy
                .iter()
                .map(|&b| PrometheusSample {
                    t: 1.0,
                    values: BTreeMap::from([
                        ("headroom_target_workers".to_string(), of),
                        ("headroom_target_workers_busy".to_string(), b),
                    ]),
                })
                .collect(),
        }),
    )
}

fn between(passing: Vec<WatchSummary>, failing: Vec<WatchSummary>) -> Option<Bottleneck> {
    let (p, f) = (summary(passing), summary(failing));
    attribute(Some((800.0, &p)), (1600.0, &f))
}

#[test]
fn each_kind_is_named_with_its_confidence() {
    // (passing watches, failing watches, kind, confidence, line)
    type Row = (
        Vec<WatchSummary>,
        Vec<WatchSummary>,
        Kind,
        Confidence,
        &'static str,
    );
    let rows: Vec<Row> = vec![
        (
            vec![process(0.62, 1, 1.0, 10, 1024)],
            vec![process(0.99, 1, 1.0, 12, 1024)],
            Kind::Cpu,
            Confidence::High,
            "nginx (pid 4242) at 1 core (single-threaded): 99% of 1 core at 1600/s, 62% at 800/s (high)",
        ),
        (
            vec![process(0.5, 1, 1.0, 10, 1024)],
            vec![process(0.85, 1, 1.0, 12, 1024)],
            Kind::Cpu,
            Confidence::Medium,
            "nginx (pid 4242) at 1 core (single-threaded): 85% of 1 core at 1600/s, 50% at 800/s (medium)",
        ),
        (
            vec![contended(0.5, 0.1)],
            vec![contended(0.74, 0.25)],
            Kind::Cpu,
            Confidence::High,
            "nginx (pid 4242) at 1 core (single-threaded): busy or waiting for a CPU 99% of 1 core at 1600/s, 60% at 800/s; 74% of 1 core at 1600/s, 50% at 800/s (high)",
        ),
        (
            vec![process(0.1, 1, 1.0, 20, 64)],
            vec![process(0.3, 1, 1.0, 64, 64)],
            Kind::Fds,
            Confidence::High,
            "nginx (pid:4241) out of file descriptors: 64 of 64 descriptors open at 1600/s, 20 at 800/s (high)",
        ),
        (
            vec![cgroup(0.3, Some(0.5), Some(0.0))],
            vec![cgroup(0.5, Some(0.5), Some(0.9))],
            Kind::Throttling,
            Confidence::High,
            "cgroup /sys/fs/cgroup/web throttled by its CPU quota: throttled in 90% of periods at 1600/s, 0% at 800/s; 100% of 0.5 cores at 1600/s, 60% at 800/s (high)",
        ),
        (
            vec![cgroup(0.3, Some(0.5), None)],
            vec![cgroup(0.49, Some(0.5), None)],
            Kind::Cpu,
            Confidence::High,
            "cgroup /sys/fs/cgroup/web at its CPU quota (0.5 cores): 98% of 0.5 cores at 1600/s, 60% at 800/s (high)",
        ),
        (
            vec![postgres(5, 10, 0.0)],
            vec![postgres(9, 10, 0.0)],
            Kind::Connections,
            Confidence::High,
            "PostgreSQL (postgres:postgresql://127.0.0.1/db) at max_connections: 10 of 10 connections at 1600/s, 6 at 800/s (high)",
        ),
        (
            vec![postgres(2, 100, 0.0)],
            vec![postgres(3, 100, 7.0)],
            Kind::Locks,
            Confidence::Low,
            "PostgreSQL (postgres:postgresql://127.0.0.1/db) waiting on locks: 7 lock requests waiting at 1600/s, 0 at 800/s (low)",
        ),
        (
            vec![workers(&[6.0, 6.4], 8.0)],
            vec![workers(&[8.0, 8.0], 8.0)],
            Kind::Workers,
            Confidence::High,
            "the built-in target's workers (http://127.0.0.1:1/metrics) all busy: 8 of 8 busy at 1600/s, 6.2 at 800/s (high)",
        ),
    ];
    for (passing, failing, kind, confidence, line_text) in rows {
        let b = between(passing, failing).unwrap_or_else(|| panic!("no bottleneck for {kind:?}"));
        assert_eq!(b.top.kind, kind, "{b:?}");
        assert_eq!(b.top.confidence, confidence, "{b:?}");
        assert_eq!(line(&b, Unit::Rate), line_text);
    }
}

#[test]
fn nothing_near_its_cap_is_no_bottleneck_and_the_hint_names_the_missing_watch() {
    let idle = vec![process(0.5, 1, 1.0, 30, 1024), postgres(3, 100, 0.0)];
    assert_eq!(between(idle.clone(), idle.clone()), None);
    // A multi-threaded process at one of its four cores is not at its cap.
    assert_eq!(between(vec![], vec![process(1.0, 8, 4.0, 10, 1024)]), None);
    assert_eq!(
        hint(&summary(Vec::new())),
        "no watch explains the failure: add --watch pid:PID of the service, or --watch \
         postgres:URL of its database, or --watch prometheus:URL of its metrics"
    );
    assert!(hint(&summary(idle)).starts_with(
        "no watch explains the failure: the watched processes stayed under their CPU and \
         descriptor limits; add --watch prometheus:URL"
    ));
}

#[test]
fn several_candidates_are_ranked_hard_limits_first() {
    let b = between(
        vec![process(0.5, 1, 1.0, 10, 64), workers(&[5.0], 8.0)],
        vec![process(0.97, 1, 1.0, 64, 64), workers(&[8.0], 8.0)],
    )
    .unwrap();
    // All at their cap: descriptors (a hard limit) first, then workers, then CPU.
    let kinds: Vec<Kind> = std::iter::once(b.top.kind)
        .chain(b.others.iter().map(|c| c.kind))
        .collect();
    assert_eq!(kinds, [Kind::Fds, Kind::Workers, Kind::Cpu]);
    assert!(line(&b, Unit::Rate).contains("; also: the built-in target's workers"));
    // A candidate at its cap outranks one near it, whatever its kind.
    let b = between(vec![], vec![process(0.99, 1, 1.0, 55, 64)]).unwrap();
    assert_eq!((b.top.kind, b.others[0].kind), (Kind::Cpu, Kind::Fds));
}

#[test]
fn the_json_has_the_contract_fields() {
    let b = between(vec![], vec![process(0.99, 1, 1.0, 12, 1024)]).unwrap();
    let json = serde_json::to_value(&b).unwrap();
    assert_eq!(json["what"], "nginx (pid 4242)");
    assert_eq!(json["kind"], "cpu");
    assert_eq!(json["confidence"], "high");
    let e = &json["evidence"][0];
    assert_eq!(
        (
            e["figure"].as_str(),
            e["cap"].as_f64(),
            e["failing"]["rate"].as_f64()
        ),
        (Some("cpu_cores"), Some(1.0), Some(1600.0))
    );
    // No passing step: no passing figure.
    assert!(e["passing"].is_null());
    assert!(json.get("others").is_none());
    let back: Bottleneck = serde_json::from_value(json).unwrap();
    assert_eq!(back, b);
}

#[test]
fn steps_are_compared_at_the_ceiling_and_the_lowest_failure_above_it() {
    let step = |rate: f64, passed: bool, cpu: f64| {
        StepRecord::measured(rate, passed, summary(vec![process(cpu, 1, 1.0, 10, 1024)]))
    };
    let steps = vec![
        step(100.0, true, 0.1),
        step(1600.0, false, 1.0),
        step(800.0, true, 0.6),
        step(1200.0, false, 0.96),
        step(800.0, true, 0.62),
    ];
    let b = of_steps(&steps, LimitedBy::Thresholds, Some(800.0)).unwrap();
    let e = &b.top.evidence[0];
    assert_eq!(
        e.failing,
        Point {
            rate: 1200.0,
            value: 0.96
        }
    );
    assert_eq!(
        e.passing,
        Some(Point {
            rate: 800.0,
            value: 0.62
        })
    );
    assert_eq!(of_steps(&steps, LimitedBy::Range, Some(800.0)), None);
    let mut bound = steps.clone();
    bound[1].summary.generator.bound = true;
    bound[1].summary.generator.reason = "CPU 198%".into();
    let g = of_steps(&bound, LimitedBy::Generator, Some(800.0)).unwrap();
    assert_eq!(
        (g.top.kind, g.top.confidence),
        (Kind::Generator, Confidence::High)
    );
}
