//! Small charts drawn with plotters into SVG, shown inline.
//!
//! [`Figure`] covers line and scatter plots (optionally log-scaled), [`BarChart`] labelled
//! bars, and [`crossover_plot`] the "when does the GPU start to win" picture. Each is a
//! builder that ends in a value implementing [`Rich`]: leave it as a cell's last expression,
//! or call `display(&fig)` once per figure to show several in one cell.
//!
//! Text is emitted as SVG `<text>` (no font files needed at build or run time); the browser
//! picks the font, so label extents are estimated.

use crate::display::{MimeBundle, Rich};
use plotters::coord::ranged1d::ValueFormatter;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::time::Duration;

/// Numbers a plot can take: floats, integers, and durations (as seconds).
pub trait PlotValue: Copy {
    fn to_f64(self) -> f64;
}

macro_rules! plot_value_as {
    ($($t:ty),*) => { $(impl PlotValue for $t { fn to_f64(self) -> f64 { self as f64 } })* };
}
plot_value_as!(f64, f32, i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

impl PlotValue for Duration {
    fn to_f64(self) -> f64 {
        self.as_secs_f64()
    }
}

// matplotlib's "tab10" cycle: distinct, colour-blind-friendly enough, and familiar.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn palette(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Line,
    Scatter,
    LinePoints,
}

#[derive(Clone, Debug)]
struct Series {
    name: String,
    kind: Kind,
    points: Vec<(f64, f64)>,
}

/// A line/scatter chart, built up call by call.
///
/// ```
/// # use gpulab::*;
/// let n = [1.0, 10.0, 100.0];
/// let fig = Figure::new("Time against size")
///     .xlabel("elements").ylabel("seconds").log_x().log_y()
///     .line("CPU", &n, &[1e-6, 1e-5, 1e-4])
///     .scatter("GPU", &n, &[2e-5, 2e-5, 3e-5]);
/// assert!(fig.to_svg().starts_with("<svg"));
/// ```
#[derive(Clone, Debug)]
pub struct Figure {
    title: String,
    xlabel: String,
    ylabel: String,
    log_x: bool,
    log_y: bool,
    width: u32,
    height: u32,
    series: Vec<Series>,
    vlines: Vec<(f64, String)>,
}

impl Figure {
    pub fn new(title: impl Into<String>) -> Self {
        Figure {
            title: title.into(),
            xlabel: String::new(),
            ylabel: String::new(),
            log_x: false,
            log_y: false,
            width: 640,
            height: 400,
            series: Vec::new(),
            vlines: Vec::new(),
        }
    }

    pub fn xlabel(mut self, label: impl Into<String>) -> Self {
        self.xlabel = label.into();
        self
    }

    pub fn ylabel(mut self, label: impl Into<String>) -> Self {
        self.ylabel = label.into();
        self
    }

    pub fn log_x(mut self) -> Self {
        self.log_x = true;
        self
    }

    pub fn log_y(mut self) -> Self {
        self.log_y = true;
        self
    }

    /// Size in pixels (default 640×400).
    pub fn size(mut self, width: u32, height: u32) -> Self {
        self.width = width.max(100);
        self.height = height.max(80);
        self
    }

    fn add<X: PlotValue, Y: PlotValue>(
        mut self,
        name: &str,
        kind: Kind,
        xs: &[X],
        ys: &[Y],
    ) -> Self {
        // Chained builders have no Result to return: a clear panic, which the kernel shows as
        // the cell's error and survives with every variable kept.
        assert!(
            xs.len() == ys.len(),
            "series {name:?}: {} x values but {} y values (one y per x)",
            xs.len(),
            ys.len()
        );
        let points = xs
            .iter()
            .zip(ys)
            .map(|(x, y)| (x.to_f64(), y.to_f64()))
            .collect();
        self.series.push(Series {
            name: name.to_string(),
            kind,
            points,
        });
        self
    }

    /// A connected line through `(xs[i], ys[i])`.
    pub fn line<X: PlotValue, Y: PlotValue>(self, name: &str, xs: &[X], ys: &[Y]) -> Self {
        self.add(name, Kind::Line, xs, ys)
    }

    /// Unconnected markers.
    pub fn scatter<X: PlotValue, Y: PlotValue>(self, name: &str, xs: &[X], ys: &[Y]) -> Self {
        self.add(name, Kind::Scatter, xs, ys)
    }

    /// A line with a marker at every point (good for measured sizes).
    pub fn line_points<X: PlotValue, Y: PlotValue>(self, name: &str, xs: &[X], ys: &[Y]) -> Self {
        self.add(name, Kind::LinePoints, xs, ys)
    }

    /// A labelled vertical marker at `x` (e.g. a crossover size).
    pub fn vline(mut self, x: f64, label: impl Into<String>) -> Self {
        self.vlines.push((x, label.into()));
        self
    }

    pub fn series_count(&self) -> usize {
        self.series.len()
    }

    /// Renders to a standalone SVG document.
    pub fn to_svg(&self) -> String {
        render_svg(self.width, self.height, |root| {
            let xs = self
                .series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.0))
                .chain(self.vlines.iter().map(|v| v.0));
            let ys = self
                .series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.1));
            let (x0, x1) = axis_range(xs, self.log_x);
            let (y0, y1) = axis_range(ys, self.log_y);
            let xfmt = tick_formatter(x0, x1, self.log_x);
            let yfmt = tick_formatter(y0, y1, self.log_y);
            let (xf, yf) = (xfmt.as_ref(), yfmt.as_ref());
            match (self.log_x, self.log_y) {
                (false, false) => self.draw(root, x0..x1, y0..y1, xf, yf),
                (true, false) => self.draw(root, log_axis(x0, x1), y0..y1, xf, yf),
                (false, true) => self.draw(root, x0..x1, log_axis(y0, y1), xf, yf),
                (true, true) => self.draw(root, log_axis(x0, x1), log_axis(y0, y1), xf, yf),
            }
        })
    }

    fn draw<XR, YR, XC, YC>(
        &self,
        root: &DrawingArea<SVGBackend, plotters::coord::Shift>,
        xr: XR,
        yr: YR,
        xfmt: &dyn Fn(&f64) -> String,
        yfmt: &dyn Fn(&f64) -> String,
    ) -> Result<(), Box<dyn std::error::Error + '_>>
    where
        XR: plotters::coord::ranged1d::AsRangedCoord<CoordDescType = XC, Value = f64>,
        YR: plotters::coord::ranged1d::AsRangedCoord<CoordDescType = YC, Value = f64>,
        XC: Ranged<ValueType = f64> + ValueFormatter<f64>,
        YC: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(xr, yr)?;
        let mut mesh = chart.configure_mesh();
        mesh.x_label_formatter(xfmt)
            .y_label_formatter(yfmt)
            .light_line_style(RGBColor(235, 235, 235));
        if !self.xlabel.is_empty() {
            mesh.x_desc(self.xlabel.as_str());
        }
        if !self.ylabel.is_empty() {
            mesh.y_desc(self.ylabel.as_str());
        }
        mesh.draw()?;

        let usable = |p: &(f64, f64)| {
            p.0.is_finite()
                && p.1.is_finite()
                && (!self.log_x || p.0 > 0.0)
                && (!self.log_y || p.1 > 0.0)
        };
        for (i, s) in self.series.iter().enumerate() {
            let color = palette(i);
            let pts: Vec<(f64, f64)> = s.points.iter().copied().filter(usable).collect();
            let line = matches!(s.kind, Kind::Line | Kind::LinePoints);
            let marks = matches!(s.kind, Kind::Scatter | Kind::LinePoints);
            if line {
                let anno =
                    chart.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?;
                if !s.name.is_empty() {
                    anno.label(s.name.as_str()).legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                    });
                }
            }
            if marks {
                let anno =
                    chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
                if !line && !s.name.is_empty() {
                    anno.label(s.name.as_str())
                        .legend(move |(x, y)| Circle::new((x + 9, y), 3, color.filled()));
                }
            }
        }
        // Marker labels go at the bottom of the plot: the title sits above it and the legend
        // in its upper left, where a label at the top used to land on both. A label runs
        // right of its line unless that would leave the plot, and stacks above any earlier
        // label it would overlap; a pale backing keeps it readable over the curves.
        let y_range = chart.y_range();
        let (plot_x, plot_y) = chart.plotting_area().get_pixel_range();
        let gray = RGBColor(90, 90, 90);
        let px: f64 = 13.0 / 1.24;
        let line_h = (px * 1.3).ceil() as i32;
        let mut placed: Vec<(i32, i32, i32)> = Vec::new();
        for (x, label) in &self.vlines {
            if !x.is_finite() || (self.log_x && *x <= 0.0) {
                continue;
            }
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(*x, y_range.start), (*x, y_range.end)],
                gray.stroke_width(1),
            )))?;
            if label.is_empty() {
                continue;
            }
            let w = (label.chars().count() as f64 * 0.6 * px).ceil() as i32;
            let (lx, _) = chart.backend_coord(&(*x, y_range.start));
            let x0 = if lx + 4 + w <= plot_x.end {
                lx + 4
            } else {
                (lx - 4 - w).max(plot_x.start)
            };
            let x1 = x0 + w;
            let mut row = 0;
            while placed.iter().any(|&(a, b, r)| r == row && a < x1 && x0 < b) {
                row += 1;
            }
            placed.push((x0, x1, row));
            let bottom = plot_y.end - 4 - row * line_h;
            root.draw(&Rectangle::new(
                [(x0 - 2, bottom - line_h + 2), (x1 + 2, bottom + 2)],
                WHITE.mix(0.8).filled(),
            ))?;
            let style = ("sans-serif", 13)
                .into_font()
                .color(&gray)
                .pos(Pos::new(HPos::Left, VPos::Bottom));
            root.draw(&Text::new(label.clone(), (x0, bottom), style))?;
        }
        if self.series.iter().any(|s| !s.name.is_empty()) {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(200, 200, 200))
                .draw()?;
        }
        Ok(())
    }

    /// Writes the SVG to a file.
    pub fn save(&self, path: impl AsRef<std::path::Path>) -> std::io::Result<()> {
        std::fs::write(path, self.to_svg())
    }
}

impl Rich for Figure {
    fn mime_bundle(&self) -> MimeBundle {
        MimeBundle::new().with("image/svg+xml", self.to_svg()).with(
            "text/plain",
            format!("<Figure {:?}: {} series>", self.title, self.series.len()),
        )
    }
}

/// Tick labels for an axis over `lo..hi`.
///
/// Linear ticks come from plotters, which reaches them by adding up a step, so the one meant
/// to be zero can arrive as -2.2e-16 and others as 0.6000000000000001. Rounding each tick to
/// a thousandth of the axis span removes that noise and still tells neighbours apart.
/// Decade ticks on a log axis are exact (see [`log_axis`]); below 0.01 they are written
/// `1e-3`, `1e-4`, ... where the plain form would be a run of zeros to count, and above it as
/// [`short_number`] writes them: `0.01`, `1`, `1k`, `100k`.
fn tick_formatter(lo: f64, hi: f64, log: bool) -> Box<dyn Fn(&f64) -> String> {
    if log {
        return Box::new(|v| {
            if v.abs() < 0.01 {
                scientific(*v, 3)
            } else {
                short_number(*v)
            }
        });
    }
    let span = (hi - lo).abs();
    let quantum = if span > 0.0 && span.is_finite() {
        10f64.powf(span.log10().floor() - 3.0)
    } else {
        1e-9
    };
    Box::new(move |v| {
        let q = (v / quantum).round() * quantum;
        if q.abs() < quantum / 2.0 {
            return "0".into();
        }
        let sig = (q.abs().log10().floor() - quantum.log10().round()) as i64 + 1;
        number_with(q, sig.clamp(1, 15) as usize)
    })
}

/// `m`·10^`k`, read from its decimal text so that it is the double closest to the exact
/// value (`10f64.powi(-3)` is not, and plotters' own decade search then skips 0.001).
fn decade(m: u32, k: i32) -> f64 {
    format!("{m}e{k}").parse().unwrap()
}

/// Log-scaled axis over `lo..hi` with ticks chosen here: a labelled tick at every decade in
/// range, the lowest included, and light grid lines at 2..9 times each decade. An axis that
/// spans less than two decades also labels 2× and 5× (or every multiple) so that it never
/// shows a single number.
fn log_axis(
    lo: f64,
    hi: f64,
) -> plotters::coord::combinators::WithKeyPoints<plotters::coord::combinators::LogCoord<f64>> {
    use plotters::coord::combinators::BindKeyPoints;
    // The slack absorbs log10's rounding at exact decades (log10(1e-3) may not be -3).
    let k0 = (lo.log10() - 1e-9).ceil() as i32 - 1;
    let k1 = (hi.log10() + 1e-9).floor() as i32;
    let inside = |v: &f64| *v >= lo * (1.0 - 1e-12) && *v <= hi * (1.0 + 1e-12);
    let with = |ms: &[u32]| -> Vec<f64> {
        (k0..=k1)
            .flat_map(|k| ms.iter().map(move |&m| decade(m, k)))
            .filter(inside)
            .collect()
    };
    let decades = with(&[1]);
    let mut bold = decades.clone();
    if bold.len() < 2 {
        bold = with(&[1, 2, 5]);
    }
    if bold.len() < 2 {
        bold = with(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }
    // More than about ten labels would collide on a narrow axis; keep every n-th decade.
    let stride = bold.len().div_ceil(10).max(1);
    if stride > 1 {
        bold = bold.into_iter().step_by(stride).collect();
    }
    let light = if decades.len() <= 8 {
        with(&[2, 3, 4, 5, 6, 7, 8, 9])
    } else {
        decades
    };
    (lo..hi)
        .log_scale()
        .with_key_points(bold)
        .with_light_points(light)
}

/// Axis bounds covering `values` with a little air; on a log axis only positive values
/// count and the bounds widen to whole decades when the data span several.
/// A standalone SVG document of `width` x `height` drawn by `draw`. Drawing into a String
/// cannot fail for I/O reasons; a failure here would be a plotters layout bug, and a chart
/// with an error note beats a panic in a notebook.
fn render_svg<E: std::fmt::Display>(
    width: u32,
    height: u32,
    draw: impl FnOnce(&DrawingArea<SVGBackend, plotters::coord::Shift>) -> Result<(), E>,
) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        if let Err(e) = draw(&root) {
            let _ = root.draw(&Text::new(
                format!("plot error: {e}"),
                (10, 10),
                ("sans-serif", 14),
            ));
        }
        let _ = root.present();
    }
    svg
}

fn axis_range(values: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if lo > hi {
        return if log { (1.0, 10.0) } else { (0.0, 1.0) };
    }
    if log {
        if hi / lo < 10.0 {
            (lo / 2.0, hi * 2.0)
        } else {
            (
                decade(1, lo.log10().floor() as i32),
                decade(1, hi.log10().ceil() as i32),
            )
        }
    } else if lo == hi {
        (lo - 1.0, hi + 1.0)
    } else {
        let pad = (hi - lo) * 0.05;
        (lo - pad, hi + pad)
    }
}

/// How every number on a chart is written (value labels, marker labels, speed-ups): three
/// significant digits with trailing zeros dropped, so small measurements keep their leading
/// digits (0.0046, 35.9, 4.07, 885).
///
/// - `1e-3 <= |v| < 1e3`: plain decimals (`0.001`, `0.5`, `35.9`, `885`);
/// - `1e3 <= |v| < 1e12`: SI suffixes k, M, G (`1.23k`, `101k`, `2.5M`);
/// - anything smaller or larger: scientific, `4.6e-4`, `1e-9`, `3e12`.
pub fn short_number(v: f64) -> String {
    number_with(v, 3)
}

/// [`short_number`] with `sig` significant digits instead of three.
fn number_with(v: f64, sig: usize) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    // Round first: 999.96 becomes 1000 and must then be written "1k", not "1000".
    let r = round_sig(v, sig);
    let a = r.abs();
    if r == 0.0 {
        "0".into()
    } else if !(1e-3..1e12).contains(&a) {
        scientific(r, sig)
    } else {
        let (scaled, suffix) = match a {
            a if a >= 1e9 => (r / 1e9, "G"),
            a if a >= 1e6 => (r / 1e6, "M"),
            a if a >= 1e3 => (r / 1e3, "k"),
            _ => (r, ""),
        };
        let int_digits = scaled.abs().log10().floor() as i64 + 1;
        let decimals = (sig as i64 - int_digits).max(0) as usize;
        trim(format!("{scaled:.decimals$}")) + suffix
    }
}

fn round_sig(v: f64, sig: usize) -> f64 {
    // Going through the decimal text rounds the way the reader expects (35.925 -> 35.9),
    // where scaling by powers of ten would add binary noise of its own.
    format!("{:.*e}", sig.max(1) - 1, v).parse().unwrap_or(v)
}

fn scientific(v: f64, sig: usize) -> String {
    let s = format!("{:.*e}", sig.max(1) - 1, v);
    match s.split_once('e') {
        Some((mantissa, exp)) => format!("{}e{exp}", trim(mantissa.to_string())),
        None => s,
    }
}

fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Labelled vertical bars.
#[derive(Clone, Debug)]
pub struct BarChart {
    title: String,
    ylabel: String,
    labels: Vec<String>,
    values: Vec<f64>,
    log_y: bool,
    width: u32,
    height: u32,
    value_labels: Vec<String>,
}

/// Bars of `values`, one per label.
pub fn bar_chart<L: AsRef<str>, V: PlotValue>(title: &str, labels: &[L], values: &[V]) -> BarChart {
    assert!(
        labels.len() == values.len(),
        "bar_chart {title:?}: {} labels but {} values (one value per label)",
        labels.len(),
        values.len()
    );
    BarChart {
        title: title.to_string(),
        ylabel: String::new(),
        labels: labels.iter().map(|l| l.as_ref().to_string()).collect(),
        values: values.iter().map(|v| v.to_f64()).collect(),
        log_y: false,
        width: 640,
        height: 400,
        value_labels: Vec::new(),
    }
}

impl BarChart {
    pub fn ylabel(mut self, label: impl Into<String>) -> Self {
        self.ylabel = label.into();
        self
    }

    /// Log-scaled bars, for values spanning orders of magnitude (CPU vs GPU times).
    pub fn log_y(mut self) -> Self {
        self.log_y = true;
        self
    }

    pub fn size(mut self, width: u32, height: u32) -> Self {
        self.width = width.max(100);
        self.height = height.max(80);
        self
    }

    /// Text written above each bar (e.g. "12.3x"); defaults to the value itself.
    pub fn value_labels<L: AsRef<str>>(mut self, labels: &[L]) -> Self {
        self.value_labels = labels.iter().map(|l| l.as_ref().to_string()).collect();
        self
    }

    pub fn to_svg(&self) -> String {
        render_svg(self.width, self.height, |root| {
            let (lo, hi) = axis_range(self.values.iter().copied(), self.log_y);
            let n = self.values.len().max(1);
            if self.log_y {
                let yfmt = tick_formatter(lo, hi * 1.5, true);
                self.draw(root, n, lo, log_axis(lo, hi * 1.5), yfmt.as_ref())
            } else {
                let top = hi.max(0.0) * 1.1 + f64::MIN_POSITIVE;
                let yfmt = tick_formatter(0.0, top, false);
                self.draw(root, n, 0.0, 0.0..top, yfmt.as_ref())
            }
        })
    }

    fn draw<YR, YC>(
        &self,
        root: &DrawingArea<SVGBackend, plotters::coord::Shift>,
        n: usize,
        base: f64,
        yr: YR,
        yfmt: &dyn Fn(&f64) -> String,
    ) -> Result<(), Box<dyn std::error::Error + '_>>
    where
        YR: plotters::coord::ranged1d::AsRangedCoord<CoordDescType = YC, Value = f64>,
        YC: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        root.fill(&WHITE)?;
        // The names are laid out before the chart exists, because their height decides the
        // size of the area under the axis; the plot's width is the picture's less the margins
        // and the y label area.
        let slot = (root.dim_in_pixel().0 as f64 - 2.0 * 12.0 - 64.0) / n as f64;
        let names = NameLayout::fit(&self.labels, slot);
        // An x axis of 0..n with bar i over [i, i+1]: a segmented axis over 0..n has n+1
        // slots (its integer range includes n), which left an empty slot and tick at the end.
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(names.area_height())
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..n as f64, yr)?;
        let mut mesh = chart.configure_mesh();
        if !self.ylabel.is_empty() {
            mesh.y_desc(self.ylabel.as_str());
        }
        mesh.disable_x_mesh()
            .x_labels(0)
            .x_label_formatter(&|_| String::new())
            .y_label_formatter(yfmt)
            .draw()?;
        chart.draw_series(
            self.values
                .iter()
                .enumerate()
                .filter(|(_, v)| v.is_finite())
                .map(|(i, &v)| {
                    let mut bar = Rectangle::new(
                        [(i as f64, base), (i as f64 + 1.0, v.max(base))],
                        palette(i).filled(),
                    );
                    bar.set_margin(0, 0, 8, 8);
                    bar
                }),
        )?;
        chart.draw_series(
            self.values
                .iter()
                .enumerate()
                .filter(|(_, v)| v.is_finite())
                .map(|(i, &v)| {
                    let text = self
                        .value_labels
                        .get(i)
                        .cloned()
                        .unwrap_or_else(|| short_number(v));
                    Text::new(
                        text,
                        (i as f64 + 0.5, v.max(base)),
                        TextStyle::from(("sans-serif", 13).into_font())
                            .pos(Pos::new(HPos::Center, VPos::Bottom)),
                    )
                }),
        )?;
        let axis_y = chart.plotting_area().get_pixel_range().1.end;
        let style = TextStyle::from(("sans-serif", names.size).into_font())
            .pos(Pos::new(HPos::Center, VPos::Top));
        for (i, lines) in names.lines.iter().enumerate() {
            let (cx, _) = chart.backend_coord(&(i as f64 + 0.5, base));
            for (j, line) in lines.iter().enumerate().filter(|(_, l)| !l.is_empty()) {
                let y = axis_y + NAME_GAP + (j as f64 * names.line_height()).round() as i32;
                root.draw(&Text::new(line.clone(), (cx, y), style.clone()))?;
            }
        }
        Ok(())
    }

    pub fn save(&self, path: impl AsRef<std::path::Path>) -> std::io::Result<()> {
        std::fs::write(path, self.to_svg())
    }
}

/// Pixels between the x axis and the first line of bar names.
const NAME_GAP: i32 = 6;

/// Bar names broken into lines that fit their bar's slot.
///
/// Text widths are estimated at 0.6 em per character, wider than the usual sans-serif
/// fonts, so that the estimate errs towards space between names whichever font the
/// browser picks.
struct NameLayout {
    /// plotters' font size (the SVG gets this divided by 1.24).
    size: f64,
    lines: Vec<Vec<String>>,
}

impl NameLayout {
    fn px(size: f64) -> f64 {
        size / 1.24
    }

    /// The largest font, from 13 down to 10, at which every name fits its slot in at most
    /// three lines without breaking a word; failing that, the smallest font with words
    /// broken where they must be.
    fn fit(labels: &[String], slot: f64) -> NameLayout {
        let mut layout = NameLayout {
            size: 13.0,
            lines: Vec::new(),
        };
        for size in [13.0, 12.0, 11.0, 10.0] {
            let max_chars = (((slot - 8.0) / (0.6 * Self::px(size))).floor() as usize).max(1);
            let whole_words = labels
                .iter()
                .all(|l| l.split_whitespace().all(|w| w.chars().count() <= max_chars));
            layout = NameLayout {
                size,
                lines: labels.iter().map(|l| wrap(l, max_chars)).collect(),
            };
            if whole_words && layout.lines.iter().all(|l| l.len() <= 3) {
                break;
            }
        }
        layout
    }

    fn line_height(&self) -> f64 {
        Self::px(self.size) * 1.2
    }

    fn area_height(&self) -> u32 {
        let lines = self.lines.iter().map(Vec::len).max().unwrap_or(1).max(1);
        ((NAME_GAP as f64 + lines as f64 * self.line_height() + 8.0).ceil() as u32).max(30)
    }
}

/// Greedy word wrap to `max` characters a line; a word longer than a line is cut.
fn wrap(text: &str, max: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        let chars: Vec<char> = word.chars().collect();
        for piece in chars.chunks(max.max(1)) {
            let piece: String = piece.iter().collect();
            let len = cur.chars().count();
            if len == 0 {
                cur = piece;
            } else if len + 1 + piece.chars().count() <= max {
                cur.push(' ');
                cur.push_str(&piece);
            } else {
                lines.push(std::mem::replace(&mut cur, piece));
            }
        }
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines
}

impl Rich for BarChart {
    fn mime_bundle(&self) -> MimeBundle {
        MimeBundle::new().with("image/svg+xml", self.to_svg()).with(
            "text/plain",
            format!("<BarChart {:?}: {} bars>", self.title, self.values.len()),
        )
    }
}

/// The smallest problem size from which the GPU (transfers included) stays faster than the
/// CPU, interpolated between the two measured sizes where the curves cross (in log-log
/// space, where such curves are near straight). `None` if the GPU never wins for good.
pub fn crossover_point<S: PlotValue, T: PlotValue>(
    sizes: &[S],
    cpu: &[T],
    gpu: &[T],
) -> Option<f64> {
    let n = sizes.len().min(cpu.len()).min(gpu.len());
    // Ratio > 1 means the GPU is faster at that size.
    let ratio = |i: usize| cpu[i].to_f64() / gpu[i].to_f64();
    let last_loss = (0..n).rev().find(|&i| ratio(i) <= 1.0);
    match last_loss {
        None if n > 0 => Some(sizes[0].to_f64()),
        None => None,
        Some(i) if i + 1 >= n => None,
        Some(i) => {
            let (s0, s1) = (sizes[i].to_f64(), sizes[i + 1].to_f64());
            let (r0, r1) = (ratio(i).ln(), ratio(i + 1).ln());
            // Written as "not positive" so that NaN sizes also end the search here.
            #[allow(clippy::nonminimal_bool)]
            if !(s0 > 0.0 && s1 > 0.0) || !(r1 - r0).is_finite() || r1 == r0 {
                return Some(s1);
            }
            let f = (0.0 - r0) / (r1 - r0);
            Some((s0.ln() + f * (s1.ln() - s0.ln())).exp())
        }
    }
}

/// Time against problem size for the CPU and for the GPU with host↔device copies counted,
/// log-log, with the crossover marked: small work loses on the GPU because the fixed cost
/// of launching and copying dominates, large work wins because the arithmetic does.
/// Add more series (e.g. GPU kernel time alone) with the returned figure's builder methods.
pub fn crossover_plot<S: PlotValue, T: PlotValue>(
    sizes: &[S],
    cpu: &[T],
    gpu_with_transfers: &[T],
) -> Figure {
    let mut fig = Figure::new("CPU vs GPU: time against problem size")
        .xlabel("problem size")
        .ylabel("time (s)")
        .log_x()
        .log_y()
        .line_points("CPU", sizes, cpu)
        .line_points("GPU incl. transfers", sizes, gpu_with_transfers);
    if let Some(x) = crossover_point(sizes, cpu, gpu_with_transfers) {
        fig = fig.vline(x, format!("GPU wins above ≈ {}", short_number(x)));
    }
    fig
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(axis_range([1.0, 1000.0].into_iter(), true), (1.0, 1000.0));
        assert_eq!(axis_range([2.0, 3.0].into_iter(), true), (1.0, 6.0));
        assert_eq!(axis_range([5.0].into_iter(), false), (4.0, 6.0));
        assert_eq!(axis_range([-1.0, 0.0].into_iter(), true), (1.0, 10.0));
    }

    #[test]
    fn numbers() {
        assert_eq!(short_number(0.5), "0.5");
        assert_eq!(short_number(1e-6), "1e-6");
        assert_eq!(short_number(25000.0), "25k");
        assert_eq!(short_number(3.0e6), "3M");
        assert_eq!(short_number(100.0), "100");
    }
}

crate::rich_evcxr_display!(Figure, BarChart);
