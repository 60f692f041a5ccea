//! `headroom compare RUN RUN...`: the round table of a trip report. One row per run
//! (rate, achieved, p50, p95, p99, errors, dropped) with the change against the row
//! before in percent; a change inside the run-to-run noise is marked `~`.
//!
//! The noise is estimated from repeated runs: stored runs carrying exactly the same
//! labels as a compared run are repeats of one round, and the largest relative spread
//! among them is the noise of each figure. Without repeats it is ±5%.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde::Serialize;

use crate::report::markdown::escape as md;
use crate::report::table::Table;
use crate::report::units::{latency, per_second, percent};
use crate::store::{self, RunFilter, RunRef, RunRow, Store};

use super::error::{CommandError, ValueError};
use super::exit::ExitCode;

pub use crate::report::noise::{change, noise_of, DEFAULT_NOISE_PCT};

/// Output formats of `headroom compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum CompareFormat {
    /// Aligned columns for a terminal.
    #[default]
    Text,
    /// A Markdown table for a pull request.
    Md,
    /// JSON for scripts.
    Json,
}

/// Flags of `headroom compare`.
#[derive(Debug, Args, Clone)]
pub struct CompareArgs {
    /// Runs in order: ids, `latest`, `latest~N` or `label:key=value`.
    #[arg(required = true, num_args = 2..)]
    pub runs: Vec<String>,
    /// Run history database (default `.headroom/history.db`).
    #[arg(long, env = store::STORE_ENV)]
    pub store: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = CompareFormat::Text)]
    pub format: CompareFormat,
    /// Exit 1 when p95 or the achieved rate got worse by more than this between the
    /// first and the last run, e.g. `10%`.
    #[arg(long, value_parser = parse_percent)]
    pub fail_on_regression: Option<f64>,
}

/// Parses `10%` or `10` as 10.0.
pub fn parse_percent(text: &str) -> Result<f64, ValueError> {
    let number = text.trim().trim_end_matches('%').trim();
    match number.parse::<f64>() {
        Ok(p) if p.is_finite() && p >= 0.0 => Ok(p),
        _ => Err(ValueError::new("a percentage like 10%", text)),
    }
}

/// The figures compared, in column order.
const METRICS: [&str; 4] = ["achieved", "p50", "p95", "p99"];

/// One row of the round table.
#[derive(Debug, Clone, Serialize)]
pub struct Round {
    /// Run id.
    pub id: i64,
    /// Labels of the run.
    pub labels: BTreeMap<String, String>,
    /// Status (`done`, `interrupted`, ...).
    pub status: String,
    /// Offered rate, /s.
    pub offered: Option<f64>,
    /// Achieved rate, /s, then p50, p95 and p99 in ms (the order of [`METRICS`]).
    pub figures: Option<[f64; 4]>,
    /// Errors as a percentage of requests.
    pub errors_pct: Option<f64>,
    /// Dropped iterations.
    pub dropped: Option<u64>,
    /// Change of each figure against the previous row, percent.
    pub delta_pct: Option<[f64; 4]>,
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Rows in the order asked.
    pub rounds: Vec<Round>,
    /// Noise of each figure, percent.
    pub noise_pct: [f64; 4],
    /// Whether the noise came from repeated runs (else it is the default).
    pub noise_from_repeats: bool,
}

/// Runs `headroom compare`: prints the table; with `--fail-on-regression`, a
/// regression beyond the limit is an error.
pub fn run(args: &CompareArgs) -> Result<ExitCode, CommandError> {
    let refs = args
        .runs
        .iter()
        .map(|r| r.parse())
        .collect::<Result<Vec<RunRef>, _>>()
        .map_err(CommandError::Reference)?;
    let comparison = compare(&super::runs::open(args.store.as_deref())?, &refs)?;
    match args.format {
        CompareFormat::Text => print!("{}", render_text(&comparison)),
        CompareFormat::Md => print!("{}", render_markdown(&comparison)),
        CompareFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&comparison).expect("a comparison serializes")
        ),
    }
    if let Some(limit) = args.fail_on_regression {
        if let Some(why) = regression(&comparison, limit) {
            return Err(CommandError::Regression(why));
        }
    }
    Ok(ExitCode::OK)
}

/// Builds the comparison of the runs `refs` names, in that order.
pub fn compare(store: &Store, refs: &[RunRef]) -> Result<Comparison, store::StoreError> {
    let rows = refs
        .iter()
        .map(|r| store.resolve(r).and_then(|id| store.row(id)))
        .collect::<Result<Vec<_>, _>>()?;
    let (noise_pct, noise_from_repeats) = noise(&rows, &store.runs(&RunFilter::default())?);
    let mut rounds: Vec<Round> = rows.iter().map(round).collect();
    for i in 1..rounds.len() {
        if let (Some(prev), Some(cur)) = (rounds[i - 1].figures, rounds[i].figures) {
            rounds[i].delta_pct = Some(std::array::from_fn(|m| change(prev[m], cur[m])));
        }
    }
    Ok(Comparison {
        rounds,
        noise_pct,
        noise_from_repeats,
    })
}

fn round(row: &RunRow) -> Round {
    let s = row.summary.as_ref();
    Round {
        id: row.id,
        labels: row.labels.clone(),
        status: row.mark().unwrap_or_else(|| "done".into()),
        offered: s.map(|s| s.rate.offered),
        figures: s.map(figures),
        errors_pct: s.map(|s| s.errors.rate * 100.0),
        dropped: s.map(|s| s.dropped),
        delta_pct: None,
    }
}

fn figures(s: &crate::metrics::summary::Summary) -> [f64; 4] {
    let l = &s.latency_ms;
    [s.rate.achieved, l.p50, l.p95, l.p99]
}

/// Largest relative spread (max − min over the mean) of each figure among stored
/// runs sharing a compared run's labels; the default when there are no repeats.
fn noise(compared: &[RunRow], all: &[RunRow]) -> ([f64; 4], bool) {
    let run_figures = |r: &RunRow| {
        (r.kind == "run")
            .then_some(r.summary.as_ref())
            .flatten()
            .map(figures)
    };
    match noise_of(compared, all, run_figures) {
        Some(spread) => (spread, true),
        None => ([DEFAULT_NOISE_PCT; 4], false),
    }
}

/// Why the last run is worse than the first by more than `limit` percent (p95 up or
/// achieved rate down), or `None`.
pub fn regression(c: &Comparison, limit: f64) -> Option<String> {
    let first = c.rounds.first()?.figures?;
    let last = c.rounds.last()?.figures?;
    let rate = change(first[0], last[0]);
    let p95 = change(first[2], last[2]);
    let mut why = Vec::new();
    if -rate > limit {
        why.push(format!("achieved rate {rate:+.1}%"));
    }
    if p95 > limit {
        why.push(format!("p95 {p95:+.1}%"));
    }
    (!why.is_empty()).then(|| format!("{} (limit {limit}%)", why.join(", ")))
}

/// One figure's cell: the value, then its change (`~` marks a change within noise).
fn cell(round: &Round, m: usize, noise: &[f64; 4]) -> String {
    let Some(f) = round.figures else {
        return "-".to_string();
    };
    let value = if m == 0 {
        per_second(f[m])
    } else {
        latency(f[m])
    };
    match round.delta_pct.map(|d| d[m]) {
        Some(d) if !d.is_finite() => format!("{value} (new)"),
        Some(d) if d.abs() <= noise[m] => format!("{value} ~{d:+.1}%"),
        Some(d) => format!("{value} {d:+.1}%"),
        None => value,
    }
}

fn cells(round: &Round, c: &Comparison) -> Vec<String> {
    let labels: Vec<String> = round
        .labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let mut row = vec![
        round.id.to_string(),
        labels.join(" "),
        round.offered.map_or("-".into(), per_second),
    ];
    row.extend((0..METRICS.len()).map(|m| cell(round, m, &c.noise_pct)));
    row.push(round.errors_pct.map_or("-".into(), percent));
    row.push(round.dropped.map_or("-".into(), |d| d.to_string()));
    if round.status != "done" {
        row[0] = format!("{} ({})", round.id, round.status);
    }
    row
}

const HEADER: [&str; 9] = [
    "run", "labels", "rate", "achieved", "p50", "p95", "p99", "errors", "dropped",
];

fn legend(c: &Comparison) -> String {
    let n = &c.noise_pct;
    let source = if c.noise_from_repeats {
        "measured from repeated runs with the same labels"
    } else {
        "default: no repeated runs with the same labels"
    };
    format!(
        "~ within noise (achieved ±{:.1}%, p50 ±{:.1}%, p95 ±{:.1}%, p99 ±{:.1}%; {source})\n",
        n[0], n[1], n[2], n[3]
    )
}

/// The comparison as aligned text columns with a legend.
pub fn render_text(c: &Comparison) -> String {
    let mut t = Table::labelled(0);
    t.row(HEADER);
    for round in &c.rounds {
        t.row(cells(round, c));
    }
    format!("{}\n{}", t.render(0), legend(c))
}

/// The comparison as a Markdown table with a legend.
pub fn render_markdown(c: &Comparison) -> String {
    let mut out = format!(
        "| {} |\n|{}\n",
        HEADER.join(" | "),
        "---|".repeat(HEADER.len())
    );
    for round in &c.rounds {
        let row: Vec<String> = cells(round, c).iter().map(|s| md(s)).collect();
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    format!("{out}\n{}\n", md(legend(c).trim_end()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(id: i64, figures: [f64; 4]) -> Round {
        Round {
            id,
            labels: BTreeMap::new(),
            status: "done".into(),
            offered: Some(1000.0),
            figures: Some(figures),
            errors_pct: Some(0.0),
            dropped: Some(0),
            delta_pct: None,
        }
    }

    #[test]
    fn changes_inside_the_noise_are_marked() {
        let mut b = round(2, [1000.0, 10.3, 12.0, 30.0]);
        b.delta_pct = Some([0.0, 3.0, -40.0, 0.0]);
        let c = Comparison {
            rounds: vec![round(1, [1000.0, 10.0, 20.0, 30.0]), b],
            noise_pct: [5.0; 4],
            noise_from_repeats: false,
        };
        let text = render_text(&c);
        assert!(text.contains("10.3ms ~+3.0%"), "{text}");
        assert!(text.contains("12.0ms -40.0%"), "{text}");
        assert!(text.contains("±5.0%"), "{text}");
    }

    #[test]
    fn a_regression_beyond_the_limit_is_reported() {
        let c = Comparison {
            rounds: vec![
                round(1, [1000.0, 10.0, 20.0, 30.0]),
                round(2, [1000.0, 10.0, 23.0, 30.0]),
            ],
            noise_pct: [5.0; 4],
            noise_from_repeats: false,
        };
        assert!(regression(&c, 10.0).unwrap().contains("p95 +15.0%"));
        assert_eq!(regression(&c, 20.0), None);
    }

    #[test]
    fn percentages_parse_with_or_without_the_sign() {
        assert_eq!(parse_percent("10%").unwrap(), 10.0);
        assert_eq!(parse_percent("2.5").unwrap(), 2.5);
        assert!(parse_percent("-1%").is_err());
    }
}
