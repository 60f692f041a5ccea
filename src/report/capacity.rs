//! The capacity view of a stored search (`headroom find`): every step's offered load,
//! achieved rate and p95 and p99 latency, with the ceiling and the knee.
//! [`Capacity::of`] reads it from the stored steps; [`Capacity::markdown`] writes the
//! step table and `Capacity::to_svg` ([`super::capacity_chart`]) the chart.
//!
//! The ceiling is the highest value that passed (and was not limited by the
//! generator); the knee and the fitted USL model are computed from the steps as the
//! search computes them ([`crate::search::knee`], [`crate::search::model`]), so a
//! stored search needs nothing stored beyond its steps.

use std::fmt::Write;

use crate::report::units::{latency, per_second, percent};
use crate::search::knee::{knee, latency_limit};
use crate::search::model::{self, Model};
use crate::search::result::value;
use crate::search::step::Unit;
use crate::store::StoredRun;

/// One step as the capacity view shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepPoint {
    /// Step number, from 1.
    pub number: u32,
    /// The step's value: its rate, or its user count.
    pub value: f64,
    /// Completed requests per second over the measured window.
    pub achieved: f64,
    /// p95 latency, ms.
    pub p95: f64,
    /// p99 latency, ms.
    pub p99: f64,
    /// Share of requests that failed, 0–1.
    pub errors: f64,
    /// Passed every threshold.
    pub ok: bool,
    /// The generator limited the step.
    pub bound: bool,
    /// How the target fell behind the step's load, in words (`None`: it kept up).
    pub behind: Option<String>,
    /// The step's concurrency as the model fit saw it (users, or Little's law in the
    /// open model); `None` when the fit left the step out.
    pub concurrency: Option<f64>,
}

/// A search's steps with its ceiling and knee.
#[derive(Debug, Clone, PartialEq)]
pub struct Capacity {
    /// Steps in the order run.
    pub steps: Vec<StepPoint>,
    /// `req/s` or `users`: what a step's value counts.
    pub unit: &'static str,
    /// Highest passing value not limited by the generator, below every failure
    /// ([`super::view::SearchView::ceiling`]).
    pub ceiling: Option<f64>,
    /// Value after which p95 grew faster than the load.
    pub knee: Option<f64>,
    /// The USL fitted to the steps, when they fix it.
    pub model: Option<Model>,
}

impl Capacity {
    /// The capacity view of `run`, or `None` when it has no steps (not a search).
    pub fn of(run: &StoredRun) -> Option<Capacity> {
        let first = run.steps.first()?;
        let search_unit = Unit::from_label(&first.summary.model);
        let unit = search_unit.as_str();
        let steps: Vec<StepPoint> = run
            .steps
            .iter()
            .map(|s| StepPoint {
                number: s.index + 1,
                value: s.rate,
                achieved: s.summary.rate.achieved,
                p95: s.summary.latency_ms.p95,
                p99: s.summary.latency_ms.p99,
                errors: s.summary.errors.rate,
                ok: s.ok,
                bound: s.summary.generator.bound,
                behind: crate::search::keepup::judge(&s.summary).describe(),
                concurrency: model::point(search_unit, s.rate, &s.summary).map(|p| p.n),
            })
            .collect();
        let ceiling = super::view::SearchView::stored(run).and_then(|v| v.ceiling());
        let measured: Vec<(f64, f64)> = run
            .steps
            .iter()
            .filter(|s| {
                !s.summary.generator.bound && !s.summary.interrupted && s.summary.requests > 0
            })
            .map(|s| (s.rate, s.summary.latency_ms.p95))
            .collect();
        Some(Capacity {
            steps,
            unit,
            ceiling,
            knee: knee(&measured, latency_limit(&first.summary.thresholds)),
            model: model::fit_steps(search_unit, run.steps.iter().map(|s| (s.rate, &s.summary))),
        })
    }

    /// The step table and the ceiling and knee lines in Markdown, ending in a newline.
    pub fn markdown(&self) -> String {
        let unit = self.unit;
        let mut out = String::from("### Steps\n\n");
        let found = |v: Option<f64>| v.map_or("none".into(), |v| format!("{} {unit}", value(v)));
        let _ = writeln!(
            out,
            "Ceiling: **{}** · knee: {}\n",
            found(self.ceiling),
            found(self.knee)
        );
        let _ = writeln!(
            out,
            "| step | {unit} | achieved | p95 | p99 | errors | verdict |\n|---:|---:|---:|---:|---:|---:|:---|"
        );
        for s in &self.steps {
            let verdict = match (s.bound, s.ok, &s.behind) {
                (true, _, _) => "generator-bound".to_string(),
                (false, true, _) => "pass".to_string(),
                (false, false, Some(behind)) => format!("fail: {behind}"),
                (false, false, None) => "fail".to_string(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {verdict} |",
                s.number,
                value(s.value),
                per_second(s.achieved),
                latency(s.p95),
                latency(s.p99),
                percent(s.errors * 100.0)
            );
        }
        out.push('\n');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(number: u32, v: f64, p95: f64, ok: bool) -> StepPoint {
        StepPoint {
            number,
            value: v,
            achieved: v * 0.99,
            p95,
            p99: p95 * 1.5,
            errors: 0.0,
            ok,
            bound: false,
            behind: None,
            concurrency: Some(v / 100.0),
        }
    }

    fn capacity() -> Capacity {
        Capacity {
            steps: vec![
                point(1, 100.0, 5.0, true),
                point(2, 200.0, 6.0, true),
                point(3, 400.0, 300.0, false),
                point(4, 200.0, 6.5, true),
            ],
            unit: "req/s",
            ceiling: Some(200.0),
            knee: Some(200.0),
            model: None,
        }
    }

    #[test]
    fn the_table_has_a_row_per_step_and_names_the_ceiling() {
        let md = capacity().markdown();
        assert!(
            md.contains("Ceiling: **200 req/s** · knee: 200 req/s"),
            "{md}"
        );
        assert!(
            md.contains("| step | req/s | achieved | p95 | p99 |"),
            "{md}"
        );
        assert_eq!(md.matches("| pass |").count(), 3, "{md}");
        assert_eq!(md.matches("| fail |").count(), 1, "{md}");
        let mut c = capacity();
        c.steps[2].behind = Some("did not keep up (achieved 210.0/s of 400.0/s)".into());
        let md = c.markdown();
        assert!(
            md.contains("| fail: did not keep up (achieved 210.0/s of 400.0/s) |"),
            "{md}"
        );
    }

    #[test]
    fn the_chart_marks_the_ceiling_and_draws_both_percentiles() {
        let svg = capacity().to_svg();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(svg.contains("class=\"mark ceiling\""), "{svg}");
        // Ceiling and knee at one load share one label.
        assert!(svg.contains("ceiling = knee 200 req/s"), "{svg}");
        // p95, p99 and achieved; the confirmation at 200 replaces the first run's point
        // on the lines, and every step keeps its dots (plus the legend's one).
        assert_eq!(svg.matches("<polyline").count(), 3);
        assert_eq!(svg.matches("<circle").count(), 3 * 4 + 1);
        assert!(svg.contains("offered load (req/s)"), "{svg}");
        let mut c = capacity();
        c.knee = Some(100.0);
        c.steps[2].bound = true;
        let svg = c.to_svg();
        assert!(
            svg.contains(">knee 100 req/s<") && svg.contains(">ceiling 200 req/s<"),
            "{svg}"
        );
        assert!(
            svg.contains("generator-bound step") && svg.contains("class=\"bound\""),
            "{svg}"
        );
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
    }

    #[test]
    fn the_fitted_model_is_drawn_on_the_rate_axis_with_its_peak() {
        use crate::search::model::{fit, Point};
        let usl = |n: f64| 100.0 * n / (1.0 + 0.05 * (n - 1.0) + 0.002 * n * (n - 1.0));
        let ns = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0];
        let model = fit(&ns.map(|n| Point { n, x: usl(n) })).unwrap();
        let peak = model.peak.unwrap();
        // Users: the curve is drawn whole over the x axis.
        let mut c = capacity();
        c.unit = "users";
        (c.ceiling, c.knee) = (None, None);
        c.steps = ns
            .iter()
            .enumerate()
            .map(|(i, &n)| StepPoint {
                achieved: usl(n),
                concurrency: Some(n),
                ..point(i as u32 + 1, n, 5.0, true)
            })
            .collect();
        c.model = Some(model.clone());
        let svg = c.to_svg();
        let curve = svg.split("class=\"line s-usl\"").next().unwrap();
        let points = curve.rsplit("points=\"").next().unwrap();
        let points = points.split('"').next().unwrap();
        assert_eq!(points.split(' ').count(), 120, "{svg}");
        assert!(svg.contains("USL fit (right)"), "{svg}");
        let label = format!(">USL peak {} at 21.8 users<", per_second(peak));
        assert!(svg.contains(&label), "{label}: {svg}");
        assert!(svg.contains("class=\"usl-peak\""), "{svg}");
        // The open model: one point per measured value, at its own concurrency.
        let mut c = capacity();
        c.model = Some(model);
        let svg = c.to_svg();
        let curve = svg.split("class=\"line s-usl\"").next().unwrap();
        let points = curve.rsplit("points=\"").next().unwrap();
        let points = points.split('"').next().unwrap();
        assert_eq!(points.split(' ').count(), 3, "{svg}");
        assert!(svg.contains("in flight<"), "{svg}");
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
    }

    #[test]
    fn without_a_pass_nothing_is_marked() {
        let mut c = capacity();
        c.ceiling = None;
        c.knee = None;
        let svg = c.to_svg();
        assert!(!svg.contains("class=\"mark"), "{svg}");
        assert!(c.markdown().contains("Ceiling: **none**"));
    }
}
