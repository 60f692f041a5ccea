//! Command-line parsing (first stage: raw, validated flags) and dispatch to
//! [`crate::commands`]. Nothing here opens a socket.

use clap::{CommandFactory, Parser, Subcommand};

use crate::commands;
use crate::commands::args::{DemoArgs, FindArgs, RunArgs, TargetArgs};
use crate::commands::error::CommandError;
use crate::commands::exit::ExitCode;

/// Load testing and capacity finding.
#[derive(Debug, Parser)]
#[command(name = "headroom", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Drive load at a rate (open model) or a number of users (closed model).
    Run(RunArgs),
    /// Find the ceiling: the highest rate (or user count) that passes every threshold.
    Find(FindArgs),
    /// Search the built-in target's ceiling on loopback and write a Markdown report.
    Demo(DemoArgs),
    /// Serve the built-in target: a service with a known capacity to learn and test on.
    Target(TargetArgs),
    /// Receive deliveries (webhooks) on loopback and count them, as a scenario's `sink:`.
    Sink(commands::sink::SinkArgs),
    /// List past runs from the store, newest first.
    Runs(commands::runs::RunsArgs),
    /// Compare runs round by round: rate, latency, errors and the change between rows.
    Compare(commands::compare::CompareArgs),
    /// Write one run's report: Markdown, self-contained HTML, JUnit XML or JSON (or,
    /// with --rounds, one page of several rounds).
    Report(commands::report::ReportArgs),
    /// Print the JSON Schema of scenario files, for editors to validate and complete.
    Schema(commands::schema::SchemaArgs),
    /// Check a scenario file without sending anything: print the plan it compiles to,
    /// or the error `run` would stop on.
    Check(commands::check::CheckArgs),
    /// Turn a curl command line or a HAR file (a browser's recording) into a scenario.
    Convert(commands::convert::ConvertArgs),
    /// Run one shard of a sharded run for its coordinator (started by `--shards`, or
    /// by a Kubernetes Job); reads HEADROOM_SHARD_SECRET, HEADROOM_SHARD_INDEX (or
    /// JOB_COMPLETION_INDEX) and HEADROOM_SHARD_COUNT.
    Shard(commands::shard::ShardArgs),
    /// What a sharded run creates on a cluster: `cluster manifest` prints a run's
    /// Kubernetes objects as YAML.
    Cluster(commands::cluster::ClusterCommandArgs),
    /// Print the shell completion script for bash, zsh, fish, elvish or PowerShell.
    Completions(commands::completions::CompletionsArgs),
    /// Print the man page in roff, or write one page per command with --out-dir.
    Man(commands::man::ManArgs),
}

/// Parses the process arguments, runs the command, and returns the exit code. A
/// command's error is printed here, once, on stderr (`error: ...`).
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                ExitCode::BAD_INPUT
            } else {
                ExitCode::OK
            };
            let _ = e.print();
            return code.into();
        }
    };
    // A load generator holds a socket per connection in flight: at the usual soft
    // limit of 1024 descriptors, a slow target at a high rate would run it out of
    // descriptors and show as the target's connect errors. The hard limit is ours.
    if let Err(e) = crate::engine::raise_fd_limit() {
        eprintln!(
            "warning: cannot raise the open-files limit ({e}); the run may run out of sockets"
        );
    }
    match dispatch(cli.command) {
        Ok(code) => code.into(),
        Err(e) => {
            report(&e);
            e.exit_code().into()
        }
    }
}

/// Runs `command`.
fn dispatch(command: Command) -> Result<ExitCode, CommandError> {
    match command {
        Command::Run(args) if !args.compare_protocols.is_empty() => {
            commands::compare_protocols::run(&args)
        }
        Command::Run(args) => commands::run::run(&args),
        Command::Find(args) => commands::find::run(&args),
        Command::Demo(args) => commands::demo::run(&args),
        Command::Target(args) => commands::target::run(&args),
        Command::Sink(args) => commands::sink::run(&args),
        Command::Shard(args) => commands::shard::run(&args),
        Command::Runs(args) => commands::runs::run(&args),
        Command::Compare(args) => commands::compare::run(&args),
        Command::Report(args) => commands::report::run(&args),
        Command::Schema(args) => commands::schema::run(&args),
        Command::Check(args) => commands::check::run(&args),
        Command::Convert(args) => commands::convert::run(&args),
        Command::Cluster(args) => commands::cluster::run(&args),
        // Both generate from the command line's own definition, so they match it.
        Command::Completions(args) => commands::completions::run(&args, Cli::command()),
        Command::Man(args) => commands::man::run(&args, Cli::command()),
    }
}

/// Prints `error` on stderr: each of several on its own line, after its label.
fn report(error: &CommandError) {
    for e in error.each() {
        eprintln!("{}: {e}", e.label());
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use clap::{CommandFactory, Parser};

    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_and_find_read_the_shared_flags_alike() {
        for sub in ["run", "find"] {
            let cli = Cli::parse_from([
                "headroom",
                sub,
                "--threads",
                "3",
                "--threshold",
                "p99 < 1s",
                "--timeout",
                "2s",
                "--out",
                "s.json",
                "--watch",
                "pid:1",
                "-q",
                "--label",
                "round=6",
                "--insecure",
                "--cacert",
                "ca.pem",
                "--cert",
                "c.pem",
                "--key",
                "k.pem",
                "--resolve",
                "example.com:443:127.0.0.1",
                "--proto-path",
                "protos",
                "--proto-path",
                "/usr/include",
            ]);
            let common = match cli.command {
                Command::Run(args) => args.common,
                Command::Find(args) => args.common,
                other => panic!("{other:?}"),
            };
            assert_eq!(common.threads, Some(3), "{sub}");
            assert_eq!(common.thresholds, ["p99 < 1s"], "{sub}");
            assert_eq!(common.timeout, Some(Duration::from_secs(2)), "{sub}");
            assert_eq!(common.out, Some(PathBuf::from("s.json")), "{sub}");
            assert_eq!(common.watches, ["pid:1"], "{sub}");
            assert_eq!(common.watch_interval, Duration::from_secs(1), "{sub}");
            assert!(common.quiet, "{sub}");
            assert_eq!(common.labels, [("round".into(), "6".into())], "{sub}");
            assert!(common.insecure, "{sub}");
            assert_eq!(common.cacert, Some(PathBuf::from("ca.pem")), "{sub}");
            assert_eq!(common.cert, Some(PathBuf::from("c.pem")), "{sub}");
            assert_eq!(common.key, Some(PathBuf::from("k.pem")), "{sub}");
            assert_eq!(common.resolve[0].addr.to_string(), "127.0.0.1", "{sub}");
            assert_eq!(
                common.proto_paths,
                [PathBuf::from("protos"), PathBuf::from("/usr/include")],
                "{sub}"
            );
        }
    }

    #[test]
    fn dashboard_takes_an_optional_address_after_an_equals_sign() {
        let common = |argv: &[&str]| match Cli::parse_from(argv).command {
            Command::Run(args) => args.common,
            Command::Find(args) => args.common,
            other => panic!("{other:?}"),
        };
        for sub in ["run", "find"] {
            assert_eq!(common(&["headroom", sub]).dashboard, None);
            // Without `=`, the next word stays the scenario, not an address.
            let c = common(&["headroom", sub, "--dashboard", "s.yaml"]);
            assert_eq!(c.dashboard, Some("127.0.0.1:5665".parse().unwrap()));
            let c = common(&["headroom", sub, "--dashboard=127.0.0.1:0"]);
            assert_eq!(c.dashboard, Some("127.0.0.1:0".parse().unwrap()));
            let c = common(&["headroom", sub, "--dashboard=7000"]);
            assert_eq!(c.dashboard, Some("127.0.0.1:7000".parse().unwrap()));
        }
        let e = Cli::try_parse_from(["headroom", "run", "--dashboard=nowhere"]).unwrap_err();
        assert!(e.to_string().contains("\"nowhere\""), "{e}");
    }

    #[test]
    fn find_words_the_shared_flags_for_a_search() {
        let help = |sub: &str, id: &str| {
            let cli = Cli::command();
            let sub = cli.find_subcommand(sub).unwrap();
            let arg = sub.get_arguments().find(|a| a.get_id() == id).unwrap();
            arg.get_help().unwrap().to_string()
        };
        assert_eq!(help("run", "out"), "Write the summary JSON here");
        assert_eq!(help("find", "out"), "Write the search result JSON here");
        assert_eq!(help("find", "quiet"), "Print no per-step lines");
    }
}
