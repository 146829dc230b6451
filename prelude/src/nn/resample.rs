//! Resizing images as torch's `F.interpolate` and `nn.Upsample` do (4-D input `[N, C, H, W]`):
//! `nearest`, `nearest-exact` and `bilinear` (with or without `align_corners`). Each is one
//! `index_select` per axis (two, weighted, for bilinear), so it runs on every device and
//! autograd differentiates it.

use super::functional::{float_input, in_float32};
use super::windows::nchw;
use super::{py_float, Module};
use crate::error::{Error, Result};
use crate::tensor::autocast::{autocast1, AmpOp};
use crate::tensor::Tensor;

/// The size to resize to: an output size `(h, w)`, or a scale factor (one for both axes, or
/// one per axis), as torch's `size=` / `scale_factor=`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Resize {
    Size(usize, usize),
    Scale(f64, f64),
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

impl Resize {
    /// torch's repr: `scale_factor=2.0`, `scale_factor=(2.0, 3.0)`, `size=(5, 7)`.
    fn describe(&self) -> String {
        match *self {
            Resize::Size(h, w) => format!("size=({h}, {w})"),
            Resize::Scale(h, w) if h == w => format!("scale_factor={}", py_float(h)),
            Resize::Scale(h, w) => format!("scale_factor=({}, {})", py_float(h), py_float(w)),
        }
    }
}

/// How one output row (or column) reads the input's along one axis.
enum Taps {
    /// The input index each output index copies.
    Nearest(Vec<i64>),
    /// Two input indices and their weights.
    Linear(Vec<i64>, Vec<i64>, Vec<f64>, Vec<f64>),
}

/// One axis: `len` inputs to `out` outputs. `scale` is torch's: `1 / scale_factor` when a
/// factor was given, else `len / out` (computed in float32 as torch does for nearest).
fn taps(mode: &str, len: usize, out: usize, factor: Option<f64>, align: bool) -> Taps {
    let scale = |in_f32: bool| -> f64 {
        match factor {
            Some(f) if f > 0.0 => {
                if in_f32 {
                    (1.0 / f) as f32 as f64
                } else {
                    1.0 / f
                }
            }
            _ => {
                if in_f32 {
                    (len as f32 / out as f32) as f64
                } else {
                    len as f64 / out as f64
                }
            }
        }
    };
    let last = len as i64 - 1;
    match mode {
        "nearest" | "nearest-exact" => {
            // As torch's kernels compute it: `floorf(d * scale)` in float, and for
            // nearest-exact `floorf((d + 0.5) * scale)` with the product in double.
            let s = scale(true) as f32;
            let src = |d: usize| -> f32 {
                if mode == "nearest" {
                    d as f32 * s
                } else {
                    ((d as f64 + 0.5) * s as f64) as f32
                }
            };
            Taps::Nearest(
                (0..out)
                    .map(|d| (src(d).floor() as i64).min(last))
                    .collect(),
            )
        }
        _ => {
            // bilinear: torch's area_pixel_compute_source_index.
            let s = if align {
                if out > 1 {
                    (len as f64 - 1.0) / (out as f64 - 1.0)
                } else {
                    0.0
                }
            } else {
                scale(false)
            };
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
            Taps::Linear(i0, i1, w0, w1)
        }
    }
}

/// Resizes `x` `[N, C, H, W]` along `dim` (2 or 3) with `taps`.
fn along(x: &Tensor, dim: usize, taps: &Taps) -> Result<Tensor> {
    let index = |v: &[i64]| Tensor::from_vec(v.to_vec(), v.len(), x.device());
    match taps {
        Taps::Nearest(i) => x.index_select(dim as isize, &index(i)?),
        Taps::Linear(i0, i1, w0, w1) => {
            // The weights broadcast along the axis: [out, 1] for rows, [out] for columns.
            let shape = if dim == 2 {
                vec![w0.len(), 1]
            } else {
                vec![w0.len()]
            };
            let weight = |w: &[f64]| {
                Tensor::from_vec(w.to_vec(), shape.clone(), x.device())?.to_dtype(x.dtype())
            };
            let lo = x.index_select(dim as isize, &index(i0)?)?;
            let hi = x.index_select(dim as isize, &index(i1)?)?;
            lo.mul(&weight(w0)?)?.add(&hi.mul(&weight(w1)?)?)
        }
    }
}

/// Resizes the images `x` `[N, C, H, W]` (torch's `F.interpolate` for 4-D input) to `size`,
/// an output size `(h, w)` or a scale factor (`2.0`, or `(2.0, 3.0)` per axis; the output is
/// `floor(H · factor)` rows, and the factor itself places the samples, as torch's default).
/// `mode`: `"nearest"` (torch's default: output row `i` copies input row
/// `floor(i · H / H')`), `"nearest-exact"` (`floor((i + 0.5) · H / H')`, no half-pixel shift)
/// or `"bilinear"` (floats only; `align_corners` puts the corner pixels' centres on each
/// other, as torch's `align_corners=True`; it must be false for the nearest modes, as torch
/// requires).
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
    let [_, _, h, w] = nchw(x, OP)?;
    match mode {
        "nearest" | "nearest-exact" if align_corners => {
            return Err(Error::Invalid(format!(
                "{OP}: align_corners can only be set with the interpolating mode \"bilinear\", \
                 not with \"{mode}\" (as in torch)"
            )))
        }
        "nearest" | "nearest-exact" => {}
        "bilinear" => float_input(x, "interpolate (bilinear)")?,
        other => {
            return Err(Error::Invalid(format!(
                "{OP}: mode must be \"nearest\", \"nearest-exact\" or \"bilinear\", got \
                 \"{other}\""
            )))
        }
    }
    let (oh, ow, fh, fw) = match size {
        Resize::Size(oh, ow) => (oh, ow, None, None),
        Resize::Scale(fh, fw) => {
            if !(fh.is_finite() && fw.is_finite() && fh > 0.0 && fw > 0.0) {
                return Err(Error::Invalid(format!(
                    "{OP}: scale factors must be positive, got ({fh}, {fw})"
                )));
            }
            let out = |len: usize, f: f64| (len as f64 * f).floor();
            let (oh, ow) = (out(h, fh), out(w, fw));
            if oh > u32::MAX as f64 || ow > u32::MAX as f64 {
                return Err(Error::BadShape(format!(
                    "{OP}: scale factors ({fh}, {fw}) make a {oh} x {ow} image"
                )));
            }
            (oh as usize, ow as usize, Some(fh), Some(fw))
        }
    };
    if oh == 0 || ow == 0 || h == 0 || w == 0 {
        return Err(Error::BadShape(format!(
            "{OP}: input and output sizes must be positive, got input {:?} and output ({oh}, \
             {ow})",
            x.shape()
        )));
    }
    crate::tensor::host_mem::checked_numel(OP, &[x.shape()[0], x.shape()[1], oh, ow])?;
    if mode == "bilinear" {
        if let Some(y) = in_float32(x, &[], |x, _| interpolate(x, size, mode, align_corners)) {
            return y;
        }
    }
    let rows = taps(mode, h, oh, fh, align_corners);
    let cols = taps(mode, w, ow, fw, align_corners);
    along(&along(x, 2, &rows)?, 3, &cols)
}

/// Upsampling as a layer (torch's `nn.Upsample`): `Upsample::new(2.0)` doubles the height and
/// width by copying pixels; `.mode("bilinear")` blends them, `.align_corners(true)` as
/// torch's. See [`interpolate`].
#[derive(Clone)]
pub struct Upsample {
    size: Resize,
    mode: String,
    align_corners: bool,
}

impl Upsample {
    pub fn new(size: impl Into<Resize>) -> Upsample {
        Upsample {
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
        format!("Upsample({}, mode='{}')", self.size.describe(), self.mode)
    }
}
