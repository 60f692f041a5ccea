//! `--http3`: requests over QUIC against three HTTP/3 servers on loopback: the built-in
//! target (`--tls` serves h3 on the same port number over UDP), Debian's Caddy and
//! ngtcp2's `gtlsserver`. Each connection model keeps its meaning, the QUIC handshake
//! is timed as the TLS phase, connections are counted as `h3`, the `quic` section
//! holds what the stack measured (loss included, against a server that drops packets),
//! client certificates reach the QUIC handshake, and every bad setup is named.

mod hostile;
mod mtls;
mod peers;
mod resume;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use headroom::metrics::summary::Summary;
use headroom::target::{self, TargetOptions};

use crate::support::{assert_clean, assert_exit, run_headroom, run_with_summary, stderr};

const LIMIT: Duration = Duration::from_secs(60);

fn run(dir: &Path, url: &str, extra: &[&str]) -> (Output, Summary) {
    let mut args = vec!["--url", url, "--http3"];
    for (flag, default) in [("--duration", "1s"), ("--timeout", "5s")] {
        if !extra.contains(&flag) {
            args.extend([flag, default]);
        }
    }
    args.extend_from_slice(extra);
    run_with_summary(dir, &args, LIMIT)
}

/// The built-in target serving TLS (and so h3), its certificate written into `dir`:
/// the target, the certificate's path and the URL of `/work?ms=1`.
fn tls_target(dir: &Path) -> (target::RunningTarget, String, String) {
    let target = target::spawn(TargetOptions {
        tls: true,
        ..TargetOptions::loopback()
    })
    .expect("start the built-in target with TLS");
    let cert = dir.join("target.pem");
    std::fs::write(&cert, target.cert_pem().unwrap()).unwrap();
    let url = format!("https://127.0.0.1:{}/work?ms=1", target.addr().port());
    (target, cert.display().to_string(), url)
}

/// Every connection the run opened spoke h3, handshook once, and had its figures read.
#[track_caller]
fn assert_h3(s: &Summary) {
    let c = &s.connections;
    assert_eq!(c.protocol, "h3", "{c:?}");
    assert!(c.opened >= 1, "{c:?}");
    assert_eq!(c.by_protocol.h3, c.opened, "{c:?}");
    assert_eq!(c.handshakes, c.opened, "{c:?}");
    // The QUIC handshake is the `tls` phase; there is no TCP connect.
    assert_eq!(s.timing_ms.tls.count, c.opened, "{:?}", s.timing_ms);
    assert_eq!(s.timing_ms.connect.count, 0, "{:?}", s.timing_ms);
    assert!(s.timing_ms.tls.ms.p50 > 0.0, "{:?}", s.timing_ms.tls);
    assert_eq!(s.timing_ms.ttfb.count, s.requests);
    // The request that opened each connection, and the handshake's share of it.
    let f = &c.first_request;
    if s.errors.count == 0 {
        assert_eq!(f.count, c.opened, "{f:?}");
    }
    assert!(f.count >= 1, "{f:?}");
    assert!(
        f.handshake_mean_ms > 0.0 && f.handshake_mean_ms <= f.mean_ms,
        "{f:?}"
    );
    assert!(
        f.handshake_share_percent > 0.0 && f.handshake_share_percent <= 100.0,
        "{f:?}"
    );
    let q = s.quic.as_ref().expect("a quic section");
    assert_eq!(q.connections, c.opened, "every connection measured: {q:?}");
    assert!(
        q.rtt.min_ms > 0.0 && q.rtt.min_ms <= q.rtt.smoothed_max_ms,
        "{q:?}"
    );
    // At least the handshake's and each request's packets.
    assert!(q.packets.sent >= s.requests, "{q:?}");
    assert!(q.packets.received_datagrams > 0, "{q:?}");
    // What the client's socket may batch per send (1: the kernel has no GSO).
    assert!(q.gso_segments >= 1, "{q:?}");
}

#[test]
fn each_connection_model_over_quic_against_the_built_in_target() {
    let dir = tempfile::tempdir().unwrap();
    let (target, cert, url) = tls_target(dir.path());
    let cert = cert.as_str();

    // The arrival-rate model's shared pool: a connection carries many streams.
    let before = target.connections_accepted();
    let (out, s) = run(dir.path(), &url, &["--rate", "100", "--cacert", cert]);
    assert_clean(&out, &s);
    assert_h3(&s);
    assert!(s.connections.opened <= 2, "{:?}", s.connections);
    // The target accepted exactly the QUIC connections the run counted, and answered
    // every request it sent.
    assert_eq!(target.connections_accepted() - before, s.connections.opened);

    // Each user its own connection.
    let (out, s) = run(dir.path(), &url, &["--users", "4", "--cacert", cert]);
    assert_clean(&out, &s);
    assert_h3(&s);
    assert_eq!(s.connections.opened, 4, "{:?}", s.connections);

    // A new connection, with its handshake, for every request.
    let (out, s) = run(
        dir.path(),
        &url,
        &[
            "--rate",
            "40",
            "--connection",
            "per-request",
            "--cacert",
            cert,
        ],
    );
    assert_clean(&out, &s);
    assert_h3(&s);
    assert_eq!(s.connections.opened, s.requests, "{:?}", s.connections);
    assert_eq!(s.connections.reused, 0);

    // The text names the handshake and the transport's figures.
    let out = run_headroom(
        [
            "run",
            "--url",
            &url,
            "--http3",
            "--rate",
            "20",
            "--duration",
            "1s",
            "--cacert",
            cert,
        ],
        LIMIT,
    );
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("quic handshake"), "{text}");
    assert!(text.contains("h3 shared"), "{text}");
    assert!(text.contains("quic         rtt min"), "{text}");
}

#[test]
fn bad_setups_are_named_and_every_request_is_accounted_for() {
    let dir = tempfile::tempdir().unwrap();
    let (_target, _, url) = tls_target(dir.path());

    // A certificate nobody trusts: every request fails as `tls`, and the reason says so.
    let (out, s) = run(dir.path(), &url, &["--rate", "20"]);
    assert_eq!(s.errors.count, s.requests, "{:?}", s.errors);
    assert_eq!(s.errors.by_kind.get("tls").copied(), Some(s.requests));
    let err = stderr(&out);
    assert!(
        err.contains("UnknownIssuer") && err.contains("--cacert"),
        "{err}"
    );

    // Nothing answers QUIC on this port (TCP only): the handshake never completes,
    // and each request ends at its timeout, counted.
    let tcp_only = target::spawn(TargetOptions::loopback()).expect("a cleartext target");
    let url = format!("https://127.0.0.1:{}/work", tcp_only.addr().port());
    let (_, s) = run_with_summary(
        dir.path(),
        &[
            "--url",
            &url,
            "--http3",
            "--rate",
            "10",
            "--duration",
            "1s",
            "--timeout",
            "1s",
            "--insecure",
        ],
        LIMIT,
    );
    assert_eq!(s.errors.count, s.requests, "{:?}", s.errors);
    assert_eq!(s.connections.opened, 0);

    // HTTP/3 is TLS only; and one protocol at a time.
    let plain = format!("http://127.0.0.1:{}/work", tcp_only.addr().port());
    for (args, says) in [
        (vec!["--url", plain.as_str(), "--http3"], "must be https://"),
        (
            vec!["--url", url.as_str(), "--http3", "--http2"],
            "cannot be used with",
        ),
    ] {
        let mut all = vec!["run", "--rate", "1", "--duration", "1s"];
        all.extend(args);
        let out = run_headroom(&all, LIMIT);
        assert_exit(&out, 2);
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
    }
}

#[test]
fn caddy_over_h3_and_h2_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let Some(caddy) = peers::caddy(dir.path()) else {
        return;
    };
    let url = format!("https://localhost:{}/", caddy.port);
    let resolve = format!("localhost:{}:127.0.0.1", caddy.port);
    let ca = caddy.ca.to_str().unwrap();
    let (out, s) = run(
        dir.path(),
        &url,
        &["--rate", "50", "--cacert", ca, "--resolve", &resolve],
    );
    assert_clean(&out, &s);
    assert_h3(&s);
    // The same server over TCP and h2, for comparison: nothing QUIC there.
    let (out, h2) = run_with_summary(
        dir.path(),
        &[
            "--url",
            &url,
            "--http2",
            "--rate",
            "50",
            "--duration",
            "1s",
            "--cacert",
            ca,
            "--resolve",
            &resolve,
        ],
        LIMIT,
    );
    assert_clean(&out, &h2);
    assert_eq!(h2.connections.protocol, "h2");
    assert!(h2.quic.is_none());
    assert_eq!(h2.timing_ms.connect.count, h2.connections.opened);
}

#[test]
fn gtlsserver_over_h3_and_the_loss_quic_saw() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = peers::gtlsserver(dir.path(), &[]) else {
        return;
    };
    let url = format!("https://127.0.0.1:{}/hello.txt", server.port);
    let ca = server.ca.to_str().unwrap();
    let (out, s) = run(dir.path(), &url, &["--users", "2", "--cacert", ca]);
    assert_clean(&out, &s);
    assert_h3(&s);
    assert_eq!(s.connections.opened, 2);
    drop(server);

    // A server that drops a fifth of what it receives: requests still complete (QUIC
    // sends again), and the summary shows the loss the client's stack declared.
    let lossy_dir = dir.path().join("lossy");
    std::fs::create_dir_all(&lossy_dir).unwrap();
    let Some(lossy) = peers::gtlsserver(&lossy_dir, &["--rx-loss=0.2"]) else {
        return;
    };
    let url = format!("https://127.0.0.1:{}/hello.txt", lossy.port);
    let ca = lossy.ca.to_str().unwrap();
    let (out, s) = run(
        &lossy_dir,
        &url,
        &["--rate", "50", "--duration", "2s", "--cacert", ca],
    );
    assert_exit(&out, 0);
    let q = s.quic.as_ref().expect("a quic section");
    assert!(q.lost.packets > 0, "{q:?}");
    assert!(q.lost.percent > 2.0 && q.lost.percent < 60.0, "{q:?}");
}

#[test]
fn hostile_h3_servers_are_classified_bounded_and_accounted_for() {
    let dir = tempfile::tempdir().unwrap();
    let server = hostile::Hostile::start(dir.path());
    let base = format!("https://127.0.0.1:{}", server.addr.port());
    let ca = server.ca.to_str().unwrap().to_string();
    #[track_caller]
    fn only(s: &Summary, kind: &str) {
        assert!(s.requests > 0, "{s:?}");
        assert_eq!(s.errors.count, s.requests, "{:?}", s.errors);
        let got = s.errors.by_kind.get(kind).copied();
        assert_eq!(got, Some(s.requests), "want {kind}: {:?}", s.errors);
    }
    let at = |path: &str, extra: &[&str]| {
        let url = format!("{base}{path}");
        let mut args = vec!["--rate", "10", "--cacert", &ca];
        args.extend_from_slice(extra);
        run(dir.path(), &url, &args).1
    };
    // A stream reset by the server.
    only(&at("/reset", &[]), "stream_reset");
    // Rejected unprocessed: each is sent once more, then counted.
    let s = at("/reject", &[]);
    only(&s, "stream_reset");
    assert_eq!(s.retries, s.requests, "{s:?}");
    // A response that stops mid-body, and one that never ends (read and dropped as it
    // comes, within QUIC's windows): both end at the request's timeout.
    only(&at("/stall", &["--timeout", "1s"]), "timeout");
    only(&at("/endless", &["--timeout", "1s"]), "timeout");
    // The same endless body kept for a check: refused at the kept-body limit.
    let yaml = format!(
        "target: {base}\nload: {{rate: 4, duration: 1s}}\nclient: {{http3: true, cacert: {ca}}}\n\
         requests:\n  - {{path: /endless, expect: {{json_path: \"$.x\"}}}}\n"
    );
    let file = dir.path().join("endless.yaml");
    std::fs::write(&file, yaml).unwrap();
    let (_, s) = run_with_summary(
        dir.path(),
        &[file.to_str().unwrap(), "--timeout", "20s"],
        LIMIT,
    );
    only(&s, "protocol");
    // Every other path answers: the server itself is fine.
    let (out, s) = run(
        dir.path(),
        &format!("{base}/fine"),
        &["--rate", "20", "--cacert", &ca],
    );
    assert_clean(&out, &s);
    drop(server);

    // A header section far past the limit the client announced.
    let raw = hostile::Hostile::raw_big_head(dir.path());
    let url = format!("https://127.0.0.1:{}/", raw.addr.port());
    let ca = raw.ca.to_str().unwrap();
    let (_, s) = run(dir.path(), &url, &["--rate", "10", "--cacert", ca]);
    only(&s, "protocol");

    // A server that never completes the handshake.
    let silent = hostile::Silent::start();
    let url = format!("https://127.0.0.1:{}/", silent.addr.port());
    let (_, s) = run(
        dir.path(),
        &url,
        &["--rate", "10", "--timeout", "1s", "--insecure"],
    );
    assert_eq!(s.errors.count, s.requests, "{:?}", s.errors);
    assert_eq!(s.connections.opened, 0);
}

#[test]
fn compare_protocols_runs_each_cold_and_warm_into_one_table() {
    let dir = tempfile::tempdir().unwrap();
    let (target, cert, url) = tls_target(dir.path());
    let before = target.connections_accepted();
    let out = run_headroom(
        [
            "run",
            "--url",
            &url,
            "--compare-protocols",
            "h2,h3",
            "--rate",
            "40",
            "--duration",
            "1s",
            "--cacert",
            &cert,
        ],
        LIMIT,
    );
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.len() > 8 && matches!(w[1], "cold" | "warm"))
        .collect();
    let order: Vec<(&str, &str)> = rows.iter().map(|w| (w[0], w[1])).collect();
    assert_eq!(
        order,
        [
            ("h2", "cold"),
            ("h2", "warm"),
            ("h3", "cold"),
            ("h3", "warm")
        ],
        "{text}"
    );
    let mut opened_in_all = 0;
    for w in &rows {
        let (requests, opened): (u64, u64) = (w[2].parse().unwrap(), w[7].parse().unwrap());
        assert!(requests >= 30, "{text}");
        opened_in_all += opened;
        match w[1] {
            // Cold: a connection, with its handshake, for every request.
            "cold" => assert_eq!(opened, requests, "{text}"),
            // Warm: a kept pool, a handful at most.
            _ => assert!(opened <= 4, "{text}"),
        }
        assert!(w[6].ends_with('s'), "a handshake time: {text}");
        assert_eq!(w[w.len() - 2], "0", "no errors: {text}");
    }
    // The target accepted the connections the four runs say they opened.
    assert_eq!(target.connections_accepted() - before, opened_in_all);
    // One Ctrl-C handler for the four runs: no warning about a second one.
    assert!(!stderr(&out).contains("Ctrl-C"), "{}", stderr(&out));
}
