//! `headroom convert curl 'curl ...'` and `headroom convert har FILE`: a scenario from
//! a curl command line or a browser's recording ([`crate::convert`]), checked by the
//! scenario compiler before it is printed (or written with `-o`).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::convert::{self, ConvertError};

use super::error::CommandError;
use super::exit::ExitCode;
use super::report::write_or_print;

/// Flags of `headroom convert`.
#[derive(Debug, Args, Clone)]
pub struct ConvertArgs {
    /// What to convert.
    #[command(subcommand)]
    pub from: ConvertFrom,
    /// Write the scenario here instead of on stdout.
    #[arg(long, short, global = true)]
    pub output: Option<PathBuf>,
    /// The scenario's name (default `curl` or the HAR file's stem).
    #[arg(long, global = true)]
    pub name: Option<String>,
}

/// Inputs `headroom convert` reads.
#[derive(Debug, Subcommand, Clone)]
pub enum ConvertFrom {
    /// A curl command line: one argument (`'curl -X POST ...'`), or standard input
    /// when none or `-` is given.
    Curl {
        /// The command, quoted as one argument.
        command: Option<String>,
    },
    /// A HAR file (a browser's recording): its requests become one flow, in order.
    Har {
        /// The `.har` file (`-` for standard input).
        file: PathBuf,
    },
}

fn convert(args: &ConvertArgs) -> Result<String, ConvertError> {
    let stdin = || convert::read_limited(std::io::stdin().lock());
    let (exchanges, flow, default_name) = match &args.from {
        ConvertFrom::Curl { command } => {
            let text = match command.as_deref() {
                None | Some("-") => stdin()?,
                Some(c) if c.len() as u64 > convert::MAX_INPUT => {
                    return Err(ConvertError::TooLarge)
                }
                Some(c) => c.to_string(),
            };
            (
                vec![convert::curl::parse(&text)?],
                false,
                "curl".to_string(),
            )
        }
        ConvertFrom::Har { file } => {
            let text = if file.as_os_str() == "-" {
                stdin()?
            } else {
                convert::read_limited(std::fs::File::open(file)?)?
            };
            let stem = file
                .file_stem()
                .map_or("recording".into(), |s| s.to_string_lossy().into_owned());
            (convert::har::parse(&text)?, true, stem)
        }
    };
    let name = args.name.clone().unwrap_or(default_name);
    convert::scenario(&name, &exchanges, flow)
}

/// Runs `headroom convert`: prints or writes the scenario. Input that cannot be
/// converted is bad input (2).
pub fn run(args: &ConvertArgs) -> Result<ExitCode, CommandError> {
    let yaml = convert(args)?;
    // What is printed must load: the compiler checks it as it would the file.
    crate::scenario::load_text("converted", &yaml, &Default::default())
        .map_err(CommandError::Unloadable)?;
    write_or_print(args.output.as_deref(), &yaml)?;
    Ok(ExitCode::OK)
}
