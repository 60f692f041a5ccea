//! The rounds page (`headroom report --rounds RUN...`): the round-over-round record of
//! a tuning session on one page, as a trip report lays it out. One row per round: what
//! changed (its labels and `--note`), the ceiling (a search) or the achieved rate (a
//! run), p50/p95/p99, dropped, errors, and the change against the round before,
//! marked when it lies within the run-to-run noise; then one chart of the ceilings
//! (and rates) over the rounds.
//!
//! [`Rounds::build`] reads the runs from the store; the noise is measured as `compare`
//! measures it ([`super::noise::noise_of`]: the spread among stored runs
//! repeating a round's labels), or ±5% without repeats. [`Rounds::markdown`] and
//! [`Rounds::html`] render the page; every user-given text is escaped.

use std::fmt::Write;

use super::capacity::Capacity;
use super::charts::{LineChart, Series, XAxis};
use super::escape::html as html_escape;
use super::escape::markdown as md;
use super::noise::{change, noise_of, DEFAULT_NOISE_PCT};
use super::units::{latency, per_second, percent};
use crate::search::result::value;
use crate::store::{RunFilter, RunRef, RunRow, Store, StoreError};

/// The label whose value names a round (`--label round=3`).
pub const ROUND_LABEL: &str = "round";

/// One round: a stored run or search.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    /// Run id in the store.
    pub id: i64,
    /// The `round` label, else the position on the page (from 1).
    pub name: String,
    /// Whether it is a search (`find`): its figure is then a ceiling.
    pub search: bool,
    /// Where it stands when it did not finish (`interrupted`, `failed`...).
    pub status: Option<String>,
    /// Its labels other than `round`, as `key=value`.
    pub labels: Vec<String>,
    /// Its `--note`.
    pub note: Option<String>,
    /// The ceiling (search; `None` when no step passed) or the achieved rate (run).
    pub figure: Option<f64>,
    /// `req/s` or `users`.
    pub unit: &'static str,
    /// p50, p95, p99 in ms: of the ceiling step for a search.
    pub latency_ms: Option<[f64; 3]>,
    /// Dropped iterations.
    pub dropped: Option<u64>,
    /// Errors, percent of requests.
    pub errors_pct: Option<f64>,
    /// Change of the figure and of p95 against the round before, percent (`None` for
    /// the first round, or when either side lacks the figure or the kinds differ).
    pub delta_pct: [Option<f64>; 2],
}

/// The rounds page.
#[derive(Debug, Clone, PartialEq)]
pub struct Rounds {
    /// Rounds in the order asked.
    pub rounds: Vec<Round>,
    /// Noise of the figure and of p95, percent.
    pub noise_pct: [f64; 2],
    /// Whether the noise was measured from repeated rounds (else it is the default).
    pub noise_from_repeats: bool,
}

/// The ceiling of a stored search: its highest passing step not limited by the
/// generator, as its report shows it.
fn ceiling(store: &Store, id: i64) -> Result<Option<f64>, StoreError> {
    let run = store.load(id)?;
    Ok(Capacity::of(&run).and_then(|c| c.ceiling))
}

/// The figure and p95 a round is compared by, read from the store.
fn figures(store: &Store, row: &RunRow) -> Option<[f64; 2]> {
    let s = row.summary.as_ref()?;
    let figure = if row.kind == "find" {
        ceiling(store, row.id).ok()??
    } else {
        s.rate.achieved
    };
    Some([figure, s.latency_ms.p95])
}

impl Rounds {
    /// The rounds `refs` name, in that order, with their changes and the noise.
    pub fn build(store: &Store, refs: &[RunRef]) -> Result<Rounds, StoreError> {
        let rows = refs
            .iter()
            .map(|r| store.resolve(r).and_then(|id| store.row(id)))
            .collect::<Result<Vec<_>, _>>()?;
        let all = store.runs(&RunFilter::default())?;
        // Repeats of a round are runs of the same kind with the same labels.
        let measured = noise_of(&rows, &all, |r| {
            let kind = rows.iter().find(|c| c.labels == r.labels)?.kind.as_str();
            (r.kind == kind).then(|| figures(store, r)).flatten()
        });
        let mut rounds = Vec::with_capacity(rows.len());
        for (i, row) in rows.iter().enumerate() {
            rounds.push(round(store, row, i)?);
        }
        for i in 1..rounds.len() {
            let (prev, cur) = (&rounds[i - 1], &rounds[i]);
            if prev.search != cur.search || prev.unit != cur.unit {
                continue;
            }
            let figure = prev.figure.zip(cur.figure).map(|(a, b)| change(a, b));
            let p95 = prev
                .latency_ms
                .zip(cur.latency_ms)
                .map(|(a, b)| change(a[1], b[1]));
            rounds[i].delta_pct = [figure, p95];
        }
        Ok(Rounds {
            rounds,
            noise_pct: measured.unwrap_or([DEFAULT_NOISE_PCT; 2]),
            noise_from_repeats: measured.is_some(),
        })
    }

    /// The page in Markdown, ending in a newline.
    pub fn markdown(&self) -> String {
        let mut out = String::from("## Rounds\n\n");
        let _ = writeln!(out, "{}\n", md(&self.headline()));
        let _ = writeln!(
            out,
            "| {} |\n|{}",
            HEADER.join(" | "),
            "---|".repeat(HEADER.len())
        );
        for round in &self.rounds {
            let cells: Vec<String> = self.cells(round).iter().map(|c| md(c)).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        let _ = writeln!(out, "\n{}", md(&self.legend()));
        out
    }

    /// The page as one self-contained HTML document (inline CSS and SVG, no script).
    pub fn html(&self) -> String {
        let mut out = String::new();
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>headroom rounds</title><style>{}td:nth-child(3),th:nth-child(3){{text-align:left}}</style></head><body>\n<h2>Rounds</h2>\n<p>{}</p>\n<table><tr>",
            super::html::STYLE,
            html_escape(&self.headline())
        );
        for h in HEADER {
            let _ = write!(out, "<th>{}</th>", html_escape(h));
        }
        out.push_str("</tr>\n");
        for round in &self.rounds {
            out.push_str("<tr>");
            for cell in self.cells(round) {
                let _ = write!(out, "<td>{}</td>", html_escape(&cell));
            }
            out.push_str("</tr>\n");
        }
        let _ = writeln!(out, "</table>\n<p>{}</p>", html_escape(&self.legend()));
        out.push_str(&with_dots(&self.chart().to_svg()));
        out.push_str("\n</body></html>\n");
        out
    }

    /// The figures over the rounds: one line for the ceilings of searches and one for
    /// the achieved rates of runs, x the round's position from 1.
    pub fn chart(&self) -> LineChart {
        let line = |name: &str, search: bool| Series {
            name: name.to_string(),
            points: self
                .rounds
                .iter()
                .enumerate()
                .filter(|(_, r)| r.search == search)
                .filter_map(|(i, r)| Some(((i + 1) as f64, r.figure?)))
                .collect(),
        };
        let series: Vec<Series> = [line("ceiling", true), line("achieved rate", false)]
            .into_iter()
            .filter(|s| !s.points.is_empty())
            .collect();
        let unit = self.rounds.first().map_or("req/s", |r| r.unit);
        LineChart {
            title: "Ceiling over rounds".into(),
            x_label: "round".into(),
            y_label: unit.into(),
            x_axis: XAxis::Linear,
            series,
        }
    }

    /// `Ceiling: 750 → 850 → 1300 req/s`, as a trip report sums its rounds up.
    fn headline(&self) -> String {
        let figures: Vec<String> = self
            .rounds
            .iter()
            .map(|r| r.figure.map_or("none".into(), value))
            .collect();
        let unit = self.rounds.first().map_or("req/s", |r| r.unit);
        let what = if self.rounds.iter().all(|r| r.search) {
            "Ceiling"
        } else if self.rounds.iter().any(|r| r.search) {
            "Ceiling or rate"
        } else {
            "Achieved rate"
        };
        format!("{what}: {} {unit}", figures.join(" → "))
    }

    fn legend(&self) -> String {
        let [f, p] = self.noise_pct;
        let source = if self.noise_from_repeats {
            "measured from repeated runs with the same labels"
        } else {
            "default: no repeated runs with the same labels"
        };
        format!("~ within noise (ceiling or rate ±{f:.1}%, p95 ±{p:.1}%; {source}).")
    }

    fn cells(&self, r: &Round) -> Vec<String> {
        let mut round = r.name.clone();
        if let Some(status) = &r.status {
            round = format!("{round} ({status})");
        }
        let mut changed = r.labels.join(", ");
        if let Some(note) = &r.note {
            if !changed.is_empty() {
                changed.push_str("; ");
            }
            changed.push_str(note);
        }
        let figure = match (r.figure, r.search) {
            (Some(v), true) => format!("ceiling {} {}", value(v), r.unit),
            (None, true) => "no ceiling".into(),
            (Some(v), false) => per_second(v),
            (None, false) => "-".into(),
        };
        let lat = |i: usize| r.latency_ms.map_or("-".into(), |l| latency(l[i]));
        vec![
            round,
            r.id.to_string(),
            changed,
            figure,
            lat(0),
            lat(1),
            lat(2),
            r.dropped.map_or("-".into(), |d| d.to_string()),
            r.errors_pct.map_or("-".into(), percent),
            self.delta(r, 0),
            self.delta(r, 1),
        ]
    }

    /// A change with its sign; `~` when it is within the noise, `new` from zero.
    fn delta(&self, r: &Round, i: usize) -> String {
        match r.delta_pct[i] {
            None => "-".into(),
            Some(d) if !d.is_finite() => "new".into(),
            Some(d) if d.abs() <= self.noise_pct[i] => format!("~{d:+.1}%"),
            Some(d) => format!("{d:+.1}%"),
        }
    }
}

/// The chart with a dot on every point: a round is one point, and a line of one
/// point (the only run among searches) would draw nothing.
fn with_dots(svg: &str) -> String {
    // An SVG marker on each vertex, in the line's own colour (`context-stroke`).
    const DEFS: &str = r#"<defs><marker id="dot" viewBox="0 0 10 10" refX="5" refY="5" markerWidth="6" markerHeight="6" markerUnits="userSpaceOnUse"><circle cx="5" cy="5" r="5" fill="context-stroke"/></marker></defs>"#;
    let dotted = svg.replace(
        "<polyline ",
        r#"<polyline marker-start="url(#dot)" marker-mid="url(#dot)" marker-end="url(#dot)" "#,
    );
    match dotted.find('>') {
        Some(end) => format!("{}{DEFS}{}", &dotted[..=end], &dotted[end + 1..]),
        None => dotted,
    }
}

const HEADER: [&str; 11] = [
    "round",
    "run",
    "what changed",
    "ceiling or rate",
    "p50",
    "p95",
    "p99",
    "dropped",
    "errors",
    "Δ ceiling or rate",
    "Δ p95",
];

fn round(store: &Store, row: &RunRow, position: usize) -> Result<Round, StoreError> {
    let search = row.kind == "find";
    let s = row.summary.as_ref();
    let figure = match (search, s) {
        (true, Some(_)) => ceiling(store, row.id)?,
        (false, Some(s)) => Some(s.rate.achieved),
        (_, None) => None,
    };
    Ok(Round {
        id: row.id,
        name: row
            .labels
            .get(ROUND_LABEL)
            .cloned()
            .unwrap_or_else(|| (position + 1).to_string()),
        search,
        status: row.mark(),
        labels: row
            .labels
            .iter()
            .filter(|(k, _)| k.as_str() != ROUND_LABEL)
            .map(|(k, v)| format!("{k}={v}"))
            .collect(),
        note: row.note.clone(),
        figure,
        unit: if s.is_some_and(|s| s.model == "users") {
            "users"
        } else {
            "req/s"
        },
        latency_ms: s.map(|s| [s.latency_ms.p50, s.latency_ms.p95, s.latency_ms.p99]),
        dropped: s.map(|s| s.dropped),
        errors_pct: s.map(|s| s.errors.rate * 100.0),
        delta_pct: [None, None],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(name: &str, figure: f64, p95: f64, delta: [Option<f64>; 2]) -> Round {
        Round {
            id: 7,
            name: name.into(),
            search: true,
            status: None,
            labels: vec!["change=pool <150>".into()],
            note: Some("synchronous_commit=off | wal".into()),
            figure: Some(figure),
            unit: "req/s",
            latency_ms: Some([10.0, p95, 30.0]),
            dropped: Some(3),
            errors_pct: Some(0.5),
            delta_pct: delta,
        }
    }

    fn page() -> Rounds {
        Rounds {
            rounds: vec![
                round("1", 750.0, 500.0, [None, None]),
                round("2", 850.0, 490.0, [Some(13.3), Some(-2.0)]),
            ],
            noise_pct: [5.0, 5.0],
            noise_from_repeats: false,
        }
    }

    #[test]
    fn the_markdown_leads_with_the_ceilings_and_marks_the_noise() {
        let text = page().markdown();
        assert!(text.contains("Ceiling: 750 → 850 req/s"), "{text}");
        assert!(text.contains("| +13.3% | ~-2.0% |"), "{text}");
        // User text cannot break the table.
        assert!(
            text.contains("change=pool &lt;150&gt;; synchronous_commit=off \\| wal"),
            "{text}"
        );
        assert!(text.contains("ceiling 850 req/s"), "{text}");
    }

    #[test]
    fn the_html_is_one_page_with_one_chart_and_escaped_text() {
        let html = page().html();
        assert_eq!(html.matches("<svg").count(), 1);
        assert_eq!(html.matches("<polyline").count(), 1);
        assert!(html.contains("pool &lt;150&gt;") && !html.contains("<150>"));
        assert!(!html.contains("<script"));
    }
}
