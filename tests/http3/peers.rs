//! HTTP/3 servers nobody here wrote, started on a free loopback port for one test:
//! Debian's Caddy (HTTP/3 on by default since 2.6) and ngtcp2's `gtlsserver` (ngtcp2
//! and nghttp3 over GnuTLS), each with a certificate the test's own CA issued.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::certs::{write, TestCa};
use crate::support::{free_port, require};

/// A server process, killed when dropped.
pub(crate) struct Peer {
    child: Child,
    /// Its port (TCP and UDP for Caddy, UDP only for gtlsserver).
    pub(crate) port: u16,
    /// The CA that issued its certificate, PEM, written to a file.
    pub(crate) ca: PathBuf,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn find(what: &str, paths: &[&str]) -> Option<PathBuf> {
    let found = paths.iter().map(PathBuf::from).find(|p| p.is_file());
    require(
        what,
        found.ok_or("not installed (scripts/test.sh installs it)"),
    )
}

/// The CA, and a server certificate and key for 127.0.0.1, written into `dir`.
fn certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let ca = TestCa::new("headroom HTTP/3 test CA");
    let server = ca.server(&["127.0.0.1", "localhost"]);
    (
        write(dir, "h3-ca.pem", &ca.pem),
        write(dir, "h3-cert.pem", &server.cert_pem),
        write(dir, "h3-key.pem", &server.key_pem),
    )
}

/// Waits until something accepts TCP on `port` (Caddy binds its UDP socket beside).
fn wait_tcp(port: u16, child: &mut Child, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited before listening: {status}");
        }
        assert!(Instant::now() < deadline, "{what} did not listen on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Caddy serving `https://localhost:PORT` (on 127.0.0.1) over HTTP/1.1, h2 and h3:
/// `/` answers a short text, anything else 404. Its data and config stay in `dir`.
///
/// Why a name: a client sends no SNI for an IP address, and Caddy 2.6 then picks a
/// certificate by the connection's local address, which over QUIC is its wildcard
/// UDP socket's (`::`), so it finds none and fails the handshake with
/// internal_error. Real sites are reached by name.
pub(crate) fn caddy(dir: &Path) -> Option<Peer> {
    caddy_with(dir, None)
}

/// [`caddy`] that requires and verifies a client certificate issued by `client_ca`.
///
/// Why `strict_sni_host insecure_off`: with client auth on, Caddy checks that each
/// request's Host is the name the TLS handshake was for, and Caddy 2.6 hands its
/// HTTP/3 requests an empty TLS state (no server name), so every one would get 421.
/// The certificate is still required and verified in the handshake.
pub(crate) fn caddy_mtls(dir: &Path, client_ca: &Path) -> Option<Peer> {
    caddy_with(dir, Some(client_ca))
}

fn caddy_with(dir: &Path, client_ca: Option<&Path>) -> Option<Peer> {
    let bin = find("caddy", &["/usr/bin/caddy", "/usr/local/bin/caddy"])?;
    let (ca, cert, key) = certificates(dir);
    let port = free_port();
    let (strict, client_auth) = match client_ca {
        Some(file) => (
            "\t\tstrict_sni_host insecure_off\n".to_string(),
            format!(
                " {{\n\t\tclient_auth {{\n\t\t\tmode require_and_verify\n\t\t\t\
                 trusted_ca_cert_file {}\n\t\t}}\n\t}}",
                file.display()
            ),
        ),
        None => (String::new(), String::new()),
    };
    let config = format!(
        "{{\n\tadmin off\n\tauto_https off\n\tstorage file_system {data}\n\tservers {{\n\t\tprotocols h1 h2 h3\n{strict}\t}}\n}}\n\
         https://localhost:{port} {{\n\tbind 127.0.0.1\n\ttls {cert} {key}{client_auth}\n\trespond / \"hello over h3\" 200\n\trespond 404\n}}\n",
        data = dir.join("caddy-data").display(),
        cert = cert.display(),
        key = key.display(),
    );
    let file = dir.join("Caddyfile");
    std::fs::write(&file, config).unwrap();
    let mut child = Command::new(bin)
        .args(["run", "--adapter", "caddyfile", "--config"])
        .arg(&file)
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("xdg-data"))
        .env("XDG_CONFIG_HOME", dir.join("xdg-config"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start caddy");
    wait_tcp(port, &mut child, "caddy");
    Some(Peer { child, port, ca })
}

/// ngtcp2's `gtlsserver` serving `dir/htdocs` on UDP 127.0.0.1:PORT, with `extra`
/// options (`--rx-loss=P` drops that share of what it receives).
pub(crate) fn gtlsserver(dir: &Path, extra: &[&str]) -> Option<Peer> {
    let bin = find(
        "ngtcp2's gtlsserver",
        &["/usr/sbin/gtlsserver", "/usr/bin/gtlsserver"],
    )?;
    let (ca, cert, key) = certificates(dir);
    let htdocs = dir.join("htdocs");
    std::fs::create_dir_all(&htdocs).unwrap();
    std::fs::write(htdocs.join("hello.txt"), "hello over h3\n").unwrap();
    let port = free_port();
    let mut child = Command::new(bin)
        .args(["--quiet", "--htdocs"])
        .arg(&htdocs)
        .args(extra)
        .args(["127.0.0.1", &port.to_string()])
        .args([&key, &cert])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start gtlsserver");
    // UDP only: nothing to connect to. QUIC retransmits its first packet if the
    // server was not reading yet, so a short wait is enough either way.
    std::thread::sleep(Duration::from_millis(300));
    if let Ok(Some(status)) = child.try_wait() {
        panic!("gtlsserver exited at start: {status}");
    }
    Some(Peer { child, port, ca })
}
