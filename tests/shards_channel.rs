//! The shard channel is encrypted (issue 31): a sharded run whose shards reach their
//! coordinator through a recording proxy on loopback, and a search of what the proxy
//! saw for the run's secrets; and a peer that completes TLS without the run's secret.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls::{ClientConnection, StreamOwned};

use crate::shards_cli::{all_exit_0, external_shards};
use crate::support::{free_port, headroom_bin, read_summary, run_command, stderr, Nginx};

const LIMIT: Duration = Duration::from_secs(90);

/// A TLS connection to the coordinator at `addr` (1.3, all it speaks) that trusts
/// whatever key it shows.
pub(crate) fn tls_without_the_secret(addr: &str) -> StreamOwned<ClientConnection, TcpStream> {
    // What a peer without the run's secret would do to get through the handshake and
    // try its luck inside: trust whatever the coordinator shows (`--insecure`'s
    // configuration).
    let options = headroom::client::tls::TlsOptions {
        insecure: true,
        ..Default::default()
    };
    let config = headroom::client::tls::client_config(&options).unwrap();
    let name = ServerName::try_from("headroom-coordinator").unwrap();
    let conn = ClientConnection::new(config, name).unwrap();
    let sock = TcpStream::connect(addr).expect("the coordinator listens");
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    StreamOwned::new(conn, sock)
}

/// Everything that crossed a proxy, both ways.
type Seen = Arc<Mutex<Vec<u8>>>;

/// A TCP proxy on loopback to `to` that records every byte each way; returns its
/// address and the record.
fn recording_proxy(to: String) -> (String, Seen) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let seen: Seen = Arc::default();
    let record = seen.clone();
    std::thread::spawn(move || {
        for shard in l.incoming() {
            let Ok(shard) = shard else { return };
            // A shard that came before the coordinator listened is dropped, as a
            // refused connection would be; the proxy stays for the next one.
            let Ok(coordinator) = TcpStream::connect(&to) else {
                continue;
            };
            for (mut from, mut into) in [
                (shard.try_clone().unwrap(), coordinator.try_clone().unwrap()),
                (coordinator, shard),
            ] {
                let record = record.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 64 << 10];
                    loop {
                        let n = match from.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        record.lock().unwrap().extend_from_slice(&buf[..n]);
                        if into.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = into.shutdown(std::net::Shutdown::Write);
                });
            }
        }
    });
    (addr, seen)
}

/// Waits until something listens at `addr` (the probe is a connection the coordinator
/// refuses with a warning, as it would any stranger's).
fn wait_for_listener(addr: &str) {
    let began = std::time::Instant::now();
    while TcpStream::connect(addr).is_err() {
        assert!(began.elapsed() < LIMIT, "nothing listens at {addr}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn a_sharded_runs_secrets_never_cross_the_network_in_clear() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    let coordinator = format!("127.0.0.1:{}", free_port());
    let secret = headroom::shard::auth::new_secret();
    // Three things a capture must not find: a header of the scenario, an `env.` value
    // and a URL path, each unique to this run.
    let nonce = &secret[..12];
    let header = format!("Bearer planted-header-{nonce}");
    let env_value = format!("planted-env-{nonce}");
    let path = format!("/planted-path-{nonce}");
    let scenario = dir.path().join("s.yaml");
    std::fs::write(
        &scenario,
        format!(
            r#"
target: {url}
load: {{model: arrival-rate, rate: 100, duration: 2s}}
requests:
  - name: planted
    path: "{path}?token={{{{ env.PLANTED }}}}"
    headers:
      authorization: "{header}"
      x-env: "{{{{ env.PLANTED }}}}"
"#,
            url = nginx.url()
        ),
    )
    .unwrap();
    let (via, seen) = recording_proxy(coordinator.clone());

    let mut cmd = Command::new(headroom_bin());
    cmd.args(["run", scenario.to_str().unwrap(), "--shards", "2"])
        .args(["--cluster", "external", "--coordinator", &coordinator])
        .args(["--out", out.to_str().unwrap()])
        .env("HEADROOM_SHARD_SECRET", &secret)
        .env("PLANTED", &env_value);
    let coordinator_run = std::thread::spawn(move || run_command(cmd, LIMIT));
    // The shards dial once it listens: a shard whose TLS handshake is cut (by the
    // proxy, finding no coordinator yet) gives up rather than retry.
    wait_for_listener(&coordinator);
    let shards = external_shards(&via, &secret, 2, &[("PLANTED", env_value.as_str())]);
    let run = coordinator_run.join().unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    all_exit_0(shards);
    let s = read_summary(&out);
    assert_eq!(s.scheduled, 200, "{s:?}");
    assert_eq!(
        s.scheduled,
        s.completed + s.errors.count + s.dropped + s.abandoned,
        "{s:?}"
    );
    // The target saw the planted values: they were really in the requests.
    assert_eq!(s.by_name["planted"].requests, 200, "{s:?}");

    let seen = seen.lock().unwrap();
    // The proxy did carry the channel: the setup, 2 s of seconds and two shares.
    assert!(seen.len() > 4 << 10, "only {} bytes crossed", seen.len());
    assert_eq!(seen[0], 0x16, "the first record is not a TLS handshake");
    let planted = [header.as_str(), env_value.as_str(), path.as_str()];
    for planted in planted.into_iter().chain(["planted", "PLANTED", "x-env"]) {
        assert!(!contains(&seen, planted), "{planted:?} crossed in clear");
    }
}

#[test]
fn a_peer_through_tls_without_the_secret_is_refused_and_learns_nothing() {
    let nginx = Nginx::start();
    let coordinator = format!("127.0.0.1:{}", free_port());
    let secret = headroom::shard::auth::new_secret();
    let url = format!("{}/", nginx.url());
    let mut cmd = Command::new(headroom_bin());
    cmd.args(["run", "--url", &url, "--rate", "10", "--duration", "1s"])
        .args(["--shards", "1", "--cluster", "external"])
        .args(["--coordinator", &coordinator])
        .env("HEADROOM_SHARD_SECRET", &secret);
    let coordinator_run = std::thread::spawn(move || run_command(cmd, LIMIT));
    wait_for_listener(&coordinator);
    let mut tls = tls_without_the_secret(&coordinator);
    let reason = crate::shards_cli::forged_proof_over(&mut tls, 1);
    assert!(
        reason.contains("does not know the run's secret"),
        "{reason}"
    );
    // The run's own shard then joins, and the run goes on as if nothing had happened.
    all_exit_0(external_shards(&coordinator, &secret, 1, &[]));
    let run = coordinator_run.join().unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(
        stderr(&run).contains("refused a shard connection from 127.0.0.1"),
        "{}",
        stderr(&run)
    );
}
