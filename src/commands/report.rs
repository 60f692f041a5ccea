//! `headroom report RUN`: one stored run's report as Markdown, self-contained HTML,
//! JUnit XML or JSON, on stdout or into a file (`-o`); with `--csv PREFIX`, its summary
//! and timeline as CSV files. `headroom report --rounds RUN...`: the rounds page of
//! several runs ([`crate::report::rounds`]).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::cli::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK};
use crate::report::{csv, html, json, junit, markdown};
use crate::store::{self, RunRef, StoredRun};

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
fn positive(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!(
            "expected a positive load such as 1500, found {text:?}"
        )),
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

/// Runs `headroom report` and returns the exit code.
pub fn run(args: &ReportArgs) -> i32 {
    if args.rounds {
        return super::rounds::run(args);
    }
    let reference: RunRef = match args.run.parse() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let loaded = super::runs::open(args.store.as_deref()).and_then(|store| {
        store
            .resolve(&reference)
            .and_then(|id| store.load(id))
            .map_err(|e| e.to_string())
    });
    let run = match loaded {
        Ok(run) => run,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_FAILURE;
        }
    };
    if let Some(prefix) = &args.csv {
        let Some(summary) = &run.row.summary else {
            eprintln!("error: run {} has no summary to write as CSV", run.row.id);
            return EXIT_FAILURE;
        };
        if let Err(e) = csv::write(prefix, summary, &run.timeline, &run.steps) {
            eprintln!("error: {e}");
            return EXIT_FAILURE;
        }
        if args.output.is_none() {
            return EXIT_OK;
        }
    }
    let Some(text) = render_sized(&run, args.format, &args.size_for) else {
        eprintln!(
            "error: run {} has no summary ({}); try --format md or html",
            run.row.id,
            run.row.status.as_str()
        );
        return EXIT_FAILURE;
    };
    match &args.output {
        Some(path) => {
            if let Err(e) = std::fs::write(path, text) {
                eprintln!("error: cannot write {}: {e}", path.display());
                return EXIT_FAILURE;
            }
        }
        None => print!("{text}"),
    }
    EXIT_OK
}
