//! Resizing as torch's `F.interpolate` and `nn.Upsample` do, for sequences `[N, C, L]`,
//! images `[N, C, H, W]` and volumes `[N, C, D, H, W]`: `nearest`, `nearest-exact`, `linear`
//! / `bilinear` / `trilinear` (with or without `align_corners`), `bicubic` and `area`. Every
//! mode is separable: each axis is resized in turn by a few `index_select`s, weighted and
//! added (one for nearest, two for the linear modes, four for bicubic, a window's worth for
//! area), so it runs on every device and autograd differentiates it.

use super::functional::{float_input, in_float32};
use super::{py_float, Module};
use crate::error::{Error, Result};
use crate::tensor::autocast::{autocast1, AmpOp};
use crate::tensor::Tensor;

/// The size to resize to, as torch's `size=` / `scale_factor=`: an output size (`(h, w)`,
/// `(d, h, w)`, or one size for every axis), or a scale factor (one for every axis, or one
/// per axis).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Resize {
    Size(usize, usize),
    Scale(f64, f64),
    /// One output size for every axis (torch's `size=int`).
    All(usize),
    Size3(usize, usize, usize),
    Scale3(f64, f64, f64),
}

impl From<usize> for Resize {
    fn from(n: usize) -> Resize {
        Resize::All(n)
    }
}

impl From<(usize, usize)> for Resize {
    fn from((h, w): (usize, usize)) -> Resize {
        Resize::Size(h, w)
    }
}

impl From<[usize; 2]> for Resize {
    fn from([h, w]: [usize; 2]) -> Resize {
        Resize::Size(h, w)
    }
}

impl From<(usize, usize, usize)> for Resize {
    fn from((d, h, w): (usize, usize, usize)) -> Resize {
        Resize::Size3(d, h, w)
    }
}

impl From<[usize; 3]> for Resize {
    fn from([d, h, w]: [usize; 3]) -> Resize {
        Resize::Size3(d, h, w)
    }
}

impl From<f64> for Resize {
    fn from(s: f64) -> Resize {
        Resize::Scale(s, s)
    }
}

impl From<(f64, f64)> for Resize {
    fn from((h, w): (f64, f64)) -> Resize {
        Resize::Scale(h, w)
    }
}

impl From<(f64, f64, f64)> for Resize {
    fn from((d, h, w): (f64, f64, f64)) -> Resize {
        Resize::Scale3(d, h, w)
    }
}

/// One axis's target: an output length, or a factor (the length `floor(len * factor)`).
#[derive(Clone, Copy)]
enum Target {
    Len(usize),
    Factor(f64),
}

impl Resize {
    /// torch's repr: `scale_factor=2.0`, `scale_factor=(2.0, 3.0)`, `size=(5, 7)`, `size=4`.
    fn describe(&self) -> String {
        match *self {
            Resize::Size(h, w) => format!("size=({h}, {w})"),
            Resize::All(n) => format!("size={n}"),
            Resize::Size3(d, h, w) => format!("size=({d}, {h}, {w})"),
            Resize::Scale(h, w) if h == w => format!("scale_factor={}", py_float(h)),
            Resize::Scale(h, w) => format!("scale_factor=({}, {})", py_float(h), py_float(w)),
            Resize::Scale3(d, h, w) => format!(
                "scale_factor=({}, {}, {})",
                py_float(d),
                py_float(h),
                py_float(w)
            ),
        }
    }

    /// The target of each of `spatial` axes; a single factor (`2.0`) serves every axis.
    fn targets(&self, spatial: usize) -> Result<Vec<Target>> {
        let given = match *self {
            Resize::All(n) => return Ok(vec![Target::Len(n); spatial]),
            Resize::Scale(h, w) if h == w => return Ok(vec![Target::Factor(h); spatial]),
            Resize::Size(h, w) => vec![Target::Len(h), Target::Len(w)],
            Resize::Scale(h, w) => vec![Target::Factor(h), Target::Factor(w)],
            Resize::Size3(d, h, w) => vec![Target::Len(d), Target::Len(h), Target::Len(w)],
            Resize::Scale3(d, h, w) => {
                vec![Target::Factor(d), Target::Factor(h), Target::Factor(w)]
            }
        };
        if given.len() != spatial {
            return Err(Error::Invalid(format!(
                "interpolate: {} gives {} sizes, but the input has {spatial} spatial \
                 dimensions (as in torch, one size or factor per axis, or one for all)",
                self.describe(),
                given.len()
            )));
        }
        Ok(given)
    }
}

/// How an axis of `out` outputs reads its `len` inputs: for each of `k` taps, an input index
/// and a weight per output (no weights: nearest, one tap copied).
struct Taps {
    index: Vec<Vec<i64>>,
    weight: Option<Vec<Vec<f64>>>,
}

/// torch's `area_pixel_compute_scale`: with `align_corners` the corners' centres meet, else
/// `1 / factor` when a factor was given, or `len / out`.
fn pixel_scale(len: usize, out: usize, factor: Option<f64>, align: bool) -> f64 {
    if align {
        if out > 1 {
            (len as f64 - 1.0) / (out as f64 - 1.0)
        } else {
            0.0
        }
    } else {
        match factor {
            Some(f) if f > 0.0 => 1.0 / f,
            _ => len as f64 / out as f64,
        }
    }
}

/// torch's cubic convolution weights (A = -0.75) for a fraction `t` past the second tap.
fn cubic_weights(t: f64) -> [f64; 4] {
    const A: f64 = -0.75;
    let near = |x: f64| ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    let far = |x: f64| ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
    [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]
}

/// One axis: `len` inputs to `out` outputs in `mode`.
fn taps(mode: &str, len: usize, out: usize, factor: Option<f64>, align: bool) -> Taps {
    let last = len as i64 - 1;
    let clamp = |i: i64| i.clamp(0, last);
    match mode {
        "nearest" | "nearest-exact" => {
            // As torch's kernels compute it: the scale in float32, `floorf(d * scale)`, and
            // for nearest-exact `floorf((d + 0.5) * scale)` with the product in double.
            let s = match factor {
                Some(f) if f > 0.0 => (1.0 / f) as f32,
                _ => len as f32 / out as f32,
            };
            let src = |d: usize| -> f32 {
                if mode == "nearest" {
                    d as f32 * s
                } else {
                    ((d as f64 + 0.5) * s as f64) as f32
                }
            };
            let index = (0..out)
                .map(|d| (src(d).floor() as i64).min(last))
                .collect();
            Taps {
                index: vec![index],
                weight: None,
            }
        }
        "area" => {
            // torch's adaptive average pooling windows: [floor(o len / out), ceil((o + 1)
            // len / out)), each element weighted 1 / its length; shorter windows are padded
            // with weight-0 taps.
            let window = |o: usize| (o * len / out, ((o + 1) * len).div_ceil(out));
            let k = (0..out)
                .map(|o| window(o).1 - window(o).0)
                .max()
                .unwrap_or(1);
            let mut index: Vec<Vec<i64>> = (0..k).map(|_| Vec::with_capacity(out)).collect();
            let mut weight: Vec<Vec<f64>> = (0..k).map(|_| Vec::with_capacity(out)).collect();
            for o in 0..out {
                let (a, b) = window(o);
                for t in 0..k {
                    let inside = a + t < b;
                    index[t].push(if inside { (a + t) as i64 } else { a as i64 });
                    weight[t].push(if inside { 1.0 / (b - a) as f64 } else { 0.0 });
                }
            }
            Taps {
                index,
                weight: Some(weight),
            }
        }
        "bicubic" => {
            // torch's upsample_bicubic2d: the source index unclamped, four taps around it,
            // each index held inside the input.
            let s = pixel_scale(len, out, factor, align);
            let mut index: Vec<Vec<i64>> = (0..4).map(|_| Vec::with_capacity(out)).collect();
            let mut weight: Vec<Vec<f64>> = (0..4).map(|_| Vec::with_capacity(out)).collect();
            for d in 0..out {
                let src = if align {
                    s * d as f64
                } else {
                    s * (d as f64 + 0.5) - 0.5
                };
                let floor = src.floor();
                let w = cubic_weights(src - floor);
                for t in 0..4 {
                    index[t].push(clamp(floor as i64 - 1 + t as i64));
                    weight[t].push(w[t]);
                }
            }
            Taps {
                index,
                weight: Some(weight),
            }
        }
        _ => {
            // The linear modes: torch's area_pixel_compute_source_index, held at 0.
            let s = pixel_scale(len, out, factor, align);
            let (mut i0, mut i1, mut w0, mut w1) = (vec![], vec![], vec![], vec![]);
            for d in 0..out {
                let src = if align {
                    s * d as f64
                } else {
                    (s * (d as f64 + 0.5) - 0.5).max(0.0)
                };
                let lo = (src as i64).min(last);
                let hi = if lo < last { lo + 1 } else { lo };
                let l1 = src - lo as f64;
                i0.push(lo);
                i1.push(hi);
                w0.push(1.0 - l1);
                w1.push(l1);
            }
            Taps {
                index: vec![i0, i1],
                weight: Some(vec![w0, w1]),
            }
        }
    }
}

/// Resizes `x` along `dim` with `taps`: the taps' `index_select`s, weighted and added.
fn along(x: &Tensor, dim: usize, taps: &Taps) -> Result<Tensor> {
    let index = |v: &[i64]| Tensor::from_vec(v.to_vec(), v.len(), x.device());
    let Some(weights) = &taps.weight else {
        return x.index_select(dim as isize, &index(&taps.index[0])?);
    };
    // The weights broadcast along the axis: [out, 1, ..] with a 1 per later dimension.
    let mut shape = vec![taps.index[0].len()];
    shape.extend(std::iter::repeat_n(1, x.rank() - 1 - dim));
    let mut sum: Option<Tensor> = None;
    for (i, w) in taps.index.iter().zip(weights) {
        let w = Tensor::from_vec(w.clone(), shape.clone(), x.device())?.to_dtype(x.dtype())?;
        let term = x.index_select(dim as isize, &index(i)?)?.mul(&w)?;
        sum = Some(match sum {
            Some(s) => s.add(&term)?,
            None => term,
        });
    }
    Ok(sum.expect("at least one tap"))
}

/// `x` resized to `outs` along its last `outs.len()` axes in `mode`, without interpolate's
/// checks or autocast (for the ops built on it, which have their own): halves in float32.
pub(super) fn resize_axes(x: &Tensor, outs: &[usize], mode: &str) -> Result<Tensor> {
    if let Some(y) = in_float32(x, &[], |x, _| resize_axes(x, outs, mode)) {
        return y;
    }
    let first = x.rank() - outs.len();
    let mut y = x.clone();
    for (a, &out) in outs.iter().enumerate() {
        let len = y.shape()[first + a];
        y = along(&y, first + a, &taps(mode, len, out, None, false))?;
    }
    Ok(y)
}

/// Resizes `x` (torch's `F.interpolate`): `[N, C, L]`, `[N, C, H, W]` or `[N, C, D, H, W]`,
/// to `size`, an output size (`(h, w)`, `(d, h, w)`, or one for every axis) or a scale
/// factor (`2.0`, or one per axis; the output is `floor(len · factor)` and the factor itself
/// places the samples, as torch's default). `mode`: `"nearest"` (torch's default: output
/// `i` copies input `floor(i · len / out)`), `"nearest-exact"` (`floor((i + 0.5) · len /
/// out)`), `"linear"` (3-D input), `"bilinear"` (4-D), `"trilinear"` (5-D), `"bicubic"`
/// (4-D; torch's cubic convolution, A = -0.75, may overshoot the input's range) or `"area"`
/// (adaptive average pooling). The interpolating modes take floats only; `align_corners`
/// puts the corner elements' centres on each other, and must be false for nearest and area,
/// as torch requires.
pub fn interpolate(
    x: &Tensor,
    size: impl Into<Resize>,
    mode: &str,
    align_corners: bool,
) -> Result<Tensor> {
    const OP: &str = "interpolate";
    let size = size.into();
    if let Some(r) = autocast1(AmpOp::Interpolate, OP, x, |x| {
        interpolate(x, size, mode, align_corners)
    }) {
        return r;
    }
    let rank = x.rank();
    if !(3..=5).contains(&rank) {
        return Err(Error::BadShape(format!(
            "{OP}: expected input [N, C, L], [N, C, H, W] or [N, C, D, H, W], got {:?}",
            x.shape()
        )));
    }
    let needs = match mode {
        "nearest" | "nearest-exact" | "area" => {
            if align_corners {
                return Err(Error::Invalid(format!(
                    "{OP}: align_corners can only be set with the interpolating modes \
                     \"linear\", \"bilinear\", \"bicubic\" or \"trilinear\", not with \
                     \"{mode}\" (as in torch)"
                )));
            }
            None
        }
        "linear" => Some(3),
        "bilinear" | "bicubic" => Some(4),
        "trilinear" => Some(5),
        other => {
            return Err(Error::Invalid(format!(
                "{OP}: mode must be \"nearest\", \"nearest-exact\", \"linear\", \"bilinear\", \
                 \"bicubic\", \"trilinear\" or \"area\", got \"{other}\""
            )))
        }
    };
    if let Some(r) = needs.filter(|&r| r != rank) {
        return Err(Error::Invalid(format!(
            "{OP}: got {rank}D input, but {mode} mode needs {r}D input (shape {:?})",
            x.shape()
        )));
    }
    if mode != "nearest" && mode != "nearest-exact" {
        float_input(x, &format!("{OP} ({mode})"))?;
    }
    let lens = &x.shape()[2..];
    let targets = size.targets(rank - 2)?;
    let mut outs = Vec::with_capacity(lens.len());
    for (&len, target) in lens.iter().zip(&targets) {
        outs.push(match *target {
            Target::Len(n) => (n, None),
            Target::Factor(f) => {
                if !(f.is_finite() && f > 0.0) {
                    return Err(Error::Invalid(format!(
                        "{OP}: scale factors must be positive, got {}",
                        size.describe()
                    )));
                }
                let n = (len as f64 * f).floor();
                if n > u32::MAX as f64 {
                    return Err(Error::BadShape(format!(
                        "{OP}: {} makes an axis of {n}",
                        size.describe()
                    )));
                }
                (n as usize, Some(f))
            }
        });
    }
    if lens.contains(&0) || outs.iter().any(|o| o.0 == 0) {
        return Err(Error::BadShape(format!(
            "{OP}: input and output sizes must be positive, got input {:?} and output {:?}",
            x.shape(),
            outs.iter().map(|o| o.0).collect::<Vec<_>>()
        )));
    }
    let mut dims = x.shape()[..2].to_vec();
    dims.extend(outs.iter().map(|o| o.0));
    crate::tensor::host_mem::checked_numel(OP, &dims)?;
    if mode != "nearest" && mode != "nearest-exact" {
        if let Some(y) = in_float32(x, &[], |x, _| interpolate(x, size, mode, align_corners)) {
            return y;
        }
    }
    let mut y = x.clone();
    for (a, (&len, &(out, factor))) in lens.iter().zip(&outs).enumerate() {
        y = along(&y, 2 + a, &taps(mode, len, out, factor, align_corners))?;
    }
    Ok(y)
}

/// Upsampling as a layer (torch's `nn.Upsample`): `Upsample::new(2.0)` doubles every spatial
/// axis by copying elements; `.mode("bilinear")` blends them, `.align_corners(true)` as
/// torch's. See [`interpolate`].
#[derive(Clone)]
pub struct Upsample {
    name: &'static str,
    size: Resize,
    mode: String,
    align_corners: bool,
}

impl Upsample {
    pub fn new(size: impl Into<Resize>) -> Upsample {
        Upsample {
            name: "Upsample",
            size: size.into(),
            mode: "nearest".into(),
            align_corners: false,
        }
    }
    pub fn mode(mut self, mode: &str) -> Upsample {
        self.mode = mode.to_string();
        self
    }
    pub fn align_corners(mut self, align: bool) -> Upsample {
        self.align_corners = align;
        self
    }
}

impl Module for Upsample {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        interpolate(x, self.size, &self.mode, self.align_corners)
    }
    /// torch's repr (which does not show `align_corners`).
    fn describe(&self) -> String {
        format!(
            "{}({}, mode='{}')",
            self.name,
            self.size.describe(),
            self.mode
        )
    }
}

/// torch's `nn.UpsamplingNearest2d(size)` (kept in torch for old code): an [`Upsample`] that
/// copies the nearest element.
pub struct UpsamplingNearest2d;

impl UpsamplingNearest2d {
    #[allow(clippy::new_ret_no_self)]
    pub fn new(size: impl Into<Resize>) -> Upsample {
        Upsample {
            name: "UpsamplingNearest2d",
            ..Upsample::new(size)
        }
    }
}

/// torch's `nn.UpsamplingBilinear2d(size)`: an [`Upsample`] that blends with
/// `align_corners=True`, over `[N, C, H, W]`.
pub struct UpsamplingBilinear2d;

impl UpsamplingBilinear2d {
    #[allow(clippy::new_ret_no_self)]
    pub fn new(size: impl Into<Resize>) -> Upsample {
        Upsample {
            name: "UpsamplingBilinear2d",
            ..Upsample::new(size).mode("bilinear").align_corners(true)
        }
    }
}

/// torch's `F.upsample`, kept for old code: [`interpolate`].
pub fn upsample(
    x: &Tensor,
    size: impl Into<Resize>,
    mode: &str,
    align_corners: bool,
) -> Result<Tensor> {
    interpolate(x, size, mode, align_corners)
}

/// torch's `F.upsample_nearest`: [`interpolate`] in `"nearest"` mode.
pub fn upsample_nearest(x: &Tensor, size: impl Into<Resize>) -> Result<Tensor> {
    interpolate(x, size, "nearest", false)
}

/// torch's `F.upsample_bilinear`: [`interpolate`] in `"bilinear"` mode with
/// `align_corners=True` (its one difference from `interpolate`'s default), `[N, C, H, W]`.
pub fn upsample_bilinear(x: &Tensor, size: impl Into<Resize>) -> Result<Tensor> {
    interpolate(x, size, "bilinear", true)
}
