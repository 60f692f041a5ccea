//! `headroom check SCENARIO`: compiles a scenario file as `headroom run SCENARIO` does
//! (the same [`Setup`](crate::scenario::Setup), read by [`super::setup::check`] and
//! compiled by `Setup::plan`) and prints the plan it compiles to as an
//! [`outline::Outline`]: the target, the requests and flows with their shares, the
//! load's model and shape, the thresholds. Nothing is sent and no socket is opened, so
//! a scenario can be checked before its target exists; a broken one fails with the
//! `file:line:column` error `run` gives (exit 2).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::error::CommandError;
use super::exit::ExitCode;
use super::report::write_or_print;

pub mod outline;
pub mod text;

/// Output formats of `headroom check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum CheckFormat {
    /// Aligned lines for a terminal.
    #[default]
    Text,
    /// JSON for scripts.
    Json,
}

/// Flags of `headroom check`.
#[derive(Debug, Args, Clone)]
pub struct CheckArgs {
    /// Scenario file (YAML).
    pub scenario: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
    pub format: CheckFormat,
}

/// Runs `headroom check`: 0 with the plan printed when the scenario compiles; its
/// error (bad input, exit 2) otherwise.
pub fn run(args: &CheckArgs) -> Result<ExitCode, CommandError> {
    let setup = super::setup::check(&args.scenario)?;
    let plan = setup.plan()?;
    let file = setup.scenario.as_ref().map_or("", |s| s.file.as_str());
    let outline = outline::Outline::of(file, &plan);
    let shown = match args.format {
        CheckFormat::Text => text::render(&outline),
        CheckFormat::Json => {
            let mut json = serde_json::to_string_pretty(&outline).expect("an outline serializes");
            json.push('\n');
            json
        }
    };
    write_or_print(None, &shown)?;
    Ok(ExitCode::OK)
}
