//! Random image augmentations for `[n, c, h, w]` f32 batches, the ones article 04's Keras
//! `ImageDataGenerator(rescale, shear_range, zoom_range, horizontal_flip)` applies:
//! [`RandomHorizontalFlip`], [`RandomShift`], [`RandomZoom`], [`RandomShear`], [`Rescale`],
//! chained with [`Compose`].
//!
//! Augmentation runs on the host (CPU): a batch on a CUDA device is copied to the CPU,
//! transformed, and copied back. Each sample draws its own parameters from the loader's
//! [`Rng`], so a seeded loader gives the same augmented batches every run. Geometric
//! transforms map each output pixel back into the input (bilinear sampling; translation by
//! whole pixels, so a shifted image stays crisp) and fill what falls outside with zeros
//! ([`Fill::Zero`], torchvision's default) or the nearest edge pixel ([`Fill::Edge`], Keras'
//! default `fill_mode='nearest'`).

use super::{Rng, Transform};
use crate::error::Result;
use crate::{DType, Device, Error, Tensor};

/// What a geometric transform puts where the source lies outside the image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// Zeros (black), as torchvision's `RandomAffine`.
    Zero,
    /// The nearest edge pixel, as Keras' `fill_mode='nearest'`.
    Edge,
}

/// The batch as host f32 values plus its shape and device, after checking it is `[n, c, h, w]`.
fn host_images(batch: &Tensor, who: &str) -> Result<(Vec<f32>, [usize; 4], Device)> {
    if batch.rank() != 4 {
        return Err(Error::BadShape(format!(
            "{who}: expected a batch of images [n, c, h, w], got shape {:?} (rank {})",
            batch.shape(),
            batch.rank()
        )));
    }
    if batch.dtype() != DType::F32 {
        return Err(Error::Invalid(format!(
            "{who}: expected float32 images, got {}; convert with .to_dtype(DType::F32)",
            batch.dtype()
        )));
    }
    let s = batch.shape();
    let dims = [s[0], s[1], s[2], s[3]];
    let device = batch.device();
    let host = if device == Device::Cpu {
        batch.detach()
    } else {
        batch.detach().cpu()?
    };
    Ok((host.to_vec::<f32>()?, dims, device))
}

fn back(data: Vec<f32>, dims: [usize; 4], device: Device) -> Result<Tensor> {
    Tensor::from_vec(data, dims.to_vec(), device)
}

/// Output pixel -> input pixel for one sample: `src = m * (dst - centre) + centre + t`.
#[derive(Clone, Copy)]
struct Affine {
    m: [[f32; 2]; 2],
    t: (f32, f32),
}

/// Resamples every sample of `data` with its own affine map (from `draw`), bilinear.
fn warp(
    data: &[f32],
    dims: [usize; 4],
    fill: Fill,
    rng: &mut Rng,
    mut draw: impl FnMut(&mut Rng) -> Option<Affine>,
) -> Vec<f32> {
    let [n, c, h, w] = dims;
    let mut out = data.to_vec();
    let (cx, cy) = ((w as f32 - 1.0) / 2.0, (h as f32 - 1.0) / 2.0);
    let plane = h * w;
    for i in 0..n {
        let Some(a) = draw(rng) else { continue };
        for y in 0..h {
            for x in 0..w {
                let (dx, dy) = (x as f32 - cx, y as f32 - cy);
                let sx = a.m[0][0] * dx + a.m[0][1] * dy + cx + a.t.0;
                let sy = a.m[1][0] * dx + a.m[1][1] * dy + cy + a.t.1;
                for ch in 0..c {
                    let src = &data[(i * c + ch) * plane..(i * c + ch + 1) * plane];
                    out[(i * c + ch) * plane + y * w + x] = bilinear(src, h, w, sx, sy, fill);
                }
            }
        }
    }
    out
}

fn bilinear(src: &[f32], h: usize, w: usize, x: f32, y: f32, fill: Fill) -> f32 {
    let (x0, y0) = (x.floor(), y.floor());
    let (fx, fy) = (x - x0, y - y0);
    let px = |xi: f32, yi: f32| -> f32 {
        let inside = xi >= 0.0 && yi >= 0.0 && xi <= (w - 1) as f32 && yi <= (h - 1) as f32;
        match (inside, fill) {
            (true, _) => src[yi as usize * w + xi as usize],
            (false, Fill::Zero) => 0.0,
            (false, Fill::Edge) => {
                let xc = xi.clamp(0.0, (w - 1) as f32) as usize;
                let yc = yi.clamp(0.0, (h - 1) as f32) as usize;
                src[yc * w + xc]
            }
        }
    };
    // Exact pixel positions (whole-pixel shifts, flips) read one pixel, not four.
    if fx == 0.0 && fy == 0.0 {
        return px(x0, y0);
    }
    let top = px(x0, y0) * (1.0 - fx) + px(x0 + 1.0, y0) * fx;
    let bottom = px(x0, y0 + 1.0) * (1.0 - fx) + px(x0 + 1.0, y0 + 1.0) * fx;
    top * (1.0 - fy) + bottom * fy
}

/// Mirrors each image left-right with probability `p` (torchvision's `RandomHorizontalFlip`,
/// Keras' `horizontal_flip=True` is `p = 0.5`). Runs on the host.
///
/// ```
/// use gpulab::data::{Rng, Transform, augment::RandomHorizontalFlip};
/// let x = gpulab::Tensor::rand((4, 3, 8, 8), gpulab::Device::Cpu)?;
/// let flipped = RandomHorizontalFlip::new(0.5).apply(&x, &mut Rng::new(0))?;
/// # Ok::<(), gpulab::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct RandomHorizontalFlip {
    p: f32,
}

impl RandomHorizontalFlip {
    /// Flips each image with probability `p` (in [0, 1]).
    pub fn new(p: f32) -> RandomHorizontalFlip {
        RandomHorizontalFlip { p }
    }
}

impl Transform for RandomHorizontalFlip {
    fn apply(&self, batch: &Tensor, rng: &mut Rng) -> Result<Tensor> {
        check_prob(self.p, "RandomHorizontalFlip")?;
        let (mut data, dims, device) = host_images(batch, "RandomHorizontalFlip")?;
        let [n, c, h, w] = dims;
        for i in 0..n {
            if !rng.chance(self.p) {
                continue;
            }
            for row in data[i * c * h * w..(i + 1) * c * h * w].chunks_mut(w.max(1)) {
                row.reverse();
            }
        }
        back(data, dims, device)
    }
    fn name(&self) -> String {
        format!("RandomHorizontalFlip(p={})", self.p)
    }
}

fn check_prob(p: f32, who: &str) -> Result<()> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "{who}: the probability must be in [0, 1], got {p}"
        )))
    }
}

fn check_range(v: f32, max: f32, who: &str, what: &str) -> Result<()> {
    if v.is_finite() && (0.0..max).contains(&v) {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "{who}: {what} must be in [0, {max}), got {v}"
        )))
    }
}

/// Moves each image by a random whole number of pixels, up to `width_fraction` of the width
/// and `height_fraction` of the height either way (Keras' `width_shift_range` /
/// `height_shift_range`, torchvision's `RandomAffine(translate=...)`). Runs on the host.
///
/// ```
/// use gpulab::data::augment::{RandomShift, Fill};
/// let shift = RandomShift::new(0.1, 0.1).fill(Fill::Edge); // up to 10 % each way
/// ```
#[derive(Clone, Debug)]
pub struct RandomShift {
    wf: f32,
    hf: f32,
    fill: Fill,
}

/// torchvision's name for a shift.
pub type RandomTranslate = RandomShift;

impl RandomShift {
    /// Shifts of up to `width_fraction * w` and `height_fraction * h` pixels (fractions in
    /// [0, 1)), filling with zeros.
    pub fn new(width_fraction: f32, height_fraction: f32) -> RandomShift {
        RandomShift {
            wf: width_fraction,
            hf: height_fraction,
            fill: Fill::Zero,
        }
    }
    /// What to put where the image moved away from: zeros (default) or the edge pixel.
    pub fn fill(mut self, fill: Fill) -> RandomShift {
        self.fill = fill;
        self
    }
}

impl Transform for RandomShift {
    fn apply(&self, batch: &Tensor, rng: &mut Rng) -> Result<Tensor> {
        check_range(self.wf, 1.0, "RandomShift", "width_fraction")?;
        check_range(self.hf, 1.0, "RandomShift", "height_fraction")?;
        let (data, dims, device) = host_images(batch, "RandomShift")?;
        let (mx, my) = (
            (self.wf * dims[3] as f32).floor() as i64,
            (self.hf * dims[2] as f32).floor() as i64,
        );
        let out = warp(&data, dims, self.fill, rng, |rng| {
            let dx = rng.below((2 * mx + 1) as usize) as i64 - mx;
            let dy = rng.below((2 * my + 1) as usize) as i64 - my;
            // Output pixel (x, y) shows input pixel (x - dx, y - dy): the image moves by +dx.
            Some(Affine {
                m: [[1.0, 0.0], [0.0, 1.0]],
                t: (-dx as f32, -dy as f32),
            })
        });
        back(out, dims, device)
    }
    fn name(&self) -> String {
        format!("RandomShift(width={}, height={})", self.wf, self.hf)
    }
}

/// Zooms each image by a random factor in `[1 - range, 1 + range]` about its centre (Keras'
/// `zoom_range=range`; a factor above 1 magnifies), same factor for both axes, bilinear; the
/// shape is unchanged. Runs on the host.
///
/// ```
/// use gpulab::data::augment::RandomZoom;
/// let zoom = RandomZoom::new(0.2); // factors in [0.8, 1.2]
/// ```
#[derive(Clone, Debug)]
pub struct RandomZoom {
    range: f32,
    fill: Fill,
}

impl RandomZoom {
    /// Factors in `[1 - range, 1 + range]`, `range` in [0, 1); fills with zeros.
    pub fn new(range: f32) -> RandomZoom {
        RandomZoom {
            range,
            fill: Fill::Zero,
        }
    }
    /// What to put where a zoomed-out image no longer covers: zeros (default) or the edge.
    pub fn fill(mut self, fill: Fill) -> RandomZoom {
        self.fill = fill;
        self
    }
}

impl Transform for RandomZoom {
    fn apply(&self, batch: &Tensor, rng: &mut Rng) -> Result<Tensor> {
        check_range(self.range, 1.0, "RandomZoom", "range")?;
        let (data, dims, device) = host_images(batch, "RandomZoom")?;
        let r = self.range;
        let out = warp(&data, dims, self.fill, rng, |rng| {
            let z = rng.uniform(1.0 - r, 1.0 + r);
            Some(Affine {
                m: [[1.0 / z, 0.0], [0.0, 1.0 / z]],
                t: (0.0, 0.0),
            })
        });
        back(out, dims, device)
    }
    fn name(&self) -> String {
        format!("RandomZoom({})", self.range)
    }
}

/// Shears each image by a random angle in `[-degrees, degrees]` (Keras' `shear_range`,
/// in degrees): rows slide sideways in proportion to their distance from the centre.
/// Runs on the host.
///
/// ```
/// use gpulab::data::augment::RandomShear;
/// let shear = RandomShear::new(10.0); // up to 10 degrees either way
/// ```
#[derive(Clone, Debug)]
pub struct RandomShear {
    degrees: f32,
    fill: Fill,
}

impl RandomShear {
    /// Angles in `[-degrees, degrees]`, `degrees` in [0, 90); fills with zeros.
    pub fn new(degrees: f32) -> RandomShear {
        RandomShear {
            degrees,
            fill: Fill::Zero,
        }
    }
    /// What to put where the sheared image no longer covers: zeros (default) or the edge.
    pub fn fill(mut self, fill: Fill) -> RandomShear {
        self.fill = fill;
        self
    }
}

impl Transform for RandomShear {
    fn apply(&self, batch: &Tensor, rng: &mut Rng) -> Result<Tensor> {
        check_range(self.degrees, 90.0, "RandomShear", "degrees")?;
        let (data, dims, device) = host_images(batch, "RandomShear")?;
        let d = self.degrees;
        let out = warp(&data, dims, self.fill, rng, |rng| {
            let k = rng.uniform(-d, d).to_radians().tan();
            Some(Affine {
                m: [[1.0, k], [0.0, 1.0]],
                t: (0.0, 0.0),
            })
        });
        back(out, dims, device)
    }
    fn name(&self) -> String {
        format!("RandomShear({} degrees)", self.degrees)
    }
}

/// Multiplies every value by `factor` (Keras' `rescale=1./255` for u8-range data; the loaders
/// of this module already give [0, 1]). Runs on the batch's device, and needs no random draw.
///
/// ```
/// let rescale = gpulab::data::augment::Rescale(1.0 / 255.0);
/// ```
#[derive(Clone, Debug)]
pub struct Rescale(pub f32);

impl Transform for Rescale {
    fn apply(&self, batch: &Tensor, _rng: &mut Rng) -> Result<Tensor> {
        let x = if batch.dtype() == DType::F32 {
            batch.detach()
        } else {
            batch.to_dtype(DType::F32)?
        };
        x.mul(self.0)
    }
    fn name(&self) -> String {
        format!("Rescale({})", self.0)
    }
}

/// Transforms applied one after the other (torchvision's `Compose`).
///
/// ```
/// use gpulab::data::augment::{Compose, RandomHorizontalFlip, RandomShear, RandomZoom};
/// let augment = Compose::new(vec![
///     Box::new(RandomShear::new(11.0)),
///     Box::new(RandomZoom::new(0.2)),
///     Box::new(RandomHorizontalFlip::new(0.5)),
/// ]);
/// ```
pub struct Compose {
    steps: Vec<Box<dyn Transform>>,
}

impl Compose {
    /// The steps, applied in order.
    pub fn new(steps: Vec<Box<dyn Transform>>) -> Compose {
        Compose { steps }
    }
    /// Appends a step (builder style, as `nn::Sequential::add`).
    #[allow(clippy::should_implement_trait)] // the same builder name as nn::Sequential::add
    pub fn add(mut self, step: impl Transform + 'static) -> Compose {
        self.steps.push(Box::new(step));
        self
    }
    /// Number of steps.
    pub fn len(&self) -> usize {
        self.steps.len()
    }
    /// True when there is no step (the identity).
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}

impl Transform for Compose {
    fn apply(&self, batch: &Tensor, rng: &mut Rng) -> Result<Tensor> {
        let mut x = batch.clone();
        for s in &self.steps {
            x = s.apply(&x, rng)?;
        }
        Ok(x)
    }
    fn name(&self) -> String {
        let names: Vec<String> = self.steps.iter().map(|s| s.name()).collect();
        format!("Compose([{}])", names.join(", "))
    }
}
