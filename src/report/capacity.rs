//! The capacity view of a stored search (`headroom find`): every step's achieved rate
//! against its p95 and p99 latency, with the ceiling and the knee marked.
//! [`Capacity::of`] reads it from the stored steps; [`Capacity::markdown`] writes the
//! step table and [`Capacity::to_svg`] the chart (inline SVG, no script).
//!
//! The ceiling is the highest value that passed (and was not limited by the
//! generator); the knee is computed from the steps as the search computes it
//! ([`crate::search::knee`]).

use std::fmt::Write;

use super::charts::{nice_step, number, YAxis, BOTTOM, LEFT, RIGHT, WIDTH};
use super::html::escape;
use crate::report::units::{latency, per_second, percent};
use crate::search::knee::{knee, latency_limit};
use crate::search::result::value;
use crate::store::StoredRun;

// Taller than the line charts, with room on top for the ceiling and knee labels.
const HEIGHT: f64 = 300.0;
const TOP: f64 = 50.0;

/// A drawn percentile: its name, colour and how to read it from a step.
type Percentile = (&'static str, &'static str, fn(&StepPoint) -> f64);

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
}

/// A search's steps with its ceiling and knee.
#[derive(Debug, Clone, PartialEq)]
pub struct Capacity {
    /// Steps in the order run.
    pub steps: Vec<StepPoint>,
    /// `req/s` or `users`: what a step's value counts.
    pub unit: &'static str,
    /// Highest passing value not limited by the generator.
    pub ceiling: Option<f64>,
    /// Value after which p95 grew faster than the load.
    pub knee: Option<f64>,
}

impl Capacity {
    /// The capacity view of `run`, or `None` when it has no steps (not a search).
    pub fn of(run: &StoredRun) -> Option<Capacity> {
        let first = run.steps.first()?;
        let unit = if first.summary.model == "users" {
            "users"
        } else {
            "req/s"
        };
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
            })
            .collect();
        let ceiling = steps
            .iter()
            .filter(|s| s.ok && !s.bound)
            .map(|s| s.value)
            .reduce(f64::max);
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

    /// The achieved rate of the last step run at `v`, where a mark for `v` is drawn.
    fn achieved_at(&self, v: f64) -> Option<f64> {
        self.steps
            .iter()
            .rev()
            .find(|s| s.value == v)
            .map(|s| s.achieved)
    }

    /// The chart: achieved rate (x) against p95 and p99 (y), one point per step,
    /// dashed vertical lines at the ceiling's and the knee's steps.
    pub fn to_svg(&self) -> String {
        let mut sorted = self.steps.clone();
        sorted.sort_by(|a, b| a.achieved.total_cmp(&b.achieved));
        let finite = |v: f64| if v.is_finite() { v } else { 0.0 };
        let x_top = sorted
            .iter()
            .map(|s| finite(s.achieved))
            .fold(1.0, f64::max);
        let y_top = sorted
            .iter()
            .map(|s| finite(s.p99).max(finite(s.p95)))
            .fold(0.0, f64::max);
        let x_step = nice_step(x_top, 8.0);
        let x_max = (x_top / x_step).ceil() * x_step;
        let y_axis = YAxis::covering(y_top);
        let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
        let sx = |x: f64| LEFT + finite(x) / x_max * plot_w;
        let sy = |y: f64| TOP + plot_h - finite(y) / y_axis.max * plot_h;
        let title = "Capacity: latency against achieved rate";
        let mut svg = String::new();
        let _ = write!(
            svg,
            r#"<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{title}" class="chart capacity"><title>{title}</title><text x="{LEFT}" y="18" class="title">{title}</text>"#
        );
        y_axis.write_grid(&mut svg, sy);
        let mut x = 0.0;
        while x <= x_max + x_step / 2.0 {
            let _ = write!(
                svg,
                r#"<text x="{px:.1}" y="{ty}" class="tick" text-anchor="middle">{label}</text>"#,
                px = sx(x),
                ty = HEIGHT - BOTTOM + 16.0,
                label = number(x)
            );
            x += x_step;
        }
        let _ = write!(
            svg,
            r#"<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{b}" class="axis"/><line x1="{LEFT}" x2="{r}" y1="{b}" y2="{b}" class="axis"/><text x="{cx}" y="{ly}" class="label" text-anchor="middle">achieved rate (req/s)</text><text x="14" y="{cy}" class="label" text-anchor="middle" transform="rotate(-90 14 {cy})">latency (ms)</text>"#,
            b = TOP + plot_h,
            r = WIDTH - RIGHT,
            cx = LEFT + plot_w / 2.0,
            ly = HEIGHT - 8.0,
            cy = TOP + plot_h / 2.0
        );
        for (name, v, color, dy) in [
            ("ceiling", self.ceiling, "#2ca02c", 0.0),
            ("knee", self.knee, "#ff7f0e", 12.0),
        ] {
            let Some((v, at)) = v.and_then(|v| Some((v, self.achieved_at(v)?))) else {
                continue;
            };
            let px = sx(at);
            let _ = write!(
                svg,
                r#"<line x1="{px:.1}" x2="{px:.1}" y1="{TOP}" y2="{b}" stroke="{color}" stroke-dasharray="5 4" class="mark {name}"/><text x="{px:.1}" y="{ty}" class="legend" fill="{color}" text-anchor="middle">{name} {label}</text>"#,
                b = TOP + plot_h,
                ty = TOP - 6.0 - dy,
                label = escape(&format!("{} {}", value(v), self.unit))
            );
        }
        let series: [Percentile; 2] =
            [("p95", "#1f77b4", |s| s.p95), ("p99", "#d62728", |s| s.p99)];
        for (i, (name, color, y_of)) in series.iter().enumerate() {
            let points: Vec<String> = sorted
                .iter()
                .map(|s| format!("{:.1},{:.1}", sx(s.achieved), sy(y_of(s))))
                .collect();
            let _ = write!(
                svg,
                r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="1.5"/>"#,
                points.join(" ")
            );
            for s in &sorted {
                let _ = write!(
                    svg,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}" stroke="{color}"><title>step {} at {} {}: {name} {}</title></circle>"#,
                    sx(s.achieved),
                    sy(y_of(s)),
                    if s.ok { color } else { "#fff" },
                    s.number,
                    value(s.value),
                    self.unit,
                    escape(&latency(y_of(s)))
                );
            }
            let lx = WIDTH - RIGHT - 150.0 + i as f64 * 70.0;
            let _ = write!(
                svg,
                r#"<line x1="{lx}" x2="{x2}" y1="30" y2="30" stroke="{color}" stroke-width="2"/><text x="{tx}" y="34" class="legend">{name}</text>"#,
                x2 = lx + 16.0,
                tx = lx + 20.0
            );
        }
        svg.push_str("</svg>");
        svg
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
        assert!(svg.contains("ceiling 200 req/s"), "{svg}");
        assert!(svg.contains("knee 200 req/s"), "{svg}");
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 8);
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
