//! `headroom report RUN`: one stored run's report as Markdown, self-contained HTML,
//! JUnit XML or JSON, on stdout or into a file (`-o`); with `--csv PREFIX`, its summary
//! and timeline as CSV files. `headroom report --rounds RUN...`: the rounds page of
//! several runs ([`crate::report::rounds`]).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::report::rounds::Rounds;
use crate::report::{csv, html, json, junit, markdown};
use crate::store::{self, RunRef, StoredRun};

use super::error::{CommandError, ValueError};
use super::exit::ExitCode;

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ReportFormat {
    /// Markdown, for a pull request.
    #[default]
    Md,
    /// One self-contained HTML file with charts.
    Html,
    /// JUnit XML, one test case per threshold.
    Junit,
    /// The summary JSON.
    Json,
}

/// Flags of `headroom report`.
#[derive(Debug, Args, Clone)]
pub struct ReportArgs {
    /// The run: an id, `latest`, `latest~N` or `label:key=value`.
    pub run: String,
    /// With --rounds: the next rounds, in order.
    #[arg(requires = "rounds", value_name = "RUN")]
    pub more: Vec<String>,
    /// One page of rounds (Markdown or HTML): a row per run given, in order, with what
    /// changed, the ceiling or rate, latency, dropped, errors and the change against
    /// the round before; then a chart of the ceilings.
    #[arg(long)]
    pub rounds: bool,
    /// Also write the summary and timeline as CSV: `PREFIX_stats.csv`,
    /// `PREFIX_stats_history.csv` (and `PREFIX_steps.csv` for a search), as Locust.
    #[arg(long, value_name = "PREFIX", conflicts_with = "rounds")]
    pub csv: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Md)]
    pub format: ReportFormat,
    /// Write the report here instead of on stdout (with --csv, the report is written
    /// only when this is given).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Loads to size a search for, in its unit (req/s or users), comma-separated or
    /// repeated; default: the ceiling and twice it.
    #[arg(long, value_name = "RATE", value_delimiter = ',', value_parser = positive)]
    pub size_for: Vec<f64>,
    /// Run history database (default `.headroom/history.db`).
    #[arg(long, env = store::STORE_ENV)]
    pub store: Option<PathBuf>,
}

/// A `--size-for` load: a positive number.
fn positive(text: &str) -> Result<f64, ValueError> {
    match text.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(ValueError::new("a positive load such as 1500", text)),
    }
}

/// Renders `run` in `format`; `None` when the format needs a summary the run lacks.
pub fn render(run: &StoredRun, format: ReportFormat) -> Option<String> {
    render_sized(run, format, &[])
}

/// [`render`], sizing a search for `size_for` (the ceiling and twice it when empty).
pub fn render_sized(run: &StoredRun, format: ReportFormat, size_for: &[f64]) -> Option<String> {
    match format {
        ReportFormat::Md => Some(markdown::render_sized(run, size_for)),
        ReportFormat::Html => Some(html::render_sized(run, size_for)),
        ReportFormat::Junit => Some(junit::render(run)),
        ReportFormat::Json => json::render(run),
    }
}

/// Runs `headroom report`: writes the report (and `--csv`'s files).
pub fn run(args: &ReportArgs) -> Result<ExitCode, CommandError> {
    if args.rounds {
        return rounds(args);
    }
    let reference: RunRef = args.run.parse().map_err(CommandError::Reference)?;
    let store = super::runs::open(args.store.as_deref())?;
    let run = store.load(store.resolve(&reference)?)?;
    if let Some(prefix) = &args.csv {
        let summary = run
            .row
            .summary
            .as_ref()
            .ok_or(CommandError::NoCsvSummary(run.row.id))?;
        csv::write(prefix, summary, &run.timeline, &run.steps).map_err(CommandError::Csv)?;
        if args.output.is_none() {
            return Ok(ExitCode::OK);
        }
    }
    let text = render_sized(&run, args.format, &args.size_for).ok_or(CommandError::NoSummary {
        id: run.row.id,
        status: run.row.status.as_str(),
    })?;
    write_or_print(args.output.as_deref(), &text)?;
    Ok(ExitCode::OK)
}

/// Writes `text` to `output` when given, else prints it on stdout.
pub fn write_or_print(output: Option<&std::path::Path>, text: &str) -> Result<(), CommandError> {
    match output {
        Some(path) => std::fs::write(path, text).map_err(|source| CommandError::Write {
            path: path.to_owned(),
            source,
        }),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

/// Runs `headroom report --rounds RUN...`: resolves the runs (ids, `latest~N`,
/// `label:round=3`), builds the [`Rounds`] page and writes it as Markdown or HTML.
fn rounds(args: &ReportArgs) -> Result<ExitCode, CommandError> {
    let refs = std::iter::once(&args.run)
        .chain(&args.more)
        .map(|r| r.parse())
        .collect::<Result<Vec<RunRef>, _>>()
        .map_err(CommandError::Reference)?;
    if !matches!(args.format, ReportFormat::Md | ReportFormat::Html) {
        return Err(CommandError::RoundsFormat);
    }
    let rounds = Rounds::build(&super::runs::open(args.store.as_deref())?, &refs)?;
    let text = match args.format {
        ReportFormat::Html => rounds.html(),
        _ => rounds.markdown(),
    };
    write_or_print(args.output.as_deref(), &text)?;
    Ok(ExitCode::OK)
}
