//! grpc-go's route_guide example server (built by `scripts/peers.sh`'s `peer_grpc`) on a
//! free loopback port, serving a features database the test writes, killed when dropped.

use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::peers::peer_path;
use super::ports::free_port;

/// A running route_guide server.
pub(crate) struct RouteGuide {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

/// The proto file of the route_guide example, copied into tests/fixtures.
pub(crate) fn route_guide_proto() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/route_guide.proto")
}

impl RouteGuide {
    /// Starts the server with `features` (a JSON array of
    /// `{"location": {"latitude", "longitude"}, "name"}`) and returns once it accepts
    /// connections. Retries on another port if the first was taken meanwhile.
    pub(crate) fn start(features: &serde_json::Value) -> RouteGuide {
        let bin = peer_path("route_guide_server");
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("features.json");
        std::fs::write(&db, features.to_string()).unwrap();
        for _ in 0..5 {
            let port = free_port();
            let mut child = Command::new(&bin)
                .arg(format!("-port={port}"))
                .arg(format!("-json_db_file={}", db.display()))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start route_guide_server");
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break; // exited: the port was taken, try another
                }
                let addr = SocketAddr::from(([127, 0, 0, 1], port));
                if TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
                    return RouteGuide {
                        child,
                        port,
                        _dir: dir,
                    };
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("route_guide_server did not start");
    }

    /// Its address.
    pub(crate) fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Its URL (`http://127.0.0.1:PORT`, h2c).
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr())
    }
}

impl Drop for RouteGuide {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
