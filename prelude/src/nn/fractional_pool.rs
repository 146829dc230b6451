//! Fractional max pooling, torch's `F.fractional_max_pool2d` / `F.fractional_max_pool3d` and
//! `nn.FractionalMaxPool2d` / `nn.FractionalMaxPool3d` (Graham, 2014): windows of a fixed
//! size whose starts advance by a non-integer step, drawn at random per plane, so a layer
//! can shrink an image by a factor like 1/√2. Each plane's window starts are torch's
//! `generate_intervals` of its random sample, computed on the host in the input's dtype as
//! torch's kernel does; the windows are one flat gather and `max_dim`, so every device and
//! the gradient (to each window's first maximum) come from those ops.

use super::conv::Size2;
use super::conv3d::Size3;
use super::functional::float_input;
use super::Module;
use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::host_mem::checked_numel;
use crate::tensor::{DType, Tensor};
use crate::Device;
use std::sync::Arc;

/// The output of a fractional pooling: a size per axis, or a ratio of the input's (torch's
/// `output_size` / `output_ratio`, one of which it needs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FractionalOutput {
    Size([usize; 3]),
    Ratio([f64; 3]),
}

impl From<usize> for FractionalOutput {
    fn from(v: usize) -> FractionalOutput {
        FractionalOutput::Size([v; 3])
    }
}

impl From<(usize, usize)> for FractionalOutput {
    fn from((h, w): (usize, usize)) -> FractionalOutput {
        FractionalOutput::Size([h, w, 0])
    }
}

impl From<(usize, usize, usize)> for FractionalOutput {
    fn from((d, h, w): (usize, usize, usize)) -> FractionalOutput {
        FractionalOutput::Size([d, h, w])
    }
}

impl From<f64> for FractionalOutput {
    fn from(r: f64) -> FractionalOutput {
        FractionalOutput::Ratio([r; 3])
    }
}

impl From<(f64, f64)> for FractionalOutput {
    fn from((h, w): (f64, f64)) -> FractionalOutput {
        FractionalOutput::Ratio([h, w, 0.0])
    }
}

impl From<(f64, f64, f64)> for FractionalOutput {
    fn from((d, h, w): (f64, f64, f64)) -> FractionalOutput {
        FractionalOutput::Ratio([d, h, w])
    }
}

impl FractionalOutput {
    /// The output size of each of `input`'s axes, as torch's `int(input * ratio)`.
    fn sizes(self, input: &[usize], op: &str) -> Result<Vec<usize>> {
        let r = input.len();
        match self {
            FractionalOutput::Size(s) => Ok(s[..r].to_vec()),
            FractionalOutput::Ratio(q) => {
                let q = &q[..r];
                if q.iter().any(|&v| !(v > 0.0 && v < 1.0)) {
                    return Err(Error::Invalid(format!(
                        "{op}: output_ratio must be between 0 and 1 (exclusive), got {q:?}"
                    )));
                }
                Ok(input
                    .iter()
                    .zip(q)
                    .map(|(&len, &v)| (len as f64 * v) as usize)
                    .collect())
            }
        }
    }
}

/// `x` rounded to `dtype` (torch's kernel does its interval arithmetic in the input's type).
fn round_to(x: f64, dtype: DType) -> f64 {
    match dtype {
        DType::F32 => x as f32 as f64,
        DType::F16 => half::f16::from_f64(x).to_f64(),
        DType::BF16 => half::bf16::from_f64(x).to_f64(),
        _ => x,
    }
}

/// torch's `generate_intervals`: the start of each of `out` windows of `k` over `len`, from
/// the plane's `sample` in [0, 1), each step rounded as `dtype` rounds it.
fn intervals(sample: f64, len: usize, out: usize, k: usize, dtype: DType) -> Vec<usize> {
    let mut seq = vec![0usize; out];
    if out > 1 {
        let alpha = round_to((len - k) as f64 / (out - 1) as f64, dtype);
        let first = round_to(round_to(sample, dtype) * alpha, dtype).trunc();
        for (i, s) in seq.iter_mut().enumerate().take(out - 1) {
            let at = round_to(round_to(i as f64 + sample, dtype) * alpha, dtype).trunc();
            *s = (at - first) as usize;
        }
    }
    if out > 0 {
        seq[out - 1] = len - k;
    }
    seq
}

/// The pooling over the last `kernel.len()` axes of `x` (`[N, C, ..]` or unbatched), with the
/// random samples `[N, C, r]` given or drawn: the values and each one's flat index in its
/// plane.
fn fractional(
    op: &'static str,
    x: &Tensor,
    kernel: &[usize],
    output: FractionalOutput,
    samples: Option<&Tensor>,
) -> Result<(Tensor, Tensor)> {
    let r = kernel.len();
    float_input(x, op)?;
    let unbatched = x.rank() == r + 1;
    if x.rank() != r + 2 && !unbatched {
        let axes = if r == 2 { "H, W" } else { "D, H, W" };
        return Err(Error::BadShape(format!(
            "{op}: expected input [N, C, {axes}] or [C, {axes}], got {:?}",
            x.shape()
        )));
    }
    let v = if unbatched {
        x.unsqueeze(0)?
    } else {
        x.clone()
    };
    let (n, c) = (v.shape()[0], v.shape()[1]);
    let dims = v.shape()[2..].to_vec();
    let out = output.sizes(&dims, op)?;
    for a in 0..r {
        // torch's rule: out + k - 1 at most the input in 2-D, less than it in 3-D.
        let reach = out[a] + kernel[a].max(1) - 1 + usize::from(r == 3);
        if kernel[a] == 0 || out[a] == 0 || reach > dims[a] {
            return Err(Error::BadShape(format!(
                "{op}: kernel {kernel:?} and output size {out:?} do not fit the input's \
                 {dims:?} (each output + kernel - 1 must be {} the input, as torch requires)",
                if r == 3 { "less than" } else { "at most" }
            )));
        }
    }
    let planes = n * c;
    let drawn;
    let samples = match samples {
        Some(s) => {
            if s.shape() != [n, c, r] {
                return Err(Error::BadShape(format!(
                    "{op}: expected random samples [{n}, {c}, {r}] (one per plane and axis), \
                     got {:?}",
                    s.shape()
                )));
            }
            s
        }
        None => {
            drawn = Tensor::rand(vec![n, c, r], Device::Cpu)?.to_dtype(v.dtype())?;
            &drawn
        }
    };
    let u = samples.to_f64_vec()?;
    if u.iter().any(|s| !(0.0..1.0).contains(s)) {
        return Err(Error::Invalid(format!(
            "{op}: the random samples must lie in [0, 1)"
        )));
    }
    let cells: usize = out.iter().product();
    let taps: usize = kernel.iter().product();
    let plane: usize = dims.iter().product();
    let total = checked_numel(op, &[planes, cells, taps])?;
    let strides: Vec<usize> = (0..r).map(|a| dims[a + 1..].iter().product()).collect();
    let mut idx = Vec::with_capacity(total);
    let mut place = Vec::with_capacity(total);
    for p in 0..planes {
        // torch's samples per plane: (width, height) for images, (depth, height, width)
        // for volumes.
        let sample = |a: usize| u[p * r + if r == 2 { 1 - a } else { a }];
        let starts: Vec<Vec<usize>> = (0..r)
            .map(|a| intervals(sample(a), dims[a], out[a], kernel[a], v.dtype()))
            .collect();
        for cell in 0..cells {
            let mut rest = cell;
            let mut corner = vec![0usize; r];
            for a in (0..r).rev() {
                corner[a] = starts[a][rest % out[a]];
                rest /= out[a];
            }
            for tap in 0..taps {
                let mut rest = tap;
                let mut at = 0;
                for a in (0..r).rev() {
                    at += (corner[a] + rest % kernel[a]) * strides[a];
                    rest /= kernel[a];
                }
                idx.push((p * plane + at) as i32);
                place.push(at as i64);
            }
        }
    }
    let windows = v.gather_flat(Arc::new(idx), vec![n, c, cells, taps])?;
    let values = windows.max_dim(3)?;
    let indices = no_grad(|| {
        let place = Tensor::from_vec(place, vec![n, c, cells, taps], Device::Cpu)?.to(v.device())?;
        place
            .gather(3, &windows.argmax_dim(3)?.unsqueeze(3)?)?
            .squeeze(3)
    })?;
    let shape = [vec![n, c], out].concat();
    let (values, indices) = (values.reshape(shape.clone())?, indices.reshape(shape)?);
    if unbatched {
        Ok((values.squeeze(0)?, indices.squeeze(0)?))
    } else {
        Ok((values, indices))
    }
}

/// torch's `F.fractional_max_pool2d(input, kernel_size, output_size | output_ratio,
/// return_indices=True, _random_samples)`: the maximum over `kernel` windows placed at
/// pseudo-random fractional steps, `input` `[N, C, H, W]` or `[C, H, W]`, `output` a size
/// (`(7, 7)`) or a ratio (`0.5`, `(0.7, 0.7)`); `samples` `[N, C, 2]` in [0, 1) fixes the
/// windows (torch's `_random_samples`; drawn from the seeded generator when `None`). Returns
/// the values and each one's index in its `[H, W]` plane flattened.
pub fn fractional_max_pool2d_with_indices(
    input: &Tensor,
    kernel: impl Into<Size2>,
    output: impl Into<FractionalOutput>,
    samples: Option<&Tensor>,
) -> Result<(Tensor, Tensor)> {
    let Size2(kh, kw) = kernel.into();
    fractional(
        "fractional_max_pool2d",
        input,
        &[kh, kw],
        output.into(),
        samples,
    )
}

/// [`fractional_max_pool2d_with_indices`]'s values.
pub fn fractional_max_pool2d(
    input: &Tensor,
    kernel: impl Into<Size2>,
    output: impl Into<FractionalOutput>,
    samples: Option<&Tensor>,
) -> Result<Tensor> {
    Ok(fractional_max_pool2d_with_indices(input, kernel, output, samples)?.0)
}

/// torch's `F.fractional_max_pool3d` over `[N, C, D, H, W]` or `[C, D, H, W]`, `samples`
/// `[N, C, 3]`; as [`fractional_max_pool2d_with_indices`], indices into the flattened volume.
pub fn fractional_max_pool3d_with_indices(
    input: &Tensor,
    kernel: impl Into<Size3>,
    output: impl Into<FractionalOutput>,
    samples: Option<&Tensor>,
) -> Result<(Tensor, Tensor)> {
    let Size3(kd, kh, kw) = kernel.into();
    fractional(
        "fractional_max_pool3d",
        input,
        &[kd, kh, kw],
        output.into(),
        samples,
    )
}

/// [`fractional_max_pool3d_with_indices`]'s values.
pub fn fractional_max_pool3d(
    input: &Tensor,
    kernel: impl Into<Size3>,
    output: impl Into<FractionalOutput>,
    samples: Option<&Tensor>,
) -> Result<Tensor> {
    Ok(fractional_max_pool3d_with_indices(input, kernel, output, samples)?.0)
}

/// One fractional pooling layer: its kernel and output, new windows drawn on every forward
/// (torch's `nn.FractionalMaxPool2d(kernel_size, output_size=None, output_ratio=None)`).
macro_rules! fractional_layer {
    ($(#[$doc:meta])* $name:ident($size:ty) => $f:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy)]
        pub struct $name {
            kernel: $size,
            output: FractionalOutput,
        }

        impl $name {
            /// `output` a size or a ratio of the input's, as torch's `output_size` /
            /// `output_ratio`.
            pub fn new(kernel_size: impl Into<$size>, output: impl Into<FractionalOutput>) -> $name {
                $name {
                    kernel: kernel_size.into(),
                    output: output.into(),
                }
            }
            /// The pooling and where each maximum is (torch's `return_indices=True`).
            pub fn forward_with_indices(&self, x: &Tensor) -> Result<(Tensor, Tensor)> {
                $f(x, self.kernel, self.output, None)
            }
        }

        impl Module for $name {
            fn forward(&self, x: &Tensor) -> Result<Tensor> {
                Ok(self.forward_with_indices(x)?.0)
            }
            /// torch's repr, which shows no arguments.
            fn describe(&self) -> String {
                format!("{}()", stringify!($name))
            }
        }
    };
}

fractional_layer!(
    /// torch's `nn.FractionalMaxPool2d`: `FractionalMaxPool2d::new(3, 0.5)` halves each side.
    FractionalMaxPool2d(Size2) => fractional_max_pool2d_with_indices
);
fractional_layer!(
    /// torch's `nn.FractionalMaxPool3d`.
    FractionalMaxPool3d(Size3) => fractional_max_pool3d_with_indices
);
