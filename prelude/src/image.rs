//! RGB images and colormaps, shown inline as PNG.

use crate::display::{MimeBundle, Rich};

/// Maps a value in `[0, 1]` to a colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Colormap {
    /// Black through purple and orange to pale yellow (matplotlib's "magma" look).
    #[default]
    Magma,
    /// Dark blue through green to yellow (matplotlib's default, "viridis").
    Viridis,
    /// Black to white.
    Gray,
}

// Evenly spaced stops sampled from matplotlib's colormaps; linear interpolation between
// them is indistinguishable from the full tables at the sizes a notebook shows.
const MAGMA: [[u8; 3]; 9] = [
    [0, 0, 4],
    [28, 16, 68],
    [79, 18, 123],
    [129, 37, 129],
    [181, 54, 122],
    [229, 80, 100],
    [251, 135, 97],
    [254, 194, 135],
    [252, 253, 191],
];
const VIRIDIS: [[u8; 3]; 9] = [
    [68, 1, 84],
    [71, 45, 123],
    [59, 82, 139],
    [44, 114, 142],
    [33, 145, 140],
    [40, 174, 128],
    [94, 201, 98],
    [173, 220, 48],
    [253, 231, 37],
];

fn interpolate(stops: &[[u8; 3]], t: f64) -> [u8; 3] {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    let pos = t * (stops.len() - 1) as f64;
    let i = (pos.floor() as usize).min(stops.len() - 2);
    let f = pos - i as f64;
    let (a, b) = (stops[i], stops[i + 1]);
    let mix = |k: usize| (a[k] as f64 + (b[k] as f64 - a[k] as f64) * f).round() as u8;
    [mix(0), mix(1), mix(2)]
}

impl Colormap {
    pub fn color(self, t: f64) -> [u8; 3] {
        match self {
            Colormap::Magma => interpolate(&MAGMA, t),
            Colormap::Viridis => interpolate(&VIRIDIS, t),
            Colormap::Gray => interpolate(&[[0, 0, 0], [255, 255, 255]], t),
        }
    }

    /// A 256-entry table, so colouring a large image costs one lookup per pixel.
    pub fn lut(self) -> Vec<[u8; 3]> {
        (0..256).map(|i| self.color(i as f64 / 255.0)).collect()
    }
}

/// An 8-bit RGB image, row-major from the top-left corner.
#[derive(Clone, PartialEq, Eq)]
pub struct RgbImage {
    pub width: usize,
    pub height: usize,
    /// `width * height * 3` bytes.
    pub pixels: Vec<u8>,
}

impl RgbImage {
    pub fn new(width: usize, height: usize) -> Self {
        RgbImage {
            width,
            height,
            pixels: vec![0; width * height * 3],
        }
    }

    /// Colours a grid of scalars with `cmap`, scaling `lo..=hi` to the colormap's ends.
    pub fn from_values(
        width: usize,
        height: usize,
        values: &[f64],
        lo: f64,
        hi: f64,
        cmap: Colormap,
    ) -> Self {
        // A builder-style call with no Result to return: a clear panic, which the kernel shows
        // as the cell's error and survives with every variable kept.
        assert!(
            values.len() == width * height,
            "RgbImage::from_values: {} values for a {width}x{height} image, which needs {}",
            values.len(),
            width * height
        );
        let lut = cmap.lut();
        let span = if hi > lo { hi - lo } else { 1.0 };
        let mut pixels = Vec::with_capacity(values.len() * 3);
        for &v in values {
            let t = ((v - lo) / span).clamp(0.0, 1.0);
            let t = if t.is_nan() { 0.0 } else { t };
            pixels.extend_from_slice(&lut[(t * 255.0).round() as usize]);
        }
        RgbImage {
            width,
            height,
            pixels,
        }
    }

    /// Each pixel drawn as a `k x k` block (nearest neighbour), so a 28 x 28 digit is big
    /// enough to see. `k` is clamped (as `Figure::size` clamps) to between 1 and what keeps
    /// both sides within 16,384 pixels, so no factor can exhaust memory.
    pub fn scaled(&self, k: usize) -> RgbImage {
        const MAX_SIDE: usize = 16_384;
        let longest = self.width.max(self.height).max(1);
        let k = k.clamp(1, (MAX_SIDE / longest).max(1));
        let (w, h) = (self.width * k, self.height * k);
        let mut pixels = Vec::with_capacity(w * h * 3);
        for y in 0..h {
            for x in 0..w {
                pixels.extend_from_slice(&self.pixel(x / k, y / k));
            }
        }
        RgbImage {
            width: w,
            height: h,
            pixels,
        }
    }

    pub fn pixel(&self, x: usize, y: usize) -> [u8; 3] {
        let i = (y * self.width + x) * 3;
        [self.pixels[i], self.pixels[i + 1], self.pixels[i + 2]]
    }

    /// Encodes as PNG. An image with no pixels (width or height 0) becomes one white pixel:
    /// the format has no empty image, and displaying one must not fail.
    pub fn to_png(&self) -> Vec<u8> {
        if self.width == 0 || self.height == 0 {
            return RgbImage {
                width: 1,
                height: 1,
                pixels: vec![255; 3],
            }
            .to_png();
        }
        // The fields are public: a clear message beats the encoder's when they disagree.
        assert!(
            self.pixels.len() == self.width * self.height * 3,
            "RgbImage::to_png: {} bytes of pixels for a {}x{} image, which needs {}",
            self.pixels.len(),
            self.width,
            self.height,
            self.width * self.height * 3
        );
        let mut out = Vec::new();
        let mut enc = png::Encoder::new(&mut out, self.width as u32, self.height as u32);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        // Inline images travel base64 through the kernel on every display, so favour speed:
        // the fast setting still shrinks smooth fractal images several-fold.
        enc.set_compression(png::Compression::Fast);
        let mut w = enc
            .write_header()
            .expect("PNG header for an in-memory buffer");
        w.write_image_data(&self.pixels)
            .expect("PNG data for an in-memory buffer");
        w.finish().expect("PNG end for an in-memory buffer");
        out
    }

    /// Writes a PNG file.
    pub fn save(&self, path: impl AsRef<std::path::Path>) -> std::io::Result<()> {
        std::fs::write(path, self.to_png())
    }
}

impl std::fmt::Debug for RgbImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RgbImage({}x{})", self.width, self.height)
    }
}

impl Rich for RgbImage {
    fn mime_bundle(&self) -> MimeBundle {
        MimeBundle::png(&self.to_png(), format!("{self:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colormap_ends() {
        assert_eq!(Colormap::Gray.color(0.0), [0, 0, 0]);
        assert_eq!(Colormap::Gray.color(1.0), [255, 255, 255]);
        assert_eq!(Colormap::Magma.color(0.0), MAGMA[0]);
        assert_eq!(Colormap::Magma.color(1.0), MAGMA[8]);
        assert_eq!(Colormap::Viridis.color(f64::NAN), VIRIDIS[0]);
        assert_eq!(Colormap::Gray.color(0.5), [128, 128, 128]);
    }
}

crate::rich_evcxr_display!(RgbImage);
