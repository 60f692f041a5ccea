//! The capacity chart of a search ([`Capacity::to_svg`]): one point per step at its
//! **offered** load (x), with p95 and p99 latency on the left axis and the achieved
//! rate on the right, so an overloaded target shows as achieved flattening while the
//! offered load goes on rising (drawn against achieved, every overloaded step would
//! pile onto one vertical line at the capacity). The ceiling and knee are dashed
//! vertical lines whose labels sit in their own row above the plot, apart from the
//! legend's row; generator-bound steps are grey triangles, off the lines, because
//! they say nothing about the target. Colours come from the stylesheet's classes, so
//! the chart reads in light and dark mode alike.
//!
//! The fitted Universal Scalability Law ([`crate::search::model`]) is drawn dashed on
//! the right axis, as the throughput it predicts. The model gives throughput as a
//! function of concurrency N, and in the users model N is the x axis, so the curve is
//! drawn whole. In the open model it is not: the x axis is the offered load, and N is
//! what Little's law measured at each step, so the curve joins the model's throughput
//! at each step's own N, above that step's offered load, where it reads against the
//! achieved dot it fits (a smooth line between offered loads would draw a function the
//! model does not give). A predicted peak is a throughput in both models, so it is a
//! horizontal line at that rate, labelled with the concurrency it is predicted at.

use std::fmt::Write;

use super::capacity::{Capacity, StepPoint};
use super::charts::{nice_step, number, YAxis};
use super::escape::html as escape;
use crate::report::units::{latency, per_second};
use crate::search::result::value;
use crate::search::step::Unit;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 340.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 70.0;
/// Room above the plot: the title, the legend's row, then the marks' row.
const TOP: f64 = 84.0;
const BOTTOM: f64 = 44.0;
const LEGEND_Y: f64 = 42.0;
const MARK_Y: f64 = 70.0;
/// Width a label's character takes at the legend's 11 px, roughly.
const CHAR_W: f64 = 6.2;

/// A drawn series: its name, CSS class and how to read it from a step.
type Line = (&'static str, &'static str, fn(&StepPoint) -> f64);

impl Capacity {
    /// The chart as an `<svg>` element (no script) that scales to its container.
    pub fn to_svg(&self) -> String {
        let finite = |v: f64| if v.is_finite() { v.max(0.0) } else { 0.0 };
        // One point per value on the lines: the last step run at it (a confirmation
        // replaces the first run); bound steps are drawn apart.
        let mut measured: Vec<&StepPoint> = Vec::new();
        for s in self.steps.iter().filter(|s| !s.bound) {
            measured.retain(|m| m.value != s.value);
            measured.push(s);
        }
        measured.sort_by(|a, b| a.value.total_cmp(&b.value));
        let x_top = self
            .steps
            .iter()
            .map(|s| finite(s.value))
            .fold(1.0, f64::max);
        let x_step = nice_step(x_top, 8.0);
        let x_max = (x_top / x_step).ceil() * x_step;
        let ms = YAxis::covering(
            self.steps
                .iter()
                .map(|s| finite(s.p99).max(finite(s.p95)))
                .fold(0.0, f64::max),
        );
        let peak = self.model.as_ref().and_then(|m| m.peak);
        let rate_top = self
            .steps
            .iter()
            .map(|s| finite(s.achieved))
            .fold(finite(peak.unwrap_or(0.0)), f64::max);
        let rates = YAxis::covering(if self.unit == "req/s" {
            rate_top.max(x_top)
        } else {
            rate_top
        });
        let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
        let bottom = TOP + plot_h;
        let sx = |x: f64| LEFT + finite(x) / x_max * plot_w;
        let sy = |y: f64| bottom - finite(y) / ms.max * plot_h;
        let sr = |r: f64| bottom - finite(r) / rates.max * plot_h;
        let title = format!(
            "Capacity: latency and achieved rate against offered load ({})",
            self.unit
        );
        let mut svg = String::new();
        let _ = write!(
            svg,
            r#"<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{t}" class="chart capacity"><title>{t}</title><text x="{LEFT}" y="18" class="title">{t}</text>"#,
            t = escape(&title)
        );
        // Grid and left (latency) ticks, right (rate) ticks at the same heights.
        let mut y = 0.0;
        while y <= ms.max + ms.step / 2.0 {
            let py = sy(y);
            let rate = y / ms.max * rates.max;
            let _ = write!(
                svg,
                r#"<line x1="{LEFT}" x2="{x2}" y1="{py:.1}" y2="{py:.1}" class="grid"/><text x="{lx}" y="{ty:.1}" class="tick" text-anchor="end">{l}</text><text x="{rx}" y="{ty:.1}" class="tick" text-anchor="start">{r}</text>"#,
                x2 = WIDTH - RIGHT,
                lx = LEFT - 6.0,
                rx = WIDTH - RIGHT + 6.0,
                ty = py + 4.0,
                l = number(y),
                r = number(rate),
            );
            y += ms.step;
        }
        let mut x = 0.0;
        while x <= x_max + x_step / 2.0 {
            let _ = write!(
                svg,
                r#"<text x="{px:.1}" y="{ty}" class="tick" text-anchor="middle">{label}</text>"#,
                px = sx(x),
                ty = bottom + 16.0,
                label = number(x)
            );
            x += x_step;
        }
        let _ = write!(
            svg,
            r#"<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{bottom}" class="axis"/><line x1="{r}" x2="{r}" y1="{TOP}" y2="{bottom}" class="axis"/><line x1="{LEFT}" x2="{r}" y1="{bottom}" y2="{bottom}" class="axis"/><text x="{cx}" y="{ly}" class="label x-label" text-anchor="middle">offered load ({u})</text><text x="14" y="{cy}" class="label" text-anchor="middle" transform="rotate(-90 14 {cy})">latency (ms)</text><text x="{rl}" y="{cy}" class="label" text-anchor="middle" transform="rotate(90 {rl} {cy})">achieved rate (req/s)</text>"#,
            r = WIDTH - RIGHT,
            cx = LEFT + plot_w / 2.0,
            ly = HEIGHT - 8.0,
            cy = TOP + plot_h / 2.0,
            rl = WIDTH - 12.0,
            u = escape(self.unit),
        );
        if self.unit == "req/s" {
            // Where achieved would lie if the target took all it was offered.
            let top = x_max.min(rates.max);
            let _ = write!(
                svg,
                r#"<line x1="{x0:.1}" y1="{y0:.1}" x2="{x1:.1}" y2="{y1:.1}" class="ideal"/>"#,
                x0 = sx(0.0),
                y0 = sr(0.0),
                x1 = sx(top),
                y1 = sr(top)
            );
        }
        self.marks(&mut svg, &sx, bottom);
        let lines: [Line; 3] = [
            ("p95", "s-p95", |s| s.p95),
            ("p99", "s-p99", |s| s.p99),
            ("achieved", "s-achieved", |s| s.achieved),
        ];
        for (name, class, y_of) in lines {
            let y_at = |s: &StepPoint| {
                if name == "achieved" {
                    sr(y_of(s))
                } else {
                    sy(y_of(s))
                }
            };
            let points: Vec<String> = measured
                .iter()
                .map(|s| format!("{:.1},{:.1}", sx(s.value), y_at(s)))
                .collect();
            let _ = write!(
                svg,
                r#"<polyline points="{}" class="line {class}"/>"#,
                points.join(" ")
            );
            for s in self.steps.iter().filter(|s| !s.bound) {
                let shown = if name == "achieved" {
                    per_second(s.achieved)
                } else {
                    latency(y_of(s))
                };
                let _ = write!(
                    svg,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="3.2" class="dot {class}{}"><title>step {} at {} {}: {name} {}</title></circle>"#,
                    sx(s.value),
                    y_at(s),
                    if s.ok { "" } else { " failed" },
                    s.number,
                    value(s.value),
                    self.unit,
                    escape(&shown)
                );
            }
        }
        self.fit_curve(&mut svg, &measured, &sx, &sr, x_max, rates.max);
        for s in self.steps.iter().filter(|s| s.bound) {
            let (px, py) = (sx(s.value), sy(s.p95));
            let _ = write!(
                svg,
                r#"<path d="M{:.1},{:.1} l5,9 h-10 z" class="bound"><title>step {} at {} {}: generator-bound (p95 {}, achieved {}); says nothing about the target</title></path>"#,
                px,
                py - 6.0,
                s.number,
                value(s.value),
                self.unit,
                escape(&latency(s.p95)),
                escape(&per_second(s.achieved))
            );
        }
        legend(
            &mut svg,
            self.steps.iter().any(|s| s.bound),
            self.unit == "req/s",
            self.model.is_some(),
        );
        svg.push_str("</svg>");
        svg
    }

    /// The model's throughput, dashed on the rate axis (see the module's doc for why
    /// the open model joins the steps), and its peak as a horizontal line.
    fn fit_curve(
        &self,
        svg: &mut String,
        measured: &[&StepPoint],
        sx: &dyn Fn(f64) -> f64,
        sr: &dyn Fn(f64) -> f64,
        x_max: f64,
        r_max: f64,
    ) {
        let Some(m) = &self.model else { return };
        let at = |x: f64, n: f64| {
            let rate = m.throughput(n);
            // Where the fitted denominator is not positive the model says nothing.
            (rate > 0.0).then(|| format!("{:.1},{:.1}", sx(x), sr(rate.min(r_max))))
        };
        let points: Vec<String> = if self.unit == "users" {
            const SAMPLES: u32 = 120;
            (1..=SAMPLES)
                .filter_map(|i| {
                    let n = x_max * f64::from(i) / f64::from(SAMPLES);
                    at(n, n)
                })
                .collect()
        } else {
            measured
                .iter()
                .filter_map(|s| s.concurrency.and_then(|n| at(s.value, n)))
                .collect()
        };
        let unit = Unit::from_label(self.unit);
        let sentence = escape(&format!("USL fit: {}", m.sentence(unit)));
        let _ = write!(
            svg,
            r#"<polyline points="{}" class="line s-usl"><title>{sentence}</title></polyline>"#,
            points.join(" ")
        );
        if let (Some(peak), Some(n)) = (m.peak, m.peak_concurrency) {
            let py = sr(peak.min(r_max));
            let where_ = match unit {
                Unit::Users => format!("{} users", value((n * 10.0).round() / 10.0)),
                Unit::Rate => format!("{n:.1} in flight"),
            };
            let _ = write!(
                svg,
                r#"<line x1="{LEFT}" x2="{x2}" y1="{py:.1}" y2="{py:.1}" class="usl-peak"/><text x="{tx}" y="{ty:.1}" class="legend usl-label" text-anchor="end">{}</text>"#,
                escape(&format!("USL peak {} at {where_}", per_second(peak))),
                x2 = WIDTH - RIGHT,
                tx = WIDTH - RIGHT - 4.0,
                ty = py - 4.0,
            );
        }
    }

    /// The ceiling and knee lines, labelled in the marks' row: one label when both are
    /// the same load, otherwise on either side of their lines when they are close.
    fn marks(&self, svg: &mut String, sx: &dyn Fn(f64) -> f64, bottom: f64) {
        let u = self.unit;
        let mut marks: Vec<(String, f64, &str)> = Vec::new();
        match (self.ceiling, self.knee) {
            (Some(c), Some(k)) if c == k => {
                marks.push((format!("ceiling = knee {} {u}", value(c)), c, "ceiling"))
            }
            (c, k) => {
                if let Some(k) = k {
                    marks.push((format!("knee {} {u}", value(k)), k, "knee"));
                }
                if let Some(c) = c {
                    marks.push((format!("ceiling {} {u}", value(c)), c, "ceiling"));
                }
            }
        }
        marks.sort_by(|a, b| a.1.total_cmp(&b.1));
        let close = marks.len() == 2 && {
            let need = (marks[0].0.len() + marks[1].0.len()) as f64 * CHAR_W / 2.0 + 12.0;
            sx(marks[1].1) - sx(marks[0].1) < need
        };
        for (i, (label, v, class)) in marks.iter().enumerate() {
            let px = sx(*v);
            let width = label.len() as f64 * CHAR_W;
            let (anchor, tx) = match (close, i) {
                (true, 0) => ("end", px - 4.0),
                (true, _) => ("start", px + 4.0),
                _ => ("middle", px),
            };
            // Keep the label inside the chart's width.
            let tx = match anchor {
                "end" => tx.max(width + 2.0),
                "start" => tx.min(WIDTH - width - 2.0),
                _ => tx.clamp(width / 2.0 + 2.0, WIDTH - width / 2.0 - 2.0),
            };
            let _ = write!(
                svg,
                r#"<line x1="{px:.1}" x2="{px:.1}" y1="{y1}" y2="{bottom}" class="mark {class}"/><text x="{tx:.1}" y="{MARK_Y}" class="legend mark-label {class}" text-anchor="{anchor}">{}</text>"#,
                escape(label),
                y1 = MARK_Y + 4.0,
            );
        }
    }
}

/// The legend in its own row under the title, item after item.
fn legend(svg: &mut String, bound: bool, ideal: bool, fit: bool) {
    let mut items: Vec<(&str, &str)> = vec![
        ("p95 (left)", "s-p95"),
        ("p99 (left)", "s-p99"),
        ("achieved rate (right)", "s-achieved"),
    ];
    if ideal {
        items.push(("achieved = offered", "ideal"));
    }
    if fit {
        items.push(("USL fit (right)", "s-usl"));
    }
    items.push(("failed step", "failed"));
    if bound {
        items.push(("generator-bound step", "bound"));
    }
    let (mut x, mut y) = (LEFT, LEGEND_Y);
    for (name, class) in items {
        let width = 20.0 + name.len() as f64 * CHAR_W;
        if x + width > WIDTH - 8.0 {
            // A second row, still above the marks' row.
            x = LEFT;
            y += 14.0;
        }
        let key = match class {
            "failed" => format!(
                r#"<circle cx="{:.1}" cy="{}" r="3.2" class="dot s-p95 failed"/>"#,
                x + 8.0,
                y - 4.0
            ),
            "bound" => format!(
                r#"<path d="M{:.1},{} l5,9 h-10 z" class="bound"/>"#,
                x + 8.0,
                y - 10.0
            ),
            _ => format!(
                r#"<line x1="{x:.1}" x2="{:.1}" y1="{ly}" y2="{ly}" class="line {class}"/>"#,
                x + 16.0,
                ly = y - 4.0
            ),
        };
        let _ = write!(
            svg,
            r#"{key}<text x="{:.1}" y="{y}" class="legend">{name}</text>"#,
            x + 20.0
        );
        x += width + 14.0;
    }
}
