//! gRPC calls through the client layer (`headroom::client::grpc` on an h2c
//! `http2::Connection`) against grpc-go's route_guide example server: unary replies
//! as JSON, a server stream's message count and status, UNIMPLEMENTED as `grpc`.

use std::path::Path;
use std::time::Duration;

use crate::support::{route_guide_proto, RouteGuide};
use headroom::client::grpc::{call, CallError, CallOptions, Schema};
use headroom::client::http2::{Connection, Settings};
use headroom::metrics::ErrorKind;
use serde_json::json;

/// Five features, three inside the rectangle (40..41°N, 75..74°W).
fn features() -> serde_json::Value {
    let f = |lat: i64, lon: i64, name: &str| json!({"location": {"latitude": lat, "longitude": lon}, "name": name});
    json!([
        f(407838351, -746143763, "Patriots Path, Mendham, NJ"),
        f(408122808, -743999179, "101 New Jersey 10, Whippany, NJ"),
        f(409146138, -746188906, ""),
        f(413628156, -749015468, "outside: north"),
        f(402647019, -747071791, "4001 Tremley Point Road, Linden, NJ"),
    ])
}

fn local<F: std::future::Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, f)
}

async fn connect(server: &RouteGuide) -> Connection {
    let tcp = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    Connection::handshake(tcp, &Settings::default())
        .await
        .unwrap()
}

fn options(server: &RouteGuide) -> CallOptions {
    CallOptions {
        base: server.url().parse().unwrap(),
        timeout: Some(Duration::from_secs(2)),
        metadata: vec![],
        max_message: 4 << 20,
    }
}

fn schema(files: &[&str]) -> Schema {
    let dir = route_guide_proto().parent().unwrap().to_path_buf();
    let files: Vec<String> = files.iter().map(|f| f.to_string()).collect();
    Schema::compile(Path::new(&dir), &files).unwrap()
}

#[test]
fn unary_get_feature_returns_the_feature_as_json() {
    let server = RouteGuide::start(&features());
    let method = schema(&["route_guide.proto"])
        .method("routeguide.RouteGuide/GetFeature")
        .unwrap();
    assert!(!method.server_streaming);
    local(async {
        let conn = connect(&server).await;
        let message = method
            .encode(&json!({"latitude": 408122808, "longitude": -743999179}))
            .unwrap();
        let reply = call::unary(&conn, &method, &message, &options(&server))
            .await
            .unwrap();
        assert_eq!(reply.json["name"], "101 New Jersey 10, Whippany, NJ");
        assert_eq!(reply.json["location"]["latitude"], 408122808);
        // Prefix 5 + name (2 + 31) + location (2 + latitude 1 + 5 + negative longitude
        // 1 + 10, int32 sign-extended to a 10-byte varint).
        assert_eq!(reply.wire_bytes, 5 + 33 + 19);
        // An unknown point: an unnamed feature, its empty name still present.
        let message = method
            .encode(&json!({"latitude": 1, "longitude": 2}))
            .unwrap();
        let reply = call::unary(&conn, &method, &message, &options(&server))
            .await
            .unwrap();
        assert_eq!(reply.json["name"], "");
    });
}

#[test]
fn server_streaming_list_features_counts_messages_and_ends_ok() {
    let server = RouteGuide::start(&features());
    let method = schema(&["route_guide.proto"])
        .method("routeguide.RouteGuide/ListFeatures")
        .unwrap();
    assert!(method.server_streaming);
    local(async {
        let conn = connect(&server).await;
        let rect = json!({
            "lo": {"latitude": 400000000, "longitude": -750000000},
            "hi": {"latitude": 410000000, "longitude": -740000000}
        });
        let message = method.encode(&rect).unwrap();
        let mut responses = call::start(&conn, &method, &message, &options(&server))
            .await
            .unwrap();
        let mut names = Vec::new();
        while let Some(reply) = responses.next().await.unwrap() {
            names.push(reply.json["name"].as_str().unwrap().to_string());
        }
        assert_eq!(names.len(), 4, "{names:?}");
        assert!(!names.iter().any(|n| n.starts_with("outside")));
        assert_eq!(responses.status().await.unwrap().name(), "OK");
    });
}

#[test]
fn an_unimplemented_service_ends_with_unimplemented_as_grpc() {
    let server = RouteGuide::start(&features());
    let method = schema(&["grpc_missing.proto"])
        .method("routeguide.Atlas/Find")
        .unwrap();
    local(async {
        let conn = connect(&server).await;
        let message = method.encode(&json!({"latitude": 3})).unwrap();
        let err = call::unary(&conn, &method, &message, &options(&server))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Grpc, "{err}");
        assert_eq!(err.status_name().as_deref(), Some("UNIMPLEMENTED"));
        assert!(
            matches!(err, CallError::Status(ref s) if s.message.contains("Atlas")),
            "{err}"
        );
        // The connection is still usable afterwards.
        let ok = schema(&["route_guide.proto"])
            .method("routeguide.RouteGuide/GetFeature")
            .unwrap();
        let message = ok.encode(&json!({"latitude": 1})).unwrap();
        call::unary(&conn, &ok, &message, &options(&server))
            .await
            .unwrap();
    });
}

#[test]
fn a_message_limit_below_a_reply_fails_as_protocol() {
    let server = RouteGuide::start(&features());
    let method = schema(&["route_guide.proto"])
        .method("routeguide.RouteGuide/GetFeature")
        .unwrap();
    local(async {
        let conn = connect(&server).await;
        let message = method
            .encode(&json!({"latitude": 408122808, "longitude": -743999179}))
            .unwrap();
        let mut options = options(&server);
        options.max_message = 10;
        let err = call::unary(&conn, &method, &message, &options)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Protocol);
        assert!(err.to_string().contains("exceeds the limit of 10"), "{err}");
    });
}

/// An h2c server answering every call with the body named by its `x-hostile` header:
/// `huge` (a 4 GiB length prefix, then nothing), `cut` (a prefix for 10 bytes, 3 sent,
/// then OK trailers), `zip` (the compressed flag without grpc-encoding), `bare` (a good
/// message, then the end of the stream with no trailers).
fn hostile_server() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((tcp, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::handshake(tcp).await else {
                        return;
                    };
                    let mut held = Vec::new();
                    while let Some(Ok((request, mut respond))) = conn.accept().await {
                        let mode = request.headers()["x-hostile"].to_str().unwrap().to_string();
                        let head = http::Response::builder()
                            .header("content-type", "application/grpc")
                            .body(())
                            .unwrap();
                        let mut send = respond.send_response(head, false).unwrap();
                        let body: &[u8] = match mode.as_str() {
                            "huge" => &[0, 0xff, 0xff, 0xff, 0xff],
                            "cut" => &[0, 0, 0, 0, 10, 1, 2, 3],
                            "zip" => &[1, 0, 0, 0, 1, 9],
                            _ => &[0, 0, 0, 0, 2, 0x08, 0x07],
                        };
                        let bare = mode == "bare";
                        send.send_data(bytes::Bytes::from_static(body), bare)
                            .unwrap();
                        if mode == "cut" {
                            let mut trailers = http::HeaderMap::new();
                            trailers.insert("grpc-status", "0".parse().unwrap());
                            send.send_trailers(trailers).unwrap();
                        }
                        // Hold the rest open: the client must not wait for more.
                        held.push(send);
                    }
                });
            }
        });
    });
    addr
}

#[test]
fn hostile_grpc_bodies_fail_as_protocol_at_once() {
    let addr = hostile_server();
    let method = schema(&["grpc_missing.proto"])
        .method("routeguide.Atlas/Find")
        .unwrap();
    local(async {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        let conn = Connection::handshake(tcp, &Settings::default())
            .await
            .unwrap();
        let message = method.encode(&json!({"latitude": 7})).unwrap();
        for (mode, want) in [
            (
                "huge",
                "a message of 4294967295 bytes exceeds the limit of 4194304",
            ),
            ("cut", "the body ended inside a message (8 bytes left over)"),
            ("zip", "compressed message without a grpc-encoding"),
            ("bare", "the call ended without a grpc-status"),
        ] {
            let options = CallOptions {
                base: format!("http://{addr}").parse().unwrap(),
                timeout: Some(Duration::from_secs(2)),
                metadata: vec![(
                    http::HeaderName::from_static("x-hostile"),
                    http::HeaderValue::from_static(mode),
                )],
                max_message: 4 << 20,
            };
            let started = std::time::Instant::now();
            let err = tokio::time::timeout(
                Duration::from_secs(2),
                call::unary(&conn, &method, &message, &options),
            )
            .await
            .unwrap_or_else(|_| panic!("{mode}: the call waited for more"))
            .unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Protocol, "{mode}: {err}");
            assert!(err.to_string().contains(want), "{mode}: {err}");
            assert!(started.elapsed() < Duration::from_secs(1), "{mode}");
        }
    });
}
