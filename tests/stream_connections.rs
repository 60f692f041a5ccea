//! Every connection is counted, whoever opens it (issue 22, item 5): WebSocket, SSE and
//! gRPC steps' connections appear in `connections.opened` and `connections.by_protocol`,
//! checked against the servers' own counts (the built-in target's accepted connections;
//! `ss` for grpc-go's route_guide). With `--http2`, a user's SSE stream and its requests
//! share one connection (item 7), over h2c and h2 by ALPN, and gRPC calls take the
//! shared pool's connections. Every summary adds up (read_summary), by protocol too.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use headroom::metrics::summary::Summary;
use headroom::target::{self, RunningTarget, TargetOptions};

use crate::support::{
    assert_exit, certs::write, route_guide_proto, run_with_summary, stderr, RouteGuide,
};

const LIMIT: Duration = Duration::from_secs(30);

fn target() -> RunningTarget {
    target::spawn(TargetOptions::loopback()).expect("target starts")
}

/// Runs `yaml` (its `TARGET` replaced by `url`) with `extra` flags.
fn run(dir: &Path, yaml: &str, url: &str, extra: &[&str]) -> (std::process::Output, Summary) {
    let path = write(dir, "s.yaml", &yaml.replace("TARGET", url));
    let mut args = vec![path.to_str().unwrap().to_string()];
    args.extend(extra.iter().map(|a| a.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run_with_summary(dir, &args, LIMIT)
}

/// Established TCP connections from a client to 127.0.0.1:`port`, as `ss` sees them.
fn established_to(port: u16) -> usize {
    let out = Command::new("ss")
        .args([
            "-Htn",
            "state",
            "established",
            "dst",
            &format!("127.0.0.1:{port}"),
        ])
        .output()
        .expect("ss runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count()
}

/// Runs `yaml` in the background while sampling `ss` every 50 ms: the summary and
/// the most connections to `port` seen established at once.
fn run_watching(
    dir: &Path,
    yaml: &str,
    url: &str,
    port: u16,
    extra: &[&str],
) -> (std::process::Output, Summary, usize) {
    let (dir, yaml, url) = (dir.to_path_buf(), yaml.to_string(), url.to_string());
    let extra: Vec<String> = extra.iter().map(|a| a.to_string()).collect();
    let running = std::thread::spawn(move || {
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        run(&dir, &yaml, &url, &extra)
    });
    let mut most = 0;
    let began = Instant::now();
    while !running.is_finished() && began.elapsed() < LIMIT {
        most = most.max(established_to(port));
        std::thread::sleep(Duration::from_millis(50));
    }
    let (out, s) = running.join().expect("the run");
    (out, s, most)
}

fn with_proto(dir: &Path) {
    std::fs::copy(route_guide_proto(), dir.join("route_guide.proto")).unwrap();
}

fn features() -> serde_json::Value {
    serde_json::json!([
        {"location": {"latitude": 408122808, "longitude": -743999179}, "name": "101 New Jersey 10"},
    ])
}

const GRPC_FLOW: &str = r#"name: grpc
target: TARGET
load: {model: users, users: USERS, duration: 2s, think: 20ms}
flows:
  - name: guide
    steps:
      - grpc:
          name: feature
          proto: route_guide.proto
          call: routeguide.RouteGuide/GetFeature
          message: {latitude: 408122808, longitude: -743999179}
          expect: {json: {"$.name": "101 New Jersey 10"}}
"#;

#[test]
fn users_holding_a_websocket_are_counted_as_websocket_connections() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let yaml = r#"name: ws
target: TARGET
load: {model: users, users: 10, duration: 1s}
flows:
  - name: echo
    steps:
      - ws: {name: echo, url: "/ws/echo"}
      - ws: {name: echo, send: {json: {kind: ping}}, expect: {json: {"$.kind": ping}, timeout: 1s}}
"#;
    let before = t.connections_accepted();
    let (out, s) = run(dir.path(), yaml, &t.url(), &[]);
    assert_exit(&out, 0);
    assert_eq!(s.errors.count, 0, "{}\n{:?}", stderr(&out), s.errors);
    let c = &s.connections;
    assert_eq!(c.by_protocol.websocket, 10, "{c:?}");
    assert_eq!(c.opened, 10, "{c:?}");
    assert_eq!(
        t.connections_accepted() - before,
        10,
        "accepted by the target"
    );
}

#[test]
fn each_grpc_user_opens_one_grpc_connection_and_the_server_sees_them() {
    let server = RouteGuide::start(&features());
    let dir = tempfile::tempdir().unwrap();
    with_proto(dir.path());
    let port: u16 = server.url().rsplit(':').next().unwrap().parse().unwrap();
    let yaml = GRPC_FLOW.replace("USERS", "4");
    let (out, s, most) = run_watching(dir.path(), &yaml, &server.url(), port, &[]);
    assert_eq!(s.errors.count, 0, "{}\n{:?}", stderr(&out), s.errors);
    assert!(s.by_name["feature.call"].requests > 8, "{:?}", s.by_name);
    let c = &s.connections;
    assert_eq!((c.opened, c.by_protocol.grpc), (4, 4), "{c:?}");
    assert_eq!(
        most, 4,
        "connections established to route_guide during the run"
    );
}

#[test]
fn with_http2_and_a_shared_pool_grpc_calls_take_the_pools_connections() {
    let server = RouteGuide::start(&features());
    let dir = tempfile::tempdir().unwrap();
    with_proto(dir.path());
    let port: u16 = server.url().rsplit(':').next().unwrap().parse().unwrap();
    let yaml = GRPC_FLOW.replace("USERS", "8");
    let (out, s, most) = run_watching(
        dir.path(),
        &yaml,
        &server.url(),
        port,
        &["--http2", "--connection", "shared:2", "--threads", "1"],
    );
    assert_eq!(s.errors.count, 0, "{}\n{:?}", stderr(&out), s.errors);
    assert!(s.by_name["feature.call"].requests > 16, "{:?}", s.by_name);
    let c = &s.connections;
    // 8 users' calls on the pool's (at most) 2 connections, none of their own.
    assert_eq!(c.by_protocol.grpc, 0, "{c:?}");
    assert!((1..=2).contains(&c.by_protocol.http2), "{c:?}");
    assert_eq!(c.opened, c.by_protocol.http2, "{c:?}");
    assert!(most <= 2 && most as u64 <= c.opened, "{most} established");
}

#[test]
fn sse_streams_are_counted_as_sse_connections() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let yaml = r#"name: sse
target: TARGET
load: {model: users, users: 3, duration: 1s}
flows:
  - name: watch
    steps:
      - sse: {name: ticks, url: "/sse/ticker?every_ms=50", expect: {event: tick, timeout: 2s}}
      - sse: {name: ticks, expect: {event: tick, count: 2, timeout: 2s}}
"#;
    let before = t.connections_accepted();
    let (out, s) = run(dir.path(), yaml, &t.url(), &[]);
    assert_eq!(s.errors.count, 0, "{}\n{:?}", stderr(&out), s.errors);
    let c = &s.connections;
    assert_eq!((c.opened, c.by_protocol.sse), (3, 3), "{c:?}");
    assert_eq!(
        t.connections_accepted() - before,
        3,
        "accepted by the target"
    );
}

/// A user's requests and its SSE stream, with `--http2`, on one connection per user.
fn sse_shares_the_users_http2_connection(t: &RunningTarget, extra: &[&str]) -> Summary {
    let dir = tempfile::tempdir().unwrap();
    let yaml = r#"name: sse-h2
target: TARGET
load: {model: users, users: 3, duration: 1s}
flows:
  - name: watch
    steps:
      - request: {name: page, path: /health}
      - sse: {name: ticks, url: "/sse/ticker?every_ms=50", expect: {event: tick, timeout: 2s}}
      - sse: {name: ticks, expect: {event: tick, count: 2, timeout: 2s}}
      - request: {name: again, path: /health}
"#;
    let before = t.connections_accepted();
    let mut args = vec!["--http2"];
    args.extend_from_slice(extra);
    let (out, s) = run(dir.path(), yaml, &t.url(), &args);
    assert_exit(&out, 0);
    assert_eq!(s.errors.count, 0, "{}\n{:?}", stderr(&out), s.errors);
    let c = &s.connections;
    assert_eq!((c.opened, c.by_protocol.http2), (3, 3), "{c:?}");
    assert_eq!(
        t.connections_accepted() - before,
        3,
        "accepted by the target"
    );
    let ticks = &s.streams["ticks"];
    assert!(ticks.messages.received >= 9, "{:?}", ticks.messages);
    assert!(s.by_name["again"].requests >= 3, "{:?}", s.by_name);
    s
}

#[test]
fn with_http2_over_h2c_a_users_sse_stream_and_requests_share_one_connection() {
    let t = target();
    let s = sse_shares_the_users_http2_connection(&t, &[]);
    assert_eq!(s.connections.protocol, "h2c");
}

#[test]
fn with_http2_over_tls_a_users_sse_stream_and_requests_share_one_connection() {
    let t = target::spawn(TargetOptions {
        tls: true,
        ..TargetOptions::loopback()
    })
    .expect("target starts");
    let s = sse_shares_the_users_http2_connection(&t, &["--insecure"]);
    assert_eq!(s.connections.protocol, "h2");
    assert_eq!(s.connections.handshakes, 3);
}
