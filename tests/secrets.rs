//! Secrets stay in the process (issue 31): a planted `Authorization` value, a header
//! marked secret (`secrets.headers`), a data column and an `env.` value marked secret
//! (`secrets.values`) are sent to the target, which echoes every one of them back in a
//! GraphQL error; none of them may appear in anything headroom writes: `--out`, the
//! text output, the store, every report format, `compare`, the rounds page, the live
//! dashboard's `/state` and `/metrics`, the OTLP pushes, `cluster manifest`, and a
//! sharded run's outputs. A redirect to another origin carries none of the secret
//! headers.
//!
//! The target is written here: a loopback HTTP/1.1 server that records every request
//! it receives (headers and body), so the test also proves the values were sent.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::{
    assert_adds_up, free_port, http_get, read_summary, run_command, run_headroom, stderr, stdout,
};

const LIMIT: Duration = Duration::from_secs(90);
const AUTH: &str = "plantedAuth-5f0c2b9e";
const SESSION: &str = "plantedSess-91ad7e3c";
const CELL: &str = "plantedCell-3b8e1f0a";
const ENV: &str = "plantedEnv-c47d2a61";
const PLANTED: [&str; 4] = [AUTH, SESSION, CELL, ENV];

/// What the echoing target received: (listener, path, head and body).
type Seen = Arc<Mutex<Vec<(SocketAddr, String, Vec<u8>)>>>;

/// An echoing target on `ip`: `POST /graphql` answers 200 with a GraphQL error that
/// quotes every header value and the body it was sent; `GET /hop` redirects to `hop`
/// (another origin); `POST /v1/metrics` takes OTLP pushes; anything else is 200.
fn echo_target(ip: &str, hop: Option<SocketAddr>, seen: Seen) -> SocketAddr {
    let listener = TcpListener::bind((ip, 0)).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let seen = seen.clone();
            std::thread::spawn(move || serve(conn, addr, hop, &seen));
        }
    });
    addr
}

fn serve(conn: TcpStream, me: SocketAddr, hop: Option<SocketAddr>, seen: &Seen) {
    conn.set_read_timeout(Some(Duration::from_secs(30))).ok();
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut out = conn;
    loop {
        let mut head = Vec::new();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            // A test target: lines and bodies are bounded by what headroom sends.
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            head.extend_from_slice(line.as_bytes());
            if line == "\r\n" || head.len() > 64 * 1024 {
                break;
            }
        }
        let mut body = vec![0; length.min(4 << 20)];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let text = String::from_utf8_lossy(&head).to_string();
        let path = text.split(' ').nth(1).unwrap_or("").to_string();
        let mut all = head.clone();
        all.extend_from_slice(&body);
        seen.lock().unwrap().push((me, path.clone(), all));
        let (status, extra, reply) = match (path.as_str(), hop) {
            ("/graphql", _) => {
                let values: Vec<&str> = text
                    .lines()
                    .skip(1)
                    .filter_map(|l| l.split_once(':').map(|(_, v)| v.trim()))
                    .collect();
                let message = format!(
                    "refused {} with {}",
                    values.join(" "),
                    String::from_utf8_lossy(&body)
                );
                let json = serde_json::json!({"data": null, "errors": [{"message": message}]});
                ("200 OK", String::new(), json.to_string())
            }
            ("/hop", Some(to)) => (
                "302 Found",
                format!("location: http://{to}/landed\r\n"),
                String::new(),
            ),
            _ => ("200 OK", String::new(), String::new()),
        };
        let response = format!(
            "HTTP/1.1 {status}\r\n{extra}content-type: application/json\r\ncontent-length: {}\r\n\r\n{reply}",
            reply.len()
        );
        if out.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

fn scenario(dir: &Path, target: SocketAddr) -> std::path::PathBuf {
    std::fs::write(
        dir.join("users.csv"),
        format!("name,password\nalice,{CELL}\n"),
    )
    .unwrap();
    let path = dir.join("planted.yaml");
    std::fs::write(
        &path,
        format!(
            r#"name: planted
target: http://{target}
load: {{model: arrival-rate, rate: 20, duration: 3s}}
secrets:
  headers: [X-Session]
  values: [data.users.password, env.HR_PLANT_ENV]
data:
  users: {{file: users.csv}}
defaults:
  headers:
    Authorization: "Bearer {{{{ env.HR_PLANT_AUTH }}}}"
    X-Session: "{{{{ env.HR_PLANT_SESSION }}}}"
flows:
  - name: journey
    steps:
      - request: {{name: hop, path: /hop}}
      - request:
          name: login
          graphql:
            query: "query Login($u: String, $p: String, $e: String) {{ login(u: $u, p: $p, e: $e) }}"
            variables: {{u: "{{{{ data.users.name }}}}", p: "{{{{ data.users.password }}}}", e: "{{{{ env.HR_PLANT_ENV }}}}"}}
"#
        ),
    )
    .unwrap();
    path
}

/// `headroom ARGS` with the planted environment.
fn headroom(args: &[&str]) -> std::process::Output {
    let mut command = std::process::Command::new(crate::support::headroom_bin());
    command
        .args(args)
        .env("HR_PLANT_AUTH", AUTH)
        .env("HR_PLANT_SESSION", SESSION)
        .env("HR_PLANT_ENV", ENV);
    run_command(command, LIMIT)
}

/// Fails naming the artefact and the value when `bytes` holds a planted value.
fn assert_clean(what: &str, bytes: &[u8]) {
    for value in PLANTED {
        let found = bytes.windows(value.len()).any(|w| w == value.as_bytes());
        assert!(!found, "{what} holds the planted value {value}");
    }
}

fn file_bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn planted_secrets_reach_the_target_and_nothing_headroom_writes() {
    let seen: Seen = Arc::default();
    let other = echo_target("127.0.0.2", None, seen.clone());
    let target = echo_target("127.0.0.1", Some(other), seen.clone());
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), target);
    let scenario_arg = file.display().to_string();
    let store = dir.path().join("history.db").display().to_string();
    let out_json = dir.path().join("summary.json").display().to_string();
    let dashboard = format!("127.0.0.1:{}", free_port());
    let dash_addr: SocketAddr = dashboard.parse().unwrap();
    let otlp = format!("http://{target}");

    // Run 1: one process, with the dashboard polled while it runs and OTLP pushes.
    let poll = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let (mut states, deadline) = (0, Instant::now() + Duration::from_secs(30));
        while states < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(500));
            let Ok(stream) = TcpStream::connect(dash_addr) else {
                continue;
            };
            drop(stream);
            for path in ["/state", "/metrics"] {
                let (status, body) = http_get(dash_addr, path);
                if status == 200 && body.contains("login") {
                    states += usize::from(path == "/state");
                }
                bytes.extend(body.into_bytes());
            }
        }
        (states, bytes)
    });
    let run = headroom(&[
        "run",
        &scenario_arg,
        "--store",
        &store,
        "--out",
        &out_json,
        &format!("--dashboard={dashboard}"),
        "--otlp",
        &otlp,
    ]);
    let (states, dash_bytes) = poll.join().unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert!(states >= 1, "the dashboard's /state was never read mid-run");
    assert_clean("the dashboard's /state and /metrics", &dash_bytes);
    assert_clean("the run's stdout", &run.stdout);
    assert_clean("the run's stderr", &run.stderr);
    let summary = read_summary(Path::new(&out_json));
    assert_adds_up(&summary);
    // The target echoed every value: the kept GraphQL message is there, masked.
    let message = summary.errors.first_message.get("graphql").cloned();
    let message = message.expect("the GraphQL error message is kept");
    assert!(
        message.starts_with("refused") && message.contains("***"),
        "{message}"
    );
    assert!(
        message.contains("alice"),
        "only secrets are masked: {message}"
    );
    assert_clean("--out", &file_bytes(Path::new(&out_json)));

    // Run 2: two shards, the same scenario.
    let sharded = headroom(&["run", &scenario_arg, "--store", &store, "--shards", "2"]);
    assert_eq!(sharded.status.code(), Some(0), "{}", stderr(&sharded));
    assert_clean("a sharded run's stdout", &sharded.stdout);
    assert_clean("a sharded run's stderr", &sharded.stderr);

    // Everything was sent: the values did reach the target, so their absence above
    // is headroom's doing.
    let received = seen.lock().unwrap().clone();
    let to_target: Vec<u8> = received
        .iter()
        .filter(|(at, path, _)| *at == target && path == "/graphql")
        .flat_map(|(_, _, b)| b.clone())
        .collect();
    for value in PLANTED {
        let sent = to_target
            .windows(value.len())
            .any(|w| w == value.as_bytes());
        assert!(sent, "{value} never reached the target");
    }
    // A redirect to another origin carries no secret header.
    let landed: Vec<&Vec<u8>> = received
        .iter()
        .filter(|(at, _, _)| *at == other)
        .map(|(_, _, b)| b)
        .collect();
    assert!(!landed.is_empty(), "no redirect reached the other origin");
    for request in &landed {
        let text = String::from_utf8_lossy(request).to_ascii_lowercase();
        assert!(
            !text.contains("authorization:") && !text.contains("x-session:"),
            "a secret header crossed to another origin: {text}"
        );
    }
    let pushes: Vec<u8> = received
        .iter()
        .filter(|(_, path, _)| path == "/v1/metrics")
        .flat_map(|(_, _, b)| b.clone())
        .collect();
    assert!(!pushes.is_empty(), "no OTLP push arrived");
    assert_clean("the OTLP pushes", &pushes);

    // The store, byte for byte, and every report and page read from it.
    let mut stored = Vec::new();
    for suffix in ["", "-wal", "-shm"] {
        stored.extend(std::fs::read(format!("{store}{suffix}")).unwrap_or_default());
    }
    assert!(stored.len() > 4096, "the store holds the runs");
    assert_clean("the store", &stored);
    for format in ["md", "html", "json", "junit"] {
        let out = run_headroom(
            ["report", "1", "--format", format, "--store", &store],
            LIMIT,
        );
        assert_eq!(out.status.code(), Some(0), "{format}: {}", stderr(&out));
        // The mask is shown (escaped in Markdown, where `***` would be emphasis).
        let mask = if format == "md" { r"\*\*\*" } else { "***" };
        assert!(stdout(&out).contains(mask) || format == "junit", "{format}");
        assert_clean(&format!("report --format {format}"), &out.stdout);
    }
    let csv = dir.path().join("csv").display().to_string();
    let out = run_headroom(["report", "1", "--csv", &csv, "--store", &store], LIMIT);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut csv_files = 0;
    for entry in std::fs::read_dir(dir.path()).unwrap().flatten() {
        if entry.file_name().to_string_lossy().starts_with("csv") {
            csv_files += 1;
            assert_clean("a CSV file", &file_bytes(&entry.path()));
        }
    }
    assert!(csv_files > 0, "report --csv wrote nothing");
    for format in ["text", "md", "json"] {
        let out = run_headroom(
            ["compare", "1", "2", "--format", format, "--store", &store],
            LIMIT,
        );
        assert_clean(&format!("compare --format {format}"), &out.stdout);
        assert_clean("compare's stderr", &out.stderr);
    }
    let rounds = run_headroom(
        [
            "report", "--rounds", "1", "2", "--format", "html", "--store", &store,
        ],
        LIMIT,
    );
    assert_eq!(rounds.status.code(), Some(0), "{}", stderr(&rounds));
    assert_clean("the rounds page", &rounds.stdout);

    // Kubernetes objects: the scenario's values are not in them, and the run's own
    // secret is only in the Secret, never in the Job's spec.
    let manifest = headroom(&[
        "cluster",
        "manifest",
        &scenario_arg,
        "--shards",
        "2",
        "--advertise",
        "127.0.0.1:7000",
    ]);
    assert_eq!(manifest.status.code(), Some(0), "{}", stderr(&manifest));
    assert_clean("cluster manifest", &manifest.stdout);
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(&stdout(&manifest)).expect("the manifest is YAML");
    let secret_doc = docs.iter().find(|d| d["kind"] == "Secret").unwrap();
    let secret = secret_doc["stringData"]["secret"]
        .as_str()
        .or_else(|| secret_doc["data"]["secret"].as_str())
        .expect("the Secret holds the run's secret")
        .to_string();
    for doc in docs.iter().filter(|d| d["kind"] != "Secret") {
        assert!(
            !doc.to_string().contains(&secret),
            "the run's secret is in a {}",
            doc["kind"]
        );
    }
}
