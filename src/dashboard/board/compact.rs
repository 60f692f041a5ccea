//! Keeping the dashboard's chart rows bounded over a run of any length: past
//! [`MAX_ROWS`], the older half is merged two by two, so the last seven minutes and a
//! half stay at one point per second and what came before thins out, older the
//! coarser. A day-long soak holds as many rows as a quarter of an hour does.

use super::Row;

/// The most rows the board holds: a quarter of an hour at one per second (as many
/// points as a chart a browser window wide can show).
pub(super) const MAX_ROWS: usize = 900;

/// Halves the older half of `rows` (never merging two steps of a search). A merged
/// row is placed at the later of its two seconds, with their mean rates and counts per
/// second and, for each percentile, lag and in-flight figure, the larger: a chart of a
/// long run still shows every spike, never a smoothed-away one.
///
/// In place: the older half's merged rows (a quarter of the rows) are made in a small
/// buffer and put back at the front of the same `rows`, whose capacity (made once,
/// [`MAX_ROWS`] + 1) is never outgrown. Why: building a new vector of several hundred
/// rows at each thinning left the allocator a new high-water mark every few minutes
/// of an hour's soak (about 0.1 MB/h of anonymous memory that never came back).
pub(super) fn compact(rows: &mut Vec<Row>) {
    let older = rows.len() / 2;
    let mut merged: Vec<Row> = Vec::with_capacity(older / 2 + 1);
    let mut pending: Option<Row> = None;
    for row in rows.drain(..older) {
        match pending.take() {
            Some(a) if a.step == row.step => merged.push(pair(a, row)),
            Some(a) => {
                merged.push(a);
                pending = Some(row);
            }
            None => pending = Some(row),
        }
    }
    merged.extend(pending);
    rows.splice(0..0, merged);
}

fn pair(a: Row, b: Row) -> Row {
    let mean = |x: u64, y: u64| (x + y).div_ceil(2);
    let mut latency_ms = b.latency_ms;
    for (name, v) in a.latency_ms {
        let slot = latency_ms.entry(name).or_insert(0.0);
        *slot = slot.max(v);
    }
    let mut error_kinds = b.error_kinds;
    for (kind, n) in a.error_kinds {
        *error_kinds.entry(kind).or_insert(0) += n;
    }
    for n in error_kinds.values_mut() {
        *n = n.div_ceil(2);
    }
    Row {
        x: b.x,
        step: b.step,
        t: b.t,
        offered: (a.offered + b.offered) / 2.0,
        achieved: mean(a.achieved, b.achieved),
        errors: mean(a.errors, b.errors),
        dropped: mean(a.dropped, b.dropped),
        in_flight: a.in_flight.max(b.in_flight),
        latency_ms,
        max_lag_ms: a.max_lag_ms.max(b.max_lag_ms),
        generator_cpu_percent: (a.generator_cpu_percent + b.generator_cpu_percent) / 2.0,
        error_kinds,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn row(t: u64, step: usize, p99: f64) -> Row {
        Row {
            x: t as f64 + 1.0,
            step,
            t,
            offered: 100.0,
            achieved: 100 + t % 2,
            errors: t % 2,
            dropped: 0,
            in_flight: t,
            latency_ms: BTreeMap::from([("p99", p99)]),
            max_lag_ms: 0.0,
            generator_cpu_percent: 10.0,
            error_kinds: BTreeMap::new(),
        }
    }

    #[test]
    fn a_day_of_seconds_stays_within_the_bound_with_the_recent_ones_whole_and_spikes_kept() {
        let mut rows = Vec::with_capacity(MAX_ROWS + 1);
        let (capacity, buffer) = (rows.capacity(), rows.as_ptr());
        for t in 0..86_400u64 {
            // One spike, early in the day.
            let p99 = if t == 1_000 { 900.0 } else { 5.0 };
            rows.push(row(t, 0, p99));
            if rows.len() > MAX_ROWS {
                compact(&mut rows);
            }
        }
        assert!(rows.len() <= MAX_ROWS, "{}", rows.len());
        // Thinned in place: the one buffer made at the start, never grown or moved.
        assert_eq!((rows.capacity(), rows.as_ptr()), (capacity, buffer));
        // The last seven minutes and a half are still one row per second, in order.
        let last: Vec<u64> = rows[rows.len() - 450..].iter().map(|r| r.t).collect();
        assert_eq!(last, (86_400 - 450..86_400).collect::<Vec<_>>());
        assert!(rows.windows(2).all(|w| w[0].x < w[1].x), "in order");
        assert!(
            rows.iter().any(|r| r.latency_ms["p99"] == 900.0),
            "the spike is kept"
        );
        // Rates stay rates: a merged row is a mean per second, not a sum.
        assert!(rows.iter().all(|r| (100..=101).contains(&r.achieved)));
    }

    #[test]
    fn two_steps_are_never_merged_into_one_point() {
        let mut rows: Vec<Row> = (0..10).map(|t| row(t, 1 + (t as usize) / 3, 5.0)).collect();
        compact(&mut rows);
        // The older five (steps 1, 1, 1, 2, 2): 1+1 merged, 1 alone, 2+2 merged.
        let steps: Vec<usize> = rows.iter().map(|r| r.step).collect();
        assert_eq!(steps, [1, 1, 2, 2, 3, 3, 3, 4]);
    }
}
