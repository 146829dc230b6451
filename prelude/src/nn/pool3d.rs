//! Three-dimensional pooling, torch's `F.max_pool3d` (and `return_indices=True`),
//! `F.avg_pool3d` and the layers `nn.MaxPool3d`, `nn.AvgPool3d`, over `[N, C, D, H, W]` (or
//! `[C, D, H, W]`). The depth windows are gathered by one `index_select` (conv3d's), every
//! tap's slice pooled by the 2-D pooling in one call, and the taps reduced: so the 2-D
//! kernels, their CPU paths and their gradients serve, on every device.

use super::conv3d::{as_volume, depth_windows, pad_depth, unvolume, Size3};
use super::functional::{float_input, in_float32};
use super::pool::{
    lowest_value, max_pool2d, max_pool2d_with_indices, pool_axis, pool_extent, window_sums,
};
use super::pool_layers::py_bool;
use super::Module;
use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::autocast::unlisted;
use crate::tensor::host_mem::checked_numel;
use crate::tensor::Tensor;
use crate::Device;

/// The 2-D pooling's errors under the 3-D op's name.
fn renamed(op: &'static str) -> impl Fn(Error) -> Error {
    move |e| match e {
        Error::BadShape(m) => Error::BadShape(m.replace("max_pool2d", op)),
        Error::Invalid(m) => Error::Invalid(m.replace("max_pool2d", op)),
        other => other,
    }
}

/// Max over windows of `kernel` taps spaced by `dilation`, moved by `stride` (torch's default
/// is the kernel size), over the input padded by `padding` on every side (at most half the
/// kernel; padding never wins), as torch's `F.max_pool3d`; `ceil_mode` as `max_pool2d`'s.
/// Each size is an int or a `(d, h, w)` triple. The gradient of each window goes to its
/// first maximum in depth, then row, then column order, as torch's.
pub fn max_pool3d(
    x: &Tensor,
    kernel: impl Into<Size3>,
    stride: impl Into<Size3>,
    padding: impl Into<Size3>,
    dilation: impl Into<Size3>,
    ceil_mode: bool,
) -> Result<Tensor> {
    let args = [
        kernel.into(),
        stride.into(),
        padding.into(),
        dilation.into(),
    ];
    Ok(max3(x, args, ceil_mode, false, "max_pool3d")?.0)
}

/// [`max_pool3d`] and where each maximum is: an int64 index into its `[D, H, W]` volume
/// flattened (torch's `return_indices=True`); a window with nothing above the padding's
/// value points at its first element inside the input, as torch's kernel starts there.
pub fn max_pool3d_with_indices(
    x: &Tensor,
    kernel: impl Into<Size3>,
    stride: impl Into<Size3>,
    padding: impl Into<Size3>,
    dilation: impl Into<Size3>,
    ceil_mode: bool,
) -> Result<(Tensor, Tensor)> {
    let args = [
        kernel.into(),
        stride.into(),
        padding.into(),
        dilation.into(),
    ];
    let (values, indices) = max3(x, args, ceil_mode, true, "max_pool3d_with_indices")?;
    Ok((values, indices.expect("indices were asked for")))
}

fn max3(
    x: &Tensor,
    [k, s, p, d]: [Size3; 4],
    ceil_mode: bool,
    with_indices: bool,
    op: &'static str,
) -> Result<(Tensor, Option<Tensor>)> {
    let (v, unbatched) = as_volume(op, x)?;
    v.refuse_bool(op)?;
    let [n, c, depth, h, w] = [0, 1, 2, 3, 4].map(|i| v.shape()[i]);
    let axis = pool_axis(depth, k.0, s.0, p.0, d.0, ceil_mode, op)?;
    let (od, kd) = (axis.out, k.0);
    checked_numel(op, &[n, c, od, kd, h, w])?;
    let padded = pad_depth(&v, p.0, p.0 + axis.extra, lowest_value(v.dtype()))?;
    // Every tap's slice a plane of its own: [N, C * od * kd, H, W].
    let slices = depth_windows(&padded, od, kd, s.0, d.0)?.reshape(vec![n, c * od * kd, h, w])?;
    let (hw, hw_indices) = if with_indices {
        let (y, i) = max_pool2d_with_indices(&slices, k.hw(), s.hw(), p.hw(), d.hw(), ceil_mode)
            .map_err(renamed(op))?;
        (y, Some(i))
    } else {
        let y =
            max_pool2d(&slices, k.hw(), s.hw(), p.hw(), d.hw(), ceil_mode).map_err(renamed(op))?;
        (y, None)
    };
    let [oh, ow] = [hw.shape()[2], hw.shape()[3]];
    let per_tap = hw.reshape(vec![n, c, od, kd, oh, ow])?;
    // The first tap holding the maximum (max_dim's gradient goes there), and within it the
    // 2-D pooling's first position: torch's scan over depth, then rows, then columns.
    let values = per_tap.max_dim(3)?;
    let Some(hw_indices) = hw_indices else {
        return Ok((unvolume(values, unbatched)?, None));
    };
    let indices = no_grad(|| {
        let tap = per_tap.argmax_dim(3)?.unsqueeze(3)?;
        let plane = hw_indices
            .reshape(vec![n, c, od, kd, oh, ow])?
            .gather(3, &tap)?;
        // Each tap's depth in the input; a tap in the padding stands for the window's first
        // depth inside, which it only "wins" when nothing in the window is above the padding.
        let first = |o: usize| {
            let mut i = (o * s.0) as isize - p.0 as isize;
            while i < 0 {
                i += d.0 as isize;
            }
            i
        };
        let mut table = Vec::with_capacity(od * kd);
        for o in 0..od {
            for t in 0..kd {
                let z = (o * s.0 + t * d.0) as isize - p.0 as isize;
                let inside = z >= 0 && z < depth as isize;
                table.push((if inside { z } else { first(o) }) as i64 * (h * w) as i64);
            }
        }
        let table = Tensor::from_vec(table, vec![1, 1, od, kd, 1, 1], Device::Cpu)?
            .to(v.device())?
            .expand(vec![n, c, od, kd, oh, ow])?;
        table.gather(3, &tap)?.add(&plane)?.squeeze(3)
    })?;
    Ok((
        unvolume(values, unbatched)?,
        Some(unvolume(indices, unbatched)?),
    ))
}

/// Mean over windows of `kernel` moved by `stride`, over the input zero-padded by `padding`
/// (torch's `F.avg_pool3d`): `count_include_pad` (torch's default) counts the padding in each
/// window's divisor, `divisor_override` replaces the divisor; `ceil_mode` as `avg_pool2d`'s.
/// Floating point only; half types are summed in float32 and rounded once, as torch does.
#[allow(clippy::too_many_arguments)]
pub fn avg_pool3d(
    x: &Tensor,
    kernel: impl Into<Size3>,
    stride: impl Into<Size3>,
    padding: impl Into<Size3>,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<usize>,
) -> Result<Tensor> {
    const OP: &str = "avg_pool3d";
    let (k, s, p) = (kernel.into(), stride.into(), padding.into());
    let (v, unbatched) = as_volume(OP, x)?;
    float_input(&v, OP)?;
    if divisor_override == Some(0) {
        return Err(Error::Invalid(format!(
            "{OP}: divisor_override must be positive, got 0"
        )));
    }
    let [n, c, depth, h, w] = [0, 1, 2, 3, 4].map(|i| v.shape()[i]);
    let da = pool_axis(depth, k.0, s.0, p.0, 1, ceil_mode, OP)?;
    let ra = pool_axis(h, k.1, s.1, p.1, 1, ceil_mode, OP)?;
    let ca = pool_axis(w, k.2, s.2, p.2, 1, ceil_mode, OP)?;
    let (od, oh, ow) = (da.out, ra.out, ca.out);
    checked_numel(OP, &[n, c, od, k.0, h, w])?;
    let divisors: Vec<f64> = match divisor_override {
        Some(dv) => vec![dv as f64],
        None => {
            let extent = |o, len, k, s, p| pool_extent(o, len, k, s, p, count_include_pad);
            let mut all = Vec::with_capacity(od * oh * ow);
            for z in 0..od {
                let dz = extent(z, depth, k.0, s.0, p.0);
                for y in 0..oh {
                    let dy = extent(y, h, k.1, s.1, p.1);
                    for xo in 0..ow {
                        all.push((dz * dy * extent(xo, w, k.2, s.2, p.2)) as f64);
                    }
                }
            }
            all
        }
    };
    let pool = |v: &Tensor| -> Result<Tensor> {
        // Sum the depth taps first (zeros in the padding), then the 2-D windows.
        let padded = pad_depth(v, p.0, p.0 + da.extra, 0.0)?;
        let depth_sums = depth_windows(&padded, od, k.0, s.0, 1)?
            .reshape(vec![n, c, od, k.0, h, w])?
            .sum_dim(3)?
            .reshape(vec![n, c * od, h, w])?;
        let sums = window_sums(&depth_sums, OP, [oh, ow], k.hw(), s.hw(), p.hw())?
            .reshape(vec![n, c, od, oh, ow])?;
        let shape = if divisors.len() == 1 {
            vec![1]
        } else {
            vec![od, oh, ow]
        };
        let divisors = Tensor::from_vec(divisors.clone(), shape, Device::Cpu)?
            .to_dtype(v.dtype())?
            .to(v.device())?;
        sums.div(&divisors)
    };
    // One op in torch, on no autocast list: its sums keep the input's dtype.
    let y = unlisted(&v, || {
        in_float32(&v, &[], |v, _| pool(v)).unwrap_or_else(|| pool(&v))
    })?;
    unvolume(y, unbatched)
}

/// As torch prints a 3-D pooling size: an int when the three axes agree, else the triple.
fn show3(s: Size3) -> String {
    if s.0 == s.1 && s.1 == s.2 {
        s.0.to_string()
    } else {
        s.show()
    }
}

/// Max pooling over volumes (torch's `nn.MaxPool3d`); the stride defaults to the kernel
/// size, the padding to 0; `.dilation(d)` and `.ceil_mode(true)` as torch's. Sizes are an int
/// or a `(d, h, w)` triple.
#[derive(Clone, Copy)]
pub struct MaxPool3d {
    kernel_size: Size3,
    stride: Size3,
    padding: Size3,
    dilation: Size3,
    ceil_mode: bool,
}

impl MaxPool3d {
    pub fn new(kernel_size: impl Into<Size3>) -> MaxPool3d {
        let k = kernel_size.into();
        MaxPool3d {
            kernel_size: k,
            stride: k,
            padding: Size3(0, 0, 0),
            dilation: Size3(1, 1, 1),
            ceil_mode: false,
        }
    }
    pub fn stride(mut self, stride: impl Into<Size3>) -> MaxPool3d {
        self.stride = stride.into();
        self
    }
    /// Padding on every side, at most half the kernel size (torch's rule).
    pub fn padding(mut self, padding: impl Into<Size3>) -> MaxPool3d {
        self.padding = padding.into();
        self
    }
    pub fn dilation(mut self, dilation: impl Into<Size3>) -> MaxPool3d {
        self.dilation = dilation.into();
        self
    }
    /// Rounds the output size up (a last, partial window), as torch's `ceil_mode=True`.
    pub fn ceil_mode(mut self, ceil: bool) -> MaxPool3d {
        self.ceil_mode = ceil;
        self
    }
    /// The pooling and where each maximum is (torch's `return_indices=True`).
    pub fn forward_with_indices(&self, x: &Tensor) -> Result<(Tensor, Tensor)> {
        max_pool3d_with_indices(
            x,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            self.ceil_mode,
        )
    }
}

impl Module for MaxPool3d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        max_pool3d(
            x,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            self.ceil_mode,
        )
    }
    fn describe(&self) -> String {
        format!(
            "MaxPool3d(kernel_size={}, stride={}, padding={}, dilation={}, ceil_mode={})",
            show3(self.kernel_size),
            show3(self.stride),
            show3(self.padding),
            show3(self.dilation),
            py_bool(self.ceil_mode)
        )
    }
}

/// Mean over volume windows (torch's `nn.AvgPool3d`): stride defaults to the kernel size,
/// padding to 0, padded zeros count in each window's mean; `.ceil_mode(true)`,
/// `.count_include_pad(false)` and `.divisor_override(n)` as torch's.
#[derive(Clone, Copy)]
pub struct AvgPool3d {
    kernel_size: Size3,
    stride: Size3,
    padding: Size3,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<usize>,
}

impl AvgPool3d {
    pub fn new(kernel_size: impl Into<Size3>) -> AvgPool3d {
        let k = kernel_size.into();
        AvgPool3d {
            kernel_size: k,
            stride: k,
            padding: Size3(0, 0, 0),
            ceil_mode: false,
            count_include_pad: true,
            divisor_override: None,
        }
    }
    pub fn stride(mut self, stride: impl Into<Size3>) -> AvgPool3d {
        self.stride = stride.into();
        self
    }
    pub fn padding(mut self, padding: impl Into<Size3>) -> AvgPool3d {
        self.padding = padding.into();
        self
    }
    pub fn ceil_mode(mut self, ceil: bool) -> AvgPool3d {
        self.ceil_mode = ceil;
        self
    }
    pub fn count_include_pad(mut self, on: bool) -> AvgPool3d {
        self.count_include_pad = on;
        self
    }
    pub fn divisor_override(mut self, divisor: usize) -> AvgPool3d {
        self.divisor_override = Some(divisor);
        self
    }
}

impl Module for AvgPool3d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        avg_pool3d(
            x,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )
    }
    /// torch's repr (which leaves out the other options).
    fn describe(&self) -> String {
        format!(
            "AvgPool3d(kernel_size={}, stride={}, padding={})",
            show3(self.kernel_size),
            show3(self.stride),
            show3(self.padding)
        )
    }
}
