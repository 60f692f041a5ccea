//! Each step of a search as its own small time series ([`svg`]): offered and achieved
//! rate per second on the left axis and p95 on the right, over the step's measured
//! window, laid out side by side by the HTML report's grid. Only whole seconds are
//! drawn ([`super::view::whole_seconds`]).

use std::fmt::Write;

use super::charts::{nice_step, number, YAxis};
use super::escape::html as escape;
use super::view::{whole_seconds, StepView};
use crate::search::result::value;

const WIDTH: f64 = 340.0;
const HEIGHT: f64 = 180.0;
const LEFT: f64 = 44.0;
const RIGHT: f64 = 44.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 26.0;

/// The small chart of one step, `unit` naming what its value counts.
pub fn svg(step: &StepView<'_>, unit: &str) -> String {
    let s = step.summary;
    let seconds = whole_seconds(&s.timeline, Some(s.duration_s));
    let verdict = if step.bound() {
        "generator-bound"
    } else if step.passed {
        "pass"
    } else {
        "fail"
    };
    let title = format!(
        "step {} · {} {unit} · {verdict}",
        step.number,
        value(step.value)
    );
    let users = unit == "users";
    let rate_top = seconds
        .iter()
        .map(|x| (x.requests as f64).max(if users { 0.0 } else { x.offered }))
        .fold(0.0, f64::max);
    let rates = YAxis::covering(rate_top);
    let ms = YAxis::covering(seconds.iter().map(|x| x.p95_ms).fold(0.0, f64::max));
    let t_max = (seconds.last().map_or(1, |x| x.t) as f64).max(1.0);
    let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let bottom = TOP + plot_h;
    let sx = |t: f64| LEFT + t / t_max * plot_w;
    let sr = |r: f64| bottom - r.max(0.0) / rates.max * plot_h;
    let sy = |y: f64| bottom - y.max(0.0) / ms.max * plot_h;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{t}" class="chart step {verdict}"><title>{t}</title><text x="{LEFT}" y="14" class="title">{t}</text>"#,
        t = escape(&title)
    );
    let mut y = 0.0;
    while y <= rates.max + rates.step / 2.0 {
        let py = sr(y);
        let _ = write!(
            out,
            r#"<line x1="{LEFT}" x2="{x2}" y1="{py:.1}" y2="{py:.1}" class="grid"/><text x="{lx}" y="{ty:.1}" class="tick" text-anchor="end">{l}</text><text x="{rx}" y="{ty:.1}" class="tick">{r}</text>"#,
            x2 = WIDTH - RIGHT,
            lx = LEFT - 4.0,
            rx = WIDTH - RIGHT + 4.0,
            ty = py + 4.0,
            l = number(y),
            r = number(y / rates.max * ms.max),
        );
        y += rates.step;
    }
    let t_step = nice_step(t_max, 5.0).max(1.0);
    let mut t = 0.0;
    while t <= t_max + 1e-9 {
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{}" class="tick" text-anchor="middle">{}s</text>"#,
            sx(t),
            bottom + 14.0,
            number(t)
        );
        t += t_step;
    }
    let _ = write!(
        out,
        r#"<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{bottom}" class="axis"/><line x1="{LEFT}" x2="{r}" y1="{bottom}" y2="{bottom}" class="axis"/>"#,
        r = WIDTH - RIGHT
    );
    let line = |points: Vec<(f64, f64)>, class: &str, name: &str| {
        let p: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        format!(
            r#"<polyline points="{}" class="line {class}"><title>{name}</title></polyline>"#,
            p.join(" ")
        )
    };
    let at = |f: &dyn Fn(&crate::metrics::summary::Second) -> f64, y: &dyn Fn(f64) -> f64| {
        seconds
            .iter()
            .map(|x| (sx(x.t as f64), y(f(x))))
            .collect::<Vec<_>>()
    };
    if !users {
        out.push_str(&line(at(&|x| x.offered, &sr), "ideal", "offered /s"));
    }
    out.push_str(&line(
        at(&|x| x.requests as f64, &sr),
        "s-achieved",
        "achieved /s",
    ));
    out.push_str(&line(at(&|x| x.p95_ms, &sy), "s-p95", "p95 (ms, right)"));
    let _ = write!(
        out,
        r#"<text x="{LEFT}" y="30" class="legend">req/s: achieved{}, p95 ms (right)</text></svg>"#,
        if users { "" } else { " vs offered (dashed)" }
    );
    out
}
