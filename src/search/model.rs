//! [`Model`]: the Universal Scalability Law fitted to a search's steps, and what it
//! predicts beyond them ([`fit`], [`fit_steps`]).
//!
//! Gunther's USL says a system serving N requests at once completes
//!
//! ```text
//! X(N) = λN / (1 + σ(N−1) + κN(N−1))
//! ```
//!
//! per second: λ is the throughput of one, σ the share serialised (a lock, one
//! queue: throughput levels off towards λ/σ) and κ the cost of keeping N in step with
//! each other (coherency: throughput peaks at N* = √((1−σ)/κ) and then falls).
//!
//! Each step gives one point ([`point`]): X is its rate of **successful** completions
//! (a 503 answered at once is not capacity) and N is, in the users model, its user
//! count, and in the open model Little's law, N = achieved rate × mean latency, with
//! the latency measured from each request's scheduled start (ARCHITECTURE.md rule 1),
//! so the requests queued in the generator count as in the system, as the user sees
//! them. Passing and failing steps both count: the overloaded ones are where the
//! curve bends. Generator-bound and interrupted steps, and steps without requests,
//! say nothing about the target and are left out.
//!
//! The fit is nonlinear least squares on X ([`fit`]): a start from the linear fit of
//! Gunther's quadratic N/X = a + bN + cN², refined by Levenberg–Marquardt with
//! λ > 0, 0 ≤ σ ≤ 1, κ ≥ 0. It is hand-written in `model/lm.rs`: three parameters need a 3×3
//! solve, and no crate does bounded least squares without pulling a linear-algebra
//! stack into the build.
//!
//! A peak is reported only when the fit is worth trusting ([`Model::peak`]): at least
//! [`MIN_POINTS`] steps, r² ≥ [`MIN_R2`], κ > 0 and σ < 1, and N* within the
//! concurrencies measured ([`REACH`]), so the peak is read from the bend the data
//! show rather than from an extrapolation. A target that only levels off (a queue of
//! workers) has its peak where its plateau begins, at about its capacity. Otherwise the model still
//! reports λ, σ, κ and r², and says the measured range predicts no peak.

mod lm;

use serde::{Deserialize, Serialize};

use super::step::Unit;
use super::words::value;
use crate::metrics::summary::Summary;

/// Steps a peak needs: three fix the three parameters; a fourth is the first check.
pub const MIN_POINTS: usize = 4;
/// Share of the variance of X the fit must explain before its peak is reported. The
/// USL is a smooth curve, and the commonest real shape, a queue of workers (linear up
/// to its capacity, flat past it), has a hard corner it fits with r² of 0.85 to 0.95;
/// below 0.8 the curve no longer follows the steps.
pub const MIN_R2: f64 = 0.8;
/// How far past the largest concurrency measured a predicted peak may lie: not at
/// all. A peak beyond the data is an extrapolation, and noise on steps that merely
/// level off (σ alone) is enough to bend a fit's tail into one.
pub const REACH: f64 = 1.0;

/// One measured step as the fit sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Concurrency: users, or Little's law's mean number in the system.
    pub n: f64,
    /// Throughput: successful completions per second.
    pub x: f64,
}

/// Which model was fitted: only the USL so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ModelKind {
    /// The Universal Scalability Law.
    #[serde(rename = "usl")]
    Usl,
}

/// A fitted model (the result's `model` key): `{kind: "usl", lambda, sigma, kappa,
/// peak, peak_concurrency, r2}`, plus how many steps it rests on and the largest
/// concurrency among them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// Always `usl`.
    pub kind: ModelKind,
    /// λ: throughput at a concurrency of one, per second.
    pub lambda: f64,
    /// σ: contention, the serialised share (0..=1).
    pub sigma: f64,
    /// κ: coherency, the cost each pair of concurrent requests adds (≥ 0).
    pub kappa: f64,
    /// The highest throughput the model predicts (per second), at `peak_concurrency`;
    /// `null` when the measured range predicts no peak or the fit is not trusted.
    pub peak: Option<f64>,
    /// N*, the concurrency of `peak`; `null` with it.
    pub peak_concurrency: Option<f64>,
    /// Coefficient of determination of the fit on X (1 is a perfect fit).
    pub r2: f64,
    /// Steps the fit used.
    pub points: usize,
    /// The largest concurrency among them.
    pub max_concurrency: f64,
}

/// The point of one step at `value` (its rate or user count) with `summary`, or
/// `None` when the step says nothing about the target: generator-bound, interrupted,
/// no request, or no successful one.
pub fn point(unit: Unit, value: f64, summary: &Summary) -> Option<Point> {
    if summary.generator.bound || summary.interrupted || summary.requests == 0 {
        return None;
    }
    let all = summary.rate.achieved;
    let x = all * (1.0 - summary.errors.rate.clamp(0.0, 1.0));
    let n = match unit {
        // Little's law over everything in the system, failures too.
        Unit::Rate => all * summary.latency_ms.avg / 1000.0,
        Unit::Users => value,
    };
    (n.is_finite() && x.is_finite() && n > 0.0 && x > 0.0).then_some(Point { n, x })
}

/// The model of a search's steps, given as `(value, summary)` in the search's `unit`;
/// `None` when they cannot fix it ([`fit`]).
pub fn fit_steps<'a>(
    unit: Unit,
    steps: impl IntoIterator<Item = (f64, &'a Summary)>,
) -> Option<Model> {
    let points: Vec<Point> = steps
        .into_iter()
        .filter_map(|(v, s)| point(unit, v, s))
        .collect();
    fit(&points)
}

/// Fits the USL to `points` (those with a non-finite or non-positive N or X are
/// dropped). `None` when fewer than three distinct concurrencies remain, or when no
/// parameters make a positive throughput at every point.
pub fn fit(points: &[Point]) -> Option<Model> {
    let points: Vec<Point> = points
        .iter()
        .copied()
        .filter(|p| p.n.is_finite() && p.x.is_finite() && p.n > 0.0 && p.x > 0.0)
        .collect();
    if distinct(&points) < 3 {
        return None;
    }
    let (params, sse) = lm::least_squares(&points)?;
    let mean = points.iter().map(|p| p.x).sum::<f64>() / points.len() as f64;
    let sst: f64 = points.iter().map(|p| (p.x - mean).powi(2)).sum();
    let r2 = if sst > 0.0 {
        1.0 - sse / sst
    } else if sse <= 1e-12 * mean * mean {
        // Every step at one throughput, which the fit reproduces (σ = 1).
        1.0
    } else {
        0.0
    };
    let max_concurrency = points.iter().map(|p| p.n).fold(0.0, f64::max);
    // A κ whose term changes no point's denominator by a billionth is rounding left
    // over from the search, not coherency: it would put a "peak" light-years away.
    let top = max_concurrency;
    let kappa = if params.kappa * top * (top - 1.0).abs()
        < 1e-9 * (1.0 + params.sigma * (top - 1.0).abs())
    {
        0.0
    } else {
        params.kappa
    };
    let mut model = Model {
        kind: ModelKind::Usl,
        lambda: params.lambda,
        sigma: params.sigma,
        kappa,
        peak: None,
        peak_concurrency: None,
        r2,
        points: points.len(),
        max_concurrency,
    };
    if let Some((n, x)) = model.trusted_peak() {
        let (n, x) = corner(&points, n, x).unwrap_or((n, x));
        model.peak = Some(x);
        model.peak_concurrency = Some(n);
    }
    Some(model)
}

/// Most the fitted peak may stand above the steps measured on both sides of it before
/// it is taken for a corner the smooth curve rounds.
pub const CORNER: f64 = 1.05;

/// The measured plateau, `(N, X)`, when the fitted peak `(n, x)` is a corner rounded
/// off rather than a peak: steps were measured on both sides of `n` and the curve
/// stands more than [`CORNER`] above both. A queue of workers rises linearly to its
/// capacity and stays flat; when the search measured only a few steps on the flat
/// (a search that jumps to the boundary does), the best smooth USL overshoots the
/// corner between them, by 17 % on the built-in target. The steps themselves say
/// where throughput levels off: the highest measured, at the least concurrency that
/// came within 2 % of it.
fn corner(points: &[Point], n: f64, x: f64) -> Option<(f64, f64)> {
    let below = points
        .iter()
        .filter(|p| p.n <= n)
        .max_by(|a, b| a.n.total_cmp(&b.n))?;
    let above = points
        .iter()
        .filter(|p| p.n >= n)
        .min_by(|a, b| a.n.total_cmp(&b.n))?;
    if x <= CORNER * below.x.max(above.x) {
        return None;
    }
    let top = points.iter().map(|p| p.x).fold(0.0, f64::max);
    let at = points
        .iter()
        .filter(|p| p.x >= 0.98 * top)
        .map(|p| p.n)
        .fold(f64::INFINITY, f64::min);
    Some((at, top))
}

/// Concurrencies that differ from each other by more than 1 %.
fn distinct(points: &[Point]) -> usize {
    let mut ns: Vec<f64> = points.iter().map(|p| p.n).collect();
    ns.sort_by(f64::total_cmp);
    ns.dedup_by(|b, a| *b <= *a * 1.01);
    ns.len()
}

/// What follows `Model (USL): ` in every answer: the model's [`Model::sentence`], or
/// that the steps were too few to fit one.
pub fn line(model: Option<&Model>, unit: Unit) -> String {
    model.map_or("the steps are too few to fit one".into(), |m| {
        m.sentence(unit)
    })
}

impl Model {
    /// The throughput the model predicts at concurrency `n` (per second); 0 where the
    /// fitted denominator is not positive.
    pub fn throughput(&self, n: f64) -> f64 {
        lm::Params {
            lambda: self.lambda,
            sigma: self.sigma,
            kappa: self.kappa,
        }
        .throughput(n)
        .unwrap_or(0.0)
    }

    /// Where the fitted curve peaks, `(N*, X(N*))`, whether or not it is trusted;
    /// `None` without coherency (κ = 0) or with σ ≥ 1 (no rise to peak from).
    pub fn curve_peak(&self) -> Option<(f64, f64)> {
        if !(self.kappa > 0.0 && self.sigma < 1.0) {
            return None;
        }
        let n = ((1.0 - self.sigma) / self.kappa).sqrt();
        n.is_finite().then(|| (n, self.throughput(n)))
    }

    /// The peak when the fit is worth trusting (see the module's doc).
    fn trusted_peak(&self) -> Option<(f64, f64)> {
        let (n, x) = self.curve_peak()?;
        (self.points >= MIN_POINTS
            && self.r2 >= MIN_R2
            && n <= REACH * self.max_concurrency
            && x > 0.0)
            .then_some((n, x))
    }

    /// The model in one line, after `Model (USL): `: `peak 812 req/s at 6.4 in flight
    /// (r² 0.98)`, or why no peak is claimed.
    pub fn sentence(&self, unit: Unit) -> String {
        let at = |n: f64| match unit {
            Unit::Rate => format!("{n:.1} in flight"),
            Unit::Users => format!("{} users", value((n * 10.0).round() / 10.0)),
        };
        let r2 = format!("r² {:.2}", self.r2);
        if let (Some(x), Some(n)) = (self.peak, self.peak_concurrency) {
            return match self.curve_peak() {
                Some((cn, cx)) if (cx - x).abs() > 0.5 => format!(
                    "peak {} req/s at {}, where the steps level off (the fitted curve rounds that corner to {} req/s at {}) ({r2})",
                    value(x.round()),
                    at(n),
                    value(cx.round()),
                    at(cn)
                ),
                _ => format!("peak {} req/s at {} ({r2})", value(x.round()), at(n)),
            };
        }
        let params = format!(
            "λ {}/s, σ {:.3}, κ {:.2e}, {r2}",
            value((self.lambda * 10.0).round() / 10.0),
            self.sigma,
            self.kappa
        );
        if self.points < MIN_POINTS {
            return format!(
                "no peak claimed: {} steps are too few to check a three-parameter fit ({params})",
                self.points
            );
        }
        if self.r2 < MIN_R2 {
            return format!("no peak claimed: the fit is poor ({params})");
        }
        match self.curve_peak() {
            Some((n, _)) => format!(
                "the measured range predicts no peak: the fitted curve would peak at {}, beyond the largest concurrency measured ({}) ({params})",
                at(n),
                at(self.max_concurrency)
            ),
            None if self.sigma > 0.0 && self.sigma < 1.0 => format!(
                "the measured range predicts no peak: throughput levels off towards {} req/s ({params})",
                value((self.lambda / self.sigma).round())
            ),
            None => format!("the measured range predicts no peak ({params})"),
        }
    }
}

#[cfg(test)]
mod tests;
