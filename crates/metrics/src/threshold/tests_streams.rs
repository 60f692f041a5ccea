//! Stream rules: parsed names, units and scopes, judged against `streams` and
//! `stream_totals`.

use super::*;
use crate::streams::StreamSummary;

fn stream(p95: f64, round_trips: u64, errors_rate: f64) -> StreamSummary {
    let mut s = StreamSummary {
        protocol: "ws".into(),
        round_trips,
        message_latency_ms: Latency {
            p95,
            ..Latency::default()
        },
        ..StreamSummary::default()
    };
    s.errors.rate = errors_rate;
    s
}

#[test]
fn stream_rules_parse_with_their_units_and_scopes() {
    let t = Threshold::parse("ws.message_p95 < 100ms").unwrap();
    assert_eq!(t.scope.as_deref(), Some("ws"));
    assert_eq!(
        t.metric,
        Metric::Stream(StreamMetric::Message(LatencyStat::P95))
    );
    assert_eq!(t.limit, 100.0);
    let t = Threshold::parse("game.first_message_p99 < 1s").unwrap();
    assert_eq!(
        t.metric,
        Metric::Stream(StreamMetric::FirstMessage(LatencyStat::P99))
    );
    assert_eq!((t.scope.as_deref(), t.limit), (Some("game"), 1000.0));
    let t = Threshold::parse("stream_errors < 0.1%").unwrap();
    assert_eq!(
        (t.scope, t.metric, t.limit),
        (None, Metric::Stream(StreamMetric::Errors), 0.1)
    );
    assert!(Threshold::parse("stream_connect_p95 < 50ms").is_ok());
    let e = Threshold::parse("stream_errors < 5ms")
        .unwrap_err()
        .to_string();
    assert!(e.contains("percentage"), "{e}");
    let e = Threshold::parse("ws.message_p95 < 100")
        .unwrap_err()
        .to_string();
    assert!(e.contains("unit"), "{e}");
}

#[test]
fn stream_rules_judge_a_stream_a_protocol_or_all_streams() {
    let mut s = Summary::empty("t", 1.0);
    s.streams.insert("game".into(), stream(80.0, 10, 0.0));
    s.stream_totals
        .insert("ws".into(), stream(120.0, 20, 0.002));
    s.stream_totals
        .insert("all".into(), stream(120.0, 20, 0.002));
    let judge = |s: &Summary, e: &str| {
        let r = Threshold::parse(e).unwrap().evaluate(s);
        (r.ok, r.value)
    };
    assert_eq!(judge(&s, "game.message_p95 < 100ms"), (true, 80.0));
    assert_eq!(judge(&s, "ws.message_p95 < 100ms"), (false, 120.0));
    assert_eq!(judge(&s, "stream_errors < 0.1%"), (false, 0.2));
    assert_eq!(judge(&s, "stream_errors < 1%"), (true, 0.2));
    assert!(
        !judge(&s, "sse.message_p95 < 1s").0,
        "no sse streams: nothing to judge"
    );
    s.streams.insert("idle".into(), stream(0.0, 0, 0.0));
    assert!(
        !judge(&s, "idle.message_p95 < 1s").0,
        "no round trips: nothing to judge"
    );
}

#[test]
fn gap_and_lateness_rules_parse_every_statistic_and_need_something_measured() {
    use LatencyStat::*;
    for (word, stat) in [
        ("p50", P50),
        ("p90", P90),
        ("p95", P95),
        ("p99", P99),
        ("p99.9", P999),
        ("min", Min),
        ("avg", Avg),
        ("max", Max),
    ] {
        let t = Threshold::parse(&format!("ticks.gap_{word} < 120ms")).unwrap();
        assert_eq!(t.metric, Metric::Stream(StreamMetric::Gap(stat)), "{word}");
        assert_eq!((t.scope.as_deref(), t.limit), (Some("ticks"), 120.0));
        let t = Threshold::parse(&format!("lateness_{word} <= 1s")).unwrap();
        assert_eq!(
            t.metric,
            Metric::Stream(StreamMetric::Lateness(stat)),
            "{word}"
        );
        assert_eq!((t.scope, t.limit), (None, 1000.0));
    }
    // A scope may itself contain dots and the figure's names.
    let t = Threshold::parse("feed.gap.lateness_p95 < 5ms").unwrap();
    assert_eq!(t.scope.as_deref(), Some("feed.gap"));
    let e = Threshold::parse("gap_p95 < 5").unwrap_err().to_string();
    assert!(e.contains("unit"), "{e}");
    let e = Threshold::parse("gap_p97 < 5ms").unwrap_err().to_string();
    assert!(e.contains("gap_p95, lateness_p95"), "{e}");

    let mut s = Summary::empty("t", 1.0);
    let mut ticks = stream(0.0, 0, 0.0);
    ticks.gap_ms.p95 = 101.0;
    ticks.gaps = 9;
    ticks.lateness_ms.p95 = 4.0;
    ticks.cadence_messages = 10;
    s.streams.insert("ticks".into(), ticks);
    let mut plain = stream(0.0, 0, 0.0);
    plain.gaps = 3;
    plain.gap_ms.p95 = 50.0;
    s.streams.insert("plain".into(), plain);
    let judge = |e: &str, s: &Summary| {
        let r = Threshold::parse(e).unwrap().evaluate(s);
        (r.ok, r.value)
    };
    assert_eq!(judge("ticks.gap_p95 < 150ms", &s), (true, 101.0));
    assert_eq!(judge("ticks.gap_p95 < 100ms", &s), (false, 101.0));
    assert_eq!(judge("ticks.lateness_p95 < 5ms", &s), (true, 4.0));
    // No `every:` on the stream: no lateness to judge, so the rule fails.
    assert!(!judge("plain.lateness_p95 < 5ms", &s).0);
    assert_eq!(judge("plain.gap_p95 < 1s", &s), (true, 50.0));
    s.streams.get_mut("plain").unwrap().gaps = 0;
    assert!(
        !judge("plain.gap_p95 < 1s", &s).0,
        "no gaps: nothing to judge"
    );
}
