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
