//! headroom's exit codes, in one leaf module that the command line ([`crate::cli`]) and
//! every command import.

/// A process exit code of headroom: 0 when all went well, 1 for a failure, 2 for bad
/// input, 99 when a threshold failed (as k6) and 105 when the run was interrupted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExitCode(u8);

impl ExitCode {
    /// Every threshold passed; the command did what it was asked.
    pub const OK: ExitCode = ExitCode(0);
    /// Anything else went wrong.
    pub const FAILURE: ExitCode = ExitCode(1);
    /// Bad input (flag, scenario file, environment).
    pub const BAD_INPUT: ExitCode = ExitCode(2);
    /// A threshold failed (as k6).
    pub const THRESHOLD: ExitCode = ExitCode(99);
    /// The run was interrupted (Ctrl-C, SIGTERM) before its schedule ended, as k6's
    /// external abort. Its summary is still written, marked `interrupted: true`, and
    /// covers what ran; no verdict is drawn from partial data.
    pub const INTERRUPTED: ExitCode = ExitCode(105);

    /// The code as [`std::process::exit`] takes it.
    pub fn code(self) -> i32 {
        i32::from(self.0)
    }
}

impl From<ExitCode> for i32 {
    fn from(code: ExitCode) -> i32 {
        code.code()
    }
}

impl std::fmt::Display for ExitCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}
