//! A throwaway PostgreSQL cluster for the `--postgres` tests (and, included by path,
//! the integration tests' `support`): `initdb` in a temp dir, `pg_ctl start` on a free
//! loopback port, stopped and removed on drop. Runs the server binaries as the
//! `postgres` user when the tests run as root (initdb refuses root).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Why a throwaway cluster could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClusterError {
    /// PostgreSQL's server binaries are not installed.
    #[error("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin")]
    NoServer,
    /// The temporary directory or the free port could not be had.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Running as root, the directory could not be given to the `postgres` user.
    #[error("cannot hand the cluster directory to the postgres user")]
    Chown,
    /// A server tool could not be started.
    #[error("{tool}: {source}")]
    Spawn {
        /// `initdb` or `pg_ctl`.
        tool: String,
        /// Why it could not run.
        source: std::io::Error,
    },
    /// A server tool failed; its stderr.
    #[error("{tool} failed: {stderr}")]
    Failed {
        /// `initdb` or `pg_ctl`.
        tool: String,
        /// What it printed.
        stderr: String,
    },
}

/// A running cluster; dropping it stops the server and deletes its files.
pub(crate) struct Cluster {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    as_postgres: bool,
}

impl Cluster {
    /// Starts a cluster, or returns why it cannot (no server binaries found).
    pub(crate) fn start() -> Result<Cluster, ClusterError> {
        Cluster::start_with(&[])
    }

    /// Starts a cluster with extra server settings (`name=value`, passed as `-c`),
    /// e.g. `shared_preload_libraries=pg_stat_statements`.
    pub(crate) fn start_with(settings: &[&str]) -> Result<Cluster, ClusterError> {
        let bin = find_bin().ok_or(ClusterError::NoServer)?;
        let dir = tempfile::tempdir()?;
        let as_postgres = is_root();
        if as_postgres {
            let ok = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                return Err(ClusterError::Chown);
            }
        }
        // Bind-then-release to find a free port; the window before pg_ctl binds it is tiny.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())?
            .port();
        let cluster = Cluster {
            bin,
            dir,
            port,
            as_postgres,
        };
        let data = cluster.data();
        cluster.run("initdb", &["-A", "trust", "-U", "postgres", "-D", &data])?;
        let mut opts = format!(
            "-p {port} -c listen_addresses=127.0.0.1 -k {} -c fsync=off",
            cluster.dir.path().display()
        );
        for setting in settings {
            opts.push_str(&format!(" -c {setting}"));
        }
        let log = format!("{}/log", cluster.dir.path().display());
        cluster.run(
            "pg_ctl",
            &[
                "-D", &data, "-o", &opts, "-l", &log, "-w", "-t", "30", "start",
            ],
        )?;
        Ok(cluster)
    }

    /// A URL for the `postgres` database as the `postgres` superuser.
    pub(crate) fn url(&self) -> String {
        format!("postgresql://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn data(&self) -> String {
        format!("{}/data", self.dir.path().display())
    }

    fn run(&self, tool: &str, args: &[&str]) -> Result<(), ClusterError> {
        let path = self.bin.join(tool);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&path);
            c
        } else {
            Command::new(&path)
        };
        let out = cmd
            .args(args)
            .output()
            .map_err(|source| ClusterError::Spawn {
                tool: tool.to_owned(),
                source,
            })?;
        if out.status.success() {
            Ok(())
        } else {
            Err(ClusterError::Failed {
                tool: tool.to_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            })
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.data();
        let _ = self.run("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"]);
    }
}

fn find_bin() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|bin| bin.join("initdb").is_file() && bin.join("pg_ctl").is_file())
        .collect();
    found.sort();
    found.pop()
}

fn is_root() -> bool {
    // The owner of /proc/self is the effective user.
    std::fs::metadata(Path::new("/proc/self"))
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}
