//! Connection models end to end, counted on the server's side: nginx's `stub_status`
//! says how many connections it accepted, and the summary's `connections` must agree.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use headroom::metrics::summary::Summary;

use crate::support::certs::TestCa;
use crate::support::{
    assert_clean, assert_exit, run_headroom, run_with_summary, stderr, Nginx, NginxTls,
};

const LIMIT: Duration = Duration::from_secs(60);

/// A 1 s closed-model run of `users` users on two threads against `url`, with `extra`.
fn users(dir: &Path, url: &str, users: &str, extra: &[&str]) -> (Output, Summary) {
    let mut args = vec![
        "--url",
        url,
        "--users",
        users,
        "--duration",
        "1s",
        "--threads",
        "2",
        "--timeout",
        "5s",
    ];
    args.extend_from_slice(extra);
    run_with_summary(dir, &args, LIMIT)
}

#[test]
fn per_user_connections_are_one_per_user_and_a_shared_pool_is_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let url = |n: &Nginx| format!("{}/", n.url());

    // The users model's default: each of the 8 users opens one keep-alive connection.
    let nginx = Nginx::start();
    let (out, s) = users(dir.path(), &url(&nginx), "8", &[]);
    assert_clean(&out, &s);
    assert_eq!(nginx.connections().0, 8, "accepted by nginx");
    assert_eq!(s.connections.opened, 8);
    assert_eq!(s.connections.reused, s.requests - 8);

    // The same run sharing two connections: one line apart.
    let nginx = Nginx::start();
    let (out, s) = users(dir.path(), &url(&nginx), "8", &["--connection", "shared:2"]);
    assert_clean(&out, &s);
    assert_eq!(nginx.connections().0, 2, "accepted by nginx");
    assert_eq!(s.connections.opened, 2);

    // `--connections N` alone is a shared pool of N, in the arrival-rate model too.
    let nginx = Nginx::start();
    let (out, s) = run_with_summary(
        dir.path(),
        &[
            "--url",
            &url(&nginx),
            "--rate",
            "100",
            "--duration",
            "1s",
            "--connections",
            "3",
        ],
        LIMIT,
    );
    assert_clean(&out, &s);
    assert!(nginx.connections().0 <= 3, "{:?}", nginx.connections());
    assert_eq!(s.connections.opened, nginx.connections().0);
}

#[test]
fn per_request_connections_handshake_once_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("headroom test CA");
    let server = ca.server(&["127.0.0.1"]);
    let nginx = Nginx::start_tls(&NginxTls {
        cert_pem: server.cert_pem,
        key_pem: server.key_pem,
        client_ca_pem: None,
        protocols: "TLSv1.2 TLSv1.3",
    });
    let url = format!("{}/", nginx.url());
    let (out, s) = users(
        dir.path(),
        &url,
        "4",
        &["--connection", "per-request", "--insecure"],
    );
    assert_clean(&out, &s);
    let c = &s.connections;
    // Every request opened its own connection and handshook TLS on it; none reused.
    assert_eq!(
        (c.opened, c.handshakes, c.reused),
        (s.requests, s.requests, 0)
    );
    assert_eq!(s.timing_ms.tls.count, s.requests);
    // nginx saw as many connections (no warm-up: the run's requests are all there were).
    assert_eq!(nginx.connections().0, s.requests);
}

#[test]
fn a_connection_model_that_does_not_fit_is_bad_input() {
    let out = run_headroom(
        [
            "run",
            "--url",
            "http://127.0.0.1:9/",
            "--rate",
            "5",
            "--connection",
            "per-user",
        ],
        LIMIT,
    );
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("per-user needs the users model"),
        "{}",
        stderr(&out)
    );
}
