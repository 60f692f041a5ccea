//! What can stop a command: [`CommandError`], one error type for every command, which
//! knows its exit code. [`crate::cli::main`] prints it once (`error: ...`) and exits
//! with [`CommandError::exit_code`].

use std::error::Error;
use std::path::PathBuf;

use crate::cluster::SpecError;
use crate::convert::ConvertError;
use crate::dashboard::DashboardError;
use crate::engine::EngineError;
use crate::otlp::OtlpError;
use crate::scenario::ScenarioError;
use crate::shard::worker::ShardError;
use crate::store::StoreError;
use crate::watch::WatchError;

use super::exit::ExitCode;
use super::quick::BodyFileError;
use super::sharded::SetupError;
pub use super::values::ValueError;

/// The cause of a lower layer's error, whatever its type: its message is shown as
/// the layer words it.
pub type Detail = Box<dyn Error + Send + Sync>;

/// Why a command stopped. Each variant says what went wrong and decides the exit code:
/// bad input (2) or a failure (1).
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    // Bad input (exit 2): nothing was sent, or nothing could be done, because of what
    // the user gave.
    /// The scenario file (or `--url`'s quick scenario) does not load.
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    /// `--body-file` cannot be read as a request body.
    #[error("{0}")]
    BodyFile(#[from] BodyFileError),
    /// A flag's value does not fit: the flag, and what it needs.
    #[error("{flag}: {reason}")]
    Flag {
        /// The flag, e.g. `--step-duration`.
        flag: &'static str,
        /// What it needs, e.g. `expected at least 500ms`.
        reason: &'static str,
    },
    /// A threshold does not parse.
    #[error("{0}")]
    Threshold(Detail),
    /// `find`'s range (`--from`, `--to`, `--precision`) does not make a search.
    #[error("{0}")]
    Range(Detail),
    /// `find` was given a scenario with a `sink:`, which only `run` times.
    #[error(
        "`headroom find` does not run a scenario's `sink:`; use `headroom run` for delivery timing"
    )]
    FindSink,
    /// The scenario's `sink:` cannot start (its address cannot be listened on...).
    #[error("{0}")]
    ScenarioSink(Chain),
    /// The scenario's `setup:` or `teardown:` steps failed (exit 1, naming the step).
    #[error("{0}")]
    Once(#[from] crate::engine::OnceError),
    /// The run store cannot be opened or written where the run would be kept.
    #[error("{0} (the run store; choose another with --store or {env})", env = crate::store::STORE_ENV)]
    StoreUnusable(StoreError),
    /// A run reference (`latest~2`, `label:round=3`) does not parse.
    #[error("{0}")]
    Reference(StoreError),
    /// `report --rounds` was asked for a format other than Markdown or HTML.
    #[error("--rounds writes --format md or html")]
    RoundsFormat,
    /// A `--watch` (or the scenario's `watch`) cannot start.
    #[error("{0}")]
    Watch(#[from] WatchError),
    /// `--otlp`'s receiver cannot be set up.
    #[error("{0}")]
    Otlp(#[from] OtlpError),
    /// `--dashboard`'s address cannot be listened on.
    #[error("{0}")]
    Dashboard(#[from] DashboardError),
    /// The shards of `--shards` cannot be set up: bad input or a failure, as it says.
    #[error("{0}")]
    Shards(#[from] SetupError),
    /// `headroom shard`'s environment is not a shard's.
    #[error("{0}")]
    ShardEnv(#[from] ShardEnvError),
    /// The cluster flags (or the scenario's `cluster:` block) do not make a spec.
    #[error("{0}")]
    Cluster(#[from] SpecError),
    /// A scenario file named on the command line cannot be read.
    #[error("{}: cannot read the scenario: {source}", path.display())]
    ReadScenario {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `convert`'s input cannot be converted.
    #[error("{0}")]
    Convert(#[from] ConvertError),
    /// `headroom sink`'s flags do not make a sink.
    #[error("{0}")]
    SinkFlags(Detail),
    /// `headroom target`'s flags do not make a target.
    #[error("{0}")]
    TargetFlags(Detail),

    // Failures (exit 1, or 2 for an engine error the plan caused).
    /// The engine could not run the plan.
    #[error("{0}")]
    Engine(#[from] EngineError),
    /// Shards were lost during the run: what the figures lack.
    #[error("{0}; the figures above are the other shards' alone")]
    Lost(String),
    /// `headroom shard` failed.
    #[error("shard {index}: {source}")]
    Shard {
        /// The shard's index.
        index: u64,
        /// Why.
        source: ShardError,
    },
    /// An output file cannot be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `headroom sink`'s `--out` cannot be written.
    #[error("writing {}: {source}", path.display())]
    Writing {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The CSV files of `--csv` cannot be written.
    #[error("{0}")]
    Csv(std::io::Error),
    /// No run store where one was to be read.
    #[error("no run history at {}", .0.display())]
    NoHistory(PathBuf),
    /// The run store failed (or has no such run).
    #[error("{0}")]
    Store(#[from] StoreError),
    /// The run has no summary to write as CSV.
    #[error("run {0} has no summary to write as CSV")]
    NoCsvSummary(i64),
    /// The run has no summary for the format asked.
    #[error("run {id} has no summary ({status}); try --format md or html")]
    NoSummary {
        /// The run's id.
        id: i64,
        /// Its status (`failed`, `running`...).
        status: &'static str,
    },
    /// `compare --fail-on-regression`: what got worse, beyond the limit.
    #[error("{0}")]
    Regression(String),
    /// A converted scenario does not load (a bug of the converter).
    #[error("the converted scenario does not load ({0}); please report it")]
    Unloadable(ScenarioError),
    /// `headroom sink` cannot start its server.
    #[error("{0}")]
    Sink(Chain),
    /// `headroom target` cannot start or stopped serving.
    #[error("{0}")]
    Target(Chain),
    /// `headroom demo` failed.
    #[error("{0}")]
    Demo(Chain),
    /// Several errors, in the order they were met (a run's outputs).
    #[error("{}", join(.0))]
    Several(Vec<CommandError>),
}

impl From<crate::scenario::SetupError> for CommandError {
    /// A plan that does not compile from its setup is bad input, as worded.
    fn from(e: crate::scenario::SetupError) -> CommandError {
        match e {
            crate::scenario::SetupError::Scenario(e) => CommandError::Scenario(e),
            crate::scenario::SetupError::Threshold(e) => CommandError::Threshold(e.into()),
        }
    }
}

impl CommandError {
    /// The exit code the process ends with.
    pub fn exit_code(&self) -> ExitCode {
        use CommandError::*;
        match self {
            Scenario(_)
            | BodyFile(_)
            | Flag { .. }
            | Threshold(_)
            | Range(_)
            | FindSink
            | ScenarioSink(_)
            | StoreUnusable(_)
            | Reference(_)
            | RoundsFormat
            | Watch(_)
            | Otlp(_)
            | Dashboard(_)
            | ShardEnv(_)
            | Cluster(_)
            | ReadScenario { .. }
            | Convert(_)
            | SinkFlags(_)
            | TargetFlags(_) => ExitCode::BAD_INPUT,
            // The plan asks for a request its protocol cannot carry.
            Engine(EngineError::Request(_)) => ExitCode::BAD_INPUT,
            Shards(e) => e.exit_code(),
            Several(all) => all.first().map_or(ExitCode::FAILURE, Self::exit_code),
            Engine(_)
            | Lost(_)
            | Shard { .. }
            | Write { .. }
            | Writing { .. }
            | Csv(_)
            | NoHistory(_)
            | Store(_)
            | NoCsvSummary(_)
            | NoSummary { .. }
            | Regression(_)
            | Unloadable(_)
            | Sink(_)
            | Target(_)
            | Once(_)
            | Demo(_) => ExitCode::FAILURE,
        }
    }

    /// The word the message is printed after: `regression` for
    /// [`CommandError::Regression`], `error` for the rest.
    pub fn label(&self) -> &'static str {
        match self {
            CommandError::Regression(_) => "regression",
            _ => "error",
        }
    }

    /// Each error on its own, in order: the errors of [`CommandError::Several`], or
    /// this one.
    pub fn each(&self) -> Vec<&CommandError> {
        match self {
            CommandError::Several(all) => all.iter().flat_map(CommandError::each).collect(),
            one => vec![one],
        }
    }

    /// `errors` as one error: none, the only one, or [`CommandError::Several`].
    pub fn all(mut errors: Vec<CommandError>) -> Option<CommandError> {
        match errors.len() {
            0 => None,
            1 => errors.pop(),
            _ => Some(CommandError::Several(errors)),
        }
    }
}

/// The messages of `errors`, one per line.
fn join(errors: &[CommandError]) -> String {
    let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
    lines.join("\n")
}

/// An error of a layer that words it together with its causes: shown as the error,
/// then each cause after `": "` (`binding the sink to 127.0.0.1:80: Permission
/// denied (os error 13)`). It keeps the error for its [`Debug`] form; it has no
/// [`source`](Error::source) of its own, its message holding them all.
#[derive(Debug)]
pub struct Chain(Detail);

impl Chain {
    /// Keeps `error` (any error type, or a message) with its causes.
    pub fn new(error: impl Into<Detail>) -> Chain {
        Chain(error.into())
    }
}

impl std::fmt::Display for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(e) = cause {
            write!(f, ": {e}")?;
            cause = e.source();
        }
        Ok(())
    }
}

impl Error for Chain {}

/// Why the environment is not a shard's: a variable unset or wrong, named.
#[derive(Debug, thiserror::Error)]
pub enum ShardEnvError {
    /// Neither index variable is set.
    #[error("HEADROOM_SHARD_INDEX (or JOB_COMPLETION_INDEX) is not set")]
    NoIndex,
    /// The variable is not set.
    #[error("{0} is not set")]
    Unset(&'static str),
    /// The variable is not a number.
    #[error("{name}={text:?} is not a number")]
    NotANumber {
        /// The variable.
        name: &'static str,
        /// Its value.
        text: String,
    },
    /// The index does not fit the count.
    #[error("shard index: {0}")]
    Slice(#[from] crate::plan::BadSlice),
    /// The run's secret is too weak to be the coordinator's.
    #[error("{0}")]
    Secret(#[from] crate::shard::auth::WeakSecret),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn a_chain_shows_every_cause() {
        let e = Outer(std::io::Error::other("inner"));
        assert_eq!(Chain::new(e).to_string(), "outer: inner");
        assert_eq!(Chain::new("plain".to_string()).to_string(), "plain");
    }

    #[test]
    fn several_errors_keep_their_order_and_the_first_code() {
        let write = CommandError::Write {
            path: "a.json".into(),
            source: std::io::Error::other("full"),
        };
        let all = CommandError::all(vec![write, CommandError::Lost("shard 1".into())]).unwrap();
        assert_eq!(all.exit_code(), ExitCode::FAILURE);
        let lines: Vec<String> = all.each().iter().map(|e| e.to_string()).collect();
        assert_eq!(
            lines,
            [
                "cannot write a.json: full",
                "shard 1; the figures above are the other shards' alone"
            ]
        );
        assert!(CommandError::all(Vec::new()).is_none());
        assert_eq!(CommandError::FindSink.exit_code(), ExitCode::BAD_INPUT);
    }
}
