//! Client certificates over HTTP/3: `--cert` and `--key` reach the QUIC handshake as
//! they reach TLS over TCP. ngtcp2's `gtlsserver --verify-client` refuses a handshake
//! that brings no client certificate, and Caddy one whose certificate its CA did not
//! issue; TLS 1.3 lets a server say so only after the client has finished its side, so
//! the refusal arrives on a connection the client holds as open.

use std::process::Output;

use headroom::metrics::summary::Summary;

use super::{peers, run};
use crate::support::certs::{write, TestCa};
use crate::support::{assert_clean, stderr};

#[test]
fn a_server_that_requires_a_client_certificate_gets_one_over_quic() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = peers::gtlsserver(dir.path(), &["--verify-client"]) else {
        return;
    };
    let url = format!("https://127.0.0.1:{}/hello.txt", server.port);
    let ca = server.ca.to_str().unwrap();

    // Without one: every request fails as `tls`, and the warning names the handshake
    // and what the server wanted.
    let (out, s) = run(dir.path(), &url, &["--rate", "10", "--cacert", ca]);
    refused("none", &out, &s);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("TLS handshake with 127.0.0.1:{}", server.port)),
        "{err}"
    );

    // With one (gtlsserver checks that one came, not who issued it): every request
    // passes.
    let client = TestCa::new("headroom h3 client CA").client();
    let cert = write(dir.path(), "client.pem", &client.cert_pem);
    let key = write(dir.path(), "client-key.pem", &client.key_pem);
    let (out, s) = run(
        dir.path(),
        &url,
        &[
            "--rate",
            "25",
            "--cacert",
            ca,
            "--cert",
            cert.to_str().unwrap(),
            "--key",
            key.to_str().unwrap(),
        ],
    );
    assert_clean(&out, &s);
    assert!(s.requests >= 3, "{s:?}");
    assert_eq!(s.connections.by_protocol.h3, s.connections.opened);
}

#[test]
fn caddy_verifies_the_client_certificate_over_quic() {
    let dir = tempfile::tempdir().unwrap();
    let trusted = TestCa::new("headroom h3 trusted client CA");
    let client_ca = write(dir.path(), "client-ca.pem", &trusted.pem);
    let Some(caddy) = peers::caddy_mtls(dir.path(), &client_ca) else {
        return;
    };
    let url = format!("https://localhost:{}/", caddy.port);
    let resolve = format!("localhost:{}:127.0.0.1", caddy.port);
    let ca = caddy.ca.to_str().unwrap().to_string();
    let attempt = |name: &str, issuer: Option<&TestCa>| {
        let mut args: Vec<String> = ["--rate", "25", "--cacert", &ca, "--resolve", &resolve]
            .map(String::from)
            .into();
        if let Some(issuer) = issuer {
            let client = issuer.client();
            let cert = write(dir.path(), &format!("{name}.pem"), &client.cert_pem);
            let key = write(dir.path(), &format!("{name}-key.pem"), &client.key_pem);
            args.extend(["--cert".into(), cert.display().to_string()]);
            args.extend(["--key".into(), key.display().to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run(dir.path(), &url, &args)
    };
    // No certificate, and one from a CA Caddy does not trust: refused in the handshake.
    let stranger = TestCa::new("headroom h3 unknown client CA");
    for (name, issuer) in [("none", None), ("stranger", Some(&stranger))] {
        let (out, s) = attempt(name, issuer);
        refused(name, &out, &s);
    }
    // One it trusts: every request passes.
    let (out, s) = attempt("trusted", Some(&trusted));
    assert_clean(&out, &s);
    assert_eq!(s.connections.protocol, "h3");
}

/// Every request failed as `tls`, and the warning names the handshake and the client
/// certificate.
#[track_caller]
fn refused(name: &str, out: &Output, s: &Summary) {
    assert!(s.requests >= 10, "{name}: {s:?}");
    assert_eq!(
        s.errors.by_kind.get("tls"),
        Some(&s.requests),
        "{name}: {:?}",
        s.errors
    );
    let err = stderr(out);
    assert!(err.contains("TLS handshake with"), "{name}: {err}");
    assert!(err.contains("client certificate"), "{name}: {err}");
}
