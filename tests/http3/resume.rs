//! Resumption and 0-RTT over HTTP/3 (`--h3-resume`, `--h3-0rtt`): against the built-in
//! target, connections resume and early data is accepted; against a server that
//! forgets its sessions, the early data is rejected, sent again and counted.

use std::path::Path;
use std::process::Output;

use headroom::metrics::summary::Summary;

use super::{hostile, run, tls_target, LIMIT};
use crate::support::{assert_clean, assert_exit, run_headroom, stderr};

#[test]
fn resumption_and_0rtt_are_counted_accepted_and_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let (_target, cert, url) = tls_target(dir.path());
    let cert = cert.as_str();
    let cold = |extra: &[&str]| {
        let (out, s) = per_request(dir.path(), &url, "40", cert, extra);
        assert_clean(&out, &s);
        assert_eq!(s.connections.opened, s.requests);
        s
    };
    let quic = |s: &Summary| s.quic.clone().expect("a quic section");

    // Without a flag, every connection handshakes in full.
    let full = cold(&[]);
    assert_eq!(quic(&full).resumed, 0, "{:?}", full.quic);
    assert_eq!(quic(&full).zero_rtt.sent, 0);

    // --h3-resume: after the first handshakes (one per engine thread at most), the
    // run's tickets resume every new connection.
    let resumed = cold(&["--h3-resume"]);
    let q = quic(&resumed);
    assert!(q.resumed + 2 >= resumed.requests && q.resumed > 0, "{q:?}");
    assert_eq!(q.zero_rtt.sent, 0);

    // --h3-0rtt: each resumed connection's request goes as early data, accepted.
    let early = cold(&["--h3-0rtt"]);
    let q = quic(&early);
    assert!(
        q.zero_rtt.sent + 2 >= early.requests && q.zero_rtt.sent > 0,
        "{q:?}"
    );
    assert_eq!(q.zero_rtt.accepted, q.zero_rtt.sent, "{q:?}");
    assert_eq!(q.zero_rtt.rejected, 0);
    assert_eq!(q.resumed, q.zero_rtt.sent, "{q:?}");
    // The request goes before the handshake completes: what it waited to be written
    // is far shorter than a full handshake.
    assert!(
        early.timing_ms.tls.ms.p50 < full.timing_ms.tls.ms.p50,
        "0-RTT {:?} against full {:?}",
        early.timing_ms.tls,
        full.timing_ms.tls
    );

    // A request that is not idempotent never goes as early data.
    let (_, posted) = per_request(dir.path(), &url, "20", cert, &["--h3-0rtt", "-X", "POST"]);
    let q = quic(&posted);
    assert_eq!(q.zero_rtt.sent, 0, "{q:?}");
    assert!(q.resumed > 0, "{q:?}");

    // A server that lost its sessions rejects the early data: each such request is
    // sent again after the handshake, and counted.
    let forgetful = hostile::Hostile::forgetful(dir.path());
    let url = format!("https://127.0.0.1:{}/fine", forgetful.addr.port());
    let ca = forgetful.ca.to_str().unwrap();
    let (out, s) = per_request(dir.path(), &url, "20", ca, &["--h3-0rtt"]);
    assert_clean(&out, &s);
    let q = quic(&s);
    assert!(q.zero_rtt.sent > 0, "{q:?}");
    assert_eq!(q.zero_rtt.rejected, q.zero_rtt.sent, "{q:?}");
    assert_eq!(q.zero_rtt.accepted, 0);
    assert_eq!(q.resumed, 0, "{q:?}");
    assert_eq!(
        s.retries, q.zero_rtt.rejected,
        "each rejected request sent again"
    );

    // Over TCP the flags mean nothing: said so.
    let out = run_headroom(
        [
            "run",
            "--url",
            &url,
            "--h3-resume",
            "--rate",
            "1",
            "--duration",
            "1s",
        ],
        LIMIT,
    );
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("--h3-resume applies to HTTP/3"),
        "{}",
        stderr(&out)
    );
}

/// A run at `rate` with a new connection (and handshake) per request, trusting `ca`,
/// with `extra` flags.
fn per_request(dir: &Path, url: &str, rate: &str, ca: &str, extra: &[&str]) -> (Output, Summary) {
    let mut args = vec![
        "--rate",
        rate,
        "--connection",
        "per-request",
        "--cacert",
        ca,
    ];
    args.extend_from_slice(extra);
    run(dir, url, &args)
}
