//! `ws:` flow steps end to end: the built `headroom` binary against the built-in
//! target's `/ws/echo` and `/ws/room/{name}`, a WebSocket server nobody here wrote
//! (the `websockets` library's server on PyPI, tests/peers/ws_echo.py), and hostile servers that drop the connection or send too much.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use headroom::metrics::summary::Summary;
use headroom::target::{self, RunningTarget, TargetOptions};
use tokio_tungstenite::tungstenite::Message;

use crate::support::{assert_exit, free_port, peer_path, run_with_summary, stderr};

fn target() -> RunningTarget {
    target::spawn(TargetOptions::loopback()).expect("target starts")
}

/// Runs scenario `yaml` (with `{url}` replaced by `url`) and returns its summary.
fn run(dir: &Path, yaml: &str, url: &str) -> (std::process::Output, Summary) {
    let scenario = dir.join("ws.yaml");
    std::fs::write(&scenario, yaml.replace("{url}", url)).unwrap();
    run_with_summary(dir, &[scenario.to_str().unwrap()], Duration::from_secs(30))
}

#[test]
fn echo_round_trip_reads_the_targets_added_delay() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let (out, s) = run(
        dir.path(),
        r#"
target: {url}
load: {model: users, users: 2, duration: 2s}
flows:
  - name: echo
    steps:
      - ws: {name: echo, url: "/ws/echo?delay_ms=20"}
      - ws: {name: echo, send: {json: {n: "{{ rand_int(0, 1000000) }}", kind: ping}}, expect: {json: {"$.kind": ping}, timeout: 1s}}
thresholds: ["echo.message_p95 < 100ms", "ws.message_p50 < 30ms", "stream_errors < 0.1%"]
"#,
        &t.url(),
    );
    assert_exit(&out, 0);
    let e = &s.streams["echo"];
    assert_eq!(e.protocol, "ws");
    assert_eq!(
        e.sessions, 2,
        "one session per user, kept across iterations"
    );
    assert!(e.round_trips >= 100, "{} round trips", e.round_trips);
    let p50 = e.message_latency_ms.p50;
    // The echo's delay is the floor; the rest is two hops on loopback and the
    // scheduler's lateness on a busy machine.
    assert!(
        (19.5..=28.0).contains(&p50),
        "p50 {p50} ms for a 20 ms echo"
    );
    assert_eq!(e.errors.count, 0, "{:?}", e.errors);
    assert!(e.messages.received >= e.round_trips && e.messages.sent >= e.round_trips);
    assert!(e.bytes.sent > e.messages.sent * 20, "{:?}", e.bytes);
    assert!(
        e.connect_ms.p50 > 0.0 && e.session_ms.max > 1000.0,
        "{:?}",
        e.session_ms
    );
    // Each round trip is an operation under the step's name, so the identity holds.
    assert_eq!(s.by_name["echo.send"].requests, e.round_trips);
    assert_eq!(s.by_name["echo.open"].requests, 2);
    assert!(s.thresholds.iter().all(|t| t.ok), "{:?}", s.thresholds);
}

/// A WebSocket server that, per connection, echoes `echoes` messages and then either
/// reads one more and drops the TCP connection without a close frame (while the
/// client waits for the echo), or sends a 2 MiB message.
fn hostile(echoes: usize, oversized: bool) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                tokio::spawn(async move {
                    let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
                        return;
                    };
                    for _ in 0..echoes {
                        match ws.next().await {
                            Some(Ok(m)) if m.is_text() => {
                                if ws.send(m).await.is_err() {
                                    return;
                                }
                            }
                            _ => return,
                        }
                    }
                    if !oversized {
                        // Take one more message and never answer it: a step waits.
                        let _ = ws.next().await;
                    }
                    if oversized {
                        let big = "x".repeat(2 << 20);
                        let _ = ws.send(Message::Text(big.into())).await;
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                    // Dropped here: the TCP connection ends with no close frame.
                });
            }
        });
    });
    addr
}

#[test]
fn a_dropped_websocket_is_a_stream_error_and_the_run_goes_on() {
    let addr = hostile(3, false);
    let dir = tempfile::tempdir().unwrap();
    let (out, s) = run(
        dir.path(),
        r#"
target: http://{url}
load: {model: users, users: 1, duration: 1500ms, think: 20ms}
flows:
  - name: f
    steps:
      - ws: {name: s, url: /}
      - ws: {name: s, send: hi, expect: {regex: "^hi$", timeout: 500ms}}
"#,
        &addr.to_string(),
    );
    assert_exit(&out, 0);
    let st = &s.streams["s"];
    assert!(
        st.sessions >= 3,
        "the user reopened after each drop: {st:?}"
    );
    assert!(st.errors.count >= 2, "{:?}", st.errors);
    assert!(st.errors.by_kind.contains_key("stream"), "{:?}", st.errors);
    // The steps that waited on a dropped stream failed as `stream` operations.
    assert!(s.errors.by_kind["stream"] >= 2, "{:?}", s.errors);
    assert_eq!(s.by_name["s.send"].errors.count, s.errors.count);
    assert!(st.round_trips >= 3 * (st.sessions - 1), "{st:?}");
}

#[test]
fn an_oversized_message_fails_the_stream_without_being_buffered() {
    let addr = hostile(1, true);
    let dir = tempfile::tempdir().unwrap();
    let (out, s) = run(
        dir.path(),
        r#"
target: http://{url}
load: {model: users, users: 1, duration: 1s, think: 50ms}
flows:
  - name: f
    steps:
      - ws: {name: s, url: /}
      - ws: {name: s, send: hi, expect: {regex: "^hi$", timeout: 500ms}}
      - ws: {name: s, expect: {regex: "never", timeout: 500ms}}
"#,
        &addr.to_string(),
    );
    assert_exit(&out, 0);
    let st = &s.streams["s"];
    assert!(
        st.errors.by_kind.get("protocol").copied().unwrap_or(0) >= 1,
        "{:?}",
        st.errors
    );
    assert_eq!(
        st.bytes.received as usize % (2 << 20),
        st.bytes.received as usize,
        "no 2 MiB message counted"
    );
}

/// The `websockets` echo peer, killed when dropped.
struct EchoPeer(Child);

impl Drop for EchoPeer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn ws_steps_work_against_an_echo_server_nobody_here_wrote() {
    let port = free_port();
    let app = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/ws_echo.py");
    let child = Command::new(peer_path("websockets/venv/bin/python"))
        // A WebSocket server on loopback whose every message goes back as it came.
        .arg(app)
        .arg(port.to_string())
        .stdout(Stdio::null())
        // It logs a traceback for the readiness probe below (a connection that never
        // sends a handshake).
        .stderr(Stdio::null())
        .spawn()
        .expect("the websockets echo peer starts");
    let _guard = EchoPeer(child);
    let began = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "the echo peer did not listen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let dir = tempfile::tempdir().unwrap();
    let (out, s) = run(
        dir.path(),
        r#"
target: http://127.0.0.1:{url}
load: {model: users, users: 2, duration: 1s, think: 10ms}
defaults: {timeout: 2s}
flows:
  - name: f
    steps:
      - ws: {name: peer, url: /}
      - ws: {name: peer, send: {text: "hello {{ rand_int(1, 9) }}"}, expect: {regex: "^hello [1-9]$"}}
      - ws: {name: peer, send: {json: {id: "{{ uuid() }}"}}, expect: {jsonpath: "$.id"}, capture: {id: "$.id"}}
      - ws: {name: peer, send: "again {{ id }}", expect: {regex: "^again [0-9a-f-]{36}$"}}
"#,
        &port.to_string(),
    );
    assert_exit(&out, 0);
    let p = &s.streams["peer"];
    assert_eq!(p.errors.count, 0, "{:?}\n{}", p.errors, stderr(&out));
    assert!(p.round_trips >= 30, "{p:?}");
    assert_eq!(p.messages.sent, p.round_trips);
}

#[test]
fn seed_002_shape_users_hold_a_room_while_making_requests() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let (out, s) = run(
        dir.path(),
        r#"
target: {url}
load: {model: users, users: 500, duration: 3s, think: 500ms}
defaults: {timeout: 2s}
flows:
  - name: player
    steps:
      - ws: {name: game, url: "/ws/room/r{{ rand_int(0, 99) }}", expect: {json: {"$.type": joined}, timeout: 2s}}
      - request: {name: health, path: /health}
      - ws: {name: game, send: {json: {type: move, cell: "{{ rand_int(0, 8) }}"}}, expect: {json: {"$.type": move}, timeout: 2s}}
"#,
        &t.url(),
    );
    assert_exit(&out, 0);
    let g = &s.streams["game"];
    assert_eq!(g.sessions, 500, "{g:?}");
    assert!(
        s.by_name["health"].requests >= 500,
        "{:?}",
        s.by_name["health"]
    );
    // Every move goes to the ~5 members of its room: more received than sent.
    assert!(g.messages.sent >= 500, "{g:?}");
    assert!(g.messages.received > g.messages.sent, "{g:?}");
    // A reply is a message that arrived after the send, never one already buffered.
    assert!(g.message_latency_ms.min > 0.0, "{:?}", g.message_latency_ms);
    assert!(g.errors.rate < 0.01, "{g:?}\n{:?}", s.by_name);
    assert_eq!(s.by_name["game.open"].requests, 500);
}

#[test]
fn wss_goes_through_the_client_layers_tls_with_cacert_even_with_http2() {
    let t = target::spawn(TargetOptions {
        tls: true,
        ..TargetOptions::loopback()
    })
    .expect("tls target");
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, t.cert_pem().unwrap()).unwrap();
    let scenario = dir.path().join("wss.yaml");
    std::fs::write(
        &scenario,
        format!(
            r#"
target: {}
load: {{model: users, users: 1, duration: 1s, think: 20ms}}
defaults: {{timeout: 2s}}
flows:
  - name: f
    steps:
      - ws: {{name: secure, url: /ws/echo}}
      - request: {{path: /health}}
      - ws: {{name: secure, send: ping, expect: {{regex: "^ping$"}}}}
"#,
            t.url()
        ),
    )
    .unwrap();
    // --http2 makes the run's TLS offer only h2 by ALPN; the WebSocket must still get
    // http/1.1, the only protocol a WebSocket upgrade can use.
    let (out, s) = run_with_summary(
        dir.path(),
        &[
            scenario.to_str().unwrap(),
            "--cacert",
            ca.to_str().unwrap(),
            "--http2",
        ],
        Duration::from_secs(30),
    );
    assert_exit(&out, 0);
    assert_eq!(s.errors.count, 0, "{:?}\n{}", s.errors, stderr(&out));
    let st = &s.streams["secure"];
    assert_eq!(st.sessions, 1);
    assert!(st.round_trips >= 10, "{st:?}");
    assert_eq!(s.connections.protocol, "h2");

    // Without the CA, the stream fails as `tls`, and the run goes on.
    let (out, s) = run_with_summary(
        dir.path(),
        &[scenario.to_str().unwrap()],
        Duration::from_secs(30),
    );
    assert_exit(&out, 0);
    assert!(
        s.streams["secure"].errors.by_kind.contains_key("tls"),
        "{:?}",
        s.streams["secure"].errors
    );
}

#[test]
fn a_plain_targets_run_gives_its_cacert_to_a_wss_stream_elsewhere() {
    // The run's target speaks plain HTTP; its stream goes to another origin over TLS.
    // `--cacert` is for that origin too, as curl applies it to whatever URL it fetches.
    let plain = target();
    let secure = target::spawn(TargetOptions {
        tls: true,
        ..TargetOptions::loopback()
    })
    .expect("tls target");
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, secure.cert_pem().unwrap()).unwrap();
    let wss = format!("{}/ws/echo", secure.url().replacen("https://", "wss://", 1));
    let yaml = format!(
        r#"
target: {}
load: {{model: users, users: 2, duration: 1s, think: 20ms}}
defaults: {{timeout: 2s}}
flows:
  - name: f
    steps:
      - ws: {{name: secure, url: "{wss}"}}
      - request: {{path: /health}}
      - ws: {{name: secure, send: ping, expect: {{regex: "^ping$"}}}}
"#,
        plain.url()
    );
    let scenario = dir.path().join("elsewhere.yaml");
    std::fs::write(&scenario, yaml).unwrap();
    let args = |cacert: bool| {
        let mut a = vec![scenario.to_str().unwrap().to_string()];
        if cacert {
            a.extend(["--cacert".into(), ca.to_str().unwrap().into()]);
        }
        a
    };
    let with = args(true);
    let with: Vec<&str> = with.iter().map(String::as_str).collect();
    let (out, s) = run_with_summary(dir.path(), &with, Duration::from_secs(30));
    assert_exit(&out, 0);
    assert_eq!(s.errors.count, 0, "{:?}\n{}", s.errors, stderr(&out));
    let st = &s.streams["secure"];
    assert_eq!(st.sessions, 2, "{st:?}");
    assert!(st.round_trips >= 10, "{st:?}");
    assert_eq!(st.errors.count, 0, "{st:?}");

    // Without it, the stream's handshake fails as `tls`.
    let without = args(false);
    let without: Vec<&str> = without.iter().map(String::as_str).collect();
    let (out, s) = run_with_summary(dir.path(), &without, Duration::from_secs(30));
    assert_exit(&out, 0);
    assert!(
        s.streams["secure"].errors.by_kind.contains_key("tls"),
        "{:?}",
        s.streams["secure"].errors
    );
}

#[test]
fn an_arrivals_streams_close_when_its_iteration_ends() {
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let (out, s) = run(
        dir.path(),
        r#"
target: {url}
load: {rate: 20, duration: 1s}
defaults: {timeout: 2s}
flows:
  - name: f
    steps:
      - ws: {name: e, url: /ws/echo}
      - ws: {name: e, send: one, expect: {regex: one}}
"#,
        &t.url(),
    );
    assert_exit(&out, 0);
    let e = &s.streams["e"];
    assert_eq!(e.sessions, 20, "{e:?}");
    assert_eq!(e.round_trips, 20);
    assert_eq!(
        e.close_codes.get("1000"),
        Some(&20),
        "each arrival closed its stream: {e:?}"
    );
    assert!(e.session_ms.max < 1000.0, "{:?}", e.session_ms);
    assert_eq!(s.scheduled, 40, "two operations per arrival");
}

#[test]
fn a_refused_upgrade_fails_the_open_by_status_and_the_expect_count_waits_for_n() {
    // Each iteration picks one of the two flows at random, and both must have run: a
    // short think gives the second some dozens of iterations even on a busy machine
    // (with 100 ms, about nine, all one flow about once in 250 runs).
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let (out, s) = run(
        dir.path(),
        r#"
target: {url}
load: {model: users, users: 1, duration: 1s, think: 10ms}
defaults: {timeout: 1s}
flows:
  - name: f
    steps:
      - ws: {name: nowhere, url: /ws/nothing}
  - name: g
    steps:
      - ws: {name: room, url: /ws/room/count-test}
      - ws: {name: room, send: a}
      - ws: {name: room, send: b}
      - ws: {name: room, expect: {regex: "^[ab]$", count: 2}}
"#,
        &t.url(),
    );
    assert_exit(&out, 0);
    let nowhere = &s.streams["nowhere"];
    assert_eq!(
        nowhere.errors.by_kind.get("status_4xx"),
        Some(&nowhere.operations),
        "{nowhere:?}"
    );
    let room = &s.streams["room"];
    assert_eq!(room.errors.count, 0, "{room:?}");
    assert_eq!(
        s.by_name["room.expect"].requests * 2,
        room.messages.sent,
        "{:?}",
        s.by_name
    );
}

#[test]
fn a_flow_that_only_holds_a_stream_waits_on_it_instead_of_spinning() {
    // Every iteration after the first is a `url:` for a stream the user already holds,
    // so it does nothing and never awaits. Looping on it spun a core and starved the
    // thread's other users and the streams' own pumps.
    let t = target();
    let dir = tempfile::tempdir().unwrap();
    let (out, s) = run(
        dir.path(),
        r#"
target: {url}
load: {model: users, users: 3, duration: 2s}
flows:
  - name: lurker
    steps:
      - ws: {name: hold, url: /ws/room/lobby}
"#,
        &t.url(),
    );
    assert_exit(&out, 0);
    let h = &s.streams["hold"];
    assert_eq!(h.sessions, 3, "one stream per user, held: {h:?}");
    assert_eq!(s.by_name["hold.open"].requests, 3, "{:?}", s.by_name);
    assert!(h.session_ms.max > 1500.0, "held to the end: {h:?}");
    assert!(
        s.generator.cpu_percent < 50.0,
        "an idle user must not busy-loop: {:?}",
        s.generator
    );
}
