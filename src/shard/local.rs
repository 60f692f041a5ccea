//! Shards as processes on this machine: `--shards N` without a cluster starts N
//! `headroom shard` processes, each optionally in a network namespace of its own
//! ([`super::netns`]), and watches them: a process that ends before its goodbye is a
//! lost shard, named with its exit status and last words.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::auth::SECRET_ENV;
use super::netns::{Bridge, Netns, NetnsError};
use super::Placement;

/// Longest line of a shard's stderr kept or shown.
const MAX_LINE: u64 = 4 << 10;
/// How long shards get to exit after their goodbye before they are killed.
const EXIT_GRACE: Duration = Duration::from_secs(5);

/// Why local shards could not be started.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// This executable could not be found or started.
    #[error("cannot start shard {index}: {source}")]
    Spawn {
        /// Shard index.
        index: u64,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A network namespace could not be made.
    #[error("cannot give shard {index} a network namespace: {source}")]
    Netns {
        /// Shard index.
        index: u64,
        /// Why.
        source: NetnsError,
    },
}

struct Process {
    child: Child,
    last_words: Arc<Mutex<String>>,
    reported: bool,
    netns: Option<Netns>,
}

/// N local shard processes.
pub struct LocalShards {
    shards: Vec<Process>,
}

impl LocalShards {
    /// Starts `count` shards of this executable dialling `coordinator`, with `secret`
    /// in their environment, each in a namespace on `bridge` when given (addresses
    /// from host 100 up). Their stderr is shown prefixed `shard i:` unless `quiet`.
    pub fn spawn(
        count: u64,
        coordinator: SocketAddr,
        secret: &str,
        bridge: Option<&Bridge>,
        quiet: bool,
    ) -> Result<LocalShards, LocalError> {
        let exe =
            std::env::current_exe().map_err(|source| LocalError::Spawn { index: 0, source })?;
        let mut shards = LocalShards { shards: Vec::new() };
        for index in 0..count {
            let netns = match bridge {
                Some(bridge) => {
                    let name = format!("hr{}s{index}", std::process::id() % 100_000);
                    let addr = bridge.host(100 + index as u32);
                    Some(
                        Netns::attach(bridge, &name, addr)
                            .map_err(|source| LocalError::Netns { index, source })?,
                    )
                }
                None => None,
            };
            let mut cmd = match &netns {
                Some(ns) => ns.command(&exe),
                None => std::process::Command::new(&exe),
            };
            // A process group of its own: Ctrl-C at the terminal reaches the coordinator
            // alone, which stops the shards over the channel and keeps their shares.
            std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
            cmd.args(["shard", "--coordinator", &coordinator.to_string()])
                .env(SECRET_ENV, secret)
                .env("HEADROOM_SHARD_INDEX", index.to_string())
                .env("HEADROOM_SHARD_COUNT", count.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            let mut child = cmd
                .spawn()
                .map_err(|source| LocalError::Spawn { index, source })?;
            let last_words = Arc::new(Mutex::new(String::new()));
            if let Some(stderr) = child.stderr.take() {
                relay(index, stderr, last_words.clone(), quiet);
            }
            shards.shards.push(Process {
                child,
                last_words,
                reported: false,
                netns,
            });
        }
        Ok(shards)
    }

    /// Each shard's process id, in index order.
    pub fn pids(&self) -> Vec<u32> {
        self.shards.iter().map(|p| p.child.id()).collect()
    }
}

impl Placement for LocalShards {
    fn count(&self) -> u64 {
        self.shards.len() as u64
    }

    fn name(&self, index: u64) -> String {
        match self.shards.get(index as usize) {
            Some(p) => match &p.netns {
                Some(ns) => format!("pid {} at {}", p.child.id(), ns.addr),
                None => format!("pid {}", p.child.id()),
            },
            None => format!("#{index}"),
        }
    }

    fn lost(&mut self) -> Option<(u64, String)> {
        for (i, p) in self.shards.iter_mut().enumerate() {
            if p.reported {
                continue;
            }
            if let Ok(Some(status)) = p.child.try_wait() {
                p.reported = true;
                let words = p
                    .last_words
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                use std::os::unix::process::ExitStatusExt;
                let how = match (status.code(), status.signal()) {
                    (Some(code), _) => format!("its process exited with code {code}"),
                    (None, Some(sig)) => format!("its process was killed by signal {sig}"),
                    (None, None) => format!("its process ended ({status})"),
                };
                let reason = match words.is_empty() {
                    true => how,
                    false => format!("{how}, saying: {words}"),
                };
                return Some((i as u64, reason));
            }
        }
        None
    }

    fn finish(&mut self) {
        let deadline = Instant::now() + EXIT_GRACE;
        for p in &mut self.shards {
            while matches!(p.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if matches!(p.child.try_wait(), Ok(None)) {
                let _ = p.child.kill();
            }
            let _ = p.child.wait();
            // The namespace goes after its process.
            p.netns = None;
        }
    }
}

impl Drop for LocalShards {
    fn drop(&mut self) {
        for p in &mut self.shards {
            if matches!(p.child.try_wait(), Ok(None)) {
                let _ = p.child.kill();
                let _ = p.child.wait();
            }
        }
    }
}

/// Shows shard `index`'s stderr lines prefixed (unless `quiet`), keeping the last
/// one for the message should it die. Lines are cut at [`MAX_LINE`].
fn relay(index: u64, stderr: impl Read + Send + 'static, last: Arc<Mutex<String>>, quiet: bool) {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stderr);
        loop {
            let mut line = Vec::new();
            match reader.by_ref().take(MAX_LINE).read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let text = String::from_utf8_lossy(&line).trim_end().to_string();
            if text.is_empty() {
                continue;
            }
            if !quiet {
                eprintln!("shard {index}: {text}");
            }
            *last.lock().unwrap_or_else(|e| e.into_inner()) = text;
        }
    });
}

/// Shards someone else starts (`--cluster external`: applied from `headroom cluster
/// manifest`, or started by hand): the coordinator only waits for them to join.
pub struct ExternalShards {
    /// How many.
    pub count: u64,
}

impl Placement for ExternalShards {
    fn count(&self) -> u64 {
        self.count
    }

    fn name(&self, index: u64) -> String {
        format!("started elsewhere as index {index}")
    }

    fn lost(&mut self) -> Option<(u64, String)> {
        None
    }

    fn finish(&mut self) {}
}
