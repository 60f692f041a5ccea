//! Every limit of [`Limits`] exceeded by a flood, and memory staying bounded: the
//! read buffer never past [`Limits::buffer`], a kept body never past its limit.

use super::tests::{exchange, scripted, Act, REQUEST};
use super::*;
use headroom_metrics::ErrorKind;

/// Small limits, so a flood crosses them in a few reads.
const SMALL: Limits = Limits {
    head: 1024,
    chunk_line: 64,
    trailers: 256,
    kept_body: 4096,
};

const CHUNKED: &str = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

fn flood(prefix: &str, filler: u8, total: usize) -> Act {
    Act::Flood {
        prefix: prefix.as_bytes().to_vec(),
        filler,
        total,
    }
}

/// Runs one exchange against `act` and checks the outcome and the memory held.
async fn exceeds(act: Act, limits: Limits, keep: bool, part: &str) {
    let (mut conn, _server) = scripted(vec![act], limits);
    let e = exchange(&mut conn, keep, false).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Protocol, "{part}: {e}");
    assert!(
        e.detail.contains(part) && e.detail.contains("limit"),
        "{part}: {e}"
    );
    assert!(
        !conn.reusable(),
        "{part}: a connection past a limit is closed"
    );
    assert_bounded(&conn, part);
}

#[track_caller]
fn assert_bounded<S>(conn: &Conn<S>, what: &str) {
    assert!(
        conn.buf.len() <= conn.limits.buffer(),
        "{what}: read buffer {} > {}",
        conn.buf.len(),
        conn.limits.buffer()
    );
    assert!(
        conn.body.capacity() <= conn.limits.kept_body,
        "{what}: kept body capacity {} > {}",
        conn.body.capacity(),
        conn.limits.kept_body
    );
}

#[tokio::test]
async fn every_part_of_a_response_has_a_limit() {
    let many_1xx = "HTTP/1.1 100 Continue\r\n\r\n".repeat(100);
    let cases: Vec<(&str, Act, bool)> = vec![
        (
            "response head",
            flood("HTTP/1.1 200 OK\r\nX-Endless: ", b'a', 1 << 20),
            false,
        ),
        (
            "response head",
            flood("HTTP/1.1 200 ", b'r', 1 << 20),
            false,
        ),
        ("response head", Act::Reply(many_1xx.into_bytes()), false),
        (
            "chunk-size line",
            flood(&format!("{CHUNKED}5;"), b'x', 1 << 20),
            false,
        ),
        (
            "chunk-size line",
            flood(&format!("{CHUNKED}5"), b' ', 1 << 20),
            false,
        ),
        (
            "chunk-size line",
            flood(&format!("{CHUNKED}5\r\nhello\r\n1;"), b'x', 1 << 20),
            true,
        ),
        (
            "trailers",
            flood(&format!("{CHUNKED}0\r\nX-Endless: "), b'a', 1 << 20),
            false,
        ),
        (
            "trailers",
            Act::Reply(format!("{CHUNKED}0\r\n{}", "X-T: 1\r\n".repeat(100)).into_bytes()),
            false,
        ),
        (
            "kept response body",
            Act::Reply(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n".to_vec()),
            true,
        ),
        (
            "kept response body",
            flood(&format!("{CHUNKED}FFFFFF\r\n"), b'b', 1 << 20),
            true,
        ),
        (
            "kept response body",
            flood("HTTP/1.1 200 OK\r\n\r\n", b'b', 1 << 20),
            true,
        ),
    ];
    for (part, act, keep) in cases {
        exceeds(act, SMALL, keep, part).await;
    }
}

#[tokio::test]
async fn the_default_limits_hold_against_floods() {
    let limits = Limits::default();
    let chunk_ext = flood(&format!("{CHUNKED}5;"), b'x', 4 << 20);
    exceeds(chunk_ext, limits, false, "chunk-size line").await;
    let header = flood("HTTP/1.1 200 OK\r\nX-Endless: ", b'a', 4 << 20);
    exceeds(header, limits, false, "response head").await;
    let body = flood(&format!("{CHUNKED}FFFFFFFF\r\n"), b'b', 20 << 20);
    exceeds(body, limits, true, "kept response body").await;
}

#[tokio::test]
async fn a_discarded_body_of_any_length_streams_through_a_small_buffer() {
    let total = 8 << 20;
    let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {total}\r\n\r\n");
    let act = flood(&head, b'b', head.len() + total);
    let (mut conn, _server) = scripted(vec![act], SMALL);
    let r = exchange(&mut conn, false, false).await.unwrap();
    assert_eq!(r.body_len, total as u64);
    assert!(conn.reusable());
    assert!(conn.buf.len() <= 4096, "buffer grew to {}", conn.buf.len());
    assert_bounded(&conn, "discarded body");
}

#[tokio::test]
async fn a_kept_body_at_its_limit_is_kept_and_its_space_given_back_later() {
    let limits = Limits {
        kept_body: 256 * 1024,
        ..Limits::default()
    };
    let body = vec![b'j'; limits.kept_body];
    let mut chunked = CHUNKED.as_bytes().to_vec();
    for part in body.chunks(1000) {
        chunked.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
        chunked.extend_from_slice(part);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let small = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec();
    let (mut conn, _server) = scripted(vec![Act::Reply(chunked), Act::Reply(small)], limits);
    exchange(&mut conn, true, false).await.unwrap();
    assert_eq!(conn.body(), &body[..]);
    assert_bounded(&conn, "a body at the limit");
    exchange(&mut conn, true, false).await.unwrap();
    assert_eq!(conn.body(), b"ok");
    assert!(
        conn.body.capacity() <= RETAINED_BODY,
        "a large body's space is released: {}",
        conn.body.capacity()
    );
}

#[tokio::test]
async fn a_head_at_the_limit_is_accepted() {
    let limits = Limits { head: 200, ..SMALL };
    let start = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Pad: ";
    let pad = "p".repeat(limits.head - start.len() - 4);
    let reply = format!("{start}{pad}\r\n\r\n");
    assert_eq!(reply.len(), limits.head);
    let (mut conn, _server) = scripted(vec![Act::Reply(reply.into_bytes())], limits);
    let r = exchange(&mut conn, false, false).await.unwrap();
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn kept_bodies_together_stay_within_the_budget() {
    let budget = BodyBudget::new(4096);
    let body = |n: usize| {
        let mut r = format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n\r\n").into_bytes();
        r.resize(r.len() + n, b'k');
        Act::Reply(r)
    };
    let open = |script| {
        let (client, server) = tokio::io::duplex(64 * 1024);
        tokio::spawn(super::tests::play(server, script));
        Conn::new(client, SMALL, budget.clone())
    };
    let mut a = open(vec![body(3000), body(10)]);
    let mut b = open(vec![body(2000), body(2000)]);
    exchange(&mut a, true, false).await.unwrap();
    assert_eq!(budget.held(), 3000);
    // B's body fits its own limit but not what A leaves of the budget: the
    // generator's limit, not the target's fault.
    let e = exchange(&mut b, true, false).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Generator, "{e}");
    assert!(e.detail.contains("budget"), "{e}");
    assert_eq!(budget.held(), 3000, "a failed body gives its share back");
    a.release_body();
    assert_eq!(budget.held(), 0);
    let mut c = open(vec![body(2000)]);
    exchange(&mut c, true, false).await.unwrap();
    assert_eq!(budget.held(), 2000);
    drop(c);
    assert_eq!(
        budget.held(),
        0,
        "a dropped connection gives its share back"
    );
    // A small body stays (its space is reused) and stays charged until released.
    exchange(&mut a, true, false).await.unwrap();
    assert_eq!(a.body(), b"kkkkkkkkkk");
    drop(a);
    assert_eq!(budget.held(), 0);
}

/// Headers kept for the caller (`Set-Cookie` for the jar, `Location`): every value of
/// the names asked for, in order, none of the others; a response with more headers
/// than a head may hold fails as `protocol`, keeping nothing; a later request keeping
/// nothing sees none.
#[tokio::test]
async fn kept_headers_are_the_ones_asked_for_within_the_head() {
    let cookies: String = (0..100)
        .map(|i| format!("Set-Cookie: c{i}=v\r\n"))
        .collect();
    let ok = format!(
        "HTTP/1.1 302 Found\r\nLocation: /next\r\n{cookies}X-Other: 1\r\nContent-Length: 0\r\n\r\n"
    );
    let too_many: String = (0..200).map(|i| format!("X-{i}: v\r\n")).collect();
    let bad = format!("HTTP/1.1 200 OK\r\n{too_many}Content-Length: 0\r\n\r\n");
    let (mut conn, _server) = scripted(
        vec![
            Act::Reply(ok.clone().into_bytes()),
            Act::Reply(ok.into_bytes()),
            Act::Reply(bad.into_bytes()),
        ],
        Limits::default(),
    );
    let keep = ["set-cookie".to_string(), "location".to_string()];
    let r = conn
        .round_trip_keeping(REQUEST, false, false, &keep)
        .await
        .unwrap();
    assert_eq!(r.status, 302);
    let kept = conn.kept_headers();
    assert_eq!(kept.len(), 101);
    assert_eq!(kept[0], (1, b"/next".to_vec()));
    assert_eq!(kept[1], (0, b"c0=v".to_vec()));
    assert_eq!(kept[100], (0, b"c99=v".to_vec()));
    // Keeping nothing: nothing is kept.
    conn.round_trip(REQUEST, false, false).await.unwrap();
    assert!(conn.kept_headers().is_empty());
    let e = conn
        .round_trip_keeping(REQUEST, false, false, &keep)
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Protocol, "{e}");
    assert!(conn.kept_headers().is_empty());
}
