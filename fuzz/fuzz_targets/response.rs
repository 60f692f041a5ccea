//! The HTTP/1.1 response parser under libFuzzer: the input is what a server sends
//! (the first byte picks whether the body is kept and whether the request was HEAD).
//! Round trips run until one fails or the connection cannot be reused; a panic, a hang
//! or a buffer past its limit is a finding.

#![no_main]

use headroom::client::http1::{BodyBudget, Conn, Limits};
use libfuzzer_sys::fuzz_target;
use tokio::io::AsyncWriteExt;

/// Small limits, so inputs of a few KiB reach every one of them.
const LIMITS: Limits = Limits {
    head: 512,
    chunk_line: 32,
    trailers: 128,
    kept_body: 1024,
};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, response)) = data.split_first() else {
        return;
    };
    let (keep, head) = (flags & 1 == 1, flags & 2 == 2);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let (client, mut server) = tokio::io::duplex(1 << 20);
        let response = response.to_vec();
        let writer = tokio::spawn(async move {
            let _ = server.write_all(&response).await;
        });
        let budget = BodyBudget::new(LIMITS.kept_body);
        let mut conn = Conn::new(client, LIMITS, budget.clone());
        // Every exchange consumes at least one byte or fails.
        for _ in 0..=data.len() {
            let outcome = conn.round_trip(b"GET / HTTP/1.1\r\n\r\n", keep, head).await;
            assert!(conn.body().len() <= LIMITS.kept_body);
            assert!(budget.held() <= budget.cap());
            if outcome.is_err() || !conn.reusable() {
                break;
            }
        }
        writer.abort();
    });
});
