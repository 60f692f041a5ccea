//! HTTPS end to end: `headroom run` against a real nginx serving TLS with certificates
//! made in the test (tests/support/certs.rs), on 127.0.0.1 only.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use headroom::metrics::summary::Summary;

use crate::support::certs::{write, Issued, TestCa};
use crate::support::{assert_exit, run_headroom, run_with_summary, stderr, Nginx, NginxTls};

const LIMIT: Duration = Duration::from_secs(60);

/// A 1 s run at 20 requests/s on one thread against `url`, with `extra` flags.
fn run(dir: &Path, url: &str, extra: &[&str]) -> (Output, Summary) {
    let mut args = vec![
        "--url",
        url,
        "--rate",
        "20",
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

fn kind(summary: &Summary, kind: &str) -> u64 {
    summary.errors.by_kind.get(kind).copied().unwrap_or(0)
}

/// Every request got through: exit 0, no error of any kind.
#[track_caller]
fn assert_all_ok(out: &Output, summary: &Summary) {
    assert_exit(out, 0);
    assert!(summary.requests >= 15, "{} requests", summary.requests);
    assert_eq!(
        summary.errors.count,
        0,
        "{:?}\n{}",
        summary.errors.by_kind,
        stderr(out)
    );
    assert_eq!(summary.completed, summary.requests);
}

fn nginx_with(ca: &TestCa, names: &[&str], protocols: &'static str) -> Nginx {
    let server = ca.server(names);
    Nginx::start_tls(&NginxTls {
        cert_pem: server.cert_pem,
        key_pem: server.key_pem,
        client_ca_pem: None,
        protocols,
    })
}

#[test]
fn run_https_with_cacert_succeeds_and_without_it_fails_as_tls() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("headroom test CA");
    let ca_file = write(dir.path(), "ca.pem", &ca.pem);
    let nginx = nginx_with(&ca, &["127.0.0.1"], "TLSv1.2 TLSv1.3");
    let url = format!("{}/", nginx.url());
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");

    let (out, s) = run(dir.path(), &url, &["--cacert", ca_file.to_str().unwrap()]);
    assert_all_ok(&out, &s);
    // Every connection opened was a TLS handshake, timed apart from the TCP connect.
    let c = &s.connections;
    assert!(c.opened >= 1 && c.handshakes == c.opened, "{c:?}");
    assert_eq!(s.timing_ms.tls.count, c.handshakes);
    assert_eq!(s.timing_ms.connect.count, c.opened);
    assert!(s.timing_ms.tls.ms.p50 > 0.0, "{:?}", s.timing_ms.tls);

    // Not trusted (the built-in roots do not know our CA): every request is `tls`,
    // and the first handshake's reason is printed in words with the way out.
    let (out, s) = run(dir.path(), &url, &[]);
    assert!(s.requests >= 15, "{} requests", s.requests);
    assert_eq!(kind(&s, "tls"), s.requests, "{:?}", s.errors.by_kind);
    assert_eq!(s.errors.count, s.requests);
    // A TLS failure is not "could not connect": the verdict's exit-1 rule is about
    // targets that never took a connection, and this one did.
    assert_exit(&out, 0);
    let err = stderr(&out);
    let expected = format!(
        "warning: TLS handshake with {} failed: invalid peer certificate: UnknownIssuer \
         (use --cacert FILE or --insecure)",
        nginx.addr()
    );
    assert!(err.contains(&expected), "{err}");

    // --insecure accepts the certificate whoever issued it.
    let (out, s) = run(dir.path(), &url, &["--insecure"]);
    assert_all_ok(&out, &s);
    assert!(!stderr(&out).contains("TLS handshake"), "{}", stderr(&out));
}

#[test]
fn run_https_requires_the_client_certificate_nginx_asks_for() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("headroom server CA");
    let client_ca = TestCa::new("headroom client CA");
    let server = ca.server(&["127.0.0.1"]);
    let nginx = Nginx::start_tls(&NginxTls {
        cert_pem: server.cert_pem,
        key_pem: server.key_pem,
        client_ca_pem: Some(client_ca.pem.clone()),
        protocols: "TLSv1.2 TLSv1.3",
    });
    let url = format!("{}/", nginx.url());
    let ca_file = write(dir.path(), "ca.pem", &ca.pem);
    let ca_arg = ca_file.to_str().unwrap();

    // Without a certificate the handshake completes (nginx asks for one but does not
    // abort the handshake without it) and nginx answers every request with its own
    // "400 No required SSL certificate was sent": `status_4xx`, not `tls`.
    let (out, s) = run(dir.path(), &url, &["--cacert", ca_arg]);
    assert!(s.requests >= 15, "{} requests", s.requests);
    assert_eq!(kind(&s, "status_4xx"), s.requests, "{:?}", s.errors.by_kind);
    assert_eq!(kind(&s, "tls"), 0);
    assert_exit(&out, 0);

    // Runs with a client certificate, written as NAME.pem and NAME.key.
    let with_client = |name: &str, client: &Issued| {
        let cert = write(dir.path(), &format!("{name}.pem"), &client.cert_pem);
        let key = write(dir.path(), &format!("{name}.key"), &client.key_pem);
        let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
        run(
            dir.path(),
            &url,
            &["--cacert", ca_arg, "--cert", cert, "--key", key],
        )
    };
    let (out, s) = with_client("client", &client_ca.client());
    assert_all_ok(&out, &s);

    // A certificate from a CA nginx does not trust: nginx's 400 again ("The SSL
    // certificate error"), as it verifies after the handshake.
    let (_, s) = with_client("stranger", &TestCa::new("unknown client CA").client());
    assert_eq!(kind(&s, "status_4xx"), s.requests, "{:?}", s.errors.by_kind);
}

#[test]
fn run_resolve_sends_a_name_to_an_address() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("headroom test CA");
    let ca_file = write(dir.path(), "ca.pem", &ca.pem);
    let ca_arg = ca_file.to_str().unwrap();
    // The certificate names `localhost` only, not 127.0.0.1.
    let nginx = nginx_with(&ca, &["localhost"], "TLSv1.2 TLSv1.3");
    let port = nginx.addr().port();

    let (out, s) = run(
        dir.path(),
        &format!("https://127.0.0.1:{port}/"),
        &["--cacert", ca_arg],
    );
    assert_eq!(kind(&s, "tls"), s.requests, "{:?}", s.errors.by_kind);
    let err = stderr(&out);
    assert!(
        err.contains("certificate not valid for name \"127.0.0.1\"")
            && err.contains(
                "(use --resolve HOST:PORT:ADDR with a name it is valid for, or --insecure)"
            ),
        "{err}"
    );

    let resolve = format!("localhost:{port}:127.0.0.1");
    let (out, s) = run(
        dir.path(),
        &format!("https://localhost:{port}/"),
        &["--cacert", ca_arg, "--resolve", &resolve],
    );
    assert_all_ok(&out, &s);

    // A name no resolver knows (`.test` is reserved) reaches plain HTTP as well.
    let plain = Nginx::start();
    let port = plain.addr().port();
    let resolve = format!("headroom.test:{port}:127.0.0.1");
    let (out, s) = run(
        dir.path(),
        &format!("http://headroom.test:{port}/"),
        &["--resolve", &resolve],
    );
    assert_all_ok(&out, &s);
}

#[test]
fn run_https_against_a_tls12_only_server() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("headroom test CA");
    let ca_file = write(dir.path(), "ca.pem", &ca.pem);
    let nginx = nginx_with(&ca, &["127.0.0.1"], "TLSv1.2");
    let (out, s) = run(
        dir.path(),
        &format!("{}/", nginx.url()),
        &["--cacert", ca_file.to_str().unwrap()],
    );
    assert_all_ok(&out, &s);
}

#[test]
fn run_https_resumes_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("headroom test CA");
    write(dir.path(), "ca.pem", &ca.pem);
    let nginx = nginx_with(&ca, &["127.0.0.1"], "TLSv1.2 TLSv1.3");
    // nginx closes the connection after each `/tls-session` response, so every
    // request is a new handshake; only the first has no session to resume (a couple
    // more may, if they start before the first one's ticket arrived).
    let scenario = write(
        dir.path(),
        "resume.yaml",
        &format!(
            "target: {}\n\
             client: {{cacert: ca.pem}}\n\
             load: {{model: arrival-rate, rate: 20, duration: 1s}}\n\
             requests: [{{path: /tls-session, expect: {{body_contains: \"reused=r\"}}}}]\n",
            nginx.url()
        ),
    );
    let (out, s) = run_with_summary(
        dir.path(),
        &[scenario.to_str().unwrap(), "--threads", "1"],
        LIMIT,
    );
    assert!(
        s.requests >= 15,
        "{} requests; {}",
        s.requests,
        stderr(&out)
    );
    let fresh = kind(&s, "check");
    assert!((1..=3).contains(&fresh), "{:?}", s.errors.by_kind);
    assert_eq!(s.errors.count, fresh, "{:?}", s.errors.by_kind);
}

#[test]
fn run_https_reads_the_scenario_client_block() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("headroom test CA");
    write(dir.path(), "ca.pem", &ca.pem);
    let nginx = nginx_with(&ca, &["localhost"], "TLSv1.3");
    let port = nginx.addr().port();
    // The CA path is relative to the scenario file, not to the working directory.
    let scenario = write(
        dir.path(),
        "tls.yaml",
        &format!(
            "target: https://localhost:{port}\n\
             client: {{cacert: ca.pem, resolve: [\"localhost:{port}:127.0.0.1\"]}}\n\
             load: {{model: arrival-rate, rate: 20, duration: 1s}}\n\
             requests: [{{path: /}}]\n"
        ),
    );
    let (out, s) = run_with_summary(
        dir.path(),
        &[scenario.to_str().unwrap(), "--threads", "1"],
        LIMIT,
    );
    assert_all_ok(&out, &s);
}

#[test]
fn run_bad_tls_files_are_bad_input_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let not_pem = write(dir.path(), "not-a-cert.pem", "hello\n");
    let cases = [
        vec!["--cacert", "/nonexistent/missing-ca.pem"],
        vec!["--cacert", not_pem.to_str().unwrap()],
        vec![
            "--cert",
            not_pem.to_str().unwrap(),
            "--key",
            not_pem.to_str().unwrap(),
        ],
    ];
    for extra in cases {
        let mut args = vec![
            "run",
            "--url",
            "https://127.0.0.1:9/",
            "--rate",
            "1",
            "--duration",
            "1s",
        ];
        args.extend_from_slice(&extra);
        let out = run_headroom(&args, LIMIT);
        assert_exit(&out, 2);
        let file = Path::new(extra[1]).file_name().unwrap().to_str().unwrap();
        assert!(stderr(&out).contains(file), "{extra:?}: {}", stderr(&out));
    }
    // A malformed --resolve is refused by the command line.
    let out = run_headroom(
        [
            "run",
            "--url",
            "http://127.0.0.1:9/",
            "--rate",
            "1",
            "--resolve",
            "nonsense",
        ],
        LIMIT,
    );
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("HOST:PORT:ADDR"), "{}", stderr(&out));
}

/// A loopback listener that accepts connections and hands each to `serve` on its own
/// thread; lives until the test process ends (bounded by the run's length).
fn raw_server(serve: fn(std::net::TcpStream)) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream));
        }
    });
    addr
}

#[test]
fn run_https_handshake_cut_short_or_never_answered() {
    let dir = tempfile::tempdir().unwrap();
    // Closed as soon as accepted: TCP connected, the handshake did not; `tls`.
    let closing = raw_server(drop);
    let (out, s) = run(dir.path(), &format!("https://{closing}/"), &["--insecure"]);
    assert_eq!(kind(&s, "tls"), s.requests, "{:?}", s.errors.by_kind);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("TLS handshake with {closing} failed: ")),
        "{err}"
    );

    // Accepted but never answered: the handshake runs out of time, which counts as
    // `connect` (the connection never became usable), with the reason printed.
    let silent = raw_server(|stream| {
        std::thread::sleep(Duration::from_secs(10));
        drop(stream);
    });
    let url = format!("https://{silent}/");
    let args = [
        "--url",
        &url,
        "--rate",
        "10",
        "--duration",
        "1s",
        "--threads",
        "1",
        "--timeout",
        "300ms",
        "--insecure",
    ];
    let (out, s) = run_with_summary(dir.path(), &args, LIMIT);
    assert!(s.requests >= 5, "{} requests", s.requests);
    assert_eq!(kind(&s, "connect"), s.requests, "{:?}", s.errors.by_kind);
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "could not connect to {silent}: connect or TLS handshake timed out"
        )),
        "{err}"
    );
    // Nothing got through because no connection ever became usable: exit 1.
    assert_exit(&out, 1);
}
