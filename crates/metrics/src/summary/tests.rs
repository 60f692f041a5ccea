//! Tests of the summary: what the watches read, the timing breakdown, old summaries.

use headroom_watch::RunView;

use super::*;

#[test]
fn the_watches_read_the_lag_by_second_and_the_generator_verdict() {
    let mut s = Summary::empty("x", 2.0);
    s.generator.bound = true;
    s.generator.reason = "busy".into();
    s.generator.max_lag_ms = 7.0;
    s.timeline = vec![
        Second {
            t: 0,
            max_lag_ms: 3.0,
            ..Second::default()
        },
        Second {
            t: 1,
            max_lag_ms: 40.0,
            ..Second::default()
        },
    ];
    assert_eq!(s.lag_in_second(1), Some(40.0));
    assert_eq!(s.lag_in_second(2), None);
    assert_eq!(s.timeline_max_lag_ms(), 40.0);
    let v = s.generator_verdict();
    assert!(v.bound && v.reason == "busy" && v.max_lag_ms == 7.0);
}

#[test]
fn timing_phases_carry_a_count_beside_the_latency_fields() {
    let mut s = Summary::empty("t", 1.0);
    s.timing_ms.ttfb = Phase {
        count: 3,
        ms: Latency {
            p999: 7.5,
            ..Latency::default()
        },
    };
    s.connections.reused = 2;
    s.connections.opened = 3;
    s.connections.by_protocol.grpc = 3;
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["connections"]["by_protocol"]["grpc"], 3);
    assert_eq!(json["connections"]["by_protocol"]["websocket"], 0);
    assert_eq!(json["timing_ms"]["ttfb"]["count"], 3);
    assert_eq!(json["timing_ms"]["ttfb"]["p99.9"], 7.5);
    assert_eq!(json["timing_ms"]["tls"]["count"], 0);
    assert_eq!(json["connections"]["reused"], 2);
    let back: Summary = serde_json::from_value(json).unwrap();
    assert_eq!(back, s);
}

#[test]
fn a_summary_stored_before_the_breakdown_still_reads() {
    let mut json = serde_json::to_value(Summary::empty("old", 1.0)).unwrap();
    let map = json.as_object_mut().unwrap();
    map.remove("timing_ms");
    map.remove("connections");
    let back: Summary = serde_json::from_value(json).unwrap();
    assert_eq!(back.timing_ms, TimingMs::default());
    assert_eq!(back.connections, Connections::default());
    // A summary stored before connections were counted by protocol.
    let old: Connections =
        serde_json::from_str(r#"{"protocol":"h2c","model":"per-user","opened":4}"#).unwrap();
    assert_eq!((old.opened, old.by_protocol), (4, ByProtocol::default()));
    // Integers where floats are expected, as another writer may store them.
    let phase: Phase = serde_json::from_str(
        r#"{"count":1,"min":1,"avg":1,"p50":1,"p90":1,"p95":1,"p99":1,"p99.9":1,"max":2}"#,
    )
    .unwrap();
    assert_eq!((phase.count, phase.ms.max), (1, 2.0));
}
