//! Line charts as inline SVG, drawn server-side so an HTML report needs no script and
//! no network: [`LineChart`] holds titled, labelled series and [`LineChart::to_svg`]
//! writes axes with ticks, grid lines, one polyline per series and a legend. The x
//! axis is linear (time) or the percentile axis of an HDR plot ([`XAxis::Percentile`],
//! logarithmic in 1 / (1 − q), so 90%, 99%, 99.9% are equally spaced).

use std::fmt::Write;

use hdrhistogram::Histogram;

use super::escape::html as escape;

/// Width of every chart's view box; the capacity chart shares it and the margins.
pub(super) const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 260.0;
/// Room left of the plot, for the y tick labels and the y axis label.
pub(super) const LEFT: f64 = 70.0;
/// Room right of the plot.
pub(super) const RIGHT: f64 = 20.0;
const TOP: f64 = 34.0;
/// Room under the plot, for the x tick labels and the x axis label.
pub(super) const BOTTOM: f64 = 44.0;
const COLORS: &[&str] = &[
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
];

/// One named line.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Points in x order.
    pub points: Vec<(f64, f64)>,
}

/// How x values map to the width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XAxis {
    /// x as is (e.g. seconds).
    Linear,
    /// x is `-log10(1 - q)` for a quantile `q`, labelled as percentiles.
    Percentile,
}

/// A chart ready to draw.
#[derive(Debug, Clone)]
pub struct LineChart {
    /// Title above the plot.
    pub title: String,
    /// Label under the x axis.
    pub x_label: String,
    /// Label of the y axis (unit included).
    pub y_label: String,
    /// The x axis kind.
    pub x_axis: XAxis,
    /// The lines.
    pub series: Vec<Series>,
}

/// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `count` ticks.
pub(super) fn nice_step(span: f64, count: f64) -> f64 {
    let raw = (span / count).max(f64::MIN_POSITIVE);
    let power = 10f64.powf(raw.log10().floor());
    let fraction = raw / power;
    let nice = if fraction <= 1.0 {
        1.0
    } else if fraction <= 2.0 {
        2.0
    } else if fraction <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * power
}

/// A y axis from 0 up to a round number at or above the highest value drawn, in
/// about five "nice" steps.
pub(super) struct YAxis {
    /// Distance between ticks.
    pub(super) step: f64,
    /// The top of the axis: a whole number of steps, at least one.
    pub(super) max: f64,
}

impl YAxis {
    /// An axis covering 0 to `top` (one step of 1 when `top` is not positive).
    pub(super) fn covering(top: f64) -> YAxis {
        let step = nice_step(if top > 0.0 { top } else { 1.0 }, 5.0);
        YAxis {
            step,
            max: (top / step).ceil().max(1.0) * step,
        }
    }

    /// Writes a horizontal grid line across the plot and a tick label left of it at
    /// each step, `sy` giving a value's y in the view box.
    pub(super) fn write_grid(&self, svg: &mut String, sy: impl Fn(f64) -> f64) {
        let mut y = 0.0;
        while y <= self.max + self.step / 2.0 {
            let py = sy(y);
            let _ = write!(
                svg,
                r#"<line x1="{LEFT}" x2="{x2}" y1="{py:.1}" y2="{py:.1}" class="grid"/><text x="{tx}" y="{ty:.1}" class="tick" text-anchor="end">{label}</text>"#,
                x2 = WIDTH - RIGHT,
                tx = LEFT - 6.0,
                ty = py + 4.0,
                label = number(y)
            );
            y += self.step;
        }
    }
}

/// A tick label: whole numbers bare, others with one or two decimals.
pub(super) fn number(v: f64) -> String {
    if v == v.round() && v.abs() < 1e9 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The label of a percentile-axis position: 0 → `0%`, 1 → `90%`, 3 → `99.9%`.
fn percentile_label(x: f64) -> String {
    let decimals = (x.round() as usize).saturating_sub(2);
    format!("{:.*}%", decimals, (1.0 - 10f64.powf(-x)) * 100.0)
}

impl LineChart {
    /// The chart as an `<svg>` element with a fixed view box that scales to its container.
    pub fn to_svg(&self) -> String {
        let points = self.series.iter().flat_map(|s| s.points.iter());
        let finite: Vec<(f64, f64)> = points
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .copied()
            .collect();
        let x_max = finite.iter().map(|p| p.0).fold(0.0f64, f64::max).max(1.0);
        let x_min = finite.iter().map(|p| p.0).fold(x_max, f64::min).min(0.0);
        let y_top = finite.iter().map(|p| p.1).fold(0.0f64, f64::max);
        let y_axis = YAxis::covering(y_top);
        let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
        let sx = |x: f64| LEFT + (x - x_min) / (x_max - x_min) * plot_w;
        let sy = |y: f64| TOP + plot_h - y / y_axis.max * plot_h;

        let mut svg = String::new();
        let _ = write!(
            svg,
            r#"<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{t}" class="chart"><title>{t}</title><text x="{LEFT}" y="18" class="title">{t}</text>"#,
            t = escape(&self.title)
        );
        y_axis.write_grid(&mut svg, sy);
        // x ticks.
        let x_step = match self.x_axis {
            XAxis::Linear => nice_step(x_max - x_min, 8.0).max(1.0),
            XAxis::Percentile => 1.0,
        };
        let mut x = (x_min / x_step).ceil() * x_step;
        while x <= x_max + 1e-9 {
            let px = sx(x);
            let label = match self.x_axis {
                XAxis::Linear => number(x),
                XAxis::Percentile => percentile_label(x),
            };
            let _ = write!(
                svg,
                r#"<line x1="{px:.1}" x2="{px:.1}" y1="{TOP}" y2="{y2}" class="grid"/><text x="{px:.1}" y="{ty}" class="tick" text-anchor="middle">{label}</text>"#,
                y2 = TOP + plot_h,
                ty = TOP + plot_h + 16.0,
            );
            x += x_step;
        }
        let _ = write!(
            svg,
            r#"<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{b}" class="axis"/><line x1="{LEFT}" x2="{r}" y1="{b}" y2="{b}" class="axis"/><text x="{cx}" y="{ly}" class="label" text-anchor="middle">{xl}</text><text transform="translate(16 {cy}) rotate(-90)" class="label" text-anchor="middle">{yl}</text>"#,
            b = TOP + plot_h,
            r = WIDTH - RIGHT,
            cx = LEFT + plot_w / 2.0,
            ly = HEIGHT - 6.0,
            cy = TOP + plot_h / 2.0,
            xl = escape(&self.x_label),
            yl = escape(&self.y_label),
        );
        for (i, series) in self.series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let path: Vec<String> = series
                .points
                .iter()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y)))
                .collect();
            let _ = write!(
                svg,
                r#"<polyline fill="none" stroke="{color}" stroke-width="1.8" points="{}"><title>{}</title></polyline>"#,
                path.join(" "),
                escape(&series.name)
            );
            let lx = WIDTH - RIGHT - 150.0;
            let ly = TOP + 6.0 + i as f64 * 15.0;
            let _ = write!(
                svg,
                r#"<rect x="{lx}" y="{ry}" width="12" height="3" fill="{color}"/><text x="{tx}" y="{ty}" class="legend">{}</text>"#,
                escape(&series.name),
                ry = ly - 1.0,
                tx = lx + 16.0,
                ty = ly + 3.0,
            );
        }
        svg.push_str("</svg>");
        svg
    }
}

/// Points of a latency percentile plot from a histogram in microseconds: x on the
/// [`XAxis::Percentile`] scale (up to the resolution the count supports), y in ms.
pub fn percentile_points(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let top = (h.len() as f64).log10().clamp(1.0, 6.0);
    let steps = (top * 20.0) as usize;
    (0..=steps)
        .map(|i| {
            let x = top * i as f64 / steps as f64;
            let q = 1.0 - 10f64.powf(-x);
            (x, h.value_at_quantile(q) as f64 / 1000.0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_numbers() {
        assert_eq!(nice_step(100.0, 5.0), 20.0);
        assert_eq!(nice_step(7.0, 5.0), 2.0);
        assert_eq!(nice_step(0.3, 5.0), 0.1);
    }

    #[test]
    fn percentile_labels_follow_the_nines() {
        assert_eq!(percentile_label(0.0), "0%");
        assert_eq!(percentile_label(1.0), "90%");
        assert_eq!(percentile_label(2.0), "99%");
        assert_eq!(percentile_label(3.0), "99.9%");
    }

    #[test]
    fn the_svg_has_one_line_per_series_and_escapes_names() {
        let chart = LineChart {
            title: "a <b>".into(),
            x_label: "s".into(),
            y_label: "ms".into(),
            x_axis: XAxis::Linear,
            series: vec![
                Series {
                    name: "<script>".into(),
                    points: vec![(0.0, 1.0), (1.0, 3.0)],
                },
                Series {
                    name: "p95".into(),
                    points: vec![(0.0, 2.0), (1.0, f64::NAN)],
                },
            ],
        };
        let svg = chart.to_svg();
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(!svg.contains("<script>") && svg.contains("&lt;script&gt;"));
        assert!(!svg.contains("NaN"));
    }

    #[test]
    fn percentile_points_rise_to_the_maximum() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in 1..=10_000u64 {
            h.record(v).unwrap();
        }
        let points = percentile_points(&h);
        assert!(points
            .windows(2)
            .all(|w| w[0].1 <= w[1].1 && w[0].0 < w[1].0));
        let last = points.last().unwrap();
        assert!((last.0 - 4.0).abs() < 1e-9 && last.1 >= 9.99, "{last:?}");
    }
}
