//! The store's schema as an ordered list of migrations. `PRAGMA user_version` holds
//! how many have been applied; [`migrate`] applies the rest in one immediate
//! transaction, so two processes opening a fresh store at once do not both apply them.

use rusqlite::{Connection, TransactionBehavior};

use super::StoreError;

/// Migrations in order; never edit a released one, append a new one instead.
const MIGRATIONS: &[&str] = &[
    // 1: runs, their labels, timeline seconds, histograms and search steps.
    r#"
    CREATE TABLE runs (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        kind          TEXT    NOT NULL,            -- run | find
        status        TEXT    NOT NULL,            -- running | done | interrupted | failed
        pid           INTEGER NOT NULL,
        proc_start    INTEGER,                     -- process start time, to tell a reused pid
        started_at    TEXT    NOT NULL,            -- RFC 3339, UTC
        ended_at      TEXT,
        command_line  TEXT    NOT NULL,            -- secrets masked
        scenario_name TEXT    NOT NULL,
        scenario_hash TEXT,                        -- sha256 of the scenario file text
        git_commit    TEXT,
        summary_json  TEXT,                        -- the whole summary, watches included
        verdict       TEXT,                        -- pass | fail | generator-bound
        message       TEXT                         -- why a failed run failed
    );
    CREATE TABLE labels (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        key    TEXT    NOT NULL,
        value  TEXT    NOT NULL,
        PRIMARY KEY (run_id, key)
    );
    CREATE INDEX labels_by_pair ON labels(key, value);
    CREATE TABLE seconds (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        t      INTEGER NOT NULL,
        json   TEXT    NOT NULL,
        PRIMARY KEY (run_id, t)
    );
    CREATE TABLE histograms (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        scope  TEXT    NOT NULL,                   -- overall | name
        name   TEXT    NOT NULL,                   -- '' for overall
        kind   TEXT    NOT NULL,                   -- corrected | uncorrected
        data   BLOB    NOT NULL,                   -- HdrHistogram V2 serialization
        PRIMARY KEY (run_id, scope, name, kind)
    );
    CREATE TABLE steps (
        run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        idx          INTEGER NOT NULL,
        rate         REAL    NOT NULL,
        ok           INTEGER NOT NULL,
        summary_json TEXT    NOT NULL,
        PRIMARY KEY (run_id, idx)
    );
    "#,
    // 2: a free-text note per run (`--note "synchronous_commit=off"`): what changed in
    // this round. A nullable column added in place, so every run of a version-1 store
    // reads back as it was, with no note.
    "ALTER TABLE runs ADD COLUMN note TEXT;",
    // 3: a search's `--hold`: the answer run for a while, recorded beside the steps.
    // `json` is the whole `hold` object of the result (its summary inside).
    r#"
    CREATE TABLE holds (
        run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
        rate   REAL    NOT NULL,
        ok     INTEGER NOT NULL,
        json   TEXT    NOT NULL
    );
    "#,
    // 4: the summary of what a run has recorded so far, replaced every second while
    // it runs (and cleared when it writes its own), so a run killed mid-way still has
    // its numbers: the summary JSON, marked `partial`, without its timeline (that is
    // in `seconds`).
    "ALTER TABLE runs ADD COLUMN partial_json TEXT;",
];

/// The schema version this build writes.
pub(super) fn latest() -> i64 {
    MIGRATIONS.len() as i64
}

/// Brings the schema up to [`latest`]; refuses a file from a newer build.
pub(super) fn migrate(conn: &Connection) -> Result<(), StoreError> {
    let version = user_version(conn)?;
    if version == latest() {
        return Ok(());
    }
    let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    // Read again under the write lock: another process may have migrated meanwhile.
    let version = user_version(&tx)?;
    if version > latest() {
        return Err(StoreError::TooNew {
            found: version,
            known: latest(),
        });
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", index as i64 + 1)?;
    }
    tx.commit()?;
    Ok(())
}

fn user_version(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.query_row("PRAGMA user_version", [], |r| r.get(0))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_database_gets_every_migration_once() {
        let conn = Connection::open_in_memory().unwrap();
        migrate(&conn).unwrap();
        assert_eq!(user_version(&conn).unwrap(), latest());
        migrate(&conn).unwrap();
        let tables: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN \
                 ('runs', 'labels', 'seconds', 'histograms', 'steps', 'holds')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 6);
    }

    #[test]
    fn a_version_1_store_keeps_its_runs_and_gains_the_note_column() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(MIGRATIONS[0]).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        conn.execute(
            "INSERT INTO runs (kind, status, pid, started_at, command_line, scenario_name) \
             VALUES ('run', 'done', 1, '2024-01-01T00:00:00Z', 'headroom run', 'old')",
            [],
        )
        .unwrap();
        migrate(&conn).unwrap();
        assert_eq!(user_version(&conn).unwrap(), latest());
        let (name, note): (String, Option<String>) = conn
            .query_row("SELECT scenario_name, note FROM runs", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((name.as_str(), note), ("old", None));
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", latest() + 1)
            .unwrap();
        assert!(matches!(migrate(&conn), Err(StoreError::TooNew { .. })));
    }
}
