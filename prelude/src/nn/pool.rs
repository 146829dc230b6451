//! Pooling as torch's `F.max_pool2d` and `F.avg_pool2d` (re-exported
//! by `functional`), with torch's arguments: a size or an `(h, w)` pair for the kernel, stride,
//! padding and dilation, `ceil_mode`, `count_include_pad`. The layers are in `pool_layers`.

use super::conv::Size2;
use super::functional::{float_input, in_float32};
use super::windows::{nchw, per_image, window_count, window_indices, WindowKey, WindowKind};
use crate::error::{Error, Result};
use crate::tensor::autocast::unlisted;
use crate::tensor::host_mem::{checked_numel, host_room};
use crate::tensor::{DType, PoolGeom, Tensor};
use crate::Device;

/// One axis of a pooling: the output length (torch's `pooling_output_shape`) and how many
/// padding values must follow the input's own padding so that the last window fits (only
/// `ceil_mode` needs any: its last window may run past the padded input).
pub(super) struct Axis {
    pub(super) out: usize,
    pub(super) extra: usize,
}

pub(super) fn pool_axis(
    len: usize,
    k: usize,
    s: usize,
    p: usize,
    d: usize,
    ceil: bool,
    what: &str,
) -> Result<Axis> {
    // torch's padding rule is checked first; a zero kernel, stride or dilation, and an input
    // smaller than the kernel, are window_count's errors (conv2d's too).
    if k > 0 && s > 0 && d > 0 && p > k / 2 {
        return Err(Error::Invalid(format!(
            "{what}: padding {p} is more than half the kernel size {k}, as torch refuses"
        )));
    }
    let floor = window_count(len, k, s, [p, p], d, what)?;
    // window_count has checked that these neither overflow nor go below zero.
    let (padded, span) = (len + 2 * p, d * (k - 1) + 1);
    let mut out = if ceil {
        (padded - span).div_ceil(s) + 1
    } else {
        floor
    };
    // torch's rule: the last window must start inside the input or its left padding.
    if ceil && (out - 1) * s >= len + p {
        out -= 1;
    }
    let needed = (out - 1) * s + span;
    Ok(Axis {
        out,
        extra: needed.saturating_sub(padded),
    })
}

/// Every window of `kernel` taps (spaced by `dilation`), moved by `stride` over each `[H, W]`
/// plane of `x` with `pad` zeros before (and as many after as the output needs), as the rows
/// of `[N*C*oh*ow, kh*kw]` (one index gather, whose gradient goes back to the elements it
/// read); taps outside the input read 0. The index table is cached by shape, as conv2d's.
#[allow(clippy::too_many_arguments)]
fn pool_windows(
    x: &Tensor,
    what: &str,
    [n, c, h, w]: [usize; 4],
    [oh, ow]: [usize; 2],
    kernel: Size2,
    stride: Size2,
    pad: Size2,
    dilation: Size2,
) -> Result<Tensor> {
    let (kh, kw) = (kernel.0, kernel.1);
    host_room(checked_numel(what, &[n, c, oh, ow, kh, kw])?, DType::I32)?;
    let key = WindowKey {
        kind: WindowKind::Pool,
        dims: [n, c, h, w],
        kernel: [kh, kw],
        stride: [stride.0, stride.1],
        pad: [pad.0 as isize, pad.1 as isize],
        dilation: [dilation.0, dilation.1],
        out: [oh, ow],
    };
    let idx = window_indices(key, || {
        let mut idx = Vec::with_capacity(n * c * oh * ow * kh * kw);
        for plane in 0..n * c {
            let base = (plane * h * w) as isize;
            for y in 0..oh {
                for xo in 0..ow {
                    for i in 0..kh {
                        let iy = (y * stride.0 + i * dilation.0) as isize - pad.0 as isize;
                        for j in 0..kw {
                            let ix = (xo * stride.1 + j * dilation.1) as isize - pad.1 as isize;
                            let inside = iy >= 0 && iy < h as isize && ix >= 0 && ix < w as isize;
                            idx.push(if inside {
                                (base + iy * w as isize + ix) as i32
                            } else {
                                -1
                            });
                        }
                    }
                }
            }
        }
        idx
    });
    x.gather_flat(idx, vec![n * c * oh * ow, kh * kw])
}

/// What never wins a max in `dtype`: -inf, or an integer dtype's lowest value.
pub(super) fn lowest_value(dtype: DType) -> f64 {
    match dtype {
        DType::I32 => i32::MIN as f64,
        DType::I64 => i64::MIN as f64,
        DType::U8 => 0.0,
        _ => f64::NEG_INFINITY,
    }
}

/// The sums over windows of `kernel` moved by `stride` over each `[H, W]` plane of `x`,
/// zeros outside (`pad` before, and as many after as `out` needs): `[N, C, oh, ow]`.
pub(super) fn window_sums(
    x: &Tensor,
    what: &str,
    out: [usize; 2],
    kernel: Size2,
    stride: Size2,
    pad: Size2,
) -> Result<Tensor> {
    let [n, c, h, w] = nchw(x, what)?;
    let windows = pool_windows(x, what, [n, c, h, w], out, kernel, stride, pad, Size2(1, 1))?;
    windows.sum_dim(1)?.reshape((n, c, out[0], out[1]))
}

/// torch's average-pooling divisor along one axis for output `o`: the window's extent within
/// the padded input (`count_include_pad`), or within the input alone.
pub(super) fn pool_extent(
    o: usize,
    len: usize,
    k: usize,
    s: usize,
    p: usize,
    count_include_pad: bool,
) -> usize {
    let start = (o * s) as isize - p as isize;
    let end = (start + k as isize).min((len + p) as isize);
    if count_include_pad {
        (end - start) as usize
    } else {
        (end.min(len as isize) - start.max(0)) as usize
    }
}

/// `x` with borders that never win a max: `pad` on every side plus `extra` more after (the
/// rows, then the columns), -inf or the integer dtype's lowest value, joined by `cat` (whose
/// gradient drops them again).
fn lowest_borders(
    x: &Tensor,
    [n, c, h, w]: [usize; 4],
    p: Size2,
    extra: [usize; 2],
) -> Result<Tensor> {
    let lowest = lowest_value(x.dtype());
    let border = |dims: [usize; 4]| Tensor::full_dtype(dims, lowest, x.dtype(), x.device());
    let (top, bottom) = (p.0, p.0 + extra[0]);
    let tall = Tensor::cat(
        &[
            border([n, c, top, w])?,
            x.clone(),
            border([n, c, bottom, w])?,
        ],
        2,
    )?;
    let (left, right) = (p.1, p.1 + extra[1]);
    let hp = h + top + bottom;
    Tensor::cat(
        &[border([n, c, hp, left])?, tall, border([n, c, hp, right])?],
        3,
    )
}

/// Max over windows of `kernel` taps spaced by `dilation`, moved by `stride` (torch's default
/// stride is the kernel size), over the input padded by `padding` on every side (at most half
/// the kernel, as torch; padding never wins: it is -inf, or the integer dtype's lowest
/// value); `x` is `[N, C, H, W]`. `ceil_mode` rounds the output size up, as torch's (a last,
/// partial window, which must start inside the input or its left padding). Each size is an
/// int or an `(h, w)` pair. The gradient of each window goes to its first maximum in
/// row-major order (a NaN counts as the maximum), as torch's does: on the CPU from one pass
/// that records where each maximum was; elsewhere the windows are gathered and reduced by
/// `max_dim`, whose gradient goes to the index `argmax_dim` finds.
pub fn max_pool2d(
    x: &Tensor,
    kernel: impl Into<Size2>,
    stride: impl Into<Size2>,
    padding: impl Into<Size2>,
    dilation: impl Into<Size2>,
    ceil_mode: bool,
) -> Result<Tensor> {
    let (k, s, p, d) = (
        kernel.into(),
        stride.into(),
        padding.into(),
        dilation.into(),
    );
    if x.rank() != 4 {
        return per_image(x, "max_pool2d", |x| max_pool2d(x, k, s, p, d, ceil_mode));
    }
    let plan = MaxPlan::new(x, k, s, p, d, ceil_mode, "max_pool2d")?;
    plan.values(&plan.bordered(x)?)
}

/// What both max poolings work out first: the arguments checked, each axis's output size
/// and the border a ceil-mode last window needs.
struct MaxPlan {
    op: &'static str,
    dims: [usize; 4],
    rows: Axis,
    cols: Axis,
    k: Size2,
    s: Size2,
    p: Size2,
    d: Size2,
}

impl MaxPlan {
    fn new(
        x: &Tensor,
        k: Size2,
        s: Size2,
        p: Size2,
        d: Size2,
        ceil_mode: bool,
        op: &'static str,
    ) -> Result<MaxPlan> {
        let [n, c, h, w] = nchw(x, op)?;
        x.refuse_bool(op)?;
        let rows = pool_axis(h, k.0, s.0, p.0, d.0, ceil_mode, op)?;
        let cols = pool_axis(w, k.1, s.1, p.1, d.1, ceil_mode, op)?;
        checked_numel(op, &[n, c, rows.out, cols.out])?;
        Ok(MaxPlan {
            op,
            dims: [n, c, h, w],
            rows,
            cols,
            k,
            s,
            p,
            d,
        })
    }

    /// `x` with its padding as borders that never win (itself when it needs none), so the
    /// unpadded pooling, which has the CPU's one-pass path, serves.
    fn bordered(&self, x: &Tensor) -> Result<Tensor> {
        if self.p != Size2(0, 0) || self.rows.extra + self.cols.extra > 0 {
            lowest_borders(x, self.dims, self.p, [self.rows.extra, self.cols.extra])
        } else {
            Ok(x.clone())
        }
    }

    /// The maxima over the windows of the bordered input.
    fn values(&self, x: &Tensor) -> Result<Tensor> {
        let [n, c, hp, wp] = nchw(x, self.op)?;
        let (oh, ow) = (self.rows.out, self.cols.out);
        let geom = PoolGeom {
            h: hp,
            w: wp,
            kh: self.k.0,
            kw: self.k.1,
            sh: self.s.0,
            sw: self.s.1,
            dh: self.d.0,
            dw: self.d.1,
            oh,
            ow,
        };
        // On the CPU one pass over the input, keeping where each maximum came from.
        if let Some(out) = x.max_pool2d_cpu(geom)? {
            return Ok(out);
        }
        self.windows(x)?.max_dim(1)?.reshape((n, c, oh, ow))
    }

    /// The windows of the bordered input, one per row.
    fn windows(&self, x: &Tensor) -> Result<Tensor> {
        let [n, c, hp, wp] = nchw(x, self.op)?;
        let out = [self.rows.out, self.cols.out];
        let zero = Size2(0, 0);
        pool_windows(
            x,
            self.op,
            [n, c, hp, wp],
            out,
            self.k,
            self.s,
            zero,
            self.d,
        )
    }
}

/// [`max_pool2d`] and where each maximum is: an int64 index into its `[H, W]` plane flattened
/// (torch's `return_indices=True`, what `max_unpool2d` takes). Ties go to the first in
/// row-major order, and a window with nothing above -inf (or the integer dtype's lowest)
/// points at its first element inside the input, as torch's kernel starts there.
pub fn max_pool2d_with_indices(
    x: &Tensor,
    kernel: impl Into<Size2>,
    stride: impl Into<Size2>,
    padding: impl Into<Size2>,
    dilation: impl Into<Size2>,
    ceil_mode: bool,
) -> Result<(Tensor, Tensor)> {
    const OP: &str = "max_pool2d_with_indices";
    let (k, s, p, d) = (
        kernel.into(),
        stride.into(),
        padding.into(),
        dilation.into(),
    );
    if x.rank() != 4 {
        return per_image(x, OP, |x| max_pool2d_with_indices(x, k, s, p, d, ceil_mode));
    }
    let plan = MaxPlan::new(x, k, s, p, d, ceil_mode, OP)?;
    let padded = plan.bordered(x)?;
    let values = plan.values(&padded)?;
    let [n, c, h, w] = plan.dims;
    let (oh, ow) = (plan.rows.out, plan.cols.out);
    let tap = crate::autograd::no_grad(|| plan.windows(&padded)?.argmax_dim(1))?;
    // Each tap's place in the input plane; a tap in the padding stands for the window's
    // first element inside (where torch's kernel starts), which it only "wins" when
    // nothing in the window is above the padding's value.
    host_room(checked_numel(OP, &[oh, ow, k.0, k.1])?, DType::I64)?;
    let first = |o: usize, s: usize, p: usize, d: usize| {
        let mut i = (o * s) as isize - p as isize;
        while i < 0 {
            i += d as isize;
        }
        i
    };
    let mut table = Vec::with_capacity(oh * ow * k.0 * k.1);
    for y in 0..oh {
        for xo in 0..ow {
            let (fy, fx) = (first(y, s.0, p.0, d.0), first(xo, s.1, p.1, d.1));
            let start = (fy * w as isize + fx) as i64;
            for i in 0..k.0 {
                let iy = (y * s.0 + i * d.0) as isize - p.0 as isize;
                for j in 0..k.1 {
                    let ix = (xo * s.1 + j * d.1) as isize - p.1 as isize;
                    let inside = iy >= 0 && iy < h as isize && ix >= 0 && ix < w as isize;
                    table.push(if inside {
                        (iy * w as isize + ix) as i64
                    } else {
                        start
                    });
                }
            }
        }
    }
    let table = Tensor::from_vec(table, vec![oh * ow, k.0 * k.1], Device::Cpu)?
        .to(x.device())?
        .repeat(&[n * c, 1])?;
    let indices = table
        .gather(1, &tap.unsqueeze(1)?)?
        .reshape((n, c, oh, ow))?;
    Ok((values, indices))
}

/// Mean over windows of `kernel` moved by `stride`, over the input zero-padded by `padding`
/// (torch's `avg_pool2d`): with `count_include_pad` (torch's default) the padding counts in a
/// window's divisor, else only the input's elements do; `ceil_mode` rounds the output size
/// up as `max_pool2d`'s, and a last window running past the padding divides by what it
/// covers of the padded input, as torch's. `x` is `[N, C, H, W]`, floating point; half types
/// are summed in float32 and rounded once, as torch does.
pub fn avg_pool2d(
    x: &Tensor,
    kernel: impl Into<Size2>,
    stride: impl Into<Size2>,
    padding: impl Into<Size2>,
    ceil_mode: bool,
    count_include_pad: bool,
) -> Result<Tensor> {
    let (k, s, p) = (kernel.into(), stride.into(), padding.into());
    avg_pool2d_divided(x, k, s, p, ceil_mode, count_include_pad, None)
}

/// [`avg_pool2d`] with torch's `divisor_override`: every window's sum divided by `divisor`
/// (positive) instead of its size (`AvgPool2d::divisor_override`).
pub(super) fn avg_pool2d_divided(
    x: &Tensor,
    k: Size2,
    s: Size2,
    p: Size2,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor: Option<usize>,
) -> Result<Tensor> {
    const OP: &str = "avg_pool2d";
    if x.rank() != 4 {
        return per_image(x, OP, |x| {
            avg_pool2d_divided(x, k, s, p, ceil_mode, count_include_pad, divisor)
        });
    }
    let [n, c, h, w] = nchw(x, OP)?;
    float_input(x, OP)?;
    if divisor == Some(0) {
        return Err(Error::Invalid(format!(
            "{OP}: divisor_override must be positive, got 0"
        )));
    }
    let oh = pool_axis(h, k.0, s.0, p.0, 1, ceil_mode, OP)?.out;
    let ow = pool_axis(w, k.1, s.1, p.1, 1, ceil_mode, OP)?.out;
    checked_numel(OP, &[n, c, oh, ow])?;
    // torch's divisor per window, one axis at a time.
    let extent = |o, len, k, s, p| pool_extent(o, len, k, s, p, count_include_pad);
    let rows: Vec<usize> = (0..oh).map(|o| extent(o, h, k.0, s.0, p.0)).collect();
    let cols: Vec<usize> = (0..ow).map(|o| extent(o, w, k.1, s.1, p.1)).collect();
    let uniform =
        divisor.is_none() && rows.iter().all(|&r| r == k.0) && cols.iter().all(|&c| c == k.1);
    let pool = |x: &Tensor| -> Result<Tensor> {
        let windows = pool_windows(x, OP, [n, c, h, w], [oh, ow], k, s, p, Size2(1, 1))?;
        if uniform {
            return windows.mean_dim(1)?.reshape((n, c, oh, ow));
        }
        let (divisors, shape): (Vec<f64>, _) = match divisor {
            Some(d) => (vec![d as f64], vec![1]),
            None => (
                rows.iter()
                    .flat_map(|&r| cols.iter().map(move |&c| (r * c) as f64))
                    .collect(),
                vec![oh, ow],
            ),
        };
        let divisors = Tensor::from_vec(divisors, shape, Device::Cpu)?
            .to_dtype(x.dtype())?
            .to(x.device())?;
        windows.sum_dim(1)?.reshape((n, c, oh, ow))?.div(&divisors)
    };
    // One op in torch, on no autocast list: its sums keep the input's dtype.
    unlisted(x, || {
        in_float32(x, &[], |x, _| pool(x)).unwrap_or_else(|| pool(x))
    })
}
