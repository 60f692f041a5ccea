//! `grpc:` flow steps run by `headroom run` against grpc-go's route_guide example server:
//! a unary call whose reply is matched and captured, a server stream's message count,
//! UNIMPLEMENTED counted as `grpc`, bad input refused at load time with file and reason,
//! and a call past its deadline counted as `timeout` (against a server that holds it).

use std::path::Path;
use std::time::Duration;

use crate::support::{
    assert_exit, certs::write, route_guide_proto, run_headroom, run_with_summary, stderr,
    RouteGuide,
};

const LIMIT: Duration = Duration::from_secs(20);

/// Five features, four inside the rectangle the scenario lists.
fn features() -> serde_json::Value {
    serde_json::json!([
        {"location": {"latitude": 407838351, "longitude": -746143763}, "name": "Patriots Path"},
        {"location": {"latitude": 408122808, "longitude": -743999179}, "name": "101 New Jersey 10"},
        {"location": {"latitude": 409146138, "longitude": -746188906}, "name": ""},
        {"location": {"latitude": 413628156, "longitude": -749015468}, "name": "outside"},
        {"location": {"latitude": 402647019, "longitude": -747071791}, "name": "Tremley Point"},
    ])
}

/// Copies the proto fixtures next to the scenario (paths are relative to it).
fn with_protos(dir: &Path) {
    let fixtures = route_guide_proto().parent().unwrap().to_path_buf();
    for f in ["route_guide.proto", "grpc_missing.proto"] {
        std::fs::copy(fixtures.join(f), dir.join(f)).unwrap();
    }
}

#[test]
fn unary_stream_and_unimplemented_calls_against_route_guide() {
    let server = RouteGuide::start(&features());
    let dir = tempfile::tempdir().unwrap();
    with_protos(dir.path());
    let scenario = r#"name: grpc
target: TARGET
load: {model: users, users: 2, duration: 1s}
flows:
  - name: guide
    steps:
      - grpc:
          name: feature
          proto: route_guide.proto
          call: routeguide.RouteGuide/GetFeature
          message: {latitude: 408122808, longitude: -743999179}
          metadata: {x-run: headroom}
          expect: {json: {"$.name": "101 New Jersey 10"}}
          capture: {lat: "$.location.latitude"}
      - grpc:
          name: list
          proto: [route_guide.proto]
          call: routeguide.RouteGuide/ListFeatures
          message: {lo: {latitude: 400000000, longitude: -750000000}, hi: {latitude: 410000000, longitude: -740000000}}
          expect: {jsonpath: "$.name", count: 4, timeout: 2s}
      - grpc:
          name: atlas
          proto: grpc_missing.proto
          call: routeguide.Atlas/Find
          message: {latitude: "{{ lat }}"}
"#
    .replace("TARGET", &server.url());
    let path = write(dir.path(), "grpc.yaml", &scenario);
    let (out, s) = run_with_summary(dir.path(), &[path.to_str().unwrap()], LIMIT);
    let feature = &s.by_name["feature.call"];
    let list = &s.by_name["list.call"];
    let atlas = &s.by_name["atlas.call"];
    assert!(feature.requests >= 2, "{}\n{feature:?}", stderr(&out));
    assert_eq!(feature.errors.count, 0, "{}\n{feature:?}", stderr(&out));
    assert_eq!(list.errors.count, 0, "{}\n{list:?}", stderr(&out));
    // Every iteration reaches the unimplemented call (the captured latitude rendered
    // into an int32 field), and every one fails as `grpc`. The server stream is held
    // by its user: an iteration that finds the previous call still open (its four
    // features read, its status not yet in) skips the call step, as a `url:` step of a
    // stream still live is skipped; so there are at most as many calls as iterations.
    assert!(list.requests <= atlas.requests, "{list:?} {atlas:?}");
    assert!(2 * list.requests >= atlas.requests, "{list:?} {atlas:?}");
    assert!(atlas.requests >= 2);
    assert_eq!(
        atlas.errors.by_kind.get("grpc"),
        Some(&atlas.requests),
        "{atlas:?}"
    );
    assert_eq!(s.errors.count, atlas.requests, "{:?}", s.errors);
    // The streams summary counts calls by status name, and the server stream's messages.
    let st = |name: &str, status: &str| s.streams[name].status.get(status).copied();
    assert_eq!(
        st("feature", "OK"),
        Some(feature.requests),
        "{:?}",
        s.streams
    );
    assert_eq!(st("atlas", "UNIMPLEMENTED"), Some(atlas.requests));
    assert_eq!(s.streams["list"].protocol, "grpc");
    // Every call ends with a status: the server's OK, or CANCELLED for a user's last
    // call still held when the run ended (one per user at most).
    let list_ok = st("list", "OK").unwrap_or(0);
    let cancelled = st("list", "CANCELLED").unwrap_or(0);
    assert_eq!(
        list_ok + cancelled,
        list.requests,
        "{:?}",
        s.streams["list"].status
    );
    assert!(cancelled <= 2, "{cancelled} CANCELLED");
    assert_eq!(s.streams["list"].sessions, list.requests);
    assert!(s.streams["list"].messages.received >= 4 * list_ok);
    assert!(s.streams["list"].messages.received <= 4 * list.requests);
}

#[test]
fn bad_protos_methods_and_messages_are_refused_at_load_time() {
    let dir = tempfile::tempdir().unwrap();
    with_protos(dir.path());
    std::fs::write(
        dir.path().join("broken.proto"),
        "syntax = \"proto3\";\nmessage A { int32 x = ; }\n",
    )
    .unwrap();
    let cases = [
        (
            "proto: broken.proto\n          call: a.B/C",
            "broken.proto",
        ),
        (
            "proto: route_guide.proto\n          call: routeguide.RouteGuide/Nope",
            "has no method \"Nope\"",
        ),
        (
            "proto: route_guide.proto\n          call: routeguide.RouteGuide/GetFeature\n          message: {latitude: north}",
            "message does not fit routeguide.Point",
        ),
        (
            "proto: missing.proto\n          call: routeguide.RouteGuide/GetFeature",
            "missing.proto",
        ),
        (
            "call: routeguide.RouteGuide/GetFeature",
            "`call` needs `proto`",
        ),
    ];
    for (keys, want) in cases {
        let scenario = format!(
            "name: bad\ntarget: http://127.0.0.1:9\nload: {{model: users, users: 1, duration: 1s}}\nflows:\n  - name: f\n    steps:\n      - grpc:\n          name: g\n          {keys}\n"
        );
        let path = write(dir.path(), "bad.yaml", &scenario);
        let out = run_headroom(["run", path.to_str().unwrap(), "--quiet"], LIMIT);
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(err.contains(want), "{keys}: {err}");
        // The scenario's file, line and column, and the field's path.
        assert!(err.contains("bad.yaml:"), "{err}");
        assert!(err.contains("flows[0].steps[0].grpc"), "{err}");
    }
}

/// An HTTP/2 (h2c) server that records each request's `grpc-timeout` and then, for
/// `/routeguide.RouteGuide/ListFeatures`, answers trailers-only DEADLINE_EXCEEDED at
/// once, and for any other path holds the call unanswered until the client goes away.
struct Holding {
    addr: std::net::SocketAddr,
    timeouts: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Holding {
    fn start() -> Holding {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let timeouts = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = timeouts.clone();
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
                    let seen = seen.clone();
                    tokio::spawn(async move {
                        let Ok(mut conn) = h2::server::handshake(tcp).await else {
                            return;
                        };
                        let mut held = Vec::new();
                        while let Some(Ok((request, mut respond))) = conn.accept().await {
                            if let Some(t) = request.headers().get("grpc-timeout") {
                                seen.lock().unwrap().push(t.to_str().unwrap().to_string());
                            }
                            if request.uri().path().ends_with("/ListFeatures") {
                                let response = http::Response::builder()
                                    .header("content-type", "application/grpc")
                                    .header("grpc-status", "4")
                                    .header("grpc-message", "too%20slow")
                                    .body(())
                                    .unwrap();
                                let _ = respond.send_response(response, true);
                            } else {
                                held.push(respond);
                            }
                        }
                    });
                }
            });
        });
        Holding { addr, timeouts }
    }
}

fn deadline_scenario(dir: &Path, target: &str, call: &str, extra: &str) -> std::path::PathBuf {
    let scenario = format!(
        "name: deadline\ntarget: {target}\nload: {{model: users, users: 1, duration: 1s}}\nflows:\n  - name: f\n    steps:\n      - grpc:\n          name: slow\n          proto: route_guide.proto\n          call: {call}\n          message: {{}}\n          timeout: 300ms\n{extra}"
    );
    write(dir, "deadline.yaml", &scenario)
}

#[test]
fn a_call_past_its_deadline_and_deadline_exceeded_count_as_timeout() {
    let server = Holding::start();
    let dir = tempfile::tempdir().unwrap();
    with_protos(dir.path());
    let target = format!("http://{}", server.addr);
    // The server holds the call: the step's 300 ms deadline ends it, sent as grpc-timeout.
    let path = deadline_scenario(dir.path(), &target, "routeguide.RouteGuide/GetFeature", "");
    let (out, s) = run_with_summary(dir.path(), &[path.to_str().unwrap()], LIMIT);
    let slow = &s.by_name["slow.call"];
    assert!(slow.requests >= 2, "{}\n{slow:?}", stderr(&out));
    assert_eq!(
        slow.errors.by_kind.get("timeout"),
        Some(&slow.requests),
        "{slow:?}"
    );
    assert!(slow.latency_ms.p50 >= 295.0, "{:?}", slow.latency_ms);
    let timeouts = server.timeouts.lock().unwrap().clone();
    assert!(!timeouts.is_empty());
    assert!(timeouts.iter().all(|t| t == "300000u"), "{timeouts:?}");
    // The server answers DEADLINE_EXCEEDED itself (trailers-only): `timeout` too, at once.
    let list = "routeguide.RouteGuide/ListFeatures";
    let path = deadline_scenario(dir.path(), &target, list, "");
    let (_, s) = run_with_summary(dir.path(), &[path.to_str().unwrap()], LIMIT);
    let fast = &s.by_name["slow.call"];
    assert!(fast.requests > 10, "{fast:?}");
    assert_eq!(
        fast.errors.by_kind.get("timeout"),
        Some(&fast.requests),
        "{fast:?}"
    );
    assert!(fast.latency_ms.p50 < 100.0, "{:?}", fast.latency_ms);
    // A server stream is held as long as its user wants: the step's timeout bounds only
    // the step's wait, so no grpc-timeout is sent without a `deadline:`, and its value
    // with one.
    let sent = server.timeouts.lock().unwrap().len();
    assert_eq!(sent, timeouts.len(), "no grpc-timeout for a server stream");
    let path = deadline_scenario(dir.path(), &target, list, "          deadline: 700ms\n");
    let (_, s) = run_with_summary(dir.path(), &[path.to_str().unwrap()], LIMIT);
    let calls = s.by_name["slow.call"].requests as usize;
    let timeouts = server.timeouts.lock().unwrap().clone();
    assert_eq!(timeouts.len(), sent + calls, "{timeouts:?}");
    assert!(
        timeouts[sent..].iter().all(|t| t == "700000u"),
        "{timeouts:?}"
    );
}

/// An h2c server counting its connections: gRPC paths get an empty message and status OK,
/// any other path a plain 200.
fn counting_server() -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let count = std::sync::Arc::new(AtomicUsize::new(0));
    let accepted = count.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((tcp, _)) = listener.accept().await {
                accepted.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::handshake(tcp).await else {
                        return;
                    };
                    while let Some(Ok((request, mut respond))) = conn.accept().await {
                        let grpc = request.uri().path().starts_with("/routeguide.");
                        let head = http::Response::builder()
                            .header(
                                "content-type",
                                if grpc {
                                    "application/grpc"
                                } else {
                                    "text/plain"
                                },
                            )
                            .body(())
                            .unwrap();
                        let Ok(mut send) = respond.send_response(head, false) else {
                            continue;
                        };
                        if grpc {
                            let _ =
                                send.send_data(bytes::Bytes::from_static(&[0, 0, 0, 0, 0]), false);
                            let mut trailers = http::HeaderMap::new();
                            trailers.insert("grpc-status", "0".parse().unwrap());
                            let _ = send.send_trailers(trailers);
                        } else {
                            let _ = send.send_data(bytes::Bytes::from_static(b"ok\n"), true);
                        }
                    }
                });
            }
        });
    });
    (addr, count)
}

#[test]
fn with_http2_a_user_makes_its_calls_and_requests_on_one_connection() {
    let (addr, connections) = counting_server();
    let dir = tempfile::tempdir().unwrap();
    with_protos(dir.path());
    let scenario = format!(
        "name: shared\ntarget: http://{addr}\nload: {{model: users, users: 2, duration: 1s}}\nflows:\n  - name: f\n    steps:\n      - request: {{name: page, path: /}}\n      - grpc:\n          name: feature\n          proto: route_guide.proto\n          call: routeguide.RouteGuide/GetFeature\n      - request: {{name: again, path: /}}\n"
    );
    let path = write(dir.path(), "shared.yaml", &scenario);
    let (out, s) = run_with_summary(dir.path(), &[path.to_str().unwrap(), "--http2"], LIMIT);
    assert_eq!(s.errors.count, 0, "{}\n{:?}", stderr(&out), s.errors);
    assert!(s.by_name["feature.call"].requests >= 4, "{:?}", s.by_name);
    // One connection per user, carrying its requests and its calls alike.
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 2);
}

#[test]
fn over_https_the_call_speaks_h2_by_alpn_and_a_404_counts_as_unimplemented() {
    use headroom::target::{self, TargetOptions};
    // The built-in target speaks h2 by ALPN over its TLS but serves no gRPC: its 404 for
    // the method's path is UNIMPLEMENTED (the gRPC spec's HTTP mapping), kind `grpc`,
    // never `tls` or `protocol`.
    let target = target::spawn(TargetOptions {
        tls: true,
        ..TargetOptions::loopback()
    })
    .expect("built-in target");
    let dir = tempfile::tempdir().unwrap();
    with_protos(dir.path());
    let scenario = format!(
        "name: tls\ntarget: {}\nload: {{model: users, users: 1, duration: 1s, think: 50ms}}\nflows:\n  - name: f\n    steps:\n      - grpc:\n          name: feature\n          proto: route_guide.proto\n          call: routeguide.RouteGuide/GetFeature\n",
        target.url()
    );
    assert!(target.url().starts_with("https://"), "{}", target.url());
    let path = write(dir.path(), "tls.yaml", &scenario);
    let (out, s) = run_with_summary(dir.path(), &[path.to_str().unwrap(), "--insecure"], LIMIT);
    let feature = &s.by_name["feature.call"];
    assert!(feature.requests >= 5, "{}\n{feature:?}", stderr(&out));
    assert_eq!(
        feature.errors.by_kind.get("grpc"),
        Some(&feature.requests),
        "{feature:?}"
    );
    assert_eq!(
        s.streams["feature"].status.get("UNIMPLEMENTED"),
        Some(&feature.requests)
    );
}

/// route_guide.proto split in two directories, as real trees are: under `root`,
/// `protos/routeguide/route_guide.proto` imports `common/point.proto` (the `Point`
/// message), which is found only under `protos/`. The scenario lives elsewhere.
fn split_route_guide(root: &Path) {
    let text = std::fs::read_to_string(route_guide_proto()).unwrap();
    let point = "message Point {\n  int32 latitude = 1;\n  int32 longitude = 2;\n}\n";
    let start = text.find("message Point {").expect("Point in the fixture");
    let end = start + text[start..].find("}\n").unwrap() + 2;
    assert_eq!(text[start..end].replace(' ', ""), point.replace(' ', ""));
    let main = format!("{}{}", &text[..start], &text[end..]).replace(
        "package routeguide;",
        "package routeguide;\nimport \"common/point.proto\";",
    );
    let dir = root.join("protos");
    std::fs::create_dir_all(dir.join("routeguide")).unwrap();
    std::fs::create_dir_all(dir.join("common")).unwrap();
    std::fs::write(dir.join("routeguide/route_guide.proto"), main).unwrap();
    std::fs::write(
        dir.join("common/point.proto"),
        format!("syntax = \"proto3\";\npackage routeguide;\n{point}"),
    )
    .unwrap();
}

/// A unary and a server-stream call of route_guide, with `PROTO` as the steps' `proto:`.
const SPLIT_SCENARIO: &str = r#"name: grpc-imports
target: TARGET
load: {model: users, users: 1, duration: 1s}
flows:
  - name: guide
    steps:
      - grpc:
          name: feature
          proto: PROTO
          call: routeguide.RouteGuide/GetFeature
          message: {latitude: 408122808, longitude: -743999179}
          expect: {json: {"$.name": "101 New Jersey 10", "$.location.latitude": 408122808}}
      - grpc:
          name: list
          proto: PROTO
          call: routeguide.RouteGuide/ListFeatures
          message: {lo: {latitude: 400000000, longitude: -750000000}, hi: {latitude: 410000000, longitude: -740000000}}
          expect: {jsonpath: "$.name", count: 4, timeout: 2s}
"#;

#[test]
fn proto_imports_are_found_in_import_paths_and_proto_path() {
    let server = RouteGuide::start(&features());
    let root = tempfile::tempdir().unwrap();
    split_route_guide(root.path());
    // The scenario one directory down: its paths are relative to it.
    let dir = root.path().join("scenarios");
    std::fs::create_dir_all(&dir).unwrap();
    let file = "../protos/routeguide/route_guide.proto";
    let keyed = format!("{{files: [{file}], import_paths: [../protos]}}");
    let protos = root.path().join("protos").display().to_string();
    for (proto, flags) in [
        (keyed.as_str(), vec![]),
        (file, vec!["--proto-path", protos.as_str()]),
    ] {
        let scenario = SPLIT_SCENARIO
            .replace("TARGET", &server.url())
            .replace("PROTO", proto);
        let path = write(&dir, "grpc.yaml", &scenario);
        let mut args = vec![path.to_str().unwrap()];
        args.extend(flags.iter().copied());
        let (out, s) = run_with_summary(&dir, &args, LIMIT);
        assert_exit(&out, 0);
        assert_eq!(
            s.errors.count,
            0,
            "{proto} {flags:?}: {:?}\n{}",
            s.errors,
            stderr(&out)
        );
        let feature = &s.by_name["feature.call"];
        let list = &s.by_name["list.call"];
        assert!(feature.requests >= 2, "{proto}: {feature:?}");
        assert_eq!(feature.errors.count, 0, "{proto}: {feature:?}");
        assert_eq!(list.errors.count, 0, "{proto}: {list:?}");
        assert!(list.requests >= 1, "{proto}: {list:?}");
        // Every reply matched: the Point messages, defined in the imported file, went
        // out and came back through the server's own types.
        assert_eq!(
            s.streams["feature"].status.get("OK"),
            Some(&feature.requests)
        );
        assert!(s.streams["list"].messages.received >= 4);
    }
}

#[test]
fn a_missing_proto_import_is_named_with_the_paths_searched() {
    let root = tempfile::tempdir().unwrap();
    split_route_guide(root.path());
    let dir = root.path().join("scenarios");
    std::fs::create_dir_all(&dir).unwrap();
    let file = "../protos/routeguide/route_guide.proto";
    let wrong = root.path().join("elsewhere");
    std::fs::create_dir_all(&wrong).unwrap();
    for (proto, flags) in [
        (file.to_string(), vec![]),
        (
            format!("{{files: {file}, import_paths: [../nowhere]}}"),
            vec!["--proto-path".to_string(), wrong.display().to_string()],
        ),
    ] {
        let scenario = SPLIT_SCENARIO
            .replace("TARGET", "http://127.0.0.1:9")
            .replace("PROTO", &proto);
        let path = write(&dir, "grpc.yaml", &scenario);
        let mut args = vec!["run".to_string(), path.display().to_string()];
        args.extend(flags.iter().cloned());
        let out = run_headroom(&args, LIMIT);
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(
            err.contains("grpc.yaml:")
                && err.contains("flows[0].steps[0].grpc.proto")
                && err.contains("import \"common/point.proto\" not found")
                && err.contains("imported by")
                && err.contains("route_guide.proto:")
                && err.contains("searched"),
            "{proto}: {err}"
        );
        for searched in flags.iter().skip(1) {
            assert!(err.contains(searched.as_str()), "{proto}: {err}");
        }
        if proto.contains("nowhere") {
            assert!(err.contains("nowhere"), "{err}");
        }
    }
}
