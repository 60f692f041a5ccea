//! `headroom target --tls` as its own process, and `headroom run` through its HTTPS:
//! the certificate it writes verifies (by IP and by `localhost`), `--insecure` accepts
//! it, nothing else does, and the handshakes the client counts are the ones the
//! target counts on its `/metrics`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use headroom::metrics::summary::Summary;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{assert_exit, free_port, headroom_bin, run_with_summary, stderr};

const LIMIT: Duration = Duration::from_secs(60);

/// A `headroom target --tls` process on a free loopback port, killed when dropped.
struct TlsTarget {
    child: Child,
    port: u16,
    cert: PathBuf,
    /// The line it printed once listening.
    banner: String,
    /// Its standard output, kept open: a closed pipe would fail its next print.
    _stdout: BufReader<std::process::ChildStdout>,
}

impl TlsTarget {
    fn start(dir: &Path) -> TlsTarget {
        let cert = dir.join("target-cert.pem");
        // The port was free a moment ago; another process may take it first, so retry.
        for _ in 0..5 {
            let port = free_port();
            let mut child = Command::new(headroom_bin())
                .args(["target", "--tls", "--workers", "4", "--service-time", "1ms"])
                .args(["--listen", &format!("127.0.0.1:{port}")])
                .arg("--tls-cert-out")
                .arg(&cert)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start headroom target");
            // Its last line at start says it is listening (the certificate is written
            // before); end of output means it failed.
            let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
            let mut banner = String::new();
            while !banner.contains("listening") {
                banner.clear();
                if stdout.read_line(&mut banner).unwrap_or(0) == 0 {
                    break;
                }
            }
            if banner.contains("listening") {
                return TlsTarget {
                    child,
                    port,
                    cert,
                    banner,
                    _stdout: stdout,
                };
            }
            let _ = child.kill();
            let out = child.wait_with_output().expect("wait for headroom target");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("in use"), "target did not start: {err}");
        }
        panic!("no free port for the target after 5 tries");
    }

    fn url(&self, host: &str) -> String {
        format!("https://{host}:{}/work", self.port)
    }

    /// Its `/metrics` exposition, fetched over HTTPS trusting its certificate.
    fn metrics(&self) -> String {
        let pem = std::fs::read(&self.cert).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&pem) {
            roots.add(cert.unwrap()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let port = self.port;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .unwrap();
            let name = ServerName::try_from("localhost").unwrap();
            let mut tls = tokio_rustls::TlsConnector::from(Arc::new(config))
                .connect(name, tcp)
                .await
                .unwrap();
            tls.write_all(b"GET /metrics HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
                .await
                .unwrap();
            let mut raw = Vec::new();
            // The server closes after the response (connection: close); a TLS close
            // without close_notify would be an error, so take what was read either way.
            let _ = tls.read_to_end(&mut raw).await;
            String::from_utf8_lossy(&raw).into_owned()
        })
    }
}

impl Drop for TlsTarget {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of the exposition line starting with `series ` (0 when absent).
fn sample(text: &str, series: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map_or(0, |v| v.trim().parse().unwrap())
}

/// A 1 s run at 20 requests/s on one thread.
fn run(dir: &Path, url: &str, extra: &[&str]) -> (std::process::Output, Summary) {
    let mut args = vec!["--url", url, "--rate", "20", "--duration", "1s"];
    args.extend(["--threads", "1", "--timeout", "5s"]);
    args.extend_from_slice(extra);
    run_with_summary(dir, &args, LIMIT)
}

#[track_caller]
fn assert_all_ok(out: &std::process::Output, s: &Summary) {
    assert_exit(out, 0);
    assert!(s.requests >= 15, "{} requests", s.requests);
    assert_eq!(s.errors.count, 0, "{:?}\n{}", s.errors.by_kind, stderr(out));
    assert_eq!(s.completed, s.requests);
}

#[test]
fn run_through_the_targets_https_with_insecure_or_its_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let target = TlsTarget::start(dir.path());
    assert!(
        target
            .banner
            .contains(&format!("https://127.0.0.1:{}", target.port)),
        "{}",
        target.banner
    );
    let cacert = target.cert.to_str().unwrap().to_owned();

    let (out, insecure) = run(dir.path(), &target.url("127.0.0.1"), &["--insecure"]);
    assert_all_ok(&out, &insecure);
    let c = &insecure.connections;
    assert!(c.opened >= 1 && c.handshakes == c.opened, "{c:?}");

    // The certificate it wrote verifies, for its IP and for `localhost`.
    let (out, by_ip) = run(dir.path(), &target.url("127.0.0.1"), &["--cacert", &cacert]);
    assert_all_ok(&out, &by_ip);
    let (out, by_name) = run(dir.path(), &target.url("localhost"), &["--cacert", &cacert]);
    assert_all_ok(&out, &by_name);

    // Trusting nothing but the built-in roots, every request is a `tls` error.
    let (out, untrusted) = run(dir.path(), &target.url("127.0.0.1"), &[]);
    assert_eq!(
        untrusted.errors.by_kind.get("tls").copied(),
        Some(untrusted.requests),
        "{:?}\n{}",
        untrusted.errors.by_kind,
        stderr(&out)
    );
    assert!(stderr(&out).contains("UnknownIssuer"), "{}", stderr(&out));

    // Server side: the three good runs' handshakes (plus this scrape's own) completed,
    // the refused ones are handshake errors, and every request was HTTP/1.1.
    let m = target.metrics();
    let completed = sample(&m, "headroom_target_tls_handshakes_total{kind=\"full\"}")
        + sample(&m, "headroom_target_tls_handshakes_total{kind=\"resumed\"}");
    let client_side: u64 = [&insecure, &by_ip, &by_name]
        .iter()
        .map(|s| s.connections.handshakes)
        .sum();
    assert_eq!(completed, client_side + 1, "{m}");
    assert!(
        sample(&m, "headroom_target_tls_handshake_errors_total") >= 1,
        "{m}"
    );
    let served = insecure.requests + by_ip.requests + by_name.requests;
    assert_eq!(
        sample(
            &m,
            "headroom_target_protocol_requests_total{protocol=\"http1\"}"
        ),
        served + 1,
        "{m}"
    );
    assert_eq!(
        sample(
            &m,
            "headroom_target_protocol_requests_total{protocol=\"h2\"}"
        ),
        0
    );
}
