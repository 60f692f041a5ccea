//! A throwaway PostgreSQL cluster for the `--postgres` tests (and, included by path,
//! the integration tests' `support`): `initdb` in a temp dir, `pg_ctl start` on a free
//! loopback port, stopped and removed on drop. Runs the server binaries as the
//! `postgres` user when the tests run as root (initdb refuses root).

use std::path::{Path, PathBuf};
use std::process::Command;

/// A running cluster; dropping it stops the server and deletes its files.
pub(crate) struct Cluster {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    as_postgres: bool,
}

impl Cluster {
    /// Starts a cluster, or returns why it cannot (no server binaries found).
    pub(crate) fn start() -> Result<Cluster, String> {
        Cluster::start_with(&[])
    }

    /// Starts a cluster with extra server settings (`name=value`, passed as `-c`),
    /// e.g. `shared_preload_libraries=pg_stat_statements`.
    pub(crate) fn start_with(settings: &[&str]) -> Result<Cluster, String> {
        let bin =
            find_bin().ok_or("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin")?;
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let as_postgres = is_root();
        if as_postgres {
            let ok = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                return Err("cannot hand the cluster directory to the postgres user".into());
            }
        }
        // Bind-then-release to find a free port; the window before pg_ctl binds it is tiny.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
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

    fn run(&self, tool: &str, args: &[&str]) -> Result<(), String> {
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
            .map_err(|e| format!("{tool}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{tool} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ))
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
