//! A search's `hooks:`: shell commands around each step.

use std::time::Duration;

/// Shell commands a ceiling search runs around each step (the scenario's `hooks:`),
/// each with `sh -c`. The default has no commands and a timeout of
/// [`Hooks::DEFAULT_TIMEOUT`]; `headroom run` ignores hooks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hooks {
    /// Run in order before each step (before its warm-up), e.g. `psql -c 'VACUUM FULL'`.
    pub before_step: Vec<String>,
    /// Run in order after each step's measured window.
    pub after_step: Vec<String>,
    /// Polled after `before_step` until it exits 0, before the step starts.
    pub wait_until: Option<WaitUntil>,
    /// Longest one hook command may run before it is killed and the search stops.
    pub timeout: Duration,
}

impl Hooks {
    /// Longest a hook command (or a `wait_until` wait) may run when the scenario does not say.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

    /// Whether there is any command to run.
    pub fn is_empty(&self) -> bool {
        self.before_step.is_empty() && self.after_step.is_empty() && self.wait_until.is_none()
    }
}

impl Default for Hooks {
    fn default() -> Self {
        Hooks {
            before_step: Vec::new(),
            after_step: Vec::new(),
            wait_until: None,
            timeout: Hooks::DEFAULT_TIMEOUT,
        }
    }
}

/// A command polled until it succeeds: the system under test is ready for the next step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitUntil {
    /// Shell command; exit status 0 means ready.
    pub command: String,
    /// Longest wait before the search stops with an error.
    pub timeout: Duration,
    /// Pause between attempts.
    pub interval: Duration,
}
