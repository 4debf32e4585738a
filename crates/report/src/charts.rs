//! Charts as inline SVG, drawn with plotters' SVG backend: bars with error bars (speedups) and
//! lines (curves, CDFs, series over time). Titles live in the page around them; a chart
//! carries its axes, units and legend.

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::figures::Series;

/// Chart size in SVG pixels (the page scales it down on narrow screens).
const W: u32 = 660;
const H: u32 = 420;
const FONT: &str = "sans-serif";

/// Colours that stay apart for colour-blind readers (Okabe and Ito), the dark ones first.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(120, 120, 120),
    RGBColor(0, 0, 0),
];

/// The palette's grey, for a baseline drawn among the layouts compared with it.
pub const BASELINE_COLOUR: usize = 6;

/// Reference lines: grey, then black.
const REFERENCE: [RGBColor; 2] = [RGBColor(140, 140, 140), RGBColor(30, 30, 30)];

/// The colour of the `i`th series or bar.
pub fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// The colour as CSS, for legends and swatches in tables.
pub fn css_colour(i: usize) -> String {
    let RGBColor(r, g, b) = colour(i);
    format!("#{r:02x}{g:02x}{b:02x}")
}

const GRID: RGBColor = RGBColor(232, 232, 232);
const AXIS: RGBColor = RGBColor(90, 90, 90);

/// One bar: its label, its value and the range its whisker spans.
#[derive(Debug, Clone, PartialEq)]
pub struct BarSpec {
    /// Under the bar.
    pub label: String,
    /// Its height.
    pub value: f64,
    /// Whisker from, to.
    pub whisker: Option<(f64, f64)>,
    /// Index into the palette.
    pub colour: usize,
}

/// Bars rising or falling from a reference value (1× for speedups).
#[derive(Debug, Clone, PartialEq)]
pub struct Bars {
    /// The value axis' title, with its unit.
    pub y_title: String,
    /// The bars, left to right.
    pub bars: Vec<BarSpec>,
    /// Where bars start, drawn as a dashed line.
    pub reference: f64,
    /// What the reference line is.
    pub reference_label: String,
}

/// A line chart.
#[derive(Debug, Clone)]
pub struct Lines {
    /// The x axis' title, with its unit.
    pub x_title: String,
    /// The y axis' title, with its unit.
    pub y_title: String,
    /// The lines, each in its own colour.
    pub series: Vec<Series>,
    /// Horizontal dashed lines with their legends.
    pub references: Vec<(String, f64)>,
    /// Logarithmic x axis.
    pub x_log: bool,
    /// Start the y axis at 0 (else at the data with a margin).
    pub y_from_zero: bool,
    /// How x tick labels print.
    pub x_format: Ticks,
    /// How y tick labels print.
    pub y_format: Ticks,
}

impl Lines {
    /// Lines on linear axes, tick labels as plain numbers, no reference line.
    pub fn linear(x_title: &str, y_title: &str, series: Vec<Series>) -> Lines {
        Lines {
            x_title: x_title.into(),
            y_title: y_title.into(),
            series,
            references: Vec::new(),
            x_log: false,
            y_from_zero: false,
            x_format: Ticks::Plain,
            y_format: Ticks::Plain,
        }
    }
}

/// How an axis' tick labels print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ticks {
    /// A number with as many decimals as the axis' span needs.
    Plain,
    /// A speedup (`1.25×`).
    Times,
    /// Nanoseconds in the unit that fits (`120 µs`).
    Latency,
}

impl Ticks {
    fn label(self, v: f64, decimals: usize) -> String {
        let number = || {
            let s = format!("{v:.decimals$}");
            if s.contains('.') {
                s.trim_end_matches('0').trim_end_matches('.').to_string()
            } else {
                s
            }
        };
        match self {
            Ticks::Plain => number(),
            Ticks::Times => format!("{}×", number()),
            Ticks::Latency => latency(v),
        }
    }
}

/// Decimals that tell ticks about an eighth of `lo..hi` apart.
fn decimals(lo: f64, hi: f64) -> usize {
    let step = (hi - lo).abs() / 8.0;
    if step > 0.0 && step.is_finite() {
        (-step.log10().floor()).clamp(0.0, 6.0) as usize
    } else {
        2
    }
}

/// A tick label with few digits.
pub fn plain(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}").trim_end_matches(".0").to_string()
    } else {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Nanoseconds as a tick label in the unit that fits.
pub fn latency(v: f64) -> String {
    crate::fmt::ns(v).replace(".00 ", " ").replace(".0 ", " ")
}

type Res = Result<(), String>;

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// The SVG plotters wrote, made fit to sit inside an HTML page: the namespace attribute is
/// implied by HTML, and leaving it out keeps the page free of any URL.
fn finish(svg: String, drawn: Res) -> String {
    match drawn {
        Ok(()) => svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1),
        Err(e) => format!(
            "<p class=\"chart-error\">This chart could not be drawn: {}</p>",
            crate::html::escape(&e)
        ),
    }
}

fn span(lo: f64, hi: f64, from_zero: bool) -> (f64, f64) {
    let (lo, hi) = if from_zero {
        (lo.min(0.0), hi)
    } else {
        (lo, hi)
    };
    let pad = if hi > lo {
        (hi - lo) * 0.08
    } else {
        hi.abs().max(1.0) * 0.1
    };
    let lo = if from_zero && lo >= 0.0 {
        0.0
    } else {
        lo - pad
    };
    (lo, hi + pad)
}

/// Margins and label areas every chart shares.
fn frame<'a, 'b, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, plotters::coord::Shift>,
) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(root);
    b.margin(16)
        .margin_right(24)
        .x_label_area_size(52)
        .y_label_area_size(72);
    b
}

/// Most bars one chart draws (more would not be readable).
const MAX_BARS: usize = 48;

/// The bars' slots on the x axis.
static SLOTS: [usize; MAX_BARS] = {
    let mut a = [0; MAX_BARS];
    let mut i = 0;
    while i < MAX_BARS {
        a[i] = i;
        i += 1;
    }
    a
};

/// Bars with whiskers, as SVG.
pub fn bars(spec: &Bars) -> String {
    let mut svg = String::new();
    let drawn = draw_bars(&mut svg, spec);
    finish(svg, drawn)
}

fn draw_bars(svg: &mut String, spec: &Bars) -> Res {
    let n = spec.bars.len().clamp(1, MAX_BARS);
    let values = spec
        .bars
        .iter()
        .flat_map(|b| {
            let (l, h) = b.whisker.unwrap_or((b.value, b.value));
            [b.value, l, h]
        })
        .chain([spec.reference]);
    let lo = values.clone().fold(f64::INFINITY, f64::min);
    let hi = values.fold(f64::NEG_INFINITY, f64::max);
    let (y0, y1) = span(lo, hi, false);
    // Room for the value labels: above gains, below losses.
    let room = (y1 - y0) * 0.07;
    let y1 = y1 + room;
    let y0 = if spec.bars.iter().any(|b| b.value < spec.reference) {
        y0 - room
    } else {
        y0
    };
    // One slot per bar, as a slice: a range of indices would add an empty slot at its end.
    let slots = &SLOTS[..n];
    let root = SVGBackend::with_string(svg, (W, H)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = frame(&root)
        .build_cartesian_2d(slots.into_segmented(), y0..y1)
        .map_err(err)?;
    let labels: Vec<String> = spec.bars.iter().map(|b| b.label.clone()).collect();
    let label_of = |v: &SegmentValue<&usize>| match v {
        SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
            labels.get(**i).cloned().unwrap_or_default()
        }
        SegmentValue::Last => String::new(),
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(WHITE)
        .bold_line_style(GRID)
        .axis_style(AXIS)
        .x_labels(n)
        .x_label_formatter(&label_of)
        .y_label_formatter(&|v| Ticks::Times.label(*v, decimals(y0, y1)))
        .x_label_style((FONT, 15))
        .y_label_style((FONT, 15))
        .y_desc(spec.y_title.as_str())
        .axis_desc_style((FONT, 16))
        .draw()
        .map_err(err)?;
    chart
        .draw_series(spec.bars.iter().take(n).enumerate().map(|(i, b)| {
            let right = slots
                .get(i + 1)
                .map_or(SegmentValue::Last, SegmentValue::Exact);
            let mut r = Rectangle::new(
                [
                    (SegmentValue::Exact(&slots[i]), spec.reference),
                    (right, b.value),
                ],
                colour(b.colour).mix(0.85).filled(),
            );
            // Bars at most 160 px wide, with room between them.
            let slot = (W - 110) / n as u32;
            let gap = (slot - (slot * 3 / 5).min(160)) / 2;
            r.set_margin(0, 0, gap, gap);
            r
        }))
        .map_err(err)?;
    // Whiskers: a line from the lowest to the highest per-round ratio, with caps.
    let whisker = AXIS.stroke_width(2);
    for (i, b) in spec.bars.iter().take(n).enumerate() {
        let Some((l, h)) = b.whisker.filter(|(l, h)| h > l) else {
            continue;
        };
        let x = SegmentValue::CenterOf(&slots[i]);
        chart
            .draw_series([PathElement::new([(x.clone(), l), (x.clone(), h)], whisker)])
            .map_err(err)?;
        for y in [l, h] {
            chart
                .draw_series([
                    EmptyElement::at((x.clone(), y)) + PathElement::new([(-8, 0), (8, 0)], whisker)
                ])
                .map_err(err)?;
        }
    }
    let style = TextStyle::from((FONT, 15).into_font()).color(&BLACK);
    let gap = (y1 - y0) * 0.015;
    chart
        .draw_series(spec.bars.iter().take(n).enumerate().map(|(i, b)| {
            let (lo, hi) = b.whisker.unwrap_or((b.value, b.value));
            let (y, v) = if b.value >= spec.reference {
                (hi.max(b.value) + gap, VPos::Bottom)
            } else {
                (lo.min(b.value) - gap, VPos::Top)
            };
            Text::new(
                format!("{:.2}×", b.value),
                (SegmentValue::CenterOf(&slots[i]), y),
                style.pos(Pos::new(HPos::Center, v)),
            )
        }))
        .map_err(err)?;
    chart
        .draw_series(DashedLineSeries::new(
            [
                (SegmentValue::Exact(&slots[0]), spec.reference),
                (SegmentValue::Last, spec.reference),
            ],
            6,
            4,
            AXIS.stroke_width(1),
        ))
        .map_err(err)?
        .label(spec.reference_label.as_str())
        .legend(|(x, y)| DashedPathElement::new([(x, y), (x + 20, y)], 6, 4, AXIS));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font((FONT, 15))
        .background_style(WHITE.mix(0.9))
        .border_style(GRID)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

/// Lines with point markers, as SVG.
pub fn lines(spec: &Lines) -> String {
    let mut svg = String::new();
    let xs = spec
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0));
    let ys = spec
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(spec.references.iter().map(|r| r.1));
    let x_lo = xs.clone().fold(f64::INFINITY, f64::min);
    let x_hi = xs.fold(f64::NEG_INFINITY, f64::max);
    let y_lo = ys.clone().fold(f64::INFINITY, f64::min);
    let y_hi = ys.fold(f64::NEG_INFINITY, f64::max);
    let legend = legend_corner(spec, (x_lo, x_hi), (y_lo, y_hi));
    let drawn = if !x_lo.is_finite() || !y_lo.is_finite() {
        Err("no points".to_string())
    } else if spec.x_log && x_lo > 0.0 && x_hi >= x_lo * 10.0 {
        // Log ticks need a decade at least; a narrower span stays linear.
        let digits = if x_lo < 1.0 { 2 } else { 0 };
        draw_lines(
            &mut svg,
            spec,
            (x_lo / 1.25..x_hi * 1.25).log_scale(),
            (y_lo, y_hi),
            legend,
            digits,
            true,
        )
    } else {
        let (lo, hi) = if x_hi > x_lo {
            (x_lo, x_hi)
        } else {
            (x_lo - 1.0, x_hi + 1.0)
        };
        let pad = (hi - lo) * 0.03;
        let digits = decimals(lo, hi);
        draw_lines(
            &mut svg,
            spec,
            lo - pad..hi + pad,
            (y_lo, y_hi),
            legend,
            digits,
            true,
        )
    };
    finish(svg, drawn)
}

/// The corner of the plot that the fewest points (and reference lines) fall in, for the
/// legend.
fn legend_corner(
    spec: &Lines,
    (x_lo, x_hi): (f64, f64),
    (y_lo, y_hi): (f64, f64),
) -> SeriesLabelPosition {
    let fx = |x: f64| {
        let (x, lo, hi) = if spec.x_log {
            (x.max(1e-9).ln(), x_lo.max(1e-9).ln(), x_hi.max(1e-9).ln())
        } else {
            (x, x_lo, x_hi)
        };
        if hi > lo {
            (x - lo) / (hi - lo)
        } else {
            0.5
        }
    };
    let fy = |y: f64| {
        if y_hi > y_lo {
            (y - y_lo) / (y_hi - y_lo)
        } else {
            0.5
        }
    };
    let mut pts: Vec<(f64, f64)> = spec
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| (fx(p.0), fy(p.1))))
        .collect();
    for (_, y) in &spec.references {
        pts.extend([0.0, 0.25, 0.5, 0.75, 1.0].map(|x| (x, fy(*y))));
    }
    let corners = [
        (SeriesLabelPosition::UpperLeft, false, true),
        (SeriesLabelPosition::UpperRight, true, true),
        (SeriesLabelPosition::LowerRight, true, false),
        (SeriesLabelPosition::LowerLeft, false, false),
    ];
    let crowd = |right: bool, upper: bool| {
        pts.iter()
            .filter(|(x, y)| {
                (if right { *x > 0.55 } else { *x < 0.45 })
                    && (if upper { *y > 0.6 } else { *y < 0.4 })
            })
            .count()
    };
    corners
        .into_iter()
        .min_by_key(|(_, r, u)| crowd(*r, *u))
        .map_or(SeriesLabelPosition::UpperLeft, |c| c.0)
}

fn draw_lines<X>(
    svg: &mut String,
    spec: &Lines,
    x: X,
    (y_lo, y_hi): (f64, f64),
    legend: SeriesLabelPosition,
    x_decimals: usize,
    log: bool,
) -> Res
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
{
    let (y0, y1) = span(y_lo, y_hi, spec.y_from_zero);
    let root = SVGBackend::with_string(svg, (W, H)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = frame(&root).build_cartesian_2d(x, y0..y1).map_err(err)?;
    let (xf, yf) = (spec.x_format, spec.y_format);
    let yd = decimals(y0, y1);
    let x_title = match (log, spec.x_title.strip_suffix(')')) {
        (false, _) => spec.x_title.clone(),
        (true, Some(open)) => format!("{open}, log scale)"),
        (true, None) => format!("{} (log scale)", spec.x_title),
    };
    chart
        .configure_mesh()
        .light_line_style(WHITE)
        .bold_line_style(GRID)
        .axis_style(AXIS)
        .x_labels(8)
        .y_labels(8)
        .x_label_formatter(&|v| xf.label(*v, x_decimals))
        .y_label_formatter(&|v| yf.label(*v, yd))
        .x_label_style((FONT, 15))
        .y_label_style((FONT, 15))
        .x_desc(x_title.as_str())
        .y_desc(spec.y_title.as_str())
        .axis_desc_style((FONT, 16))
        .draw()
        .map_err(err)?;
    for s in &spec.series {
        let c = colour(s.colour);
        chart
            .draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(3)))
            .map_err(err)?
            .label(s.name.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], c.stroke_width(3)));
        chart
            .draw_series(s.points.iter().map(|p| Circle::new(*p, 4, c.filled())))
            .map_err(err)?;
    }
    for (j, (name, y)) in spec.references.iter().enumerate() {
        let c = REFERENCE[j % REFERENCE.len()];
        let (a, b) = x_ends(&chart);
        chart
            .draw_series(DashedLineSeries::new(
                [(a, *y), (b, *y)],
                8,
                5,
                c.stroke_width(2),
            ))
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| DashedPathElement::new([(x, y), (x + 20, y)], 6, 4, c));
    }
    chart
        .configure_series_labels()
        .position(legend)
        .label_font((FONT, 15))
        .background_style(WHITE.mix(0.9))
        .border_style(GRID)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

/// The x values at the plot's left and right edges.
fn x_ends<DB: DrawingBackend, X: Ranged<ValueType = f64>, Y: Ranged>(
    chart: &ChartContext<'_, DB, Cartesian2d<X, Y>>,
) -> (f64, f64) {
    let r = chart.x_range();
    (r.start, r.end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_print_short() {
        assert_eq!(plain(1.0), "1");
        assert_eq!(plain(1.25), "1.25");
        assert_eq!(plain(12.0), "12");
        assert_eq!(plain(250.0), "250");
        assert_eq!(Ticks::Times.label(1.5, 2), "1.5×");
        assert_eq!(Ticks::Plain.label(1.0004, 3), "1");
        assert_eq!(decimals(1.0, 1.001), 4);
        assert_eq!(decimals(0.0, 100.0), 0);
    }

    #[test]
    fn a_chart_is_svg_without_urls() {
        let svg = bars(&Bars {
            y_title: "speedup".into(),
            bars: vec![BarSpec {
                label: "thp".into(),
                value: 1.3,
                whisker: Some((1.2, 1.4)),
                colour: 0,
            }],
            reference: 1.0,
            reference_label: "baseline".into(),
        });
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(!svg.contains("http"));
        assert!(svg.contains("<rect"));
    }
}
