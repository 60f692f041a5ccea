//! Client certificates over HTTP/3: `--cert` and `--key` reach the QUIC handshake as
//! they reach TLS over TCP. ngtcp2's `gtlsserver --verify-client` refuses a handshake
//! that brings no client certificate; TLS 1.3 lets it say so only after the client has
//! finished its side, so the refusal arrives on a connection the client holds as open.

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
    assert!(s.requests >= 3, "{s:?}");
    assert_eq!(
        s.errors.by_kind.get("tls"),
        Some(&s.requests),
        "{:?}",
        s.errors
    );
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "TLS handshake with 127.0.0.1:{} failed",
            server.port
        )),
        "{err}"
    );
    assert!(err.contains("client certificate"), "{err}");

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
