//! How much two rounds differ and how much runs of one round differ by themselves:
//! the relative [`change`] between figures and the run-to-run noise ([`noise_of`]).
//! `compare` and the rounds page ([`super::rounds`]) judge changes with them alike.

use crate::store::RunRow;

/// Noise assumed when no repeated runs tell better, in percent.
pub const DEFAULT_NOISE_PCT: f64 = 5.0;

/// Relative change from `a` to `b` in percent (0 when both are 0, infinite from 0).
pub fn change(a: f64, b: f64) -> f64 {
    if a == 0.0 {
        if b == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        (b - a) / a * 100.0
    }
}

/// The run-to-run noise of `N` figures, in percent: among the runs of `all` carrying
/// exactly the labels of a run in `compared` (repeats of one round), the largest
/// relative spread (max − min over the mean) of each figure `figures` reads. `None`
/// when no labelled round has two repeats with figures.
pub fn noise_of<const N: usize>(
    compared: &[RunRow],
    all: &[RunRow],
    figures: impl Fn(&RunRow) -> Option<[f64; N]>,
) -> Option<[f64; N]> {
    let mut spread = [0.0f64; N];
    let mut found = false;
    let mut seen = Vec::new();
    for row in compared.iter().filter(|r| !r.labels.is_empty()) {
        if seen.contains(&&row.labels) {
            continue;
        }
        seen.push(&row.labels);
        let repeats: Vec<[f64; N]> = all
            .iter()
            .filter(|r| r.labels == row.labels)
            .filter_map(&figures)
            .collect();
        if repeats.len() < 2 {
            continue;
        }
        found = true;
        for (m, s) in spread.iter_mut().enumerate() {
            let values = repeats.iter().map(|f| f[m]);
            let max = values.clone().fold(f64::MIN, f64::max);
            let min = values.clone().fold(f64::MAX, f64::min);
            let mean = values.sum::<f64>() / repeats.len() as f64;
            if mean > 0.0 {
                *s = s.max((max - min) / mean * 100.0);
            }
        }
    }
    found.then_some(spread)
}
