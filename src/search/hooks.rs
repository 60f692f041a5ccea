//! Scenario hooks: shell commands run around each search step ([`run_hook`]) and a
//! readiness command polled until it succeeds ([`wait_until`]).
//!
//! Each command runs as `sh -c COMMAND` in its own process group, with standard input
//! closed and its output captured. When it outlives its timeout, or the search is
//! stopped, the whole group is killed (so `sh -c 'psql ...; sleep 100'` leaves nothing
//! behind). A failure becomes a [`HookError`] naming the hook, its command, and its exit
//! status and standard error.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use crate::engine::Control;
use crate::plan::WaitUntil;

/// Most characters of a failed hook's standard error quoted in its error.
const STDERR_QUOTE: usize = 600;
/// How often a running hook is checked for exit, timeout and stop.
const POLL: Duration = Duration::from_millis(10);

/// A hook that did not succeed: the search stops with this message.
#[derive(Debug, thiserror::Error)]
#[error("hook {name} `{command}` {reason}")]
pub struct HookError {
    /// Which hook, as the scenario names it: `hooks.before_step[0]`.
    pub name: String,
    /// The command as written.
    pub command: String,
    /// What went wrong: exit status and stderr, timeout, or interruption.
    #[source]
    pub reason: HookFailure,
}

/// How a hook failed.
#[derive(Debug, thiserror::Error)]
pub enum HookFailure {
    /// `sh` could not be started.
    #[error("could not start: {0}")]
    Start(#[source] std::io::Error),
    /// The command exited unsuccessfully or was killed by a signal.
    #[error("{}{}", describe(*.status), quote(.stderr))]
    Exited {
        /// How it ended.
        status: ExitStatus,
        /// Its standard error.
        stderr: String,
    },
    /// The command outlived its time and was killed.
    #[error(
        "did not finish within {} and was killed{}",
        headroom_format::units::seconds(.after.as_secs_f64()),
        quote(.stderr)
    )]
    TimedOut {
        /// The time it had.
        after: Duration,
        /// Its standard error.
        stderr: String,
    },
    /// The search was stopped while the command ran.
    #[error("was interrupted")]
    Interrupted,
    /// `wait_until`: no attempt succeeded in time.
    #[error(
        "did not succeed within {} (last attempt: {last})",
        headroom_format::units::seconds(.within.as_secs_f64())
    )]
    NeverReady {
        /// The time it had.
        within: Duration,
        /// How the last attempt failed.
        #[source]
        last: Box<HookFailure>,
    },
}

/// Runs `command` with `sh -c`, extra environment `env`, at most `timeout`, and returns
/// its standard output. Fails when it cannot start, exits non-zero, is killed by a
/// signal, runs past `timeout`, or `control` is stopped while it runs.
pub fn run_hook(
    name: &str,
    command: &str,
    env: &[(String, String)],
    timeout: Duration,
    control: &Control,
) -> Result<String, HookError> {
    let fail = |reason: HookFailure| HookError {
        name: name.to_string(),
        command: command.to_string(),
        reason,
    };
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| fail(HookFailure::Start(e)))?;
    let stdout = read_all(child.stdout.take());
    let stderr = read_all(child.stderr.take());
    let status = wait(&mut child, timeout, control);
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    match status {
        Waited::Exited(status) if status.success() => Ok(stdout),
        Waited::Exited(status) => Err(fail(HookFailure::Exited { status, stderr })),
        Waited::TimedOut => Err(fail(HookFailure::TimedOut {
            after: timeout,
            stderr,
        })),
        Waited::Stopped => Err(fail(HookFailure::Interrupted)),
    }
}

/// Runs `wait.command` every `wait.interval` until it exits 0, and returns how long
/// that took. Fails when it has not succeeded within `wait.timeout` (quoting the last
/// attempt's failure), or `control` is stopped. Each attempt may run at most the time
/// left.
pub fn wait_until(
    wait: &WaitUntil,
    env: &[(String, String)],
    control: &Control,
) -> Result<Duration, HookError> {
    let name = "hooks.wait_until";
    let start = Instant::now();
    let deadline = start + wait.timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let last = match run_hook(name, &wait.command, env, left, control) {
            Ok(_) => return Ok(start.elapsed()),
            Err(e) if control.is_stopped() => return Err(e),
            Err(e) => e,
        };
        if Instant::now() + wait.interval >= deadline {
            return Err(HookError {
                reason: HookFailure::NeverReady {
                    within: wait.timeout,
                    last: Box::new(last.reason),
                },
                ..last
            });
        }
        sleep_unless_stopped(wait.interval, control);
    }
}

/// Sleeps for `d` in short slices, returning early once `control` is stopped.
pub fn sleep_unless_stopped(d: Duration, control: &Control) {
    let end = Instant::now() + d;
    while !control.is_stopped() {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        thread::sleep(left.min(Duration::from_millis(50)));
    }
}

enum Waited {
    Exited(ExitStatus),
    TimedOut,
    Stopped,
}

fn wait(child: &mut Child, timeout: Duration, control: &Control) -> Waited {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Waited::Exited(status),
            Ok(None) => {}
            // The child cannot be waited for: treat it as gone with a failure status.
            Err(_) => return Waited::Stopped,
        }
        let why = if control.is_stopped() {
            Waited::Stopped
        } else if Instant::now() >= deadline {
            Waited::TimedOut
        } else {
            thread::sleep(POLL);
            continue;
        };
        // The child leads its own process group (`process_group(0)`), so its pid is the
        // group id; killing the group also ends what the shell started.
        if let Ok(pid) = i32::try_from(child.id()) {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
        let _ = child.kill();
        let _ = child.wait();
        return why;
    }
}

/// Reads a pipe to its end on its own thread, so a chatty hook never blocks on a full pipe.
fn read_all(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<String> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut buf);
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}

fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("failed with exit status {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        (None, None) => "failed".into(),
    }
}

/// `: <last part of stderr>` or nothing when stderr is empty.
fn quote(stderr: &str) -> String {
    let text = stderr.trim();
    if text.is_empty() {
        return String::new();
    }
    let start = text
        .char_indices()
        .rev()
        .nth(STDERR_QUOTE)
        .map_or(0, |(i, _)| i);
    let ellipsis = if start > 0 { "…" } else { "" };
    format!(": {ellipsis}{}", &text[start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Vec<(String, String)> {
        vec![("HEADROOM_STEP".into(), "3".into())]
    }

    #[test]
    fn a_successful_hook_returns_its_output_and_sees_the_environment() {
        let out = run_hook(
            "hooks.before_step[0]",
            "echo step $HEADROOM_STEP",
            &env(),
            Duration::from_secs(10),
            &Control::default(),
        )
        .unwrap();
        assert_eq!(out.trim(), "step 3");
    }

    #[test]
    fn a_failing_hook_names_itself_its_status_and_stderr() {
        let e = run_hook(
            "hooks.after_step[1]",
            "echo 'relation \"tasks\" does not exist' >&2; exit 3",
            &[],
            Duration::from_secs(10),
            &Control::default(),
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(text.contains("hooks.after_step[1]"), "{text}");
        assert!(text.contains("exit status 3"), "{text}");
        assert!(text.contains("relation \"tasks\" does not exist"), "{text}");
    }

    #[test]
    fn a_slow_hook_and_its_children_are_killed_at_the_timeout() {
        let start = Instant::now();
        let e = run_hook(
            "hooks.before_step[0]",
            "sleep 30; echo never",
            &[],
            Duration::from_millis(300),
            &Control::default(),
        )
        .unwrap_err();
        // The reader threads only finish once the `sleep` child is gone too.
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        assert!(
            e.reason.to_string().contains("did not finish within 0.3s"),
            "{e}"
        );
    }

    #[test]
    fn wait_until_polls_until_success() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("n");
        // Succeeds on the third attempt.
        let command = format!(
            "echo x >> {f}; test $(wc -l < {f}) -ge 3",
            f = file.display()
        );
        let wait = WaitUntil {
            command,
            timeout: Duration::from_secs(10),
            interval: Duration::from_millis(50),
        };
        let took = wait_until(&wait, &[], &Control::default()).unwrap();
        assert!(took >= Duration::from_millis(100), "{took:?}");
        let attempts = std::fs::read_to_string(&file).unwrap().lines().count();
        assert_eq!(attempts, 3);
    }

    #[test]
    fn wait_until_gives_up_at_its_timeout() {
        let wait = WaitUntil {
            command: "echo not ready >&2; false".into(),
            timeout: Duration::from_millis(400),
            interval: Duration::from_millis(100),
        };
        let start = Instant::now();
        let e = wait_until(&wait, &[], &Control::default()).unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(3));
        assert_eq!(e.name, "hooks.wait_until");
        assert!(
            e.reason.to_string().contains("did not succeed within 0.4s"),
            "{e}"
        );
        assert!(e.reason.to_string().contains("not ready"), "{e}");
    }
}
