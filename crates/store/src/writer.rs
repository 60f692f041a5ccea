//! Writing a run as it goes: [`Store::begin_run`] inserts the run with status
//! `running`; [`RunWriter::second`] appends each timeline second as the engine
//! completes it; [`RunWriter::finish`] stores the summary and histograms and sets the
//! final status. Each call is its own short transaction, so whatever was written
//! before a crash or a `kill -9` stays readable.

use std::time::SystemTime;

use rusqlite::params;

use super::{histograms, redact, Store, StoreError};
use headroom_metrics::recorder::Recorder;
use headroom_metrics::summary::{Second, Summary};

/// What kind of record a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// `headroom run`: one load.
    Run,
    /// `headroom find`: a search made of steps.
    Find,
}

impl RunKind {
    /// The value kept in the `kind` column.
    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::Run => "run",
            RunKind::Find => "find",
        }
    }
}

/// What is known about a run when it starts.
#[derive(Debug, Clone)]
pub struct RunMeta {
    /// Run or search.
    pub kind: RunKind,
    /// The process arguments, program name first; secrets are masked before storing.
    pub args: Vec<String>,
    /// Scenario name.
    pub scenario_name: String,
    /// sha256 of the scenario file's text, when the run has a file.
    pub scenario_hash: Option<String>,
    /// `git rev-parse HEAD` of the working directory, when it is a repository.
    pub git_commit: Option<String>,
    /// User labels (`--label key=value`), in the order given; a later key wins.
    pub labels: Vec<(String, String)>,
    /// What changed in this round, in the user's words (`--note`), when given.
    pub note: Option<String>,
    /// Header names the scenario marks secret (`secrets.headers`): their `-H` values
    /// are masked in the stored command line, as `Authorization`'s always are.
    pub secret_headers: Vec<String>,
}

impl RunMeta {
    /// What this process knows about its run: its arguments, the scenario's name and
    /// file hash, the working directory's git commit, and the user's labels.
    pub fn of_this_process(
        kind: RunKind,
        scenario: Option<&std::path::Path>,
        scenario_name: &str,
        labels: &[(String, String)],
    ) -> RunMeta {
        RunMeta {
            kind,
            args: std::env::args().collect(),
            scenario_name: scenario_name.to_string(),
            scenario_hash: scenario.and_then(super::origin::scenario_hash),
            git_commit: super::origin::git_commit(),
            labels: labels.to_vec(),
            note: None,
            secret_headers: Vec::new(),
        }
    }
}

/// Appends to one run's record. Borrowed from its [`Store`].
#[derive(Debug)]
pub struct RunWriter<'a> {
    store: &'a Store,
    id: i64,
}

pub(super) fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// This process's start time in clock ticks since boot (with the pid, it names the
/// process even after the pid is reused).
pub(super) fn process_start(pid: u32) -> Option<u64> {
    let process = procfs::process::Process::new(pid as i32).ok()?;
    process.stat().ok().map(|s| s.starttime)
}

impl Store {
    /// Records the start of a run (status `running`) and returns its writer.
    pub fn begin_run(&self, meta: &RunMeta) -> Result<RunWriter<'_>, StoreError> {
        let pid = std::process::id();
        let tx = self.conn().unchecked_transaction()?;
        tx.execute(
            "INSERT INTO runs (kind, status, pid, proc_start, started_at, command_line, \
             scenario_name, scenario_hash, git_commit, note) \
             VALUES (?, 'running', ?, ?, ?, ?, ?, ?, ?, ?)",
            params![
                meta.kind.as_str(),
                pid,
                process_start(pid).map(|t| t as i64),
                now_rfc3339(),
                redact::command_line(&meta.args, &meta.secret_headers),
                meta.scenario_name,
                meta.scenario_hash,
                meta.git_commit,
                meta.note,
            ],
        )?;
        let id = tx.last_insert_rowid();
        for (key, value) in &meta.labels {
            tx.execute(
                "INSERT OR REPLACE INTO labels (run_id, key, value) VALUES (?, ?, ?)",
                params![id, key, value],
            )?;
        }
        tx.commit()?;
        Ok(RunWriter { store: self, id })
    }
}

impl RunWriter<'_> {
    /// The run's id in the store.
    pub fn id(&self) -> i64 {
        self.id
    }

    /// Appends (or replaces) one completed timeline second.
    pub fn second(&mut self, second: &Second) -> Result<(), StoreError> {
        insert_second(self.store.conn(), self.id, second)
    }

    /// Records one second and what the run measured so far, in one transaction, so a
    /// `kill -9` at any instant leaves either the second before or this one: the
    /// timeline second (when given: a search's steps keep their seconds in their
    /// summaries), the summary so far (marked [`partial`](Summary::partial), without
    /// its timeline) and the exact histograms it was made from (`names[i]` names
    /// `so_far.by_name[i]`). [`RunWriter::finish`] replaces them all.
    pub fn checkpoint(
        &mut self,
        second: Option<&Second>,
        summary: &Summary,
        so_far: &Recorder,
        names: &[String],
    ) -> Result<(), StoreError> {
        let conn = self.store.conn();
        let tx = conn.unchecked_transaction()?;
        if let Some(second) = second {
            insert_second(&tx, self.id, second)?;
        }
        histograms::save(&tx, self.id, so_far, names)?;
        set_partial(&tx, self.id, summary)?;
        tx.commit()?;
        Ok(())
    }

    /// Replaces the summary of what a search's step has measured so far (marked
    /// [`partial`](Summary::partial) with the step), the search's figures should it be
    /// killed now; the steps it completed are stored whole beside it.
    pub fn step_so_far(&mut self, summary: &Summary) -> Result<(), StoreError> {
        set_partial(self.store.conn(), self.id, summary)
    }

    /// Records one step of a search: its index, the rate it ran at, whether it passed
    /// every threshold, and its summary.
    pub fn step(
        &mut self,
        index: u32,
        rate: f64,
        ok: bool,
        summary: &Summary,
    ) -> Result<(), StoreError> {
        let json = serde_json::to_string(summary).expect("a summary always serializes");
        self.store.conn().execute(
            "INSERT OR REPLACE INTO steps (run_id, idx, rate, ok, summary_json) VALUES (?, ?, ?, ?, ?)",
            params![self.id, index, rate, ok, json],
        )?;
        Ok(())
    }

    /// Records a search's hold (`find --hold`): the value held, whether it held, and
    /// the result's whole `hold` object (figures and summary). A second call replaces it.
    pub fn hold(
        &mut self,
        rate: f64,
        ok: bool,
        hold: &serde_json::Value,
    ) -> Result<(), StoreError> {
        self.store.conn().execute(
            "INSERT OR REPLACE INTO holds (run_id, rate, ok, json) VALUES (?, ?, ?, ?)",
            params![self.id, rate, ok, hold.to_string()],
        )?;
        Ok(())
    }

    /// Stores the final summary (its whole timeline too), the exact histograms
    /// (`names[i]` names `recorder.by_name[i]`) and the verdict, and ends the run
    /// as `done`, or `interrupted` when the summary says it was stopped early.
    pub fn finish(
        self,
        summary: &Summary,
        recorder: &Recorder,
        names: &[String],
    ) -> Result<(), StoreError> {
        let interrupted = summary.interrupted;
        self.end(summary, recorder, names, interrupted)
    }

    /// As [`RunWriter::finish`], but ends the run as `interrupted` whatever `summary`
    /// says: a search stopped after its best step keeps that step's (complete)
    /// summary, and its record must still say the search did not end on its own.
    pub fn finish_interrupted(
        self,
        summary: &Summary,
        recorder: &Recorder,
        names: &[String],
    ) -> Result<(), StoreError> {
        self.end(summary, recorder, names, true)
    }

    /// Ends a run stopped before it had a summary to keep as `interrupted`, with
    /// `message` (which must hold no secret) saying what it got to.
    pub fn interrupt(self, message: &str) -> Result<(), StoreError> {
        self.store.conn().execute(
            "UPDATE runs SET status = 'interrupted', ended_at = ?, message = ? WHERE id = ?",
            params![now_rfc3339(), message, self.id],
        )?;
        Ok(())
    }

    fn end(
        self,
        summary: &Summary,
        recorder: &Recorder,
        names: &[String],
        interrupted: bool,
    ) -> Result<(), StoreError> {
        let conn = self.store.conn();
        let tx = conn.unchecked_transaction()?;
        for second in &summary.timeline {
            insert_second(&tx, self.id, second)?;
        }
        histograms::save(&tx, self.id, recorder, names)?;
        let status = if interrupted { "interrupted" } else { "done" };
        tx.execute(
            "UPDATE runs SET status = ?, ended_at = ?, summary_json = ?, verdict = ?, \
             partial_json = NULL WHERE id = ?",
            params![
                status,
                now_rfc3339(),
                serde_json::to_string(summary).expect("a summary always serializes"),
                verdict(summary),
                self.id
            ],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Ends a run that could not be carried out, keeping `message` (which must hold
    /// no secret) to say why.
    pub fn fail(self, message: &str) -> Result<(), StoreError> {
        self.store.conn().execute(
            "UPDATE runs SET status = 'failed', ended_at = ?, message = ? WHERE id = ?",
            params![now_rfc3339(), message, self.id],
        )?;
        Ok(())
    }
}

/// Appends (or replaces) one timeline second of run `id`.
fn insert_second(conn: &rusqlite::Connection, id: i64, second: &Second) -> Result<(), StoreError> {
    let json = serde_json::to_string(second).expect("a second always serializes");
    conn.execute(
        "INSERT OR REPLACE INTO seconds (run_id, t, json) VALUES (?, ?, ?)",
        params![id, second.t as i64, json],
    )?;
    Ok(())
}

/// Replaces run `id`'s summary so far (marked partial).
fn set_partial(conn: &rusqlite::Connection, id: i64, summary: &Summary) -> Result<(), StoreError> {
    let json = serde_json::to_string(summary).expect("a summary always serializes");
    conn.execute(
        "UPDATE runs SET partial_json = ? WHERE id = ?",
        params![json, id],
    )?;
    Ok(())
}

/// `fail` when a threshold failed, else `generator-bound` when the generator limited
/// the result, else `pass`.
pub fn verdict(summary: &Summary) -> &'static str {
    if summary.thresholds.iter().any(|t| !t.ok) {
        "fail"
    } else if summary.generator.bound {
        "generator-bound"
    } else {
        "pass"
    }
}
