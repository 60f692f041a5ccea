//! Reading runs back: [`Store::runs`] lists them newest first (optionally only those
//! carrying some labels), [`Store::load`] reads one whole ([`StoredRun`]). A run
//! still marked `running` whose process is gone is reported as
//! [`RunStatus::Interrupted`].

use std::collections::BTreeMap;

use rusqlite::{params, OptionalExtension, Row};

use super::histograms::{self, StoredHistograms};
use super::writer::process_start;
use super::{Store, StoreError};
use headroom_metrics::summary::{Second, Summary};

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    /// Its process is still running it.
    Running,
    /// It ran to the end.
    Done,
    /// It stopped early (Ctrl-C), or its process died while it ran.
    Interrupted,
    /// It could not be carried out.
    Failed,
}

impl RunStatus {
    /// The status as a word.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Done => "done",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
        }
    }
}

/// Which runs [`Store::runs`] lists.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    /// Only runs carrying every one of these labels.
    pub labels: Vec<(String, String)>,
    /// At most this many (newest first); all when `None`.
    pub limit: Option<usize>,
}

/// One run's record, without its timeline, steps or histograms.
#[derive(Debug, Clone)]
pub struct RunRow {
    /// Id in the store (increasing with start order).
    pub id: i64,
    /// `run` or `find`.
    pub kind: String,
    /// Where it stands.
    pub status: RunStatus,
    /// Start, RFC 3339 UTC.
    pub started_at: String,
    /// End, RFC 3339 UTC, once it ended.
    pub ended_at: Option<String>,
    /// The command line, secrets masked.
    pub command_line: String,
    /// Scenario name.
    pub scenario_name: String,
    /// sha256 of the scenario file's text.
    pub scenario_hash: Option<String>,
    /// Git commit of the working directory at the start.
    pub git_commit: Option<String>,
    /// Labels by key.
    pub labels: BTreeMap<String, String>,
    /// The final summary, once the run ended with one.
    pub summary: Option<Summary>,
    /// `pass`, `fail` or `generator-bound`, once the run ended with a summary.
    pub verdict: Option<String>,
    /// Why a failed run failed.
    pub message: Option<String>,
    /// What changed in this round (`--note`), when given.
    pub note: Option<String>,
}

impl RunRow {
    /// How a list of runs marks this one beside its id: `None` for a run that ended
    /// with its own summary; its status otherwise, with what a partial summary covers
    /// (`interrupted, partial to second 3`).
    pub fn mark(&self) -> Option<String> {
        let partial = self.summary.as_ref().and_then(|s| s.partial);
        match (self.status, partial) {
            (RunStatus::Done, None) => None,
            (status, None) => Some(status.as_str().to_string()),
            (status, Some(p)) => Some(format!(
                "{}, partial to second {}",
                status.as_str(),
                p.last_second
            )),
        }
    }
}

/// One step of a search.
#[derive(Debug, Clone)]
pub struct StoredStep {
    /// Position in the search, from 0.
    pub index: u32,
    /// Rate the step ran at.
    pub rate: f64,
    /// Whether it passed every threshold.
    pub ok: bool,
    /// Its summary.
    pub summary: Summary,
}

/// A search's hold (`find --hold`): the answer run for a while.
#[derive(Debug, Clone)]
pub struct StoredHold {
    /// The value held.
    pub rate: f64,
    /// Whether it held.
    pub ok: bool,
    /// The result's `hold` object as written (figures, verdict and summary).
    pub json: serde_json::Value,
}

/// Everything stored about one run.
#[derive(Debug, Clone)]
pub struct StoredRun {
    /// The run's record.
    pub row: RunRow,
    /// The summary as stored, with any fields this build does not model (`watches`).
    pub summary_json: Option<serde_json::Value>,
    /// Timeline seconds written so far (all of them for a finished run).
    pub timeline: Vec<Second>,
    /// Search steps, in order.
    pub steps: Vec<StoredStep>,
    /// The search's hold, when it ran one.
    pub hold: Option<StoredHold>,
    /// Exact latency histograms (empty for a run that did not finish).
    pub histograms: StoredHistograms,
}

/// A run that wrote no summary of its own (killed, or still running) reads as the
/// summary of what it had recorded, marked `partial`.
const COLUMNS: &str = "id, kind, status, pid, proc_start, started_at, ended_at, command_line, \
                       scenario_name, scenario_hash, git_commit, \
                       COALESCE(summary_json, partial_json), verdict, message, note";

fn corrupt(id: i64, what: &'static str, source: serde_json::Error) -> StoreError {
    StoreError::Corrupt { id, what, source }
}

/// Whether the process that started a run is still alive (same pid, same start time).
fn alive(pid: i64, proc_start: Option<i64>) -> bool {
    match (u32::try_from(pid).ok().and_then(process_start), proc_start) {
        (Some(now), Some(then)) => now as i64 == then,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

impl Store {
    /// Runs matching `filter`, newest first.
    pub fn runs(&self, filter: &RunFilter) -> Result<Vec<RunRow>, StoreError> {
        let mut sql = format!("SELECT {COLUMNS} FROM runs r WHERE 1 = 1");
        let mut values: Vec<String> = Vec::new();
        for (key, value) in &filter.labels {
            sql.push_str(
                " AND EXISTS (SELECT 1 FROM labels l WHERE l.run_id = r.id AND l.key = ? AND l.value = ?)",
            );
            values.push(key.clone());
            values.push(value.clone());
        }
        sql.push_str(" ORDER BY id DESC");
        if let Some(limit) = filter.limit {
            sql.push_str(&format!(" LIMIT {limit}"));
        }
        let mut select = self.conn().prepare(&sql)?;
        let raw = select
            .query_map(rusqlite::params_from_iter(values.iter()), RawRow::read)?
            .collect::<Result<Vec<_>, _>>()?;
        raw.into_iter().map(|r| self.finish_row(r)).collect()
    }

    /// The run with this id, without timeline, steps or histograms.
    pub fn row(&self, id: i64) -> Result<RunRow, StoreError> {
        let raw = self
            .conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM runs WHERE id = ?"),
                [id],
                RawRow::read,
            )
            .map_err(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => StoreError::NotFound {
                    reference: id.to_string(),
                },
                e => e.into(),
            })?;
        self.finish_row(raw)
    }

    /// Everything stored about run `id`.
    pub fn load(&self, id: i64) -> Result<StoredRun, StoreError> {
        let row = self.row(id)?;
        let summary_json: Option<String> = self.conn().query_row(
            "SELECT COALESCE(summary_json, partial_json) FROM runs WHERE id = ?",
            [id],
            |r| r.get(0),
        )?;
        let summary_json = summary_json
            .map(|s| serde_json::from_str(&s))
            .transpose()
            .map_err(|e| corrupt(id, "summary", e))?;
        let mut select = self
            .conn()
            .prepare("SELECT json FROM seconds WHERE run_id = ? ORDER BY t")?;
        let timeline = select
            .query_map([id], |r| r.get::<_, String>(0))?
            .map(|json| {
                let json = json?;
                serde_json::from_str(&json).map_err(|e| corrupt(id, "timeline", e))
            })
            .collect::<Result<Vec<Second>, StoreError>>()?;
        let mut select = self.conn().prepare(
            "SELECT idx, rate, ok, summary_json FROM steps WHERE run_id = ? ORDER BY idx",
        )?;
        let steps = select
            .query_map([id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get::<_, String>(3)?))
            })?
            .map(|step| {
                let (index, rate, ok, json) = step?;
                let summary = serde_json::from_str(&json).map_err(|e| corrupt(id, "step", e))?;
                Ok(StoredStep {
                    index,
                    rate,
                    ok,
                    summary,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let hold = self
            .conn()
            .query_row(
                "SELECT rate, ok, json FROM holds WHERE run_id = ?",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, String>(2)?)),
            )
            .optional()?
            .map(|(rate, ok, json)| {
                let json = serde_json::from_str(&json).map_err(|e| corrupt(id, "hold", e))?;
                Ok::<_, StoreError>(StoredHold { rate, ok, json })
            })
            .transpose()?;
        let (mut row, mut summary_json) = (row, summary_json);
        partial_timeline(&mut row, &mut summary_json, &timeline);
        Ok(StoredRun {
            row,
            summary_json,
            timeline,
            steps,
            hold,
            histograms: histograms::load(self.conn(), id)?,
        })
    }

    fn labels(&self, id: i64) -> Result<BTreeMap<String, String>, StoreError> {
        let mut select = self
            .conn()
            .prepare("SELECT key, value FROM labels WHERE run_id = ?")?;
        let labels = select
            .query_map(params![id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        Ok(labels)
    }

    fn finish_row(&self, raw: RawRow) -> Result<RunRow, StoreError> {
        let status = match raw.status.as_str() {
            "running" if alive(raw.pid, raw.proc_start) => RunStatus::Running,
            "running" | "interrupted" => RunStatus::Interrupted,
            "done" => RunStatus::Done,
            _ => RunStatus::Failed,
        };
        let summary = raw
            .summary_json
            .as_deref()
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| corrupt(raw.id, "summary", e))?;
        Ok(RunRow {
            id: raw.id,
            kind: raw.kind,
            status,
            started_at: raw.started_at,
            ended_at: raw.ended_at,
            command_line: raw.command_line,
            scenario_name: raw.scenario_name,
            scenario_hash: raw.scenario_hash,
            git_commit: raw.git_commit,
            labels: self.labels(raw.id)?,
            summary,
            verdict: raw.verdict,
            message: raw.message,
            note: raw.note,
        })
    }
}

/// Gives a partial summary of a run (not of a search's step) its timeline: the
/// seconds stored one by one, through the last one it covers.
fn partial_timeline(row: &mut RunRow, json: &mut Option<serde_json::Value>, seconds: &[Second]) {
    let Some(summary) = row.summary.as_mut() else {
        return;
    };
    let Some(partial) = summary.partial.filter(|p| p.step.is_none()) else {
        return;
    };
    if !summary.timeline.is_empty() {
        return;
    }
    summary.timeline = seconds
        .iter()
        .filter(|s| s.t <= partial.last_second)
        .cloned()
        .collect();
    if let Some(serde_json::Value::Object(map)) = json.as_mut() {
        let timeline = serde_json::to_value(&summary.timeline).expect("seconds serialize");
        map.insert("timeline".into(), timeline);
    }
}

/// A `runs` row as stored, before its status is judged and its JSON decoded.
struct RawRow {
    id: i64,
    kind: String,
    status: String,
    pid: i64,
    proc_start: Option<i64>,
    started_at: String,
    ended_at: Option<String>,
    command_line: String,
    scenario_name: String,
    scenario_hash: Option<String>,
    git_commit: Option<String>,
    summary_json: Option<String>,
    verdict: Option<String>,
    message: Option<String>,
    note: Option<String>,
}

impl RawRow {
    fn read(r: &Row<'_>) -> rusqlite::Result<RawRow> {
        Ok(RawRow {
            id: r.get(0)?,
            kind: r.get(1)?,
            status: r.get(2)?,
            pid: r.get(3)?,
            proc_start: r.get(4)?,
            started_at: r.get(5)?,
            ended_at: r.get(6)?,
            command_line: r.get(7)?,
            scenario_name: r.get(8)?,
            scenario_hash: r.get(9)?,
            git_commit: r.get(10)?,
            summary_json: r.get(11)?,
            verdict: r.get(12)?,
            message: r.get(13)?,
            note: r.get(14)?,
        })
    }
}
