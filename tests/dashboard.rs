//! The live dashboard (`--dashboard`, issue 12) end to end: the built binary against
//! the built-in target on loopback, its page driven in headless Chromium through the
//! DevTools protocol (`browser`; `find_stop` for a search stopped from the page), and
//! its `/metrics` scraped during a run (`metrics`).
//!
//! The runs measure timing and share two cores with the browser, so they go one at a
//! time (`SERIAL`), each a few seconds of load.

mod browser;
mod find_stop;
mod metrics;
mod postgres_live;
mod token;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::{headroom_bin, test_store};

/// One dashboard run at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// A `headroom` process serving a dashboard, and what it printed on stderr so far.
struct Running {
    child: Child,
    addr: SocketAddr,
    stderr: Arc<Mutex<String>>,
    started: Instant,
}

impl Running {
    /// Starts `headroom ARGS... --dashboard=127.0.0.1:0` and waits (at most 20 s) for
    /// the address it prints on stderr.
    fn start(args: &[&str]) -> Running {
        let started = Instant::now();
        let mut child = Command::new(headroom_bin())
            .args(args)
            .arg("--dashboard=127.0.0.1:0")
            .env("HEADROOM_STORE", test_store())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start headroom");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let pipe = child.stderr.take().unwrap();
        let seen = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                // `dashboard: http://ADDR/`, or with `?token=…` after the slash.
                if let Some((addr, _)) = line
                    .strip_prefix("dashboard: http://")
                    .and_then(|rest| rest.split_once('/'))
                {
                    let _ = tx.send(addr.parse::<SocketAddr>().unwrap());
                }
                let mut all = seen.lock().unwrap();
                all.push_str(&line);
                all.push('\n');
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(addr) => addr,
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "no dashboard address on stderr:\n{}",
                    stderr.lock().unwrap()
                );
            }
        };
        assert!(addr.ip().is_loopback() && addr.port() != 0, "{addr}");
        Running {
            child,
            addr,
            stderr,
            started,
        }
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Waits for the process to exit (killing it after `limit`) and returns its exit
    /// code and how long it ran.
    fn wait(mut self, limit: Duration) -> (i32, Duration, String) {
        let deadline = self.started + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let took = self.started.elapsed();
                // Let the reader thread take the last lines.
                std::thread::sleep(Duration::from_millis(100));
                let stderr = self.stderr.lock().unwrap().clone();
                return (status.code().unwrap_or(-1), took, stderr);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "headroom did not exit within {limit:?}:\n{}",
                    self.stderr.lock().unwrap()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `GET path` on the dashboard's server; the body, or `None` when it does not answer 200.
fn http_get(addr: SocketAddr, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut reply = String::new();
    s.read_to_string(&mut reply).ok()?;
    let (head, body) = reply.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_string())
}

/// Writes a scenario file.
fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}
