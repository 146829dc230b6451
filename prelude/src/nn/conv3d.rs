//! Three-dimensional convolution, torch's `F.conv3d` and `nn.Conv3d`, for volumes and clips
//! (`[N, C, D, H, W]`). The depth taps are folded into the channels, so a 3-D convolution is
//! one 2-D convolution: the input's depth windows gathered by one `index_select`, each
//! output depth a batch row, the weight's depth axis moved next to its channels. It runs on
//! every device with conv2d's kernels, matmul and gradients.

use super::conv::{check_channels, halves_in_float32, Padding, Size2};
use super::functional;
use super::windows::window_count;
use crate::autograd::relabel;
use crate::error::{Error, Result};
use crate::tensor::autocast::{autocast3, AmpOp};
use crate::tensor::host_mem::checked_numel;
use crate::tensor::Tensor;
use crate::Device;

/// A 3-D size: an int for all three axes, or a `(d, h, w)` triple.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size3(pub usize, pub usize, pub usize);

impl From<usize> for Size3 {
    fn from(v: usize) -> Size3 {
        Size3(v, v, v)
    }
}

impl From<(usize, usize, usize)> for Size3 {
    fn from((d, h, w): (usize, usize, usize)) -> Size3 {
        Size3(d, h, w)
    }
}

impl From<[usize; 3]> for Size3 {
    fn from([d, h, w]: [usize; 3]) -> Size3 {
        Size3(d, h, w)
    }
}

impl Size3 {
    pub(super) fn show(self) -> String {
        format!("({}, {}, {})", self.0, self.1, self.2)
    }
    /// The height and width part.
    pub(super) fn hw(self) -> Size2 {
        Size2(self.1, self.2)
    }
}

/// conv3d's zero padding: the same on both sides of each axis (`1`, `(0, 1, 1)`), or
/// `"same"` / `"valid"` as conv2d's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Padding3 {
    Zeros(usize, usize, usize),
    Same,
    Valid,
    /// A string other than "same" or "valid": an error when the convolution runs.
    Unknown(String),
}

impl From<usize> for Padding3 {
    fn from(v: usize) -> Padding3 {
        Padding3::Zeros(v, v, v)
    }
}

impl From<(usize, usize, usize)> for Padding3 {
    fn from((d, h, w): (usize, usize, usize)) -> Padding3 {
        Padding3::Zeros(d, h, w)
    }
}

impl From<[usize; 3]> for Padding3 {
    fn from([d, h, w]: [usize; 3]) -> Padding3 {
        Padding3::Zeros(d, h, w)
    }
}

impl From<&str> for Padding3 {
    fn from(s: &str) -> Padding3 {
        match Padding::from(s) {
            Padding::Same => Padding3::Same,
            Padding::Valid => Padding3::Valid,
            _ => Padding3::Unknown(s.to_string()),
        }
    }
}

impl Padding3 {
    /// The depth's zeros before and after, and the height and width's as conv2d's padding.
    fn split(&self, kd: usize, sd: usize, dd: usize) -> Result<([usize; 2], Padding)> {
        match self {
            Padding3::Zeros(d, h, w) => Ok(([*d, *d], Padding::Zeros(*h, *w))),
            Padding3::Valid => Ok(([0, 0], Padding::Valid)),
            Padding3::Same => {
                if sd != 1 {
                    return Err(Error::Invalid(format!(
                        "conv3d: padding \"same\" needs stride 1 (as in torch), got a depth \
                         stride of {sd}"
                    )));
                }
                // As conv2d's "same": d*(k-1) zeros, half before (rounded down).
                let total = dd.saturating_mul(kd.saturating_sub(1));
                Ok(([total / 2, total - total / 2], Padding::Same))
            }
            Padding3::Unknown(s) => Err(Error::Invalid(format!(
                "conv3d: padding must be a number, a (d, h, w) triple, \"same\" or \"valid\", \
                 got \"{s}\""
            ))),
        }
    }

    /// As torch's repr prints it; None for no padding.
    pub(super) fn show(&self) -> Option<String> {
        match self {
            Padding3::Zeros(0, 0, 0) => None,
            Padding3::Zeros(d, h, w) => Some(Size3(*d, *h, *w).show()),
            Padding3::Same => Some("same".into()),
            Padding3::Valid => Some("valid".into()),
            Padding3::Unknown(s) => Some(s.clone()),
        }
    }
}

/// `x` `[N, C, D, H, W]` (or `[C, D, H, W]`, unbatched) and whether it was unbatched.
pub(super) fn as_volume(op: &str, x: &Tensor) -> Result<(Tensor, bool)> {
    match x.rank() {
        5 => Ok((x.clone(), false)),
        4 => Ok((x.unsqueeze(0)?, true)),
        _ => Err(Error::BadShape(format!(
            "{op}: expected input [N, C, D, H, W] or [C, D, H, W], got {:?}",
            x.shape()
        ))),
    }
}

/// `y` without the batch dimension `as_volume` added.
pub(super) fn unvolume(y: Tensor, unbatched: bool) -> Result<Tensor> {
    if unbatched {
        y.squeeze(0)
    } else {
        Ok(y)
    }
}

/// `x` with `before` and `after` slices of `value` around its depth (dimension 2), joined by
/// `cat` (whose gradient drops them again); `x` itself when there are none.
pub(super) fn pad_depth(x: &Tensor, before: usize, after: usize, value: f64) -> Result<Tensor> {
    if before + after == 0 {
        return Ok(x.clone());
    }
    let s = x.shape();
    let slab =
        |d: usize| Tensor::full_dtype([s[0], s[1], d, s[3], s[4]], value, x.dtype(), x.device());
    Tensor::cat(&[slab(before)?, x.clone(), slab(after)?], 2)
}

/// The depth windows of `x` (`[N, C, D, H, W]`, already padded): for each of `od` outputs
/// the `kd` slices `o * sd + t * dd`, as `[N, C, od * kd, H, W]` (one `index_select`).
pub(super) fn depth_windows(
    x: &Tensor,
    od: usize,
    kd: usize,
    sd: usize,
    dd: usize,
) -> Result<Tensor> {
    let idx: Vec<i64> = (0..od)
        .flat_map(|o| (0..kd).map(move |t| (o * sd + t * dd) as i64))
        .collect();
    let idx = Tensor::from_vec(idx, vec![od * kd], Device::Cpu)?.to(x.device())?;
    x.index_select(2, &idx)
}

/// 3-D convolution (cross-correlation, as torch's `F.conv3d(input, weight, bias, stride,
/// padding, dilation, groups)`): `x` `[N, C, D, H, W]` (or `[C, D, H, W]`), `weight`
/// `[O, C / groups, kd, kh, kw]`, optional `bias` `[O]`. `stride` and `dilation` are an int or
/// a `(d, h, w)` triple; `padding` also `"same"` or `"valid"`. Computed as one conv2d over
/// the depth windows, the `kd` taps of each group beside its channels.
pub fn conv3d(
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: impl Into<Size3>,
    padding: impl Into<Padding3>,
    dilation: impl Into<Size3>,
    groups: usize,
) -> Result<Tensor> {
    const OP: &str = "conv3d";
    let (stride, padding, dilation) = (stride.into(), padding.into(), dilation.into());
    let lowered = autocast3(AmpOp::Conv3d, OP, x, Some(weight), bias, |x, w, b| {
        let w = w.expect("the weight");
        conv3d(x, w, b, stride, padding.clone(), dilation, groups)
    });
    if let Some(y) = lowered {
        return y;
    }
    // Halves on the CPU in float32 throughout, rounded once, as torch's: inside, conv2d
    // alone would round the gradient of each depth window before the windows' sum.
    if let Some(y) = halves_in_float32(x, weight, bias, |x, w, b| {
        conv3d(x, w, b, stride, padding.clone(), dilation, groups)
    }) {
        return y;
    }
    let [o, kd, kh, kw] = match weight.shape()[..] {
        [o, _, kd, kh, kw] => [o, kd, kh, kw],
        _ => {
            return Err(Error::BadShape(format!(
                "{OP}: expected a 5-D weight [out_channels, in_channels / groups, kD, kH, kW], \
                 got shape {:?}",
                weight.shape()
            )))
        }
    };
    let (v, unbatched) = as_volume(OP, x)?;
    let [n, c, d, h, w] = [0, 1, 2, 3, 4].map(|i| v.shape()[i]);
    check_channels(OP, x, c, weight, bias, groups, "D, H, W")?;
    let (depth_pad, hw_pad) = padding.split(kd, stride.0, dilation.0)?;
    let od = window_count(d, kd, stride.0, depth_pad, dilation.0, OP)?;
    // The height and width are conv2d's to check; the output's size is checked here first.
    checked_numel(OP, &[n, o, od, h, w])?;
    let g = groups;
    let cg = c / g;
    let windows = depth_windows(
        &pad_depth(&v, depth_pad[0], depth_pad[1], 0.0)?,
        od,
        kd,
        stride.0,
        dilation.0,
    )?;
    // [N, g, C/g, od, kd, H, W] -> [N, od, g, kd, C/g, H, W]: each output depth one image
    // whose channels are, per group, its kd taps of that group's channels.
    let images = windows
        .reshape(vec![n, g, cg, od, kd, h, w])?
        .permute(&[0, 3, 1, 4, 2, 5, 6])?
        .reshape(vec![n * od, g * kd * cg, h, w])?;
    // [O, C/g, kd, kh, kw] -> [O, kd * C/g, kh, kw], in the images' channel order.
    let w2 = weight
        .permute(&[0, 2, 1, 3, 4])?
        .reshape(vec![o, kd * cg, kh, kw])?;
    let y = functional::conv2d(&images, &w2, bias, stride.hw(), hw_pad, dilation.hw(), g).map_err(
        |e| match e {
            Error::BadShape(m) | Error::Invalid(m) if m.starts_with("conv2d") => {
                Error::BadShape(format!("{OP} (its height and width, as conv2d): {m}"))
            }
            other => other,
        },
    )?;
    let [_, _, oh, ow] = [0, 1, 2, 3].map(|i| y.shape()[i]);
    let y = y
        .reshape(vec![n, od, o, oh, ow])?
        .permute(&[0, 2, 1, 3, 4])?
        .contiguous()?;
    Ok(relabel(OP, unvolume(y, unbatched)?))
}
