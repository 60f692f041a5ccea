//! Running the built `headroom` binary from tests, with a time limit, and reading
//! what it printed.

use std::ffi::OsStr;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Path of the `headroom` binary that Cargo built for this test run.
pub(crate) fn headroom_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_headroom"))
}

/// Runs `headroom` with `args`, standard input closed, and returns its exit status and
/// everything it printed.
///
/// The process gets at most `timeout` of wall time. If it runs longer it is killed and
/// this function panics, naming the arguments and showing what the process had printed,
/// so a hung run fails the test instead of hanging the suite.
pub(crate) fn run_headroom<I, S>(args: I, timeout: Duration) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = Command::new(headroom_bin());
    command.args(args);
    run_command(command, timeout)
}

/// Runs `command` as [`run_headroom`] runs headroom: with the test store, standard
/// input closed, both outputs captured, and at most `timeout` of wall time (then it is
/// killed and this function panics). For wrappers such as `/usr/bin/time headroom ...`.
pub(crate) fn run_command(mut command: Command, timeout: Duration) -> Output {
    let shown = format!("{command:?}");
    let mut child = command
        .env("HEADROOM_STORE", test_store())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {shown}: {e}"));
    // Drain both pipes on their own threads: a child that fills a pipe nobody reads
    // would block forever and look like a hang.
    let stdout = drain(child.stdout.take().expect("piped stdout"));
    let stderr = drain(child.stderr.take().expect("piped stderr"));
    let finished = wait_with_deadline(&mut child, timeout);
    if finished.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let stdout = stdout.join().expect("stdout reader thread");
    let stderr = stderr.join().expect("stderr reader thread");
    match finished {
        Some(status) => Output {
            status,
            stdout,
            stderr,
        },
        None => panic!(
            "{shown} did not finish within {timeout:?} and was killed\n\
             --- stdout ---\n{}\n--- stderr ---\n{}",
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr),
        ),
    }
}

/// Reads `pipe` to its end on a new thread.
fn drain(mut pipe: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        buf
    })
}

/// Waits for `child` to exit; `None` if it is still running after `timeout`.
fn wait_with_deadline(child: &mut Child, timeout: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().expect("wait for headroom") {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// The run store tests use unless they pass `--store`: one per test process, under
/// the system temp dir, so test runs never write into the working tree.
pub(crate) fn test_store() -> PathBuf {
    std::env::temp_dir()
        .join(format!("headroom-tests-{}", std::process::id()))
        .join("history.db")
}

/// What a finished `headroom` printed on stdout, as text.
pub(crate) fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What a finished `headroom` printed on stderr, as text.
pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Fails the test unless `out` exited with `code`, showing its stderr.
#[track_caller]
pub(crate) fn assert_exit(out: &Output, code: i32) {
    assert_eq!(out.status.code(), Some(code), "{}", stderr(out));
}
