//! Power-average pooling as torch's `F.lp_pool1d`, `F.lp_pool2d` and `F.lp_pool3d`: the
//! p-norm of each window, `(sum x^p)^(1/p)`, composed as torch composes it (an average pool
//! of `x^p` times the window's size), so its values and gradients are torch's. The layers,
//! `nn::LPPool1d`/`2d`/`3d`, are one generic [`LPPool`](super::LPPool) in `pool_layers`.

use super::conv::Size2;
use super::conv1d::avg_pool1d;
use super::conv3d::Size3;
use super::pool::avg_pool2d;
use super::pool3d::avg_pool3d;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// `pool` (an average pool without padding, its zeros counted) of `x^norm_type`, then
/// torch's tail: `sign(out) * relu(|out|)` (the average, with a gradient of 0 where it is
/// 0), times the window's size `taps`, to the power `1 / p`.
fn lp_pool(
    op: &str,
    x: &Tensor,
    norm_type: f64,
    taps: usize,
    pool: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    if norm_type == 0.0 || norm_type.is_nan() {
        return Err(Error::Invalid(format!(
            "{op}: norm_type must be a non-zero number, got {norm_type}"
        )));
    }
    let out = pool(&x.pow(norm_type)?)?;
    out.sign()?
        .mul(&out.abs()?.relu()?)?
        .mul(taps as f64)?
        .pow(1.0 / norm_type)
}

/// The `norm_type`-norm of each window of `kernel` moved by `stride` (the kernel size when
/// `None`, torch's default) over each `[H, W]` plane of `x` (`[N, C, H, W]` or `[C, H, W]`),
/// no padding; `ceil_mode` as `avg_pool2d`'s (torch's `F.lp_pool2d`). `norm_type` 1 is sum
/// pooling, and a large one approaches max pooling.
pub fn lp_pool2d(
    x: &Tensor,
    norm_type: f64,
    kernel: impl Into<Size2>,
    stride: Option<Size2>,
    ceil_mode: bool,
) -> Result<Tensor> {
    let k = kernel.into();
    lp_pool("lp_pool2d", x, norm_type, k.0 * k.1, |p| {
        avg_pool2d(p, k, stride.unwrap_or(k), 0, ceil_mode, true)
    })
}

/// [`lp_pool2d`] along the last dimension of `[N, C, L]` or `[C, L]` (torch's
/// `F.lp_pool1d`).
pub fn lp_pool1d(
    x: &Tensor,
    norm_type: f64,
    kernel_size: usize,
    stride: Option<usize>,
    ceil_mode: bool,
) -> Result<Tensor> {
    let s = stride.unwrap_or(kernel_size);
    lp_pool("lp_pool1d", x, norm_type, kernel_size, |p| {
        avg_pool1d(p, kernel_size, s, 0, ceil_mode, true)
    })
}

/// [`lp_pool2d`] over each `[D, H, W]` volume of `[N, C, D, H, W]` or `[C, D, H, W]` (torch's
/// `F.lp_pool3d`).
pub fn lp_pool3d(
    x: &Tensor,
    norm_type: f64,
    kernel: impl Into<Size3>,
    stride: Option<Size3>,
    ceil_mode: bool,
) -> Result<Tensor> {
    let k = kernel.into();
    lp_pool("lp_pool3d", x, norm_type, k.0 * k.1 * k.2, |p| {
        avg_pool3d(p, k, stride.unwrap_or(k), 0, ceil_mode, true, None)
    })
}
