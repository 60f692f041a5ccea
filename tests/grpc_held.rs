//! Held gRPC server streams and the timing of server-pushed messages (issue 22, items
//! 2–4), end to end (`headroom run`) against the built-in target's gRPC ticker
//! (`tests/fixtures/ticker.proto`) and its SSE ticker: one call per user for the whole
//! run while unary calls go on over the same connection, `deadline:` ending a stream as
//! DEADLINE_EXCEEDED (`timeout`) while a shorter step timeout fails only its step, and
//! `gap_*`/`lateness_*` thresholds judging a server's cadence. Every summary adds up
//! (read_summary).

use std::path::Path;
use std::time::Duration;

use headroom::metrics::summary::Summary;
use headroom::target::{self, RunningTarget, TargetOptions};

use crate::support::{assert_exit, certs::write, http_get, run_with_summary, stderr};

const LIMIT: Duration = Duration::from_secs(30);

fn ticker_proto(dir: &Path) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ticker.proto");
    std::fs::copy(fixture, dir.join("ticker.proto")).unwrap();
}

fn run(dir: &Path, yaml: &str, extra: &[&str]) -> (std::process::Output, Summary) {
    let path = write(dir, "held.yaml", yaml);
    let mut args = vec![path.to_str().unwrap()];
    args.extend(extra);
    run_with_summary(dir, &args, LIMIT)
}

/// A counter of the target's Prometheus exposition (0 when absent).
fn counter(target: &RunningTarget, series: &str) -> f64 {
    let (status, text) = http_get(target.addr(), "/metrics");
    assert_eq!(status, 200);
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0.0)
}

#[test]
fn a_held_grpc_stream_is_one_call_per_user_while_unary_calls_go_on() {
    let target = target::spawn(TargetOptions::loopback()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    ticker_proto(dir.path());
    // Seed 002's player: one Subscribe-like stream for the session, unary calls beside it,
    // and steps that read the stream's messages, iteration after iteration.
    let yaml = format!(
        r#"name: held
target: {}
load: {{model: users, users: 3, duration: 2s, think: 20ms}}
flows:
  - name: player
    steps:
      - grpc:
          name: feed
          proto: ticker.proto
          call: headroom.Ticker/Ticks
          message: {{every_ms: 50}}
          every: 50ms
          expect: {{jsonpath: "$.n", timeout: 2s}}
      - grpc:
          name: echo
          proto: ticker.proto
          call: headroom.Ticker/Echo
          message: {{n: 7}}
          expect: {{json: {{"$.n": 7}}}}
      - grpc: {{name: feed, expect: {{jsonpath: "$.n", count: 2, timeout: 1s}}}}
"#,
        target.url()
    );
    let (out, s) = run(dir.path(), &yaml, &[]);
    assert_exit(&out, 0);
    assert_eq!(s.errors.count, 0, "{:?}\n{}", s.errors, stderr(&out));
    // One call per user for the whole run: the opening step is skipped while the user
    // holds the stream (no operation), and the stream is cancelled at the user's end.
    let call = &s.by_name["feed.call"];
    assert_eq!(call.requests, 3, "{call:?}");
    let feed = &s.streams["feed"];
    assert_eq!(feed.sessions, 3, "{feed:?}");
    assert_eq!(
        feed.status,
        [("CANCELLED".to_string(), 3)].into(),
        "{:?}",
        feed.status
    );
    // Unary calls went on all along, each a call of its own with its status.
    let echo = &s.by_name["echo.call"];
    let expect = &s.by_name["feed.expect"];
    assert!(echo.requests >= 3 * 8, "{echo:?}");
    assert_eq!(expect.requests, echo.requests, "{expect:?}");
    assert_eq!(s.streams["echo"].sessions, echo.requests);
    assert_eq!(s.streams["echo"].status.get("OK"), Some(&echo.requests));
    // The held streams carried the ticker's messages for the whole run: ~2 s / 50 ms
    // each, at least the ones the steps read, and each judged against `every:`.
    assert!(
        feed.messages.received >= 3 + 2 * expect.requests,
        "{} received for {} expects",
        feed.messages.received,
        expect.requests
    );
    assert!(feed.messages.received >= 3 * 25, "{feed:?}");
    assert_eq!(feed.cadence_messages, feed.messages.received);
    assert_eq!(feed.gaps, feed.messages.received - 3);
    assert!(
        (40.0..=80.0).contains(&feed.gap_ms.p50),
        "{:?}",
        feed.gap_ms
    );
    // On the server's own cadence, messages are not late by a period.
    assert!(feed.lateness_ms.p50 < 50.0, "{:?}", feed.lateness_ms);
    // Calls and the streams shared each user's one HTTP/2 connection.
    let h2 = counter(
        &target,
        "headroom_target_protocol_connections_total{protocol=\"h2\"}",
    );
    assert_eq!(h2, 3.0, "h2 connections");
}

#[test]
fn a_deadline_ends_the_stream_as_timeout_and_a_shorter_step_timeout_only_its_step() {
    let target = target::spawn(TargetOptions::loopback()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    ticker_proto(dir.path());
    // The first tick comes at once, the second after 5 s: the step waiting for it is
    // ended by the stream's 700 ms deadline, as `timeout`, not by its own 5 s.
    let yaml = format!(
        r#"name: deadline
target: {}
load: {{model: users, users: 1, duration: 1500ms}}
flows:
  - name: f
    steps:
      - grpc: {{name: feed, proto: ticker.proto, call: headroom.Ticker/Ticks, message: {{every_ms: 5000}}, deadline: 700ms, timeout: 1s}}
      - grpc: {{name: feed, expect: {{json: {{"$.n": 2}}, timeout: 5s}}}}
"#,
        target.url()
    );
    let (out, s) = run(dir.path(), &yaml, &[]);
    let expect = &s.by_name["feed.expect"];
    assert!(expect.requests >= 2, "{}\n{expect:?}", stderr(&out));
    assert_eq!(
        expect.errors.by_kind.get("timeout"),
        Some(&expect.requests),
        "{expect:?}"
    );
    // Opened at about 0, the step ends at the deadline (700 ms).
    assert!(
        (650.0..=900.0).contains(&expect.latency_ms.p50),
        "{:?}",
        expect.latency_ms
    );
    let feed = &s.streams["feed"];
    assert_eq!(s.by_name["feed.call"].requests, feed.sessions);
    assert_eq!(
        feed.status.get("DEADLINE_EXCEEDED"),
        Some(&expect.requests),
        "{:?}",
        feed.status
    );
    assert_eq!(feed.errors.by_kind.get("timeout"), Some(&expect.requests));

    // No deadline, a step that waits too little: it fails as `stream`, and the stream
    // lives on (one call for the whole run, still receiving at its end).
    let yaml = format!(
        r#"name: short
target: {}
load: {{model: users, users: 1, duration: 1500ms}}
flows:
  - name: f
    steps:
      - grpc: {{name: feed, proto: ticker.proto, call: headroom.Ticker/Ticks, message: {{every_ms: 100}}, timeout: 300ms}}
      - grpc: {{name: feed, expect: {{jsonpath: "$.n", count: 3, timeout: 120ms}}}}
"#,
        target.url()
    );
    let (out, s) = run(dir.path(), &yaml, &[]);
    let expect = &s.by_name["feed.expect"];
    assert!(expect.requests >= 5, "{}\n{expect:?}", stderr(&out));
    assert_eq!(
        expect.errors.by_kind.get("stream"),
        Some(&expect.requests),
        "{expect:?}"
    );
    assert_eq!(s.by_name["feed.call"].requests, 1);
    assert_eq!(s.by_name["feed.call"].errors.count, 0);
    let feed = &s.streams["feed"];
    assert_eq!(feed.sessions, 1);
    assert_eq!(feed.status, [("CANCELLED".to_string(), 1)].into());
    // ~1.5 s of ticks every 100 ms, though the 300 ms step timeout passed long ago.
    assert!(feed.messages.received >= 12, "{feed:?}");
}

#[test]
fn gap_and_lateness_thresholds_judge_the_servers_cadence() {
    let target = target::spawn(TargetOptions::loopback()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let yaml = |every_ms: u64, stated: &str| {
        format!(
            r#"name: cadence
target: {}
load: {{model: users, users: 2, duration: 1500ms}}
thresholds: ["ticks.gap_p95 < 100ms", "sse.lateness_p95 < 250ms"]
flows:
  - name: watcher
    steps:
      - sse: {{name: ticks, url: "/sse/ticker?every_ms={every_ms}", every: {stated}, expect: {{event: tick, timeout: 2s}}}}
"#,
            target.url()
        )
    };
    // The server keeps a 20 ms pace, as stated: both rules pass.
    let (out, s) = run(dir.path(), &yaml(20, "20ms"), &[]);
    assert_exit(&out, 0);
    let ticks = &s.streams["ticks"];
    assert!(ticks.messages.received >= 2 * 40, "{ticks:?}");
    assert_eq!(ticks.cadence_messages, ticks.messages.received);
    assert!(s.thresholds.iter().all(|t| t.ok), "{:?}", s.thresholds);

    // A server twice as slow as stated (every 150 ms, stated 75 ms): gaps over the
    // rule's 100 ms and each message later than the last by 75 ms (p95 about 600 ms,
    // where a loaded machine's stalls on the fast run stay well under 250 ms): both
    // fail, exit 99.
    let (out, s) = run(dir.path(), &yaml(150, "75ms"), &[]);
    assert_exit(&out, 99);
    let ticks = &s.streams["ticks"];
    let gap = &s.thresholds[0];
    assert!(!gap.ok && gap.value >= 140.0, "{gap:?}");
    let late = &s.thresholds[1];
    assert!(!late.ok, "{late:?}");
    // About 10 messages a session: message k is late by about k × 75 ms.
    let per_session = ticks.messages.received / 2;
    assert!(per_session >= 8, "{ticks:?}");
    let want = (per_session - 1) as f64 * 75.0;
    assert!(
        ticks.lateness_ms.max >= want * 0.9 && ticks.lateness_ms.max <= want * 1.5 + 150.0,
        "max lateness {:?} for {per_session} messages a session",
        ticks.lateness_ms
    );
    assert_eq!(ticks.lateness_ms.min, 0.0, "the first message anchors");
    // The end-of-run text names both rules.
    let text = stderr(&out) + &crate::support::stdout(&out);
    assert!(text.contains("ticks.gap_p95 < 100ms"), "{text}");
}
