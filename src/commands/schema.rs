//! `headroom schema`: prints the JSON Schema of scenario files
//! ([`crate::scenario::scenario_schema`]), or writes it to a file, for editors (the
//! YAML language server's `# yaml-language-server: $schema=...`) to validate and
//! complete scenarios.

use std::path::PathBuf;

use clap::Args;

use super::error::CommandError;
use super::exit::ExitCode;
use super::report::write_or_print;

/// Flags of `headroom schema`.
#[derive(Debug, Args, Clone, Default)]
pub struct SchemaArgs {
    /// Write the schema here instead of on stdout.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

/// Runs `headroom schema`: prints or writes the schema.
pub fn run(args: &SchemaArgs) -> Result<ExitCode, CommandError> {
    let mut text = serde_json::to_string_pretty(&crate::scenario::scenario_schema())
        .expect("a schema serializes");
    text.push('\n');
    write_or_print(args.output.as_deref(), &text)?;
    Ok(ExitCode::OK)
}
