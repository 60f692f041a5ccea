//! The top statements of a run from `pg_stat_statements`: a snapshot at the start and
//! one at the end, subtracted by `queryid`, so statements that ran before the run (or
//! that the watch itself sent) do not count.

use std::collections::HashMap;

use tokio_postgres::Client;

use super::samples::TopQuery;
use super::summary::round3;

/// Statements reported at most.
pub(crate) const TOP: usize = 10;

/// Calls and total time per `queryid` at one moment, with the text of each.
#[derive(Debug, Default)]
pub(crate) struct Snapshot(HashMap<i64, (String, i64, f64)>);

/// Marks the watch's own SQL so that it can be left out of the top statements.
pub(crate) const MARK: &str = "/* headroom watch */";

/// Reads the extension's counters for the current database; the error is the
/// server's (no extension, or the library not preloaded).
pub(crate) async fn snapshot(
    client: &Client,
    version: i32,
) -> Result<Snapshot, tokio_postgres::Error> {
    // PostgreSQL 13 renamed total_time to total_exec_time.
    let total = if version >= 130_000 {
        "total_exec_time"
    } else {
        "total_time"
    };
    let sql = format!(
        "{MARK} SELECT queryid, query, calls, {total} FROM pg_stat_statements \
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
         AND queryid IS NOT NULL AND query NOT LIKE '%headroom watch%'"
    );
    let rows = client.query(&sql, &[]).await?;
    let mut map: HashMap<i64, (String, i64, f64)> = HashMap::new();
    for row in rows {
        let id: i64 = row.get(0);
        let entry = map.entry(id).or_insert_with(|| (row.get(1), 0, 0.0));
        // The same statement run by two roles has two rows: add them up.
        entry.1 += row.get::<_, i64>(2);
        entry.2 += row.get::<_, f64>(3);
    }
    Ok(Snapshot(map))
}

/// The statements with the most execution time between `start` and `end`.
pub(crate) fn top(start: &Snapshot, end: &Snapshot) -> Vec<TopQuery> {
    let mut out: Vec<TopQuery> = end
        .0
        .iter()
        .filter_map(|(id, (query, calls, total))| {
            let (c0, t0) = start.0.get(id).map_or((0, 0.0), |(_, c, t)| (*c, *t));
            // After pg_stat_statements_reset() the end is below the start: count from zero.
            let (calls, total) = if *calls >= c0 {
                (calls - c0, total - t0)
            } else {
                (*calls, *total)
            };
            (calls > 0).then(|| TopQuery {
                query: query.clone(),
                calls: calls as u64,
                mean_ms: round3(total / calls as f64),
                total_ms: round3(total),
            })
        })
        .collect();
    out.sort_by(|a, b| {
        b.total_ms
            .total_cmp(&a.total_ms)
            .then(b.calls.cmp(&a.calls))
    });
    out.truncate(TOP);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_is_the_difference_ordered_by_total_time() {
        let start = Snapshot(HashMap::from([
            (1, ("SELECT 1".into(), 10, 5.0)),
            (2, ("INSERT".into(), 100, 50.0)),
        ]));
        let end = Snapshot(HashMap::from([
            (1, ("SELECT 1".into(), 10, 5.0)),
            (2, ("INSERT".into(), 300, 150.0)),
            (3, ("DELETE".into(), 4, 200.0)),
        ]));
        let top = top(&start, &end);
        let got: Vec<(&str, u64, f64, f64)> = top
            .iter()
            .map(|q| (q.query.as_str(), q.calls, q.mean_ms, q.total_ms))
            .collect();
        assert_eq!(
            got,
            [("DELETE", 4, 50.0, 200.0), ("INSERT", 200, 0.5, 100.0)]
        );
    }
}
