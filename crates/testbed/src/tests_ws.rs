//! The target's WebSockets over real sockets: echo with a delay, a broadcast room, and
//! hostile input (oversized messages, bad names and parameters, a non-upgrade request).

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

use super::super::test_client::get;
use super::super::{spawn, RunningTarget, TargetOptions};

fn target() -> RunningTarget {
    spawn(TargetOptions::loopback()).expect("target starts")
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

async fn connect(
    t: &RunningTarget,
    path: &str,
) -> tokio_tungstenite::WebSocketStream<tokio::net::TcpStream> {
    let tcp = tokio::net::TcpStream::connect(t.addr()).await.unwrap();
    let url = format!("ws://{}{path}", t.addr());
    tokio_tungstenite::client_async(url, tcp)
        .await
        .expect("upgrade")
        .0
}

#[test]
fn messages_far_bigger_than_a_read_chunk_arrive_whole_both_ways() {
    // Both ends read 4 KiB at a time (`super::READ_CHUNK`); a message of the
    // target's largest size must still come back as one message, byte for byte.
    let t = target();
    block_on(async {
        let tcp = tokio::net::TcpStream::connect(t.addr()).await.unwrap();
        let url = format!("ws://{}/ws/echo", t.addr());
        let config = super::config();
        let (mut ws, _) = tokio_tungstenite::client_async_with_config(url, tcp, Some(config))
            .await
            .expect("upgrade");
        let big: String = (0..super::MAX_MESSAGE - 16)
            .map(|i| (b'a' + (i % 26) as u8) as char)
            .collect();
        for _ in 0..3 {
            ws.send(Message::Text(big.clone().into())).await.unwrap();
            let back = ws.next().await.unwrap().unwrap();
            assert_eq!(back.len(), big.len());
            assert_eq!(back, Message::Text(big.clone().into()));
        }
    });
}

#[test]
fn echo_answers_each_message_after_the_asked_delay() {
    let t = target();
    block_on(async {
        let mut ws = connect(&t, "/ws/echo?delay_ms=20").await;
        for i in 0..5 {
            let sent = Instant::now();
            ws.send(Message::Text(format!("m{i}").into()))
                .await
                .unwrap();
            let back = ws.next().await.unwrap().unwrap();
            let took = sent.elapsed();
            assert_eq!(back, Message::Text(format!("m{i}").into()));
            assert!(
                took >= Duration::from_millis(20) && took < Duration::from_millis(40),
                "{took:?}"
            );
        }
        ws.close(None).await.unwrap();
        // The target answers the close handshake instead of dropping the connection.
        assert!(matches!(ws.next().await, Some(Ok(Message::Close(_)))));
    });
}

#[test]
fn a_room_broadcasts_to_every_member_and_forgets_those_who_leave() {
    let t = target();
    block_on(async {
        let mut a = connect(&t, "/ws/room/lobby").await;
        let joined = a.next().await.unwrap().unwrap();
        assert!(
            joined.to_text().unwrap().contains(r#""members":1"#),
            "{joined:?}"
        );
        let mut b = connect(&t, "/ws/room/lobby").await;
        let joined = b.next().await.unwrap().unwrap();
        assert!(
            joined.to_text().unwrap().contains(r#""members":2"#),
            "{joined:?}"
        );
        b.send(Message::Text("hello".into())).await.unwrap();
        assert_eq!(
            a.next().await.unwrap().unwrap(),
            Message::Text("hello".into())
        );
        assert_eq!(
            b.next().await.unwrap().unwrap(),
            Message::Text("hello".into())
        );
        b.close(None).await.unwrap();
        assert!(
            matches!(b.next().await, Some(Ok(Message::Close(_)))),
            "a room answers a close"
        );
        drop(b);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut c = connect(&t, "/ws/room/lobby").await;
        let joined = c.next().await.unwrap().unwrap();
        assert!(
            joined.to_text().unwrap().contains(r#""members":2"#),
            "b left: {joined:?}"
        );
    });
}

#[test]
fn hostile_input_is_refused_within_limits() {
    let t = target();
    block_on(async {
        // An oversized message ends the socket instead of being buffered.
        let mut ws = connect(&t, "/ws/echo").await;
        let big = "x".repeat(super::MAX_MESSAGE + 1);
        let _ = ws.send(Message::Text(big.into())).await;
        match ws.next().await {
            Some(Ok(Message::Close(Some(frame)))) => assert_eq!(u16::from(frame.code), 1009),
            Some(Ok(other)) => panic!("echoed an oversized message: {:?}", other.len()),
            Some(Err(_)) | None => {}
        }
        // Bad names, parameters and plain requests.
        for path in [
            "/ws/room/",
            "/ws/room/has%20space",
            &format!("/ws/room/{}", "r".repeat(65)),
            "/ws/echo?delay_ms=99999999",
            "/ws/echo?x=1",
            "/ws/nothing",
        ] {
            let tcp = tokio::net::TcpStream::connect(t.addr()).await.unwrap();
            let url = format!("ws://{}{path}", t.addr());
            assert!(
                tokio_tungstenite::client_async(url, tcp).await.is_err(),
                "{path} upgraded"
            );
        }
        let plain = get(t.addr(), "/ws/echo").await.unwrap();
        assert_eq!(plain.status, 400);
        // The target still serves.
        let mut ws = connect(&t, "/ws/echo").await;
        ws.send(Message::Text("ok".into())).await.unwrap();
        assert_eq!(
            ws.next().await.unwrap().unwrap(),
            Message::Text("ok".into())
        );
    });
}

#[test]
fn rooms_and_members_are_capped() {
    let rooms = super::super::rooms::Rooms::default();
    let mut held = Vec::new();
    for _ in 0..super::super::rooms::MAX_MEMBERS {
        held.push(rooms.join("full").expect("room below its cap"));
    }
    assert!(
        rooms.join("full").is_none(),
        "member {} let in",
        super::super::rooms::MAX_MEMBERS + 1
    );
    assert_eq!(rooms.members("full"), super::super::rooms::MAX_MEMBERS);
    for i in 1..super::super::rooms::MAX_ROOMS {
        assert!(rooms.join(&format!("r{i}")).is_some());
    }
    assert!(rooms.join("one-too-many").is_none());
    assert!(rooms.join("full").is_none());
}
