//! HDR histograms in and out of the store, in HdrHistogram's V2 serialization (the
//! format other HdrHistogram implementations read), so percentiles and merges of a
//! stored run stay exact.

use std::collections::BTreeMap;

use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use rusqlite::{params, Connection};

use super::StoreError;
use headroom_metrics::recorder::hdr_serde::encode;
use headroom_metrics::recorder::Recorder;

/// The exact latency histograms of one stored run, in microseconds.
#[derive(Debug, Clone, Default)]
pub struct StoredHistograms {
    /// Corrected latency over all requests (from the scheduled start, open model).
    pub overall: Option<Histogram<u64>>,
    /// Uncorrected latency over all requests (from the actual send).
    pub overall_uncorrected: Option<Histogram<u64>>,
    /// Corrected latency per request name.
    pub by_name: BTreeMap<String, Histogram<u64>>,
}

/// Saves the recorder's overall (corrected and uncorrected) and per-name histograms;
/// `names[i]` names `recorder.by_name[i]`.
pub(super) fn save(
    conn: &Connection,
    run_id: i64,
    recorder: &Recorder,
    names: &[String],
) -> Result<(), StoreError> {
    let mut insert = conn.prepare(
        "INSERT OR REPLACE INTO histograms (run_id, scope, name, kind, data) VALUES (?, ?, ?, ?, ?)",
    )?;
    let overall = &recorder.overall;
    insert.execute(params![
        run_id,
        "overall",
        "",
        "corrected",
        encode(&overall.latency)
    ])?;
    insert.execute(params![
        run_id,
        "overall",
        "",
        "uncorrected",
        encode(&overall.uncorrected)
    ])?;
    for (name, tally) in names.iter().zip(&recorder.by_name) {
        insert.execute(params![
            run_id,
            "name",
            name,
            "corrected",
            encode(&tally.latency)
        ])?;
        insert.execute(params![
            run_id,
            "name",
            name,
            "uncorrected",
            encode(&tally.uncorrected)
        ])?;
    }
    Ok(())
}

/// Loads what was saved for `run_id` (nothing, for a run that did not finish).
pub(super) fn load(conn: &Connection, run_id: i64) -> Result<StoredHistograms, StoreError> {
    let mut select =
        conn.prepare("SELECT scope, name, kind, data FROM histograms WHERE run_id = ?")?;
    let rows = select.query_map([run_id], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, Vec<u8>>(3)?,
        ))
    })?;
    let mut out = StoredHistograms::default();
    let mut deserializer = Deserializer::new();
    for row in rows {
        let (scope, name, kind, data) = row?;
        let h: Histogram<u64> = deserializer
            .deserialize(&mut data.as_slice())
            .map_err(|source| StoreError::CorruptHistogram { id: run_id, source })?;
        match (scope.as_str(), kind.as_str()) {
            ("overall", "corrected") => out.overall = Some(h),
            ("overall", "uncorrected") => out.overall_uncorrected = Some(h),
            ("name", "corrected") => {
                out.by_name.insert(name, h);
            }
            _ => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use headroom_metrics::recorder::Hit;

    #[test]
    fn histograms_come_back_exactly() {
        let conn = Connection::open_in_memory().unwrap();
        super::super::schema::migrate(&conn).unwrap();
        conn.execute(
            "INSERT INTO runs (id, kind, status, pid, started_at, command_line, scenario_name) \
             VALUES (1, 'run', 'running', 1, 'now', 'headroom', 's')",
            [],
        )
        .unwrap();
        let mut rec = Recorder::new(2);
        for i in 0..5000u64 {
            rec.record(&Hit {
                name_id: (i % 2) as usize,
                corrected: Duration::from_micros(100 + i * 37 % 90_000),
                uncorrected: Duration::from_micros(50 + i),
                error: None,
                timing: Default::default(),
            });
        }
        let rec = rec.finish();
        let names = vec!["a".to_string(), "b".to_string()];
        save(&conn, 1, &rec, &names).unwrap();
        let back = load(&conn, 1).unwrap();
        let overall = back.overall.unwrap();
        assert_eq!(overall.len(), 5000);
        for q in [0.5, 0.95, 0.99, 0.999, 1.0] {
            assert_eq!(
                overall.value_at_quantile(q),
                rec.overall.latency.value_at_quantile(q)
            );
        }
        assert_eq!(
            back.overall_uncorrected.unwrap().max(),
            rec.overall.uncorrected.max()
        );
        assert_eq!(back.by_name["b"].len(), 2500);
    }
}
