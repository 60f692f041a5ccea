//! The HTTP/2 connection against hostile servers: an oversized header list, endless
//! bodies, a body larger than every window. Memory is measured on the client's thread
//! (the servers run on threads of their own).

use std::future::poll_fn;
use std::time::Duration;

use bytes::Bytes;
use h2::server::SendResponse;
use http::Response as HttpResponse;
use tokio::io::AsyncWriteExt;

use super::tests_server::{
    connect, frame, get, h2_server, local, serve, Raw, CONTINUATION, END_HEADERS, HEADERS,
};
use super::*;
use crate::test_alloc::peak_during;
use headroom_metrics::ErrorKind;

/// Sends `total` bytes of body (`None`: without end), as flow control allows.
async fn stream_body(mut respond: SendResponse<Bytes>, total: Option<usize>) {
    let mut out = respond.send_response(HttpResponse::new(()), false).unwrap();
    let mut left = total.unwrap_or(usize::MAX);
    while left > 0 {
        out.reserve_capacity(left.min(16 * 1024));
        let n = match poll_fn(|cx| out.poll_capacity(cx)).await {
            Some(Ok(n)) => n.min(left),
            _ => return, // the client reset the stream
        };
        left -= n;
        if out
            .send_data(Bytes::from(vec![b'a'; n]), total.is_some() && left == 0)
            .is_err()
        {
            return;
        }
    }
}

#[test]
fn a_header_list_over_the_head_limit_is_protocol_and_memory_stays_bounded() {
    // 40 000 headers of ~137 bytes each (5.5 MB of header list) against a 16 KiB limit.
    let addr = serve(|tcp| async move {
        let mut raw = Raw::accept(tcp).await;
        raw.requests(1).await;
        let mut field = vec![0x00, 5];
        field.extend_from_slice(b"x-pad");
        field.push(100);
        field.extend_from_slice(&[b'a'; 100]);
        let mut block = vec![0x88];
        for _ in 0..150 {
            block.extend_from_slice(&field); // 16 201 bytes: one frame's worth
        }
        if raw
            .tcp
            .write_all(&frame(HEADERS, 0, 1, &block))
            .await
            .is_err()
        {
            return;
        }
        let block = field.repeat(150);
        for i in 0..266 {
            let flags = if i == 265 { END_HEADERS } else { 0 };
            if raw
                .tcp
                .write_all(&frame(CONTINUATION, flags, 1, &block))
                .await
                .is_err()
            {
                return; // the client gave up on the connection
            }
        }
        while raw.read().await.is_some() {}
    });
    let mut settings = Settings::default();
    settings.limits.head = 16 * 1024;
    let (e, peak) = peak_during(|| {
        local(async {
            let conn = connect(addr, &settings).await;
            conn.send(get(addr, "/"), None, false, false)
                .await
                .unwrap_err()
        })
    });
    assert_eq!(e.kind, ErrorKind::Protocol, "{e}");
    assert!(peak < 1024 * 1024, "the client held {peak} bytes at once");
}

#[test]
fn an_endless_kept_body_stops_at_the_kept_body_limit() {
    let (addr, _) = h2_server(h2::server::Builder::new(), |_req, respond| {
        stream_body(respond, None)
    });
    let budget = BodyBudget::new(1024 * 1024);
    // Windows a few times the kept-body limit: what the server sent past the limit
    // before our RST_STREAM must be credited back to the connection, or the later
    // rounds would stall for want of connection window.
    let mut settings = Settings {
        budget: budget.clone(),
        stream_window: 256 * 1024,
        connection_window: 256 * 1024,
        ..Settings::default()
    };
    settings.limits.kept_body = 64 * 1024;
    local(async {
        let conn = connect(addr, &settings).await;
        for _ in 0..20 {
            let send = conn.send(get(addr, "/"), None, true, false);
            let e = tokio::time::timeout(Duration::from_secs(10), send)
                .await
                .expect("connection window leaked")
                .unwrap_err();
            assert_eq!((e.kind, e.refused), (ErrorKind::Protocol, false), "{e}");
            assert!(e.reason.contains("kept response body"), "{e}");
            assert_eq!(budget.held(), 0, "the partial body gave its budget back");
            assert!(conn.is_open(), "only the stream was abandoned");
        }
    });
}

#[test]
fn a_body_at_the_kept_body_limit_is_kept_whole() {
    let limit = 64 * 1024;
    let (addr, _) = h2_server(h2::server::Builder::new(), move |_req, respond| {
        stream_body(respond, Some(limit))
    });
    let mut settings = Settings::default();
    settings.limits.kept_body = limit;
    local(async {
        let conn = connect(addr, &settings).await;
        let r = conn.send(get(addr, "/"), None, true, false).await.unwrap();
        assert_eq!((r.body.len(), r.body_len), (limit, limit as u64));
        assert!(r.body.iter().all(|&b| b == b'a'));
    });
}

#[test]
fn kept_bodies_past_the_shared_budget_are_the_generators_error() {
    let (addr, _) = h2_server(h2::server::Builder::new(), |_req, respond| {
        stream_body(respond, Some(4096))
    });
    let budget = BodyBudget::new(1024);
    let settings = Settings {
        budget: budget.clone(),
        ..Settings::default()
    };
    local(async {
        let conn = connect(addr, &settings).await;
        let e = conn
            .send(get(addr, "/"), None, true, false)
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Generator, "{e}");
        assert_eq!(budget.held(), 0);
        // Not kept, the same body is fine.
        let r = conn.send(get(addr, "/"), None, false, false).await.unwrap();
        assert_eq!(r.body_len, 4096);
    });
}

#[test]
fn a_discarded_body_far_larger_than_the_windows_streams_through() {
    const TOTAL: usize = 10 * 1024 * 1024;
    let (addr, _) = h2_server(h2::server::Builder::new(), |_req, respond| {
        stream_body(respond, Some(TOTAL))
    });
    let settings = Settings {
        stream_window: 64 * 1024,
        connection_window: 64 * 1024,
        ..Settings::default()
    };
    let (r, peak) = peak_during(|| {
        local(async {
            let conn = connect(addr, &settings).await;
            tokio::time::timeout(
                Duration::from_secs(20),
                conn.send(get(addr, "/"), None, false, false),
            )
            .await
            .expect("flow control stalled")
            .unwrap()
        })
    });
    assert_eq!((r.status, r.body_len, r.body.len()), (200, TOTAL as u64, 0));
    assert!(peak < 1024 * 1024, "discarding held {peak} bytes at once");
}
