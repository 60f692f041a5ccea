use super::*;

fn usl(lambda: f64, sigma: f64, kappa: f64, n: f64) -> f64 {
    lambda * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
}

/// Deterministic noise in [-1, 1) (xorshift), so a failing case repeats.
fn noise(seed: &mut u64) -> f64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    (*seed >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

fn points(lambda: f64, sigma: f64, kappa: f64, ns: &[f64], share: f64, seed: u64) -> Vec<Point> {
    let mut seed = seed;
    ns.iter()
        .map(|&n| Point {
            n,
            x: usl(lambda, sigma, kappa, n) * (1.0 + share * noise(&mut seed)),
        })
        .collect()
}

fn near(got: f64, want: f64, share: f64) -> bool {
    (got - want).abs() <= share * want.abs()
}

const USERS: [f64; 8] = [1.0, 2.0, 4.0, 8.0, 12.0, 16.0, 24.0, 32.0];

#[test]
fn recovers_the_parameters_of_exact_usl_data() {
    // (λ, σ, κ): contention and coherency, contention only, linear.
    for (lambda, sigma, kappa) in [
        (100.0, 0.05, 0.002),
        (1000.0, 0.2, 0.0001),
        (42.0, 0.3, 0.0),
        (10.0, 0.0, 0.0),
    ] {
        let m = fit(&points(lambda, sigma, kappa, &USERS, 0.0, 1)).unwrap();
        let case = format!("{lambda} {sigma} {kappa}: {m:?}");
        assert!(near(m.lambda, lambda, 1e-4), "{case}");
        assert!((m.sigma - sigma).abs() < 1e-5, "{case}");
        assert!((m.kappa - kappa).abs() < 1e-7, "{case}");
        assert!(m.r2 > 0.999_999, "{case}");
        assert_eq!(m.kind, ModelKind::Usl);
        assert_eq!((m.points, m.max_concurrency), (8, 32.0));
    }
}

#[test]
fn finds_the_peak_through_noise() {
    // N* = √((1−σ)/κ): 0.95/0.002 → 21.8; 0.9/0.004 → 15; 0.99/0.0025 → 19.9.
    for (lambda, sigma, kappa, seed) in [
        (100.0_f64, 0.05_f64, 0.002_f64, 7),
        (500.0, 0.1, 0.004, 11),
        (30.0, 0.01, 0.0025, 23),
    ] {
        let n_star: f64 = ((1.0 - sigma) / kappa).sqrt();
        let x_star = usl(lambda, sigma, kappa, n_star);
        for share in [0.0, 0.02, 0.05] {
            let m = fit(&points(lambda, sigma, kappa, &USERS, share, seed)).unwrap();
            let case = format!("{lambda} {sigma} {kappa} ±{share}: {m:?}");
            let peak = m.peak.unwrap_or_else(|| panic!("no peak: {case}"));
            assert!(near(peak, x_star, 0.05), "{case} want {x_star}");
            assert!(near(m.peak_concurrency.unwrap(), n_star, 0.25), "{case}");
            assert!(m.r2 > 0.9, "{case}");
            assert!(m.sigma >= 0.0 && m.sigma <= 1.0 && m.kappa >= 0.0, "{case}");
        }
    }
}

#[test]
fn contention_alone_predicts_no_peak() {
    for share in [0.0, 0.01, 0.03] {
        let m = fit(&points(200.0, 0.25, 0.0, &USERS, share, 5)).unwrap();
        assert_eq!((m.peak, m.peak_concurrency), (None, None), "{m:?}");
        let line = m.sentence(Unit::Users);
        assert!(
            line.starts_with("the measured range predicts no peak"),
            "{line}"
        );
        if share == 0.0 {
            // Throughput levels off towards λ/σ = 800.
            assert!(line.contains("levels off towards 800 req/s"), "{line}");
        }
    }
}

#[test]
fn a_peak_far_beyond_the_measured_range_is_not_claimed() {
    // N* = √(0.99/1e-5) ≈ 315, measured up to 32.
    let m = fit(&points(100.0, 0.01, 0.000_01, &USERS, 0.0, 1)).unwrap();
    assert!(m.kappa > 0.0, "{m:?}");
    assert_eq!(m.peak, None, "{m:?}");
    let line = m.sentence(Unit::Users);
    assert!(
        line.contains("beyond the largest concurrency measured (32 users)"),
        "{line}"
    );
}

#[test]
fn a_poor_fit_or_too_few_steps_claims_no_peak() {
    // A zigzag no USL curve follows.
    let zigzag: Vec<Point> = USERS
        .iter()
        .enumerate()
        .map(|(i, &n)| Point {
            n,
            x: if i % 2 == 0 { 100.0 } else { 400.0 },
        })
        .collect();
    let m = fit(&zigzag).unwrap();
    assert!(m.r2 < MIN_R2 && m.peak.is_none(), "{m:?}");
    assert!(m.sentence(Unit::Rate).contains("the fit is poor"));
    // Three points fix three parameters exactly: no check left, so no peak.
    let three = points(100.0, 0.05, 0.01, &[2.0, 10.0, 30.0], 0.0, 1);
    let m = fit(&three).unwrap();
    assert!(m.r2 > 0.999 && m.peak.is_none(), "{m:?}");
    assert!(m.sentence(Unit::Users).contains("3 steps are too few"));
}

#[test]
fn degenerate_inputs_give_no_model() {
    let p = |n: f64, x: f64| Point { n, x };
    let cases: [(&str, Vec<Point>); 6] = [
        ("none", vec![]),
        ("two points", vec![p(1.0, 10.0), p(2.0, 20.0)]),
        (
            "one concurrency",
            vec![p(4.0, 10.0), p(4.0, 11.0), p(4.02, 12.0), p(4.0, 9.0)],
        ),
        (
            "zero throughput",
            vec![p(1.0, 0.0), p(2.0, 0.0), p(3.0, 0.0), p(4.0, 0.0)],
        ),
        (
            "NaN and infinities",
            vec![
                p(f64::NAN, 1.0),
                p(1.0, f64::NAN),
                p(f64::INFINITY, 3.0),
                p(2.0, 20.0),
            ],
        ),
        (
            "negative",
            vec![p(-1.0, 5.0), p(1.0, -5.0), p(2.0, 20.0), p(3.0, 30.0)],
        ),
    ];
    for (name, pts) in cases {
        assert_eq!(fit(&pts), None, "{name}");
    }
    // Bad points are dropped and the good ones still fit.
    let mut pts = points(100.0, 0.05, 0.002, &USERS, 0.0, 1);
    pts.push(p(f64::NAN, 3.0));
    pts.push(p(5.0, 0.0));
    let m = fit(&pts).unwrap();
    assert_eq!(m.points, 8);
    assert!(m.peak.is_some(), "{m:?}");
}

#[test]
fn every_step_at_one_throughput_is_a_perfect_flat_fit() {
    let flat: Vec<Point> = USERS.iter().map(|&n| Point { n, x: 250.0 }).collect();
    let m = fit(&flat).unwrap();
    assert!(near(m.throughput(100.0), 250.0, 1e-3), "{m:?}");
    assert!(m.r2 > 0.999 && m.peak.is_none(), "{m:?}");
}

/// A search of the built-in target, 4 workers × 5 ms (800/s), in the open model:
/// (Little's law N, achieved) of each step as measured. Linear up to the capacity,
/// flat past it, with a sharp corner: the fit bends there and its peak is the capacity.
const QUEUE_800: [(f64, f64); 11] = [
    (0.533, 100.0),
    (1.045, 200.0),
    (2.102, 400.0),
    (11.36, 790.5),
    (499.8, 802.9),
    (384.2, 802.4),
    (204.6, 802.5),
    (104.3, 800.6),
    (54.27, 801.0),
    (29.24, 799.7),
    (5.264, 799.3),
];

#[test]
fn a_queue_of_workers_peaks_at_its_capacity() {
    let pts: Vec<Point> = QUEUE_800.iter().map(|&(n, x)| Point { n, x }).collect();
    let m = fit(&pts).unwrap();
    let peak = m.peak.unwrap_or_else(|| panic!("no peak: {m:?}"));
    assert!(near(peak, 800.0, 0.10), "{m:?}");
    assert!(m.r2 >= MIN_R2, "{m:?}");
}

/// The built-in target's contention mode as measured by `find --users` (10 ms of
/// service, then 0.2 ms × n per exchange with each of the n − 1 others in flight):
/// users and throughput. It peaks near √(10 / 0.2) ≈ 7 users and falls past it.
const CONTENDED: [(f64, f64); 7] = [
    (1.0, 98.0),
    (2.0, 186.0),
    (4.0, 312.0),
    (8.0, 368.0),
    (16.0, 272.0),
    (32.0, 160.0),
    (32.0, 160.0),
];

#[test]
fn a_cost_that_grows_with_the_load_peaks_where_the_data_do() {
    let pts: Vec<Point> = CONTENDED.iter().map(|&(n, x)| Point { n, x }).collect();
    let m = fit(&pts).unwrap();
    let peak = m.peak.unwrap_or_else(|| panic!("no peak: {m:?}"));
    assert!(near(peak, 368.0, 0.15), "{m:?}");
    let at = m.peak_concurrency.unwrap();
    assert!(near(at, 7.07, 0.15), "{m:?}");
    assert!(m.kappa > 0.0 && m.r2 >= MIN_R2, "{m:?}");
}

#[test]
fn points_come_from_littles_law_or_the_user_count() {
    let mut s = Summary::empty("t", 1.0);
    s.requests = 800;
    s.rate.achieved = 800.0;
    s.latency_ms.avg = 5.0;
    let p = point(Unit::Rate, 800.0, &s).unwrap();
    assert!(near(p.n, 4.0, 1e-12) && p.x == 800.0, "{p:?}");
    assert_eq!(point(Unit::Users, 12.0, &s).unwrap().n, 12.0);
    // Failed requests are in the system but are not throughput.
    s.errors.rate = 0.25;
    let p = point(Unit::Rate, 800.0, &s).unwrap();
    assert!(near(p.n, 4.0, 1e-12) && near(p.x, 600.0, 1e-12), "{p:?}");
    for spoil in [
        |s: &mut Summary| s.generator.bound = true,
        |s: &mut Summary| s.interrupted = true,
        |s: &mut Summary| s.requests = 0,
        |s: &mut Summary| s.errors.rate = 1.0,
        |s: &mut Summary| s.latency_ms.avg = f64::NAN,
    ] {
        let mut t = s.clone();
        spoil(&mut t);
        assert_eq!(point(Unit::Rate, 800.0, &t), None, "{t:?}");
    }
}

#[test]
fn the_sentence_names_the_peak_and_where() {
    let mut m = Model {
        kind: ModelKind::Usl,
        lambda: 200.0,
        sigma: 0.02,
        kappa: 0.01,
        peak: None,
        peak_concurrency: None,
        r2: 0.981,
        points: 9,
        max_concurrency: 20.0,
    };
    // The curve's own peak: N* = √(0.98 / 0.01) = 9.9, X(N*) = 961.6.
    let (n, x) = m.curve_peak().unwrap();
    (m.peak, m.peak_concurrency) = (Some(x), Some(n));
    assert_eq!(
        m.sentence(Unit::Rate),
        "peak 962 req/s at 9.9 in flight (r² 0.98)"
    );
    assert_eq!(
        m.sentence(Unit::Users),
        "peak 962 req/s at 9.9 users (r² 0.98)"
    );
    // A plateau the steps measured below a curve that rounds the corner says both.
    let plateau = Model {
        peak: Some(800.0),
        peak_concurrency: Some(4.4),
        ..m
    };
    assert_eq!(
        plateau.sentence(Unit::Rate),
        "peak 800 req/s at 4.4 in flight, where the steps level off (the fitted curve rounds that corner to 962 req/s at 9.9 in flight) (r² 0.98)"
    );
    let json = serde_json::to_value(&m).unwrap();
    for key in ["lambda", "sigma", "kappa", "peak", "peak_concurrency", "r2"] {
        assert!(json[key].is_number(), "{key}: {json}");
    }
    assert_eq!(json["kind"], "usl");
    let none = Model {
        peak: None,
        peak_concurrency: None,
        ..m
    };
    let json = serde_json::to_value(&none).unwrap();
    assert!(
        json["peak"].is_null() && json["peak_concurrency"].is_null(),
        "{json}"
    );
    assert_eq!(serde_json::from_value::<Model>(json).unwrap(), none);
}

#[test]
fn a_corner_between_sparse_steps_is_the_measured_plateau_not_the_curves_overshoot() {
    // The built-in target (4 workers × 5 ms, 800/s) as a search that jumps to the
    // boundary measures it: linear to 800/s at 4.4 in flight, then two overloaded
    // steps on the flat far apart (Little's law counts the generator's backlog).
    let pts: Vec<Point> = [
        (0.52, 100.0),
        (1.04, 200.0),
        (2.1, 400.0),
        (4.4, 800.0),
        (4.5, 799.0),
        (48.0, 800.4),
        (500.0, 800.0),
    ]
    .iter()
    .map(|&(n, x)| Point { n, x })
    .collect();
    let m = fit(&pts).expect("a model");
    // The smooth curve overshoots the corner between the steps on the flat...
    let (_, cx) = m.curve_peak().expect("a curve that bends");
    assert!(cx > CORNER * 800.4, "{m:?}");
    // ...so the peak claimed is the plateau the steps show.
    assert_eq!(m.peak, Some(800.4), "{m:?}");
    assert_eq!(m.peak_concurrency, Some(4.4), "{m:?}");
    assert!(m.sentence(Unit::Rate).contains("where the steps level off"));
}
