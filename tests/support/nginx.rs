//! A real nginx for tests: a master process (`master_process` is on by default) and one
//! worker on a free 127.0.0.1 port, configured in a temporary directory, stopped when
//! dropped.

use std::fmt::Write as _;
use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::free_port;

/// Where nginx is looked for when it is not on `PATH` (Debian puts it in `/usr/sbin`).
const NGINX_CANDIDATES: &[&str] = &["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"];
/// How many fresh ports to try when another process takes ours between probe and bind.
const PORT_ATTEMPTS: usize = 5;
/// How long nginx gets to answer its first request.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// Body of `GET /json`.
pub(crate) const JSON_BODY: &str = r#"{"id": 42, "data": [1,2,3]}"#;

/// A running nginx serving `GET /` → `200 "ok\n"` and `GET /json` → `200` [`JSON_BODY`]
/// (`application/json`) on 127.0.0.1, with one worker process, no access log and
/// keep-alive connections that last a million requests. Files put with
/// [`Nginx::put_file`] are served under `/files/`, gzipped for clients that accept it.
/// Started with [`Nginx::start_tls`], it serves HTTPS only, and `GET /tls-session` too.
///
/// The master process is stopped (and its worker with it) when the value is dropped.
pub(crate) struct Nginx {
    child: Child,
    addr: SocketAddr,
    dir: TempDir,
    tls: bool,
    h2c: bool,
    /// `accepts` at the last `stub_status` reading, and the connections other than
    /// readiness probes and status readings accepted up to it.
    accepted: std::cell::Cell<(u64, u64)>,
}

/// HTTP/2 on the listening port ([`Nginx::start_h2`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NginxH2 {
    /// `http2_max_concurrent_streams` (nginx's default is 128).
    pub(crate) max_streams: u32,
    /// `keepalive_requests`: after this many requests on a connection nginx sends
    /// GOAWAY and closes it (a million when `None`).
    pub(crate) max_requests: Option<u32>,
    /// Requests to `/up/…` are proxied to this HTTP/1.1 server (e.g. the built-in
    /// target's `/slow?ms=N`, for responses that take a known time).
    pub(crate) upstream: Option<SocketAddr>,
}

/// How [`Nginx::start_tls`] serves HTTPS: PEM texts it writes into its directory.
#[derive(Debug, Clone)]
pub(crate) struct NginxTls {
    /// The server's certificate chain (leaf first).
    pub(crate) cert_pem: String,
    /// The server's private key.
    pub(crate) key_pem: String,
    /// When set, a client certificate issued by this CA is required
    /// (`ssl_verify_client on`).
    pub(crate) client_ca_pem: Option<String>,
    /// `ssl_protocols`, e.g. `"TLSv1.2 TLSv1.3"`.
    pub(crate) protocols: &'static str,
}

/// What [`Nginx::start_with`] changes of the usual configuration.
#[derive(Debug, Clone, Default)]
pub(crate) struct NginxExtra {
    /// `worker_rlimit_nofile` (16384 when `None`).
    pub(crate) rlimit_nofile: Option<u32>,
    /// More main-context directives, e.g. `worker_cpu_affinity 01;`.
    pub(crate) main: String,
    /// More `location` blocks of the served port.
    pub(crate) locations: String,
}

impl Nginx {
    /// Starts nginx as [`Nginx::start`] does, with `extra`'s changes.
    pub(crate) fn start_with(extra: &NginxExtra) -> Nginx {
        Nginx::launch_on([127, 0, 0, 1].into(), None, None, extra)
    }

    /// Starts nginx and returns once it answers `GET /` with 200.
    ///
    /// Panics with a clear message if nginx is not installed (`bash scripts/test.sh`
    /// installs it) or does not come up within 10 s.
    pub(crate) fn start() -> Nginx {
        Nginx::launch(None, None)
    }

    /// Starts nginx serving HTTP/2 only on its port: h2 by ALPN (and HTTP/1.1) over
    /// TLS with `tls`, else h2c with prior knowledge (`listen … http2`, which then
    /// speaks nothing else). `GET /slow/NAME` serves a file put with
    /// [`Nginx::put_file`] at 100 KB/s (after the first 100 KB, which go at once), and
    /// `/up/PATH` is proxied to the upstream, if any.
    pub(crate) fn start_h2(tls: Option<&NginxTls>, h2: NginxH2) -> Nginx {
        Nginx::launch(tls, Some(h2))
    }

    /// Connections nginx accepted since it was ready (status readings left out) and
    /// those open now, from its `stub_status`.
    pub(crate) fn connections(&self) -> (u64, u64) {
        let (accepts, active) = self.stub_status();
        let (seen, total) = self.accepted.get();
        // The reading itself is one accepted and active connection.
        let total = total + (accepts - seen - 1);
        self.accepted.set((accepts, total));
        (total, active - 1)
    }

    /// `accepts` and `Active connections` of nginx's `stub_status`, read over
    /// HTTP/1.1 on a separate status port.
    fn stub_status(&self) -> (u64, u64) {
        let text =
            fs::read_to_string(self.dir.path().join("status-port")).expect("the status port file");
        let port: u16 = text.trim().parse().expect("a port");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let response = get(addr, "/status").expect("nginx stub_status answers");
        let body = response.split("\r\n\r\n").nth(1).expect("a body");
        // "Active connections: 1 \nserver accepts handled requests\n 5 5 9 \n..."
        let active: u64 = body
            .split("Active connections:")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .expect("Active connections in stub_status");
        let accepts: u64 = body
            .lines()
            .nth(2)
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .expect("accepts in stub_status");
        (accepts, active)
    }

    /// Starts nginx serving HTTPS only (`listen … ssl`) as `tls` says; returns once it
    /// answers a plain HTTP request on its TLS port with its own 400.
    pub(crate) fn start_tls(tls: &NginxTls) -> Nginx {
        Nginx::launch(Some(tls), None)
    }

    /// Starts nginx on `ip` (an address of a bridge the test made), logging each
    /// request as `$remote_addr $msec $status` ([`Nginx::access_log`]).
    pub(crate) fn start_logged(ip: std::net::IpAddr) -> Nginx {
        Nginx::launch_on(ip, None, None, &NginxExtra::default())
    }

    /// The access log of [`Nginx::start_logged`]: `(client address, time in ms since
    /// the epoch, status)` per request, in order.
    pub(crate) fn access_log(&self) -> Vec<(String, u64, u16)> {
        let text = fs::read_to_string(self.dir.path().join("access.log")).unwrap_or_default();
        text.lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                let addr = w.next()?.to_string();
                let ms = (w.next()?.parse::<f64>().ok()? * 1000.0).round() as u64;
                Some((addr, ms, w.next()?.parse().ok()?))
            })
            .collect()
    }

    fn launch(tls: Option<&NginxTls>, h2: Option<NginxH2>) -> Nginx {
        Nginx::launch_on([127, 0, 0, 1].into(), tls, h2, &NginxExtra::default())
    }

    fn launch_on(
        ip: std::net::IpAddr,
        tls: Option<&NginxTls>,
        h2: Option<NginxH2>,
        extra: &NginxExtra,
    ) -> Nginx {
        let binary = find_nginx().unwrap_or_else(|| {
            panic!(
                "nginx is not installed (looked on PATH and in {NGINX_CANDIDATES:?}); \
                 run `bash scripts/test.sh`, which installs it"
            )
        });
        let mut last_log = String::new();
        for _ in 0..PORT_ATTEMPTS {
            let dir = world_readable_tempdir();
            let addr = SocketAddr::from((ip, free_port()));
            let conf = dir.path().join("nginx.conf");
            if let Some(tls) = tls {
                write_tls_files(dir.path(), tls);
            }
            let status = SocketAddr::from(([127, 0, 0, 1], free_port()));
            fs::write(dir.path().join("status-port"), status.port().to_string())
                .expect("write the status port");
            fs::write(&conf, config(dir.path(), addr, status, tls, h2, extra))
                .expect("write nginx.conf");
            let child = spawn(&binary, dir.path());
            let mut nginx = Nginx {
                child,
                addr,
                dir,
                tls: tls.is_some(),
                h2c: h2.is_some() && tls.is_none(),
                accepted: Default::default(),
            };
            match nginx.wait_ready() {
                Ok(()) => {
                    // What came before (readiness probes) is not the test's.
                    let (accepts, _) = nginx.stub_status();
                    nginx.accepted.set((accepts, 0));
                    return nginx;
                }
                Err(log) if log.contains("Address already in use") => last_log = log,
                Err(log) => panic!("nginx did not start on {addr}; its error log:\n{log}"),
            }
        }
        panic!("nginx found no free port in {PORT_ATTEMPTS} attempts; last error log:\n{last_log}")
    }

    /// Base URL without a trailing slash, e.g. `http://127.0.0.1:41234` (`https://`
    /// when started with [`Nginx::start_tls`]).
    pub(crate) fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The socket address nginx listens on.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Process id of the nginx master process.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Process ids of the master's children: the worker, which does the serving.
    pub(crate) fn worker_pids(&self) -> Vec<u32> {
        children_of(self.pid())
    }

    /// Stops nginx (master and worker) and waits until it has exited: its port
    /// refuses connections until [`Nginx::resume`].
    pub(crate) fn stop(&mut self) {
        self.terminate();
    }

    /// Starts nginx again on the same port and configuration after [`Nginx::stop`],
    /// returning once it answers.
    pub(crate) fn resume(&mut self) {
        let binary = find_nginx().expect("nginx ran before");
        let _ = fs::remove_file(self.dir.path().join("nginx.pid"));
        self.child = spawn(&binary, self.dir.path());
        if let Err(log) = self.wait_ready() {
            panic!(
                "nginx did not start again on {}; its error log:\n{log}",
                self.addr
            );
        }
    }

    /// Writes `bytes` to be served as `/files/NAME` (`text/plain`).
    pub(crate) fn put_file(&self, name: &str, bytes: &[u8]) {
        let files = self.dir.path().join("files");
        fs::create_dir_all(&files).expect("create the nginx files directory");
        // The worker runs unprivileged: the directory and file must be world-readable.
        fs::set_permissions(&files, fs::Permissions::from_mode(0o755)).expect("chmod files");
        let path = files.join(name);
        fs::write(&path, bytes).expect("write an nginx file");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod file");
    }

    /// Waits until nginx answers `GET /` with 200; on failure returns its error log.
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for nginx") {
                return Err(format!("(nginx exited: {status})\n{}", self.error_log()));
            }
            // nginx writes its pid file only after binding the port, so a 200 before
            // that would come from some other server that holds the port.
            let bound = self.dir.path().join("nginx.pid").exists();
            // On a TLS port nginx answers plain HTTP with its own 400 ("The plain HTTP
            // request was sent to HTTPS port"): that too shows it is nginx that listens.
            // An h2c port speaks nothing but HTTP/2: that it accepts is enough.
            let ready = if self.tls { " 400 " } else { " 200 " };
            let answers = if self.h2c {
                TcpStream::connect(self.addr).is_ok()
            } else {
                get_status_line(self.addr).is_some_and(|line| line.contains(ready))
            };
            if bound && answers {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "(no answer within {READY_TIMEOUT:?})\n{}",
                    self.error_log()
                ));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    fn error_log(&self) -> String {
        fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        self.terminate();
    }
}

impl Nginx {
    fn terminate(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return; // Already stopped (and reaped): its pid may belong to another now.
        }
        // SIGTERM lets the master stop its worker; SIGKILL on the master alone would
        // leave the worker serving on the port.
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(10));
        }
        for pid in self.worker_pids() {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the nginx `binary` with the configuration in `dir`.
fn spawn(binary: &Path, dir: &Path) -> Child {
    Command::new(binary)
        .arg("-p")
        .arg(dir)
        .arg("-c")
        .arg(dir.join("nginx.conf"))
        .arg("-e")
        .arg(dir.join("error.log"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()))
}

/// Writes the PEM files that [`config`] names for `tls`, readable by the master only
/// (it reads them before dropping privileges).
fn write_tls_files(dir: &Path, tls: &NginxTls) {
    let mut files = vec![("server.pem", &tls.cert_pem), ("server.key", &tls.key_pem)];
    if let Some(ca) = &tls.client_ca_pem {
        files.push(("client-ca.pem", ca));
    }
    for (name, text) in files {
        fs::write(dir.join(name), text).expect("write a TLS file for nginx");
    }
}

/// The `listen` parameters and `ssl_*` directives of a server with `tls`.
fn tls_directives(dir: &Path, tls: Option<&NginxTls>) -> (&'static str, String) {
    let Some(tls) = tls else {
        return ("", String::new());
    };
    let d = dir.display();
    let mut lines = format!(
        "ssl_certificate {d}/server.pem;\n        ssl_certificate_key {d}/server.key;\n        ssl_protocols {};\n",
        tls.protocols
    );
    // `GET /tls-session` closes the connection after its response, so each request
    // handshakes anew, and says whether the session was resumed (`r`) or not (`.`).
    lines.push_str(
        "        location /tls-session { keepalive_timeout 0; return 200 \"reused=$ssl_session_reused\\n\"; }\n",
    );
    if tls.client_ca_pem.is_some() {
        let _ = write!(
            lines,
            "        ssl_client_certificate {d}/client-ca.pem;\n        ssl_verify_client on;\n"
        );
    }
    (" ssl", lines)
}

/// The nginx configuration for a server on `addr` whose files all live in `dir`.
fn config(
    dir: &Path,
    addr: SocketAddr,
    status: SocketAddr,
    tls: Option<&NginxTls>,
    h2: Option<NginxH2>,
    extra: &NginxExtra,
) -> String {
    let d = dir.display();
    let nofile = extra.rlimit_nofile.unwrap_or(16384);
    let (main, locations) = (&extra.main, &extra.locations);
    let (ssl, mut ssl_lines) = tls_directives(dir, tls);
    let http2 = match h2 {
        Some(h2) => {
            let _ = writeln!(
                ssl_lines,
                "        http2_max_concurrent_streams {};\n        keepalive_requests {};\n        location /slow/ {{ alias {d}/files/; limit_rate 100k; }}",
                h2.max_streams,
                h2.max_requests.unwrap_or(1_000_000)
            );
            if let Some(up) = h2.upstream {
                let _ = writeln!(
                    ssl_lines,
                    "        location /up/ {{ proxy_pass http://{up}/; proxy_http_version 1.1; proxy_set_header Connection \"\"; }}"
                );
            }
            " http2"
        }
        None => "",
    };
    let log = match addr.ip().is_loopback() {
        true => "access_log off;".to_string(),
        false => format!(
            "log_format at '$remote_addr $msec $status';\n    access_log {d}/access.log at;"
        ),
    };
    let mut conf = String::new();
    // `daemon off` keeps the master as our child so Drop can stop it.
    let _ = write!(
        conf,
        r#"daemon off;
worker_processes 1;
worker_rlimit_nofile {nofile};
{main}
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 8192; }}
http {{
    {log}
    keepalive_requests 1000000;
    keepalive_timeout 75s;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    server {{
        listen {addr}{ssl}{http2};
        {ssl_lines}        location / {{ return 200 "ok\n"; }}
        location /json {{ default_type application/json; return 200 '{JSON_BODY}'; }}
        location /files/ {{ root {d}; default_type text/plain; gzip on; gzip_types text/plain; gzip_comp_level 6; }}
        {locations}
    }}
    server {{
        listen {status};
        location /status {{ stub_status; }}
    }}
}}
"#
    );
    conf
}

/// A temporary directory the unprivileged nginx worker can read.
fn world_readable_tempdir() -> TempDir {
    let dir = tempfile::Builder::new()
        .prefix("headroom-nginx-")
        .tempdir()
        .expect("create a temporary directory for nginx");
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755))
        .expect("make the nginx directory world-readable");
    dir
}

/// The nginx binary on `PATH`, else the first of [`NGINX_CANDIDATES`] that exists.
fn find_nginx() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("nginx"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    on_path
        .into_iter()
        .chain(NGINX_CANDIDATES.iter().map(PathBuf::from))
        .find(|p| p.is_file())
}

/// Sends one `GET /` and returns the response's status line, if any came back.
fn get_status_line(addr: SocketAddr) -> Option<String> {
    get(addr, "/").and_then(|r| r.lines().next().map(str::to_owned))
}

/// Sends one `GET path` over HTTP/1.1 and returns the whole response, if any came back.
fn get(addr: SocketAddr, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    Some(response)
}

/// Process ids whose parent is `parent`, read from `/proc`.
fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| parent_of(pid) == Some(parent))
        .collect()
}

/// The parent pid from `/proc/PID/stat` (fourth field, after the parenthesised name).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}
