//! An image of values shown with the colour scale that reads it back, as matplotlib's
//! `imshow` + `colorbar`: an edge map or a Mandelbrot picture means little until the reader
//! knows which colour is which value. Shown inline as SVG: the picture (PNG, embedded) and
//! beside it a bar of the colormap with labelled ticks.

use crate::display::{html_escape, MimeBundle, Rich};
use crate::image::{Colormap, RgbImage};
use crate::plot::short_number;
use base64::Engine as _;

/// A picture coloured from values by a colormap, with the bar that maps its colours back to
/// values. Made by [`RgbImage::with_scale`] or `MandelbrotImage::with_scale`.
#[derive(Clone, Debug)]
pub struct ScaledImage {
    image: RgbImage,
    lo: f64,
    hi: f64,
    cmap: Colormap,
    label: String,
    /// The colours run with `ln(1 + v - lo)` instead of `v` (the Mandelbrot's log colouring).
    log: bool,
}

/// Height in pixels of the bar when the picture is shorter than this (a 28 x 28 digit).
const MIN_BAR: usize = 120;

impl RgbImage {
    /// This picture, coloured from values by `cmap` over `lo..=hi` (as
    /// [`RgbImage::from_values`] colours them), with a colour bar beside it labelled `label`
    /// that reads the colours back as values.
    ///
    /// ```
    /// use gpulab::{Colormap, RgbImage};
    /// let values = [-0.5, 0.0, 0.25, 0.5];
    /// let img = RgbImage::from_values(2, 2, &values, -0.5, 0.5, Colormap::Magma)
    ///     .with_scale(-0.5, 0.5, Colormap::Magma, "edge strength");
    /// assert_eq!(img.ticks(), vec![-0.5, 0.0, 0.5]);
    /// ```
    pub fn with_scale(self, lo: f64, hi: f64, cmap: Colormap, label: &str) -> ScaledImage {
        ScaledImage {
            image: self,
            lo,
            hi,
            cmap,
            label: label.to_string(),
            log: false,
        }
    }
}

impl ScaledImage {
    /// A scale whose colours follow `ln(1 + v - lo)` (counts that span orders of magnitude).
    pub(crate) fn log(mut self) -> Self {
        self.log = true;
        self
    }

    /// The picture alone.
    pub fn image(&self) -> &RgbImage {
        &self.image
    }

    /// Where a value sits on the bar, 0 at `lo` and 1 at `hi` (the colour the picture gives it).
    pub fn position(&self, v: f64) -> f64 {
        let span = if self.hi > self.lo {
            self.hi - self.lo
        } else {
            return 0.0;
        };
        let t = if self.log {
            (1.0 + (v - self.lo).max(0.0)).ln() / (1.0 + span).ln()
        } else {
            (v - self.lo) / span
        };
        t.clamp(0.0, 1.0)
    }

    /// The values labelled on the bar: a few round numbers from `lo` to `hi` (steps of 1, 2
    /// or 5 times a power of ten), both ends included when they are not far from one; on a
    /// log scale 0 (or `lo`), then 1, 10, 100, ... above it, and `hi`.
    pub fn ticks(&self) -> Vec<f64> {
        let (lo, hi) = (self.lo, self.hi);
        if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
            return if lo.is_finite() { vec![lo] } else { Vec::new() };
        }
        let mut ticks = Vec::new();
        if self.log {
            ticks.push(lo);
            let mut d = 1.0;
            while lo + d < hi {
                ticks.push(lo + d);
                d *= 10.0;
            }
        } else {
            let raw = (hi - lo) / 4.0;
            let mag = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0]
                .iter()
                .map(|m| m * mag)
                .find(|&s| s >= raw)
                .unwrap_or(10.0 * mag);
            for k in (lo / step).ceil() as i64..=(hi / step).floor() as i64 {
                // Through the decimal text, so 0.1 * 3 reads 0.3 (and -0 reads 0).
                let v: f64 = format!("{:.12e}", k as f64 * step).parse().unwrap_or(0.0);
                ticks.push(v + 0.0);
            }
        }
        // The ends are labelled too, unless a round tick sits so close that the labels would
        // overlap (within 6 % of the bar).
        const NEAR: f64 = 0.06;
        if ticks
            .first()
            .is_none_or(|&t| t > lo && self.position(t) > NEAR)
        {
            ticks.insert(0, lo);
        }
        if ticks
            .last()
            .is_none_or(|&t| t < hi && 1.0 - self.position(t) > NEAR)
        {
            ticks.push(hi);
        }
        ticks.dedup();
        ticks
    }

    /// The picture and its bar as one SVG drawing.
    pub fn to_svg(&self) -> String {
        let (w, h) = (self.image.width.max(1), self.image.height.max(1));
        let bar_h = h.max(MIN_BAR);
        let (gap, bar_w, tick) = (12, 16, 4);
        let bar_x = w + gap;
        let label_x = bar_x + bar_w + tick + 4;
        let texts: Vec<(f64, String)> = self
            .ticks()
            .into_iter()
            .map(|v| (v, short_number(v)))
            .collect();
        let longest = texts
            .iter()
            .map(|(_, s)| s.chars().count())
            .max()
            .unwrap_or(1);
        let title_x = label_x + 7 * longest + 14;
        let width = title_x + 8;
        // Room above and below for the end ticks' labels, which are centred on their tick.
        let top = 8;
        let height = bar_h.max(h) + 2 * top;
        let png = base64::engine::general_purpose::STANDARD.encode(self.image.to_png());
        let mut svg = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" \
             width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" \
             font-family=\"sans-serif\" font-size=\"12\">\
             <image x=\"0\" y=\"{top}\" width=\"{w}\" height=\"{h}\" style=\"image-rendering:pixelated\" \
             xlink:href=\"data:image/png;base64,{png}\"/>"
        );
        // The bar: the colormap as a gradient, its darkest end at the bottom (no seams, as
        // bands of rectangles would show). Named for its colormap: a front end that inlines
        // several SVGs in one page shares ids between them, and a gradient of the same name
        // is then the same gradient.
        const STOPS: usize = 33;
        let id = format!("gpulab-colorbar-{:?}", self.cmap).to_lowercase();
        svg += &format!("<defs><linearGradient id=\"{id}\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">");
        for i in 0..STOPS {
            let t = i as f64 / (STOPS - 1) as f64;
            let [r, g, b] = self.cmap.color(t);
            svg += &format!("<stop offset=\"{t:.4}\" stop-color=\"rgb({r},{g},{b})\"/>");
        }
        svg += &format!(
            "</linearGradient></defs><rect x=\"{bar_x}\" y=\"{top}\" width=\"{bar_w}\" \
             height=\"{bar_h}\" fill=\"url(#{id})\"/>"
        );
        svg += &format!(
            "<rect x=\"{bar_x}\" y=\"{top}\" width=\"{bar_w}\" height=\"{bar_h}\" fill=\"none\" stroke=\"#444\"/>"
        );
        for (v, text) in &texts {
            let y = top as f64 + (1.0 - self.position(*v)) * bar_h as f64;
            svg += &format!(
                "<line x1=\"{}\" y1=\"{y:.2}\" x2=\"{}\" y2=\"{y:.2}\" stroke=\"#444\"/>\
                 <text x=\"{label_x}\" y=\"{:.2}\">{}</text>",
                bar_x + bar_w,
                bar_x + bar_w + tick,
                y + 4.0,
                html_escape(text)
            );
        }
        let mid = top as f64 + bar_h as f64 / 2.0;
        svg += &format!(
            "<text x=\"{title_x}\" y=\"{mid:.2}\" text-anchor=\"middle\" \
             transform=\"rotate(-90 {title_x} {mid:.2})\">{}</text></svg>",
            html_escape(&self.label)
        );
        svg
    }
}

impl Rich for ScaledImage {
    fn mime_bundle(&self) -> MimeBundle {
        let plain = format!(
            "{:?} coloured from {} (darkest) to {} (brightest): {}",
            self.image,
            short_number(self.lo),
            short_number(self.hi),
            self.label
        );
        MimeBundle::new()
            .with("image/svg+xml", self.to_svg())
            .with("text/plain", plain)
    }
}

// A cell ending in `img.with_scale(..)` shows the drawing, as `display(&..)` does.
crate::rich_evcxr_display!(ScaledImage);

#[cfg(test)]
mod tests {
    use super::*;

    fn scaled(lo: f64, hi: f64) -> ScaledImage {
        RgbImage::from_values(2, 1, &[lo, hi], lo, hi, Colormap::Viridis).with_scale(
            lo,
            hi,
            Colormap::Viridis,
            "v",
        )
    }

    #[test]
    fn linear_ticks_are_round_and_cover_the_range() {
        assert_eq!(scaled(-0.5, 0.5).ticks(), vec![-0.5, 0.0, 0.5]);
        assert_eq!(scaled(-1.0, 1.0).ticks(), vec![-1.0, -0.5, 0.0, 0.5, 1.0]);
        assert_eq!(scaled(0.0, 1.0).ticks(), vec![0.0, 0.5, 1.0]);
        assert_eq!(scaled(0.0, 255.0).ticks(), vec![0.0, 100.0, 200.0, 255.0]);
        // Ends off the steps are labelled too.
        assert_eq!(scaled(0.3, 9.7).ticks(), vec![0.3, 5.0, 9.7]);
        // ... unless a round tick is too close to them for two labels.
        assert_eq!(scaled(-0.02, 1.0).ticks(), vec![0.0, 0.5, 1.0]);
        assert_eq!(
            scaled(0.0, 120.0).log().ticks(),
            vec![0.0, 1.0, 10.0, 100.0]
        );
        // No range: the one value; no finite value: nothing.
        assert_eq!(scaled(1.0, 1.0).ticks(), vec![1.0]);
        assert!(scaled(f64::NAN, 1.0).ticks().is_empty());
    }

    #[test]
    fn log_ticks_are_decades_and_positions_follow_the_colours() {
        let s = scaled(0.0, 300.0).log();
        assert_eq!(s.ticks(), vec![0.0, 1.0, 10.0, 100.0, 300.0]);
        assert_eq!(s.position(0.0), 0.0);
        assert_eq!(s.position(300.0), 1.0);
        // ln(1 + 10) / ln(301): the colour the Mandelbrot's log colouring gives 10.
        assert!((s.position(10.0) - 11f64.ln() / 301f64.ln()).abs() < 1e-12);
        let lin = scaled(-0.5, 0.5);
        assert_eq!(lin.position(0.0), 0.5);
        assert_eq!(lin.position(2.0), 1.0);
    }

    #[test]
    fn the_svg_holds_the_picture_the_bar_and_every_tick() {
        let img = RgbImage::from_values(
            3,
            2,
            &[0.0, 0.1, 0.2, 0.3, 0.4, 0.5],
            0.0,
            0.5,
            Colormap::Magma,
        );
        let png = base64::engine::general_purpose::STANDARD.encode(img.to_png());
        let s = img.with_scale(0.0, 0.5, Colormap::Magma, "a <label> & more");
        let svg = s.to_svg();
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>"));
        assert!(svg.contains(&format!("data:image/png;base64,{png}")));
        // The bar's gradient runs from the colormap's darkest end (offset 0, at the bottom)
        // to its brightest (offset 1, at the top).
        let [r, g, b] = Colormap::Magma.color(0.0);
        assert!(svg.contains(&format!(
            "<stop offset=\"0.0000\" stop-color=\"rgb({r},{g},{b})\"/>"
        )));
        let [r, g, b] = Colormap::Magma.color(1.0);
        assert!(svg.contains(&format!(
            "<stop offset=\"1.0000\" stop-color=\"rgb({r},{g},{b})\"/>"
        )));
        assert!(
            svg.contains("y1=\"1\" x2=\"0\" y2=\"0\"")
                && svg.contains("fill=\"url(#gpulab-colorbar-magma)\"")
        );
        for t in s.ticks() {
            assert!(
                svg.contains(&format!(">{}</text>", short_number(t))),
                "tick {t}"
            );
        }
        assert!(svg.contains("a &lt;label&gt; &amp; more"));
        let bundle = s.mime_bundle();
        assert!(bundle.get("image/svg+xml").is_some());
        assert!(bundle
            .get("text/plain")
            .unwrap()
            .contains("from 0 (darkest) to 0.5 (brightest)"));
    }
}
