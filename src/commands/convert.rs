//! `headroom convert curl 'curl ...'` and `headroom convert har FILE`: a scenario from
//! a curl command line or a browser's recording ([`crate::convert`]), checked by the
//! scenario compiler before it is printed (or written with `-o`).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::cli::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK};
use crate::convert::{self, ConvertError};

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

/// Runs `headroom convert` and returns the exit code: 2 when the input cannot be
/// converted.
pub fn run(args: &ConvertArgs) -> i32 {
    let yaml = match convert(args) {
        Ok(yaml) => yaml,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    // What is printed must load: the compiler checks it as it would the file.
    if let Err(e) = crate::scenario::load_text("converted", &yaml, &Default::default()) {
        eprintln!("error: the converted scenario does not load ({e}); please report it");
        return EXIT_FAILURE;
    }
    match &args.output {
        Some(path) => match std::fs::write(path, yaml) {
            Ok(()) => EXIT_OK,
            Err(e) => {
                eprintln!("error: cannot write {}: {e}", path.display());
                EXIT_FAILURE
            }
        },
        None => {
            print!("{yaml}");
            EXIT_OK
        }
    }
}
