//! `headroom schema`: prints the JSON Schema of scenario files
//! ([`crate::scenario::scenario_schema`]), or writes it to a file, for editors (the
//! YAML language server's `# yaml-language-server: $schema=...`) to validate and
//! complete scenarios.

use std::path::PathBuf;

use clap::Args;

use crate::cli::{EXIT_FAILURE, EXIT_OK};

/// Flags of `headroom schema`.
#[derive(Debug, Args, Clone, Default)]
pub struct SchemaArgs {
    /// Write the schema here instead of on stdout.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

/// Runs `headroom schema` and returns the exit code.
pub fn run(args: &SchemaArgs) -> i32 {
    let mut text = serde_json::to_string_pretty(&crate::scenario::scenario_schema())
        .expect("a schema serializes");
    text.push('\n');
    match &args.output {
        Some(path) => match std::fs::write(path, text) {
            Ok(()) => EXIT_OK,
            Err(e) => {
                eprintln!("error: cannot write {}: {e}", path.display());
                EXIT_FAILURE
            }
        },
        None => {
            print!("{text}");
            EXIT_OK
        }
    }
}
