//! Bounded nonlinear least squares for the USL's three parameters ([`least_squares`]):
//! Levenberg–Marquardt from several starts, the best kept.
//!
//! Hand-written on purpose: a 3×3 damped normal system solved by Gaussian elimination
//! is all it takes, where a crate would bring a linear-algebra stack for it.
//!
//! The columns of the Jacobian differ by many orders of magnitude (∂X/∂κ grows as
//! N³ while ∂X/∂λ grows as N), so each step is solved on the columns scaled to unit
//! length (Marquardt's scaling, which damping by diag(JᵀJ) amounts to); the bounds
//! σ ∈ [0, 1] and κ ≥ 0 are kept by clamping each step, and a parameter held at a bound
//! that the gradient pushes outward is left out of that step (an active set), so the
//! others can still move.

use super::Point;

/// Most iterations of one refinement; a fit of a search's dozen points converges in
/// a few dozen.
const MAX_ITER: usize = 500;

/// The USL's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Params {
    pub(super) lambda: f64,
    pub(super) sigma: f64,
    pub(super) kappa: f64,
}

impl Params {
    /// The denominator 1 + σ(N−1) + κN(N−1).
    fn denominator(&self, n: f64) -> f64 {
        1.0 + self.sigma * (n - 1.0) + self.kappa * n * (n - 1.0)
    }

    /// X(n), or `None` where the denominator is not positive (for N < 1 it can be).
    pub(super) fn throughput(&self, n: f64) -> Option<f64> {
        let d = self.denominator(n);
        (d > 0.0 && d.is_finite()).then(|| self.lambda * n / d)
    }

    /// X(n) and its gradient in (λ, σ, κ).
    fn with_gradient(&self, n: f64) -> Option<(f64, [f64; 3])> {
        let d = self.denominator(n);
        if !(d > 0.0 && d.is_finite()) {
            return None;
        }
        let x = self.lambda * n / d;
        let dd = -self.lambda * n / (d * d);
        Some((x, [n / d, dd * (n - 1.0), dd * n * (n - 1.0)]))
    }

    /// Within the bounds: λ > 0, 0 ≤ σ ≤ 1, κ ≥ 0.
    fn clamped(self) -> Params {
        Params {
            lambda: self.lambda.max(f64::MIN_POSITIVE),
            sigma: self.sigma.clamp(0.0, 1.0),
            kappa: self.kappa.max(0.0),
        }
    }

    fn get(&self, i: usize) -> f64 {
        [self.lambda, self.sigma, self.kappa][i]
    }

    fn add(&self, d: [f64; 3]) -> Params {
        Params {
            lambda: self.lambda + d[0],
            sigma: self.sigma + d[1],
            kappa: self.kappa + d[2],
        }
    }
}

/// The sum of squared residuals of X, or `None` if some point has no throughput.
fn sse(p: &Params, points: &[Point]) -> Option<f64> {
    let mut sum = 0.0;
    for pt in points {
        sum += (pt.x - p.throughput(pt.n)?).powi(2);
    }
    sum.is_finite().then_some(sum)
}

/// The parameters with the least squared error on X among the refinements of every
/// start, and that error; `None` when no start gives every point a throughput.
pub(super) fn least_squares(points: &[Point]) -> Option<(Params, f64)> {
    starts(points)
        .into_iter()
        .filter_map(|s| refine(s.clamped(), points))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// Where to start: Gunther's quadratic N/X = a + bN + cN² fitted linearly (weighted
/// by X²/N, so that its residuals stand for residuals of X), the same without the
/// N² term (κ = 0), and a line through the point of least concurrency.
fn starts(points: &[Point]) -> Vec<Params> {
    let mut out = Vec::new();
    for terms in [3, 2] {
        if let Some(c) = quadratic(points, terms) {
            let (a, b, c) = (c[0], c[1], c[2]);
            let inverse = a + b + c;
            if inverse > 0.0 {
                let lambda = 1.0 / inverse;
                out.push(Params {
                    lambda,
                    sigma: (b + c) * lambda,
                    kappa: c * lambda,
                });
            }
        }
    }
    if let Some(first) = points.iter().min_by(|a, b| a.n.total_cmp(&b.n)) {
        out.push(Params {
            lambda: first.x / first.n,
            sigma: 0.0,
            kappa: 0.0,
        });
    }
    out
}

/// The weighted linear least-squares coefficients of N/X = a + bN (+ cN² with
/// `terms` 3); the missing ones are 0.
fn quadratic(points: &[Point], terms: usize) -> Option<[f64; 3]> {
    // Scale N to the largest, so the normal matrix stays well conditioned.
    let scale = points.iter().map(|p| p.n).fold(0.0, f64::max);
    let mut m = [[0.0; 3]; 3];
    let mut v = [0.0; 3];
    for p in points {
        let u = p.n / scale;
        let basis = [1.0, u, u * u];
        let w = (p.x * p.x / p.n).powi(2);
        let q = p.n / p.x;
        for i in 0..terms {
            v[i] += w * basis[i] * q;
            for j in 0..terms {
                m[i][j] += w * basis[i] * basis[j];
            }
        }
    }
    let sol = solve(m, v, terms)?;
    Some([sol[0], sol[1] / scale, sol[2] / (scale * scale)])
}

/// Levenberg–Marquardt from `start` (within the bounds); `None` if `start` leaves a
/// point without throughput.
fn refine(start: Params, points: &[Point]) -> Option<(Params, f64)> {
    let mut p = start;
    let mut cost = sse(&p, points)?;
    let mut mu = 1e-3;
    for _ in 0..MAX_ITER {
        let mut jtj = [[0.0; 3]; 3];
        let mut jtr = [0.0; 3];
        for pt in points {
            let (x, g) = p.with_gradient(pt.n)?;
            let r = pt.x - x;
            for i in 0..3 {
                jtr[i] += g[i] * r;
                for j in 0..3 {
                    jtj[i][j] += g[i] * g[j];
                }
            }
        }
        // A parameter at a bound that the descent direction (Jᵀr) pushes outward
        // stays put this step.
        let free: Vec<usize> = (0..3)
            .filter(|&i| {
                let at_low = i > 0 && p.get(i) <= 0.0 && jtr[i] <= 0.0;
                let at_high = i == 1 && p.get(i) >= 1.0 && jtr[i] >= 0.0;
                jtj[i][i] > 0.0 && !at_low && !at_high
            })
            .collect();
        if free.is_empty() {
            break;
        }
        let mut improved = None;
        while mu <= 1e12 {
            let Some(step) = damped_step(&jtj, &jtr, &free, mu) else {
                mu *= 10.0;
                continue;
            };
            let candidate = p.add(step).clamped();
            match sse(&candidate, points) {
                Some(c) if c < cost => {
                    improved = Some((candidate, c));
                    break;
                }
                _ => mu *= 10.0,
            }
        }
        let Some((next, c)) = improved else { break };
        let gain = (cost - c) / cost.max(f64::MIN_POSITIVE);
        p = next;
        cost = c;
        mu = (mu / 10.0).max(1e-12);
        if gain < 1e-12 {
            break;
        }
    }
    Some((p, cost))
}

/// The step (JᵀJ + μ·diag(JᵀJ)) δ = Jᵀr over the `free` parameters, solved on unit
/// columns.
fn damped_step(jtj: &[[f64; 3]; 3], jtr: &[f64; 3], free: &[usize], mu: f64) -> Option<[f64; 3]> {
    let k = free.len();
    let scale: Vec<f64> = free.iter().map(|&i| jtj[i][i].sqrt()).collect();
    let mut m = [[0.0; 3]; 3];
    let mut v = [0.0; 3];
    for (a, &i) in free.iter().enumerate() {
        v[a] = jtr[i] / scale[a];
        for (b, &j) in free.iter().enumerate() {
            m[a][b] = jtj[i][j] / (scale[a] * scale[b]);
        }
        m[a][a] += mu;
    }
    let z = solve(m, v, k)?;
    let mut step = [0.0; 3];
    for (a, &i) in free.iter().enumerate() {
        step[i] = z[a] / scale[a];
    }
    step.iter().all(|s| s.is_finite()).then_some(step)
}

/// Solves the leading `k`×`k` system `m x = v` by Gaussian elimination with partial
/// pivoting; `None` when it is singular.
fn solve(mut m: [[f64; 3]; 3], mut v: [f64; 3], k: usize) -> Option<[f64; 3]> {
    for col in 0..k {
        let pivot = (col..k).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if m[pivot][col].abs() < 1e-300 {
            return None;
        }
        m.swap(col, pivot);
        v.swap(col, pivot);
        for row in col + 1..k {
            let f = m[row][col] / m[col][col];
            let pivot_row = m[col];
            for (x, p) in m[row][col..k].iter_mut().zip(&pivot_row[col..k]) {
                *x -= f * p;
            }
            v[row] -= f * v[col];
        }
    }
    let mut x = [0.0; 3];
    for row in (0..k).rev() {
        let tail: f64 = (row + 1..k).map(|c| m[row][c] * x[c]).sum();
        x[row] = (v[row] - tail) / m[row][row];
    }
    x.iter().all(|x| x.is_finite()).then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solves_a_small_system_and_refuses_a_singular_one() {
        let m = [[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]];
        let x = solve(m, [3.0, 5.0, 5.0], 3).unwrap();
        for (got, want) in x.iter().zip([1.0, 1.0, 1.0]) {
            assert!((got - want).abs() < 1e-12, "{x:?}");
        }
        let singular = [[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 1.0]];
        assert_eq!(solve(singular, [1.0, 2.0, 1.0], 3), None);
        // Only the leading block is read.
        assert_eq!(solve(m, [4.0, 0.0, 0.0], 1).unwrap()[0], 2.0);
    }

    #[test]
    fn the_gradient_matches_finite_differences() {
        let p = Params {
            lambda: 150.0,
            sigma: 0.07,
            kappa: 0.003,
        };
        for n in [0.5, 3.0, 40.0] {
            let (_, g) = p.with_gradient(n).unwrap();
            for (i, d) in [[1e-6, 0.0, 0.0], [0.0, 1e-9, 0.0], [0.0, 0.0, 1e-11]]
                .iter()
                .enumerate()
            {
                let h = d[i];
                let fd = (p.add(*d).throughput(n).unwrap() - p.throughput(n).unwrap()) / h;
                assert!(
                    (fd - g[i]).abs() <= 1e-4 * g[i].abs().max(1.0),
                    "{n} {i} {fd} {g:?}"
                );
            }
        }
    }
}
