//! `--cacert` with the self-signed certificate everyone makes with `openssl req -x509`
//! (its own CA, `CA:TRUE`): trusted as the server's own certificate, over HTTP/1.1 and
//! HTTP/2, against a real nginx on 127.0.0.1; refused for another name or when the file
//! holds another certificate, with advice that never names a flag already given.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use headroom::metrics::summary::Summary;

use crate::support::certs::{openssl_self_signed, write, Issued};
use crate::support::{assert_clean, run_with_summary, stderr, Nginx, NginxH2, NginxTls};

const LIMIT: Duration = Duration::from_secs(60);

/// nginx serving `cert` by TLS, HTTP/2 by ALPN and HTTP/1.1.
fn nginx_serving(cert: &Issued) -> Nginx {
    let tls = NginxTls {
        cert_pem: cert.cert_pem.clone(),
        key_pem: cert.key_pem.clone(),
        client_ca_pem: None,
        protocols: "TLSv1.2 TLSv1.3",
    };
    let h2 = NginxH2 {
        max_streams: 128,
        max_requests: None,
        upstream: None,
    };
    Nginx::start_h2(Some(&tls), h2)
}

/// A 1 s run at 25 requests/s on one thread against `url`, with `extra` flags; the
/// summary read adds up (`run_with_summary`).
fn run(dir: &Path, url: &str, extra: &[&str]) -> (Output, Summary) {
    let mut args = vec![
        "--url",
        url,
        "--rate",
        "25",
        "--duration",
        "1s",
        "--threads",
        "1",
        "--timeout",
        "5s",
    ];
    args.extend_from_slice(extra);
    run_with_summary(dir, &args, LIMIT)
}

/// Every request failed as `tls`.
#[track_caller]
fn assert_all_tls(out: &Output, s: &Summary) {
    assert!(s.requests >= 20, "{} requests", s.requests);
    let tls = s.errors.by_kind.get("tls").copied().unwrap_or(0);
    assert_eq!(tls, s.requests, "{:?}\n{}", s.errors.by_kind, stderr(out));
}

#[test]
fn cacert_trusts_an_openssl_self_signed_certificate_as_the_servers_own() {
    let dir = tempfile::tempdir().unwrap();
    let Some(cert) = openssl_self_signed(
        dir.path(),
        "server",
        "localhost",
        "DNS:localhost,IP:127.0.0.1",
    ) else {
        return;
    };
    let nginx = nginx_serving(&cert);
    let cacert = dir.path().join("server.pem");
    let cacert = cacert.to_str().unwrap();
    let port = nginx.addr().port();
    let by_name = format!("https://localhost:{port}/");
    let resolve = format!("localhost:{port}:127.0.0.1");

    // By its address and by its name, over HTTP/1.1 and HTTP/2: every request through.
    for (url, extra, protocol) in [
        (nginx.url() + "/", vec![], "http/1.1"),
        (nginx.url() + "/", vec!["--http2"], "h2"),
        (by_name.clone(), vec!["--resolve", &resolve], "http/1.1"),
        (
            by_name.clone(),
            vec!["--resolve", &resolve, "--http2"],
            "h2",
        ),
    ] {
        let mut flags = vec!["--cacert", cacert];
        flags.extend(extra);
        let (out, s) = run(dir.path(), &url, &flags);
        assert_clean(&out, &s);
        assert_eq!(s.completed, s.requests, "{url} {flags:?}");
        assert_eq!(s.connections.protocol, protocol, "{url} {flags:?}");
        assert!(
            !stderr(&out).contains("TLS handshake"),
            "{url} {flags:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn a_pinned_certificate_for_another_name_still_fails_without_suggesting_cacert() {
    let dir = tempfile::tempdir().unwrap();
    let Some(cert) = openssl_self_signed(dir.path(), "other", "other", "DNS:other") else {
        return;
    };
    let nginx = nginx_serving(&cert);
    let cacert = dir.path().join("other.pem");
    let (out, s) = run(
        dir.path(),
        &(nginx.url() + "/"),
        &["--cacert", cacert.to_str().unwrap()],
    );
    assert_all_tls(&out, &s);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("TLS handshake with {} failed", nginx.addr()))
            && err.contains("not valid for name"),
        "{err}"
    );
    assert!(!err.contains("--cacert"), "{err}");
}

#[test]
fn a_cacert_file_that_does_not_hold_the_servers_certificate_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let made =
        |name| openssl_self_signed(dir.path(), name, "localhost", "DNS:localhost,IP:127.0.0.1");
    let (Some(served), Some(_wrong)) = (made("served"), made("wrong")) else {
        return;
    };
    let nginx = nginx_serving(&served);
    let wrong = dir.path().join("wrong.pem");
    for extra in [&[][..], &["--http2"][..]] {
        let mut flags = vec!["--cacert", wrong.to_str().unwrap()];
        flags.extend(extra);
        let (out, s) = run(dir.path(), &(nginx.url() + "/"), &flags);
        assert_all_tls(&out, &s);
        let err = stderr(&out);
        let expected = format!(
            "TLS handshake with {} failed: the server's certificate did not verify against {}: \
             invalid peer certificate",
            nginx.addr(),
            wrong.display()
        );
        assert!(err.contains(&expected), "{err}");
        assert!(!err.contains("--cacert"), "{err}");
    }
    // The served certificate, written again under another name, is trusted.
    let copy = write(dir.path(), "copy.pem", &served.cert_pem);
    let (out, s) = run(
        dir.path(),
        &(nginx.url() + "/"),
        &["--cacert", copy.to_str().unwrap()],
    );
    assert_clean(&out, &s);
}

#[test]
fn a_prometheus_watch_over_https_shares_the_pinned_trust() {
    use headroom::watch::Detail;
    let dir = tempfile::tempdir().unwrap();
    let made = |name| openssl_self_signed(dir.path(), name, "localhost", "IP:127.0.0.1");
    let (Some(served), Some(_wrong)) = (made("served"), made("wrong")) else {
        return;
    };
    let nginx = nginx_serving(&served);
    nginx.put_file("metrics", b"# TYPE demo_total counter\ndemo_total 7\n");
    let spec = format!("prometheus:{}/files/metrics#demo_total", nginx.url());
    let flags = |cacert: &'static str| {
        let file = dir.path().join(cacert).display().to_string();
        let args = vec!["--watch", &spec, "--watch-interval", "250ms", "--cacert"];
        let mut args: Vec<String> = args.into_iter().map(String::from).collect();
        args.push(file);
        args
    };
    let served_flags = flags("served.pem");
    let served_flags: Vec<&str> = served_flags.iter().map(String::as_str).collect();
    let (out, s) = run(dir.path(), &(nginx.url() + "/"), &served_flags);
    assert_clean(&out, &s);
    let w = s
        .watches
        .iter()
        .find(|w| w.spec == spec)
        .expect("the watch");
    let Detail::Prometheus(p) = &w.detail else {
        panic!("not a prometheus watch: {w:?}")
    };
    assert!(!p.samples.is_empty() && w.gaps.is_empty(), "{w:?}");

    // Another certificate in the file: the watch is refused at start, and the advice
    // does not ask for the flag the run gave.
    let wrong_flags = flags("wrong.pem");
    let mut args = vec![
        "run",
        "--url",
        "http://127.0.0.1:9/",
        "--rate",
        "10",
        "--duration",
        "1s",
    ];
    args.extend(wrong_flags.iter().map(String::as_str));
    let out = crate::support::run_headroom(args, LIMIT);
    crate::support::assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("TLS handshake with {}", nginx.addr()))
            && err.contains("did not verify against the run's --cacert file")
            && !err.contains("--cacert FILE"),
        "{err}"
    );
}
