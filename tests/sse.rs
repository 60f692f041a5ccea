//! `sse:` flow steps end to end (`headroom run`): against the built-in target's ticker
//! (drops every few events, reconnects are not errors), against an SSE server nobody
//! here wrote (sse-starlette under uvicorn, installed by scripts/peers.sh), and a
//! refused stream counted as a `stream` error. Every summary adds up (read_summary).

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use headroom::metrics::summary::Summary;
use headroom::target::{self, TargetOptions};

use crate::support::{assert_exit, free_port, peers::peer_path, run_with_summary, stderr};

const LIMIT: Duration = Duration::from_secs(30);

fn run(dir: &Path, yaml: &str) -> (std::process::Output, Summary) {
    let scenario = dir.join("sse.yaml");
    std::fs::write(&scenario, yaml).unwrap();
    run_with_summary(dir, &[scenario.to_str().unwrap()], LIMIT)
}

#[test]
fn sse_steps_read_the_targets_ticker_through_drops() {
    let target = target::spawn(TargetOptions::loopback()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The ticker cuts each connection after 5 events; the pump reconnects 20 ms later
    // with Last-Event-ID, so the user's expectations never notice.
    let yaml = format!(
        r#"name: sse
target: {}
load: {{model: users, users: 2, duration: 2s}}
flows:
  - name: watcher
    steps:
      - sse: {{name: ticks, url: "/sse/ticker?every_ms=50&drop_after=5&retry_ms=20", expect: {{event: tick, timeout: 2s}}}}
      - sse: {{name: ticks, expect: {{event: tick, count: 4, timeout: 2s}}, capture: {{n: "$.n"}}}}
"#,
        target.url()
    );
    let (out, s) = run(dir.path(), &yaml);
    assert_exit(&out, 0);
    assert_eq!(
        s.errors.count,
        0,
        "{:?}\n{}",
        s.errors.by_kind,
        stderr(&out)
    );
    // One open per user (a later `url:` step on the open stream is no operation), then
    // 4 ticks of 50 ms per expect: about 2 s / 200 ms = 10 per user.
    let open = &s.by_name["ticks.open"];
    let expect = &s.by_name["ticks.expect"];
    assert_eq!(open.requests, 2, "{open:?}");
    assert!((14..=22).contains(&expect.requests), "{expect:?}");
    assert!(
        (150.0..=260.0).contains(&expect.latency_ms.p50),
        "4 ticks of 50 ms: {:?}",
        expect.latency_ms
    );
    // The stream's own figures: every event a tick, the cuts (one per 5 events) counted
    // as reconnects, not errors, and the gap between ticks the ticker's period.
    let ticks = &s.streams["ticks"];
    assert_eq!(ticks.protocol, "sse");
    assert_eq!(ticks.sessions, 2);
    let received = ticks.messages.received;
    assert!(received >= 4 * expect.requests, "{received} for {expect:?}");
    assert_eq!(
        ticks.events.get("tick"),
        Some(&received),
        "{:?}",
        ticks.events
    );
    assert!(
        ticks.reconnects + 2 >= received / 5 && ticks.reconnects <= received / 5,
        "{} reconnects for {received} events",
        ticks.reconnects
    );
    assert_eq!(ticks.errors.count, 0, "{:?}", ticks.errors);
    assert!(
        (45.0..=60.0).contains(&ticks.gap_ms.p50),
        "gap {:?}",
        ticks.gap_ms
    );
    assert_eq!(s.stream_totals["sse"].reconnects, ticks.reconnects);
}

#[test]
fn a_refused_stream_is_a_stream_error_and_the_run_adds_up() {
    let target = target::spawn(TargetOptions::loopback()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // `every_ms=1` is below the ticker's floor: 400, not an event stream.
    let yaml = format!(
        r#"name: sse-refused
target: {}
load: {{model: arrival-rate, rate: 20, duration: 1s}}
flows:
  - name: refused
    steps:
      - sse: {{name: ticks, url: "/sse/ticker?every_ms=1", expect: {{event: tick, timeout: 1s}}}}
"#,
        target.url()
    );
    let (out, s) = run(dir.path(), &yaml);
    assert!(
        matches!(out.status.code(), Some(0 | 99)),
        "{}",
        stderr(&out)
    );
    let open = &s.by_name["ticks.open"];
    assert!(open.requests >= 15, "{open:?}");
    assert_eq!(open.errors.count, open.requests, "{open:?}");
    assert_eq!(
        s.errors.by_kind.get("stream"),
        Some(&open.requests),
        "{:?}",
        s.errors
    );
}

/// The sse-starlette peer on a free loopback port, killed when dropped.
struct Peer(Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_peer() -> (Peer, String) {
    let python = peer_path("sse-starlette/venv/bin/python");
    let app = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/sse_app.py");
    let port = free_port();
    let child = Command::new(python)
        .arg(app)
        .arg(port.to_string())
        .spawn()
        .expect("start the sse-starlette peer");
    let peer = Peer(child);
    let began = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "the peer did not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (peer, format!("http://127.0.0.1:{port}"))
}

#[test]
fn sse_steps_read_a_published_sse_server() {
    let (_peer, url) = start_peer();
    let dir = tempfile::tempdir().unwrap();
    // Each iteration opens a stream of 30 events (sse-starlette: retry 50 ms, 20 ms
    // apart), waits for 5 of them, and closes it.
    let yaml = format!(
        r#"name: sse-peer
target: {url}
load: {{model: users, users: 1, duration: 2s}}
flows:
  - name: watcher
    steps:
      - sse: {{name: feed, url: "/events?count=30&every_ms=20", expect: {{event: ping, timeout: 2s}}}}
      - sse: {{name: feed, expect: {{event: ping, json: {{"$.k": 5}}, timeout: 2s}}}}
      - sse: {{name: feed, close: true}}
"#
    );
    let (out, s) = run(dir.path(), &yaml);
    assert_exit(&out, 0);
    assert_eq!(
        s.errors.count,
        0,
        "{:?}\n{}",
        s.errors.by_kind,
        stderr(&out)
    );
    let open = &s.by_name["feed.open"];
    let expect = &s.by_name["feed.expect"];
    assert!(open.requests >= 5, "{open:?}");
    assert!(expect.requests + 1 >= open.requests, "{open:?} {expect:?}");
    // Every session read its 5 pings (the close may come after a sixth) and ended
    // with the close step (`client`).
    let feed = &s.streams["feed"];
    assert_eq!(feed.sessions, open.requests);
    let pings = feed.events.get("ping").copied().unwrap_or(0);
    assert!(
        (5 * feed.sessions..=6 * feed.sessions).contains(&pings),
        "{pings} pings in {} sessions",
        feed.sessions
    );
    assert_eq!(
        feed.close_codes.get("client"),
        Some(&feed.sessions),
        "{:?}",
        feed.close_codes
    );
    assert_eq!(feed.reconnects, 0);
    // The event with k = 5 is the fifth, 4 × 20 ms after the first.
    assert!(
        (70.0..=200.0).contains(&expect.latency_ms.p50),
        "{:?}",
        expect.latency_ms
    );
}
