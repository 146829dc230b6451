//! The Mandelbrot set three ways: one CPU thread, all CPU threads, and the GPU.
//!
//! Article 04 renders x ∈ [-2, 1], y ∈ [-1, 1] at 1536×1024 pixels with 20 iterations and
//! reports 4.07 s in plain Python against 0.0046 s for a numba CUDA kernel. [`Mandelbrot`]
//! holds that setting by default; every path here uses the same f64 arithmetic in the same
//! order (see [`escape_count`]), so all three produce identical iteration counts and the
//! images can be compared pixel for pixel.

use crate::colorbar::ScaledImage;
use crate::cuda::{KernelArg, LaunchConfig, Module};
use crate::device::Device;
use crate::display::{MimeBundle, Rich};
use crate::error::Error;
use crate::image::{Colormap, RgbImage};
use crate::interrupt;
use crate::tensor::Tensor;
use rayon::prelude::*;

/// Iterations before `z ← z² + c` leaves the disc |z| < 2, or `max_iter` if it never does
/// in that many steps (the point is then taken to be in the set).
///
/// The operations and their order are fixed on purpose: the CUDA kernel
/// (`kernels-cu/mandelbrot.cu`) and the numba reference (`bench/mandelbrot_ref.py`) spell
/// out exactly these roundings, so counts agree bit for bit across all of them.
#[inline(always)]
pub fn escape_count(cr: f64, ci: f64, max_iter: u32) -> u32 {
    let (mut zr, mut zi) = (0.0f64, 0.0f64);
    for i in 0..max_iter {
        let re = (zr * zr - zi * zi) + cr;
        let im = (zr * zi + zi * zr) + ci;
        zr = re;
        zi = im;
        if zr * zr + zi * zi >= 4.0 {
            return i;
        }
    }
    max_iter
}

const LANES: usize = 8;

/// [`escape_count`] for `LANES` neighbouring points at once.
///
/// One point's iteration is a chain of dependent multiply-adds, so a single point keeps the
/// floating-point units mostly idle waiting for results. Stepping eight independent points
/// together fills the pipeline (and SIMD registers), several times the throughput. Each
/// lane does exactly the scalar operations in the same order, so the counts are identical;
/// lanes that escaped keep iterating (towards infinity or NaN, harmlessly) until all have.
#[inline(always)]
fn escape_counts(cr: [f64; LANES], ci: f64, max_iter: u32) -> [u32; LANES] {
    let mut zr = [0.0f64; LANES];
    let mut zi = [0.0f64; LANES];
    let mut count = [max_iter; LANES];
    for i in 0..max_iter {
        let mut running = false;
        for l in 0..LANES {
            let re = (zr[l] * zr[l] - zi[l] * zi[l]) + cr[l];
            let im = (zr[l] * zi[l] + zi[l] * zr[l]) + ci;
            zr[l] = re;
            zi[l] = im;
            let escaped = zr[l] * zr[l] + zi[l] * zi[l] >= 4.0;
            let fresh = escaped & (count[l] == max_iter);
            count[l] = if fresh { i } else { count[l] };
            running |= count[l] == max_iter;
        }
        if !running {
            break;
        }
    }
    count
}

/// A view of the complex plane to render: region, image size and iteration limit.
///
/// `Default` is article 04's setting. Builder methods return a modified copy, so a zoom
/// reads as `Mandelbrot::default().zoom(-0.745, 0.113, 200.0).iterations(500)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mandelbrot {
    pub x_min: f64,
    pub x_max: f64,
    pub y_min: f64,
    pub y_max: f64,
    pub width: usize,
    pub height: usize,
    pub max_iter: u32,
}

impl Default for Mandelbrot {
    fn default() -> Self {
        Mandelbrot {
            x_min: -2.0,
            x_max: 1.0,
            y_min: -1.0,
            y_max: 1.0,
            width: 1536,
            height: 1024,
            max_iter: 20,
        }
    }
}

impl Mandelbrot {
    /// Article 04's setting (same as `default()`).
    pub fn new() -> Self {
        Self::default()
    }

    pub fn size(mut self, width: usize, height: usize) -> Self {
        self.width = width;
        self.height = height;
        self
    }

    pub fn iterations(mut self, max_iter: u32) -> Self {
        self.max_iter = max_iter;
        self
    }

    pub fn region(mut self, x_min: f64, x_max: f64, y_min: f64, y_max: f64) -> Self {
        self.x_min = x_min;
        self.x_max = x_max;
        self.y_min = y_min;
        self.y_max = y_max;
        self
    }

    /// Centres the view on `(cx, cy)` with `x_span` units across; the vertical span follows
    /// from the image's aspect ratio so pixels stay square.
    pub fn centered(self, cx: f64, cy: f64, x_span: f64) -> Self {
        let y_span = x_span * self.height as f64 / self.width.max(1) as f64;
        self.region(
            cx - x_span / 2.0,
            cx + x_span / 2.0,
            cy - y_span / 2.0,
            cy + y_span / 2.0,
        )
    }

    /// Moves the centre to `(cx, cy)` and magnifies `factor` times relative to this view.
    pub fn zoom(self, cx: f64, cy: f64, factor: f64) -> Self {
        let x_span = (self.x_max - self.x_min) / factor;
        let y_span = (self.y_max - self.y_min) / factor;
        self.region(
            cx - x_span / 2.0,
            cx + x_span / 2.0,
            cy - y_span / 2.0,
            cy + y_span / 2.0,
        )
    }

    pub fn center(&self) -> (f64, f64) {
        (
            (self.x_min + self.x_max) / 2.0,
            (self.y_min + self.y_max) / 2.0,
        )
    }

    fn pixel_size(&self) -> (f64, f64) {
        (
            (self.x_max - self.x_min) / self.width as f64,
            (self.y_max - self.y_min) / self.height as f64,
        )
    }

    /// The point of the plane sampled by pixel `(x, y)`; row 0 is `y_min`, as in the article.
    pub fn point(&self, x: usize, y: usize) -> (f64, f64) {
        let (px, py) = self.pixel_size();
        (self.x_min + x as f64 * px, self.y_min + y as f64 * py)
    }

    pub fn pixels(&self) -> usize {
        self.width * self.height
    }

    fn render_row(&self, y: usize, row: &mut [u32]) {
        let (px, py) = self.pixel_size();
        let ci = self.y_min + y as f64 * py;
        let mut chunks = row.chunks_exact_mut(LANES);
        let mut x0 = 0;
        for chunk in &mut chunks {
            let mut cr = [0.0; LANES];
            for (l, c) in cr.iter_mut().enumerate() {
                *c = self.x_min + (x0 + l) as f64 * px;
            }
            chunk.copy_from_slice(&escape_counts(cr, ci, self.max_iter));
            x0 += LANES;
        }
        for (l, out) in chunks.into_remainder().iter_mut().enumerate() {
            *out = escape_count(self.x_min + (x0 + l) as f64 * px, ci, self.max_iter);
        }
    }

    fn image(&self, counts: Vec<u32>, how: &'static str) -> MandelbrotImage {
        MandelbrotImage {
            params: *self,
            counts,
            colormap: Colormap::default(),
            log: false,
            how,
        }
    }

    /// One CPU thread, row after row: the article's plain-Python loop, compiled.
    pub fn cpu_serial(&self) -> Result<MandelbrotImage, Error> {
        let mut counts = vec![0u32; self.pixels()];
        if self.width > 0 {
            for (y, row) in counts.chunks_mut(self.width).enumerate() {
                interrupt::check()?;
                self.render_row(y, row);
            }
        }
        Ok(self.image(counts, "CPU, 1 thread"))
    }

    /// Every CPU thread (rayon), one row per task.
    pub fn cpu_parallel(&self) -> Result<MandelbrotImage, Error> {
        let mut counts = vec![0u32; self.pixels()];
        if self.width > 0 {
            counts
                .par_chunks_mut(self.width)
                .enumerate()
                .try_for_each(|(y, row)| {
                    interrupt::check()?;
                    self.render_row(y, row);
                    Ok::<(), Error>(())
                })?;
        }
        Ok(self.image(counts, "CPU, all threads"))
    }

    /// On a CUDA device: `kernels-cu/mandelbrot.cu`, 16×16 threads per block and enough
    /// blocks to cover the image, as in the article; the counts come back through an f32
    /// tensor (exact for counts below 2^24).
    pub fn gpu(&self, device: impl Into<Device>) -> Result<MandelbrotImage, Error> {
        let device = device.into();
        interrupt::check()?;
        let mut out = Tensor::zeros((self.height, self.width), device)?;
        self.gpu_launch(&mut out)?;
        // Copying back waits for the kernel, so this is also where a kernel error surfaces.
        let counts = out.to_vec::<f32>()?.into_iter().map(|c| c as u32).collect();
        interrupt::check()?;
        Ok(self.image(counts, "GPU"))
    }

    /// Queues the kernel writing this view's counts into `out` (a `height × width` f32
    /// tensor on a CUDA device) and returns without waiting: for timing the kernel alone.
    pub fn gpu_launch(&self, out: &mut Tensor) -> Result<(), Error> {
        if out.shape() != [self.height, self.width] {
            return Err(Error::ShapeMismatch {
                op: "Mandelbrot::gpu_launch",
                lhs: out.shape().to_vec(),
                rhs: vec![self.height, self.width],
            });
        }
        if self.max_iter > 1 << 24 {
            return Err(Error::Invalid(format!(
                "max_iter {} is too large for the GPU path: counts travel as f32, exact only up to 2^24",
                self.max_iter
            )));
        }
        let (w, h) = match (i32::try_from(self.width), i32::try_from(self.height)) {
            (Ok(w), Ok(h)) if w > 0 && h > 0 => (w, h),
            _ => {
                return Err(Error::Invalid(format!(
                    "image size {}x{} out of range",
                    self.width, self.height
                )))
            }
        };
        let module = Module::builtin(out.device(), "mandelbrot")?;
        let kernel = module.function("mandelbrot")?;
        // The grid-stride loops in the kernel cover whatever the grid does not, so capping
        // the grid at CUDA's y-dimension limit is safe.
        let blocks_x = (w as u32).div_ceil(16);
        let blocks_y = (h as u32).div_ceil(16).min(65_535);
        let cfg = LaunchConfig {
            grid: (blocks_x, blocks_y, 1),
            block: (16, 16, 1),
            shared_mem_bytes: 0,
        };
        kernel.launch(
            cfg,
            &mut [
                KernelArg::F64(self.x_min),
                KernelArg::F64(self.x_max),
                KernelArg::F64(self.y_min),
                KernelArg::F64(self.y_max),
                KernelArg::TensorMut(out),
                KernelArg::I32(w),
                KernelArg::I32(h),
                KernelArg::U32(self.max_iter),
            ],
        )
    }

    /// Wraps counts computed elsewhere (e.g. by the GPU kernel) as an image of this view.
    /// Panics, naming both numbers, when there is not one count per pixel.
    pub fn image_from_counts(&self, counts: Vec<u32>) -> MandelbrotImage {
        assert!(
            counts.len() == self.pixels(),
            "image_from_counts: {} counts for a {}x{} view, which has {} pixels",
            counts.len(),
            self.width,
            self.height,
            self.pixels()
        );
        self.image(counts, "given counts")
    }
}

/// Iteration counts for every pixel of a [`Mandelbrot`] view; shows inline as a PNG.
#[derive(Clone, PartialEq)]
pub struct MandelbrotImage {
    pub params: Mandelbrot,
    /// Row-major, `params.width * params.height` entries, each in `0..=params.max_iter`.
    pub counts: Vec<u32>,
    colormap: Colormap,
    log: bool,
    how: &'static str,
}

impl MandelbrotImage {
    pub fn width(&self) -> usize {
        self.params.width
    }

    pub fn height(&self) -> usize {
        self.params.height
    }

    pub fn count(&self, x: usize, y: usize) -> u32 {
        self.counts[y * self.params.width + x]
    }

    /// Share of pixels that never escaped (drawn in the colormap's brightest colour).
    pub fn inside_fraction(&self) -> f64 {
        let inside = self
            .counts
            .iter()
            .filter(|&&c| c >= self.params.max_iter)
            .count();
        inside as f64 / self.counts.len().max(1) as f64
    }

    /// Sum of all counts: a quick fingerprint to compare renders from different engines.
    pub fn total_iterations(&self) -> u64 {
        self.counts.iter().map(|&c| c as u64).sum()
    }

    /// Which engine produced the counts.
    pub fn how(&self) -> &str {
        self.how
    }

    pub fn colormap(mut self, cmap: Colormap) -> Self {
        self.colormap = cmap;
        self
    }

    /// Colour by log(1 + count): with hundreds of iterations most pixels escape early and a
    /// linear scale leaves the picture almost uniformly dark.
    pub fn log_scale(mut self, on: bool) -> Self {
        self.log = on;
        self
    }

    /// The picture with its colour scale beside it: iterations before escape, from 0 to the
    /// limit (points that never escape), on a log scale when [`log_scale`](Self::log_scale)
    /// is on, as the colours show them.
    pub fn with_scale(&self) -> ScaledImage {
        let max = self.params.max_iter as f64;
        let s = self
            .to_rgb()
            .with_scale(0.0, max, self.colormap, "iterations before escape");
        if self.log {
            s.log()
        } else {
            s
        }
    }

    pub fn to_rgb(&self) -> RgbImage {
        let max = self.params.max_iter.max(1) as f64;
        let lut = self.colormap.lut();
        let scale = |c: u32| -> f64 {
            if self.log {
                (1.0 + c as f64).ln() / (1.0 + max).ln()
            } else {
                c as f64 / max
            }
        };
        let mut pixels = Vec::with_capacity(self.counts.len() * 3);
        for &c in &self.counts {
            let t = scale(c).clamp(0.0, 1.0);
            pixels.extend_from_slice(&lut[(t * 255.0).round() as usize]);
        }
        RgbImage {
            width: self.params.width,
            height: self.params.height,
            pixels,
        }
    }

    pub fn to_png(&self) -> Vec<u8> {
        self.to_rgb().to_png()
    }

    /// Writes the coloured image as a PNG file.
    pub fn save(&self, path: impl AsRef<std::path::Path>) -> Result<(), Error> {
        let path = path.as_ref();
        std::fs::write(path, self.to_png())
            .map_err(|e| Error::Invalid(format!("cannot write {}: {e}", path.display())))
    }

    /// The pixels where two renders disagree, as `(x, y, self, other)`; empty when equal.
    pub fn differences(&self, other: &MandelbrotImage) -> Vec<(usize, usize, u32, u32)> {
        let w = self.params.width.max(1);
        self.counts
            .iter()
            .zip(&other.counts)
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .map(|(i, (&a, &b))| (i % w, i / w, a, b))
            .collect()
    }
}

impl std::fmt::Debug for MandelbrotImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = &self.params;
        write!(
            f,
            "Mandelbrot {}x{}, {} iterations, x {}..{}, y {}..{} ({}; {:.1}% inside)",
            p.width,
            p.height,
            p.max_iter,
            p.x_min,
            p.x_max,
            p.y_min,
            p.y_max,
            self.how,
            100.0 * self.inside_fraction()
        )
    }
}

impl Rich for MandelbrotImage {
    fn mime_bundle(&self) -> MimeBundle {
        MimeBundle::png(&self.to_png(), format!("{self:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_points() {
        assert_eq!(escape_count(0.0, 0.0, 20), 20); // the origin never escapes
        assert_eq!(escape_count(-1.0, 0.0, 50), 50); // period-2 cycle
        assert_eq!(escape_count(2.0, 2.0, 20), 0); // first step lands far outside
        assert_eq!(escape_count(1.0, 0.0, 20), 1); // 1, then 2: |z|²=4 escapes at i=1
    }

    #[test]
    fn zoom_keeps_center_and_shrinks() {
        let m = Mandelbrot::default().zoom(-0.75, 0.1, 10.0);
        let (cx, cy) = m.center();
        assert!((cx + 0.75).abs() < 1e-12 && (cy - 0.1).abs() < 1e-12);
        assert!(((m.x_max - m.x_min) - 0.3).abs() < 1e-12);
        assert!(((m.y_max - m.y_min) - 0.2).abs() < 1e-12);
        let c = Mandelbrot::default().centered(0.0, 0.0, 3.0);
        assert!(((c.y_max - c.y_min) - 2.0).abs() < 1e-12);
    }
}

crate::rich_evcxr_display!(MandelbrotImage);
