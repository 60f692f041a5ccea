//! Bounded memory for a watch that runs for hours: [`Kept`] holds the samples a
//! summary charts, at most [`KEPT`] of them, by halving their resolution whenever they
//! fill; [`Running`] holds a figure's exact mean and maximum over every sample taken,
//! so thinning the chart never changes a summary's numbers.
//!
//! A watch samples once a second: without a bound, an hour's soak kept 3,600 process
//! samples (about half a megabyte with their busiest member's name) and a day's kept
//! 86,400, growing the generator's memory for charts no page can draw at that density.

use super::summary::{round3, AvgMax, Max};

/// The most samples a watch keeps (a quarter of an hour at one a second, then every
/// second sample, every fourth, …).
pub(crate) const KEPT: usize = 1024;

/// A watch's samples, thinned evenly over the whole run: sample `i` (counting from 0)
/// is kept while `i` is a multiple of the stride, and the stride doubles each time
/// [`KEPT`] are held, dropping every other one kept so far. The newest sample is always
/// at hand for the live dashboard, kept or not.
#[derive(Debug)]
pub(crate) struct Kept<T> {
    samples: Vec<T>,
    stride: u64,
    seen: u64,
    newest: Option<T>,
    newest_kept: bool,
}

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Kept {
            samples: Vec::new(),
            stride: 1,
            seen: 0,
            newest: None,
            newest_kept: false,
        }
    }
}

impl<T: Clone> Kept<T> {
    /// Takes one sample.
    pub(crate) fn push(&mut self, sample: T) {
        let index = self.seen;
        self.seen += 1;
        self.newest_kept = index.is_multiple_of(self.stride);
        if self.newest_kept {
            self.samples.push(sample.clone());
            if self.samples.len() >= KEPT {
                // Kept positions are index / stride: the even ones are the multiples of
                // twice the stride, the odd ones go.
                let mut position = 0usize;
                self.samples.retain(|_| {
                    position += 1;
                    (position - 1).is_multiple_of(2)
                });
                self.stride *= 2;
                self.newest_kept = index.is_multiple_of(self.stride);
            }
        }
        self.newest = Some(sample);
    }

    /// The newest sample taken.
    pub(crate) fn newest(&self) -> Option<&T> {
        self.newest.as_ref()
    }

    /// The kept samples in order, without the newest when it was not kept.
    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.samples.iter()
    }

    /// The kept samples, ending with the newest taken (so a chart reaches the end of
    /// the run even between two kept ones).
    pub(crate) fn into_vec(self) -> Vec<T> {
        let mut samples = self.samples;
        if let (Some(newest), false) = (self.newest, self.newest_kept) {
            samples.push(newest);
        }
        samples
    }

    /// How many samples were taken, kept or not.
    #[cfg(test)]
    pub(crate) fn seen(&self) -> u64 {
        self.seen
    }
}

/// The exact mean and maximum of a figure over every sample taken.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Running {
    sum: f64,
    n: u64,
    max: f64,
}

impl Running {
    /// Adds one sample's value.
    pub(crate) fn add(&mut self, value: f64) {
        self.sum += value;
        self.n += 1;
        self.max = self.max.max(value);
    }

    /// Mean and maximum, as [`AvgMax::of`] gives them over the same values.
    pub(crate) fn avg_max(&self) -> AvgMax {
        AvgMax {
            avg: if self.n == 0 {
                0.0
            } else {
                round3(self.sum / self.n as f64)
            },
            max: round3(self.max),
        }
    }

    /// Maximum, as [`Max::of`] gives it.
    pub(crate) fn max(&self) -> Max {
        Max {
            max: round3(self.max),
        }
    }

    /// Whether any value was added.
    pub(crate) fn is_empty(&self) -> bool {
        self.n == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_every_sample_until_full_then_an_even_stride_ending_with_the_newest() {
        let mut k = Kept::default();
        for i in 0..KEPT as u64 - 1 {
            k.push(i);
        }
        assert_eq!(k.iter().count(), KEPT - 1);
        // A day at one a second stays under the bound, evenly spaced from the start.
        let day = 86_400u64;
        for i in KEPT as u64 - 1..day {
            k.push(i);
            assert!(k.iter().count() < KEPT);
        }
        assert_eq!(k.seen(), day);
        assert_eq!(k.newest(), Some(&(day - 1)));
        let kept = k.into_vec();
        assert!(kept.len() > KEPT / 2, "{}", kept.len());
        let stride = kept[1] - kept[0];
        assert!(stride.is_power_of_two() && stride >= 64, "{stride}");
        let n = kept.len();
        assert!(kept[..n - 1].windows(2).all(|w| w[1] - w[0] == stride));
        assert_eq!(kept[0], 0);
        assert_eq!(kept[n - 1], day - 1, "the run's end is charted");
    }

    #[test]
    fn running_figures_equal_the_figures_of_every_sample() {
        let values: Vec<f64> = (0..5_000).map(|i| ((i * 37) % 101) as f64 / 7.0).collect();
        let mut r = Running::default();
        assert!(r.is_empty());
        for &v in &values {
            r.add(v);
        }
        assert_eq!(r.avg_max(), AvgMax::of(values.iter().copied()));
        assert_eq!(r.max(), Max::of(values.iter().copied()));
    }
}
