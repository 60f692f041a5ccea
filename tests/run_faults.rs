//! Faults around a run (issue 9, "Faults and bad input"): the places headroom writes to
//! failing under it. Each test sets the fault up for real (a full file system) and checks
//! the error names what failed, the exit code, and what was kept.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use headroom::store::{RunFilter, RunStatus, Store};
use headroom::target::{self, TargetOptions};

use crate::support::{assert_adds_up, assert_exit, require, run_headroom, stderr, stdout};

mod mid_run;

const LIMIT: Duration = Duration::from_secs(60);

/// A tmpfs of `size` mounted on a fresh temporary directory, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts it, or says why it cannot (not root, no `mount`, a container without
    /// the privilege).
    fn mount(size: &str) -> Result<Tmpfs, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mount -t tmpfs failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes zeros to a file until the file system is full.
    fn fill(&self) {
        let mut f = std::fs::File::create(self.path().join("filler")).unwrap();
        let block = vec![0u8; 64 * 1024];
        loop {
            match f.write(&block) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(28) => break, // ENOSPC
                Err(e) => panic!("filling the tmpfs: {e}"),
            }
        }
        let _ = f.sync_all();
    }

    /// Names in the mount other than the filler.
    fn leftovers(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| !p.ends_with("filler"))
            .collect()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let unmounted = Command::new("umount")
            .arg(self.path())
            .status()
            .is_ok_and(|s| s.success());
        if !unmounted {
            // Still busy (a process of a failed test holds a file): detach it now, it
            // goes when released, and the temporary directory can be removed.
            let _ = Command::new("umount").arg("-l").arg(self.path()).status();
        }
    }
}

#[test]
fn out_onto_a_full_file_system_fails_naming_the_file_and_the_run_is_still_kept() {
    let Some(tmpfs) = require("a tmpfs (`mount -t tmpfs`, as root)", Tmpfs::mount("1m")) else {
        return;
    };
    tmpfs.fill();
    let target = target::spawn(TargetOptions::loopback()).expect("built-in target");
    let store_dir = tempfile::tempdir().unwrap();
    let store_path = store_dir.path().join("history.db");
    let out_path = tmpfs.path().join("s.json");
    let out = run_headroom(
        [
            "run",
            "--url",
            &format!("{}/status/200", target.url()),
            "--rate",
            "20",
            "--duration",
            "1s",
            "--quiet",
            "--store",
            store_path.to_str().unwrap(),
            "--out",
            out_path.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("cannot write {}", out_path.display()))
            && err.contains("No space left on device"),
        "{err}"
    );
    // The run's own report was printed, and neither the file nor its temporary is left.
    assert!(stdout(&out).contains("requests"), "{}", stdout(&out));
    assert_eq!(tmpfs.leftovers(), Vec::<PathBuf>::new());

    // The run is complete in the store: done, with its summary and its seconds.
    let store = Store::open(&store_path).expect("the store is readable");
    let rows = store.runs(&RunFilter::default()).unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].status, RunStatus::Done);
    let run = store.load(rows[0].id).unwrap();
    let summary = run.row.summary.expect("the stored run has its summary");
    assert_adds_up(&summary);
    assert!(
        (15..=25).contains(&summary.requests) && summary.errors.count == 0,
        "{} requests, {:?}",
        summary.requests,
        summary.errors
    );
    assert!(!run.timeline.is_empty());
    let listing = run_headroom(["runs", "--store", store_path.to_str().unwrap()], LIMIT);
    assert_exit(&listing, 0);
    let listed = stdout(&listing);
    assert!(
        listed.contains("20.0/s") && listed.trim_end().ends_with("pass"),
        "{listed}"
    );
}

#[test]
fn a_store_that_cannot_be_written_is_bad_input_before_any_load_is_sent() {
    use std::net::TcpListener;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    // A path under a file, not a directory: nothing can ever be stored there.
    let store = "/dev/null/headroom/history.db";
    for command in ["run", "find"] {
        let mut args = vec![command, "--url", &url, "--store", store, "--quiet"];
        if command == "run" {
            args.extend(["--rate", "10", "--duration", "1s"]);
        } else {
            args.extend(["--from", "10", "--to", "20", "--step-duration", "1s"]);
        }
        let out = run_headroom(&args, LIMIT);
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(
            err.contains(store) && err.contains("--store"),
            "{command}: {err}"
        );
        // Not one connection was attempted.
        assert!(listener.accept().is_err(), "{command} sent load");
    }
}
