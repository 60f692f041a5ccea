//! `headroom runs`: the table of past runs from the store, newest first: id, kind
//! (`run` or `find`), start, scenario, labels, achieved rate, p95, errors and verdict (or status, for a run that
//! did not finish).

use std::path::PathBuf;

use clap::Args;

use crate::report::table::{Align, Table};
use crate::report::units::{latency, per_second, percent};
use crate::store::{self, RunFilter, RunRow, RunStatus, Store};

use super::error::CommandError;
use super::exit::ExitCode;
pub use super::values::parse_label;

/// Flags of `headroom runs`.
#[derive(Debug, Args, Clone, Default)]
pub struct RunsArgs {
    /// Run history database (default `.headroom/history.db`).
    #[arg(long, env = store::STORE_ENV)]
    pub store: Option<PathBuf>,
    /// Only runs with this label, `key=value` (repeatable: all must match).
    #[arg(long = "label", value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
    /// At most this many runs.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
}

/// Runs `headroom runs`: prints the table (or that there is none yet).
pub fn run(args: &RunsArgs) -> Result<ExitCode, CommandError> {
    let rows = open(args.store.as_deref())?.runs(&RunFilter {
        labels: args.labels.clone(),
        limit: Some(args.limit),
    })?;
    if rows.is_empty() {
        println!("no runs stored yet");
    } else {
        print!("{}", render(&rows));
    }
    Ok(ExitCode::OK)
}

/// Opens the store for reading, refusing to create one where none exists.
pub(crate) fn open(flag: Option<&std::path::Path>) -> Result<Store, CommandError> {
    let path = store::resolve_path(flag);
    if !path.exists() {
        return Err(CommandError::NoHistory(path));
    }
    Ok(Store::open(&path)?)
}

/// `k=v k2=v2`, sorted by key.
pub(crate) fn labels_text(row: &RunRow) -> String {
    let pairs: Vec<String> = row.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    pairs.join(" ")
}

/// `2024-05-01 12:00:03` from a stored RFC 3339 time.
pub(crate) fn when(started_at: &str) -> String {
    started_at.get(..19).unwrap_or(started_at).replace('T', " ")
}

/// The table of runs, one per line under a header.
pub fn render(rows: &[RunRow]) -> String {
    let mut t = Table::new(&[
        Align::Right,
        Align::Left,
        Align::Left,
        Align::Left,
        Align::Left,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Left,
    ]);
    t.row([
        "id", "kind", "when", "scenario", "labels", "rate", "p95", "errors", "verdict",
    ]);
    for row in rows {
        let (rate, p95, errors) = match &row.summary {
            Some(s) => (
                per_second(s.rate.achieved),
                latency(s.latency_ms.p95),
                percent(s.errors.rate * 100.0),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let verdict = match (row.status, &row.verdict) {
            (RunStatus::Done, Some(v)) => v.clone(),
            (status, Some(v)) => format!("{} ({v})", status.as_str()),
            (status, None) => status.as_str().to_string(),
        };
        t.row([
            row.id.to_string(),
            row.kind.clone(),
            when(&row.started_at),
            row.scenario_name.clone(),
            labels_text(row),
            rate,
            p95,
            errors,
            verdict,
        ]);
    }
    t.render(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_split_on_the_first_equals_sign() {
        assert_eq!(
            parse_label("change=a=b").unwrap(),
            ("change".into(), "a=b".into())
        );
        assert_eq!(
            parse_label("round=").unwrap(),
            ("round".into(), String::new())
        );
        assert!(parse_label("round").is_err());
        assert!(parse_label("=6").is_err());
    }

    #[test]
    fn when_reads_as_date_and_time() {
        assert_eq!(when("2024-05-01T12:00:03.123Z"), "2024-05-01 12:00:03");
    }
}
