//! The two real servers the application journeys' tests drive, installed by
//! `scripts/peers.sh` (`peer_go_httpbin`, `peer_journey_django`) and started here on a
//! free loopback port, killed when dropped:
//!
//! - [`GoHttpbin`]: go-httpbin, httpbin's endpoints in Go (`/cookies/set?name=value`,
//!   `/cookies`, `/redirect/N`, `/redirect-to?url=...&status_code=...`, `/post` echoing
//!   form fields and files, `/anything`, `/status/N`...).
//! - [`JourneyApp`]: the Django app of `tests/peers/journey_app/` under waitress: a
//!   session login behind Django's CSRF protection, seeded accounts and their CSV, an
//!   upload, and `/stats/` ([`JourneyStats`]) counting what reached it.
//!
//! Both are prerequisites through [`require`]: when one is not installed the start
//! functions return `None` and the test returns (a skip, said on stderr), or they fail
//! when `HEADROOM_REQUIRE_ALL` is set, as `scripts/test.sh` does after running
//! `scripts/peers.sh`.
//!
//! [`exchange`] is one plain HTTP/1.1 request over `std::net::TcpStream` (no cookie
//! jar, no redirects followed) whose [`Reply`] keeps every header: what a test needs to
//! see a 302, its `Location` and its `Set-Cookie`s as the server sent them.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::peers::peer_file;
use super::ports::free_port;
use super::require;

/// How long a peer may take to answer after it was started (Django migrates a fresh
/// database and seeds its accounts first).
const START_LIMIT: Duration = Duration::from_secs(60);

/// go-httpbin (`$HEADROOM_PEERS/go-httpbin`) on 127.0.0.1.
pub(crate) struct GoHttpbin {
    child: Child,
    port: u16,
}

impl GoHttpbin {
    /// Starts go-httpbin on a free loopback port (its request log off) and returns once
    /// `GET /status/200` answers 200; `None` when the peer is not installed (the
    /// caller returns: a skip, or a failure under `HEADROOM_REQUIRE_ALL`). Retries on
    /// another port if the first was taken meanwhile.
    #[track_caller]
    pub(crate) fn start() -> Option<GoHttpbin> {
        let bin = require(
            "the go-httpbin peer",
            peer_file("go-httpbin").and_then(runnable),
        )?;
        for _ in 0..5 {
            let port = free_port();
            let child = Command::new(&bin)
                .args(["-host", "127.0.0.1", "-port", &port.to_string()])
                .args(["-log-level", "OFF"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("start {}: {e}", bin.display()));
            let mut peer = GoHttpbin { child, port };
            let addr = peer.addr();
            if wait_until_answers(&mut peer.child, addr, "/status/200") {
                return Some(peer);
            }
            // Exited (the port was taken) or never answered: drop kills it; try another.
        }
        panic!("go-httpbin did not start on any of 5 free ports");
    }

    /// Its address, 127.0.0.1:PORT.
    pub(crate) fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Its base URL, `http://127.0.0.1:PORT` (no trailing slash).
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr())
    }
}

impl Drop for GoHttpbin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Django app of `tests/peers/journey_app/` (`serve.py`) under waitress on
/// 127.0.0.1, with its SQLite database, its accounts' CSV and its log in a temporary
/// directory removed when dropped. See `serve.py` for its pages.
pub(crate) struct JourneyApp {
    child: Child,
    port: u16,
    accounts: usize,
    dir: tempfile::TempDir,
}

impl JourneyApp {
    /// Migrates a fresh database, seeds `accounts` accounts ([`JourneyApp::username`],
    /// [`JourneyApp::password`]) and writes them to [`JourneyApp::accounts_csv`], serves
    /// on a free loopback port with waitress (8 threads) and returns once `GET /public/`
    /// answers 200, every count of `/stats/` then back at zero. `None` when the peer is
    /// not installed (the caller returns: a skip, or a failure under
    /// `HEADROOM_REQUIRE_ALL`). Retries on another port if the first was taken.
    #[track_caller]
    pub(crate) fn start(accounts: usize) -> Option<JourneyApp> {
        Self::start_with(accounts, &[])
    }

    /// [`JourneyApp::start`] with more environment for `serve.py`, e.g.
    /// `("JOURNEY_THREADS", "16")` or `("JOURNEY_CONNECTIONS", "4000")`.
    #[track_caller]
    pub(crate) fn start_with(accounts: usize, env: &[(&str, &str)]) -> Option<JourneyApp> {
        let python = require(
            "the journey-django peer (Django and waitress in a venv)",
            peer_file("journey-django/venv/bin/python"),
        )?;
        let app = app_dir();
        let dir = tempfile::tempdir().expect("a temporary directory for the journey app");
        let csv = dir.path().join("accounts.csv");
        let log = dir.path().join("server.log");
        for attempt in 1..=5 {
            let port = free_port();
            let log_file = std::fs::File::create(&log).unwrap();
            let mut child = Command::new(&python)
                .arg(app.join("serve.py"))
                .arg(port.to_string())
                .current_dir(&app)
                .env("JOURNEY_DIR", dir.path())
                .env("JOURNEY_ACCOUNTS", accounts.to_string())
                .env("JOURNEY_CSV", &csv)
                // No __pycache__ in the source tree.
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .env("PYTHONUNBUFFERED", "1")
                .envs(env.iter().copied())
                .stdin(Stdio::null())
                .stdout(log_file.try_clone().unwrap())
                .stderr(log_file)
                .spawn()
                .unwrap_or_else(|e| panic!("start {}: {e}", python.display()));
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            if wait_until_answers(&mut child, addr, "/public/") {
                let peer = JourneyApp {
                    child,
                    port,
                    accounts,
                    dir,
                };
                peer.reset_stats();
                return Some(peer);
            }
            let _ = child.kill();
            let _ = child.wait();
            let said = std::fs::read_to_string(&log).unwrap_or_default();
            // A port taken meanwhile: the next try finds the database migrated and the
            // accounts seeded, and makes nothing twice.
            assert!(
                attempt < 5 && said.contains("in use"),
                "the journey app did not answer GET /public/ on port {port} within \
                 {START_LIMIT:?}; its log:\n{said}"
            );
        }
        unreachable!("the last attempt asserts")
    }

    /// Its address, 127.0.0.1:PORT.
    pub(crate) fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Its base URL, `http://127.0.0.1:PORT` (no trailing slash).
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr())
    }

    /// How many accounts it was seeded with.
    pub(crate) fn accounts(&self) -> usize {
        self.accounts
    }

    /// The seeded accounts as CSV: a header `username,password`, then one row per
    /// account in order (`user0001,pw-user0001`...).
    pub(crate) fn accounts_csv(&self) -> PathBuf {
        self.dir.path().join("accounts.csv")
    }

    /// The name of the `i`th seeded account (from 1): `user0001`, four digits or as
    /// many as the number of accounts needs.
    pub(crate) fn username(&self, i: usize) -> String {
        let width = self.accounts.to_string().len().max(4);
        format!("user{i:0width$}")
    }

    /// The password of a seeded account: `pw-` and its name.
    pub(crate) fn password(username: &str) -> String {
        format!("pw-{username}")
    }

    /// What the server wrote on stdout and stderr so far (errors, a traceback).
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// `GET /stats/`: the counts since the start or the last [`JourneyApp::reset_stats`].
    #[track_caller]
    pub(crate) fn stats(&self) -> JourneyStats {
        let reply = exchange(self.addr(), "GET", "/stats/", &[], b"");
        assert_eq!(reply.status, 200, "GET /stats/: {}", reply.text());
        serde_json::from_slice(&reply.body)
            .unwrap_or_else(|e| panic!("GET /stats/: {e}: {}", reply.text()))
    }

    /// `GET /stats/requests/`: every request that reached the app since the start or
    /// the last reset (but `/stats/`), as the app saw it.
    #[track_caller]
    pub(crate) fn requests(&self) -> Received {
        let reply = exchange(self.addr(), "GET", "/stats/requests/", &[], b"");
        assert_eq!(reply.status, 200, "GET /stats/requests/: {}", reply.text());
        serde_json::from_slice(&reply.body)
            .unwrap_or_else(|e| panic!("GET /stats/requests/: {e}: {}", reply.text()))
    }

    /// `POST /stats/reset/`: every count back to zero.
    #[track_caller]
    pub(crate) fn reset_stats(&self) {
        let reply = exchange(self.addr(), "POST", "/stats/reset/", &[], b"");
        assert_eq!(reply.status, 200, "POST /stats/reset/: {}", reply.text());
    }
}

impl Drop for JourneyApp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What reached the journey app (`GET /stats/requests/`).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Received {
    /// Requests per `METHOD /path` (the query left out).
    pub(crate) counts: BTreeMap<String, u64>,
    /// The requests in the order they arrived (the first 20,000).
    pub(crate) requests: Vec<ReceivedRequest>,
}

impl Received {
    /// Requests to `METHOD /path` (0 when none came).
    pub(crate) fn count(&self, route: &str) -> u64 {
        self.counts.get(route).copied().unwrap_or(0)
    }

    /// The requests to `METHOD /path`, in order.
    pub(crate) fn to(&self, method: &str, path: &str) -> Vec<&ReceivedRequest> {
        self.requests
            .iter()
            .filter(|r| r.method == method && r.path == path)
            .collect()
    }
}

/// One request as the journey app saw it.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ReceivedRequest {
    /// The method.
    pub(crate) method: String,
    /// The path, without the query.
    pub(crate) path: String,
    /// The query string as sent (`a=1&b=2`).
    pub(crate) query: String,
    /// The headers, names lower-cased.
    pub(crate) headers: BTreeMap<String, String>,
    /// The body's first 8 KiB, as text.
    pub(crate) body: String,
}

impl ReceivedRequest {
    /// A header's value (`name` lower-case).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// What the journey app's `GET /stats/` counted.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct JourneyStats {
    /// How many accounts exist.
    pub(crate) accounts: usize,
    /// Successful logins per account (every account, zeros included).
    pub(crate) logins: BTreeMap<String, u64>,
    /// The sum of `logins`.
    pub(crate) total_logins: u64,
    /// Logins refused for wrong credentials (a refused CSRF token never reaches the
    /// login, so it is not counted here).
    pub(crate) failed_logins: u64,
    /// Requests to `/public/` (any answer).
    pub(crate) public_requests: u64,
    /// Successful `POST /api/login` per account.
    pub(crate) api_logins: BTreeMap<String, u64>,
}

impl JourneyStats {
    /// Successful logins of `username` (0 for an unknown name).
    pub(crate) fn logins_of(&self, username: &str) -> u64 {
        self.logins.get(username).copied().unwrap_or(0)
    }
}

/// An answer read by [`exchange`].
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    /// Every header in order, names as sent, values trimmed.
    pub(crate) headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub(crate) body: Vec<u8>,
}

impl Reply {
    /// The first header named `name` (any case).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.all(name).next()
    }

    /// Every header named `name` (any case), in order.
    pub(crate) fn all<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a str> + 'a {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(&name))
            .map(|(_, v)| v.as_str())
    }

    /// The value a `Set-Cookie` of this answer gives the cookie `name`.
    pub(crate) fn set_cookie(&self, name: &str) -> Option<String> {
        self.all("set-cookie").find_map(|line| {
            let pair = line.split(';').next()?.trim();
            let (n, v) = pair.split_once('=')?;
            (n.trim() == name).then(|| v.trim().to_string())
        })
    }

    /// The body as text (lossy).
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One HTTP/1.1 request to `addr` on a new connection (`host` and `connection: close`
/// added, `content-length` when there is a body): no redirect is followed and no
/// cookie kept. Panics on a connection error or after 10 s without an answer.
#[track_caller]
pub(crate) fn exchange(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    try_exchange(addr, method, path, headers, body)
        .unwrap_or_else(|e| panic!("{method} {path} on {addr}: {e}"))
}

/// [`exchange`], saying what went wrong instead of panicking.
pub(crate) fn try_exchange(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Reply, String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|e| format!("connect: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() || matches!(method, "POST" | "PUT" | "PATCH") {
        head.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body))
        .map_err(|e| format!("write: {e}"))?;
    let mut raw = Vec::new();
    // At most 16 MiB: a test peer's answer is far smaller.
    stream
        .take(16 << 20)
        .read_to_end(&mut raw)
        .map_err(|e| format!("read: {e}"))?;
    parse_reply(&raw)
        .ok_or_else(|| format!("not an HTTP answer: {}", String::from_utf8_lossy(&raw)))
}

/// A `multipart/form-data` body of `fields` (name, value) and `files` (field name,
/// file name, content type, bytes); returns the `content-type` header's value and the
/// body.
pub(crate) fn multipart(
    fields: &[(&str, &str)],
    files: &[(&str, &str, &str, &[u8])],
) -> (String, Vec<u8>) {
    let boundary = "headroom-journey-boundary-7c1e9a";
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\ncontent-disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    for (name, filename, content_type, bytes) in files {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\ncontent-disposition: form-data; name=\"{name}\"; \
                 filename=\"{filename}\"\r\ncontent-type: {content_type}\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

fn parse_reply(raw: &[u8]) -> Option<Reply> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    let rest = &raw[end + 4..];
    let chunked = headers.iter().any(|(n, v)| {
        n.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    let body = if chunked {
        dechunk(rest)?
    } else {
        rest.to_vec()
    };
    Some(Reply {
        status,
        headers,
        body,
    })
}

fn dechunk(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n")?;
        let size = std::str::from_utf8(&rest[..line_end]).ok()?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(rest.get(..size)?);
        rest = rest.get(size + 2..)?;
    }
}

/// Waits until `GET path` on `addr` answers 200: true; false when `child` exited first
/// (a taken port) or [`START_LIMIT`] passed.
fn wait_until_answers(child: &mut Child, addr: SocketAddr, path: &str) -> bool {
    let began = Instant::now();
    while began.elapsed() < START_LIMIT {
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok()
            && try_exchange(addr, "GET", path, &[], b"").is_ok_and(|r| r.status == 200)
        {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// The journey app's sources, `tests/peers/journey_app`.
fn app_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/journey_app")
}

/// `path` when it is an executable file, else why not.
fn runnable(path: PathBuf) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(&path) {
        Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => Ok(path),
        Ok(_) => Err(format!("{} is not an executable file", path.display())),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}
