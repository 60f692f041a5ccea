//! The HTTP/2 client connection (`headroom::client::http2`) against a real nginx
//! speaking h2c with prior knowledge (`listen … http2`): many streams on one
//! connection, nginx's `http2_max_concurrent_streams 4` honoured, and nginx's own
//! GOAWAY after `keepalive_requests`.
//!
//! nginx 1.22 serves only HTTP/2 on such a port, so [`NginxH2c`] is a small launcher
//! of its own (ready once an h2c request succeeds) rather than `support::Nginx`, whose
//! readiness probe speaks HTTP/1.1.

use std::fs;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

use headroom::client::http2::{Connection, Settings};
use headroom::metrics::ErrorKind;
use tempfile::TempDir;

use crate::support::free_port;

/// nginx (one worker) serving h2c on 127.0.0.1: `GET /` → "ok\n", `/files/big` → 256 KiB.
struct NginxH2c {
    child: Child,
    addr: SocketAddr,
    dir: TempDir,
}

/// Size of `/files/big`.
const BIG: usize = 256 * 1024;

impl NginxH2c {
    /// Starts nginx with `keepalive_requests` requests per connection.
    fn start(keepalive_requests: u32) -> NginxH2c {
        let dir = tempfile::Builder::new()
            .prefix("headroom-h2c-")
            .tempdir()
            .unwrap();
        let d = dir.path();
        fs::set_permissions(d, fs::Permissions::from_mode(0o755)).unwrap();
        fs::create_dir(d.join("files")).unwrap();
        fs::set_permissions(d.join("files"), fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(d.join("files/big"), vec![b'b'; BIG]).unwrap();
        fs::set_permissions(d.join("files/big"), fs::Permissions::from_mode(0o644)).unwrap();
        let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let dd = d.display();
        let conf = format!(
            r#"daemon off;
worker_processes 1;
pid {dd}/nginx.pid;
error_log {dd}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    keepalive_requests {keepalive_requests};
    http2_max_concurrent_streams 4;
    client_body_temp_path {dd}/body;
    proxy_temp_path {dd}/proxy;
    fastcgi_temp_path {dd}/fastcgi;
    uwsgi_temp_path {dd}/uwsgi;
    scgi_temp_path {dd}/scgi;
    server {{
        listen {addr} http2;
        location / {{ return 200 "ok\n"; }}
        location /files/ {{ root {dd}; default_type text/plain; }}
    }}
}}
"#
        );
        fs::write(d.join("nginx.conf"), conf).unwrap();
        let child = Command::new("/usr/sbin/nginx")
            .arg("-p")
            .arg(d)
            .arg("-c")
            .arg(d.join("nginx.conf"))
            .arg("-e")
            .arg(d.join("error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start /usr/sbin/nginx");
        let mut nginx = NginxH2c { child, addr, dir };
        nginx.wait_ready();
        nginx
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("nginx exited ({status}): {}", self.log());
            }
            let bound = self.dir.path().join("nginx.pid").exists();
            if bound
                && local(async {
                    Some(
                        get(&connect(self.addr).await?, self.addr, "/", true)
                            .await
                            .ok()?
                            .status,
                    )
                }) == Some(200)
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "nginx h2c not ready: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }
}

impl Drop for NginxH2c {
    fn drop(&mut self) {
        // SIGTERM lets the master stop its worker too.
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `f` on a current-thread runtime inside a `LocalSet`, as the engine does.
fn local<F: std::future::Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, f)
}

async fn connect_with(addr: SocketAddr, settings: &Settings) -> Option<Connection> {
    let tcp = tokio::net::TcpStream::connect(addr).await.ok()?;
    tcp.set_nodelay(true).ok()?;
    Connection::handshake(tcp, settings).await.ok()
}

async fn connect(addr: SocketAddr) -> Option<Connection> {
    connect_with(addr, &Settings::default()).await
}

async fn get(
    conn: &Connection,
    addr: SocketAddr,
    path: &str,
    keep: bool,
) -> Result<headroom::client::http2::Response, headroom::client::http2::Failure> {
    let request = http::Request::get(format!("http://{addr}{path}"))
        .body(())
        .unwrap();
    conn.send(request, None, keep, false).await
}

/// Sends `n` GETs of `path` at once on `conn`.
async fn get_all(
    conn: &Rc<Connection>,
    addr: SocketAddr,
    path: &'static str,
    n: usize,
) -> Vec<Result<headroom::client::http2::Response, headroom::client::http2::Failure>> {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let conn = conn.clone();
            tokio::task::spawn_local(async move { get(&conn, addr, path, false).await })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

#[test]
fn nginx_h2c_serves_concurrent_streams_within_its_limit_of_4() {
    let nginx = NginxH2c::start(1000);
    let addr = nginx.addr;
    // Small windows keep each 256 KiB stream open over several round trips, so the
    // streams queue behind nginx's limit of 4; nginx refuses a fifth with RST_STREAM.
    let settings = Settings {
        stream_window: 64 * 1024,
        ..Settings::default()
    };
    local(async {
        let conn = Rc::new(connect_with(addr, &settings).await.expect("h2c handshake"));
        // The first round goes out right after the handshake: only a client that
        // waited for nginx's SETTINGS knows the limit by then.
        for round in 0..3 {
            for r in get_all(&conn, addr, "/files/big", 10).await {
                let r = r.unwrap_or_else(|e| panic!("round {round}: {e}"));
                assert_eq!((r.status, r.body_len), (200, BIG as u64));
            }
        }
        let kept = get(&conn, addr, "/", true).await.unwrap();
        assert_eq!((kept.status, &kept.body[..]), (200, &b"ok\n"[..]));
        assert!(conn.is_open());
    });
}

#[test]
fn nginx_goaway_after_keepalive_requests_refuses_the_rest_and_closes() {
    let nginx = NginxH2c::start(5);
    let addr = nginx.addr;
    local(async {
        let conn = Rc::new(connect(addr).await.expect("h2c handshake"));
        let results = get_all(&conn, addr, "/", 10).await;
        let ok = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(ok, 5, "nginx serves keepalive_requests: {results:?}");
        for e in results.iter().filter_map(|r| r.as_ref().err()) {
            assert!(e.refused, "not processed by nginx, safe to send again: {e}");
            assert!(
                matches!(e.kind, ErrorKind::Goaway | ErrorKind::StreamReset),
                "{e}"
            );
        }
        assert!(!conn.is_open(), "no new stream after nginx's GOAWAY");
        let fresh = connect(addr).await.expect("a new connection");
        assert_eq!(get(&fresh, addr, "/", false).await.unwrap().status, 200);
    });
}
