//! `headroom convert curl 'curl ...'`, `convert har FILE`, `convert k6 SCRIPT.js`,
//! `convert openapi SPEC`, `convert postman COLLECTION.json` and `convert http
//! FILE.http`: a scenario from what a team already has ([`crate::convert`] and the
//! `headroom-convert` front ends), checked by the scenario compiler before it is
//! printed (or written with `-o`). The front ends' translation report (every construct,
//! what became of it, and the closing count) goes to standard error, so standard output
//! stays the scenario alone.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::convert::{self, fronts, ConvertError};

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
    /// Exit 2 (bad input) when any construct of a k6 script, OpenAPI document,
    /// Postman collection or .http file had to be left out, after printing the report.
    #[arg(long, global = true)]
    pub strict: bool,
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
    /// A k6 script (JavaScript or TypeScript): options, requests, checks, think times,
    /// setup and data files become a scenario; the report says what was translated,
    /// approximated or left out, with its line and column.
    K6 {
        /// The script (`-` for standard input).
        script: PathBuf,
        /// A value of `__ENV` (repeatable), on top of the process environment, as k6's
        /// `-e KEY=VALUE`.
        #[arg(short = 'e', long = "env", value_name = "KEY=VALUE", value_parser = super::values::parse_label)]
        env: Vec<(String, String)>,
    },
    /// An OpenAPI 3.0/3.1 document (YAML or JSON): one request per operation.
    Openapi {
        /// The document (`-` for standard input).
        spec: PathBuf,
        /// Keep only the operations whose operationId or `METHOD /path` matches this
        /// glob (repeatable), e.g. `listPets` or `GET /pets*`.
        #[arg(long = "operations", value_name = "GLOB")]
        operations: Vec<String>,
        /// The target instead of the document's first server URL.
        #[arg(long, value_name = "URL")]
        server: Option<String>,
    },
    /// A Postman collection (v2.1): folders become flows, test scripts checks and
    /// captures.
    Postman {
        /// The collection's JSON export (`-` for standard input).
        collection: PathBuf,
        /// A Postman environment export whose values the collection's variables take.
        #[arg(long, value_name = "FILE")]
        environment: Option<PathBuf>,
    },
    /// A `.http` file (JetBrains HTTP Client, VS Code REST Client): its requests
    /// become one flow, in order; `# @name` responses are captured where referenced.
    Http {
        /// The `.http` file (`-` for standard input).
        file: PathBuf,
        /// The environment of `http-client.env.json` beside the file to take
        /// variables from.
        #[arg(long = "env", value_name = "NAME")]
        env: Option<String>,
    },
}

/// A front end's scenario after its report went to standard error; `--strict` refuses
/// it when something was left out.
fn fronted(
    converted: Result<headroom_convert::Converted, ConvertError>,
    file: &std::path::Path,
    strict: bool,
) -> Result<String, ConvertError> {
    let converted = converted?;
    eprint!("{}", converted.report);
    if strict {
        converted.strict(&file.display().to_string())?;
    }
    Ok(converted.yaml)
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
        ConvertFrom::K6 { script, env } => {
            let output = args.output.as_deref();
            return fronted(fronts::k6(script, env, output), script, args.strict);
        }
        ConvertFrom::Openapi {
            spec,
            operations,
            server,
        } => {
            let converted = fronts::openapi(spec, operations, server.as_deref());
            return fronted(converted, spec, args.strict);
        }
        ConvertFrom::Postman {
            collection,
            environment,
        } => {
            let converted = fronts::postman(collection, environment.as_deref());
            return fronted(converted, collection, args.strict);
        }
        ConvertFrom::Http { file, env } => {
            return fronted(fronts::http(file, env.as_deref()), file, args.strict);
        }
    };
    let name = args.name.clone().unwrap_or(default_name);
    convert::scenario(&name, &exchanges, flow)
}

/// Runs `headroom convert`: prints or writes the scenario. Input that cannot be
/// converted is bad input (2).
pub fn run(args: &ConvertArgs) -> Result<ExitCode, CommandError> {
    let yaml = convert(args)?;
    // What is printed must load: the compiler checks it as it would the file (beside
    // the input, so a data file the scenario names resolves as it will).
    let beside = match &args.from {
        ConvertFrom::K6 { script, .. } => Some(script),
        ConvertFrom::Openapi { spec, .. } => Some(spec),
        ConvertFrom::Postman { collection, .. } => Some(collection),
        ConvertFrom::Http { file, .. } => Some(file),
        ConvertFrom::Curl { .. } | ConvertFrom::Har { .. } => None,
    };
    let at = match (&args.output, beside) {
        (Some(out), _) => out.display().to_string(),
        (None, Some(input)) if input.as_os_str() != "-" => input.display().to_string(),
        _ => "converted".to_string(),
    };
    // A converted scenario may read `env.NAME` (an OpenAPI security scheme's token, a
    // Postman variable defined nowhere): unset here, it is not an error of the
    // conversion, so the check runs with a stand-in and the user is told to set it.
    for name in unset_env_names(&yaml) {
        eprintln!(
            "note: the scenario reads env.{name}, which is not set here; set it before a run"
        );
        // Safe here: `convert` runs on one thread and starts none before this check.
        std::env::set_var(&name, "unset");
    }
    crate::scenario::load_text(&at, &yaml, &Default::default())
        .map_err(CommandError::Unloadable)?;
    write_or_print(args.output.as_deref(), &yaml)?;
    Ok(ExitCode::OK)
}

/// The names `NAME` of every `env.NAME` the scenario text reads that the process
/// environment does not set, once each, in order.
fn unset_env_names(yaml: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut rest = yaml;
    while let Some(at) = rest.find("env.") {
        let preceded = rest[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
        rest = &rest[at + 4..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let name = &rest[..end];
        if preceded || name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        if std::env::var_os(name).is_none() && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_env_names_are_found_once_and_set_ones_skipped() {
        let yaml = "headers: {authorization: \"Bearer {{ env.HEADROOM_T_UNSET_A }}\", x: \"{{env.PATH}}\", y: \"{{ env.HEADROOM_T_UNSET_A }} {{ data.env.x }} {{ myenv.Z }}\"}";
        assert_eq!(unset_env_names(yaml), ["HEADROOM_T_UNSET_A"]);
    }
}
