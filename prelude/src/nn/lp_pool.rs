//! Power-average pooling as torch's `F.lp_pool1d` and `F.lp_pool2d`: the p-norm of each
//! window, `(sum x^p)^(1/p)`, composed as torch composes it (an average pool of `x^p` times
//! the window's size), so its values and gradients are torch's; and the modules
//! `nn::LPPool1d`, `nn::LPPool2d`.

use super::conv::Size2;
use super::conv1d::avg_pool1d;
use super::pool::avg_pool2d;
use super::Module;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

fn check_norm(op: &str, norm_type: f64) -> Result<()> {
    if norm_type == 0.0 || norm_type.is_nan() {
        return Err(Error::Invalid(format!(
            "{op}: norm_type must be a non-zero number, got {norm_type}"
        )));
    }
    Ok(())
}

/// torch's tail: `sign(out) * relu(|out|)` (the average, with a gradient of 0 where it is
/// 0), times the window's size, to the power `1 / p`.
fn finish(out: Tensor, taps: usize, norm_type: f64) -> Result<Tensor> {
    out.sign()?
        .mul(&out.abs()?.relu()?)?
        .mul(taps as f64)?
        .pow(1.0 / norm_type)
}

/// The `norm_type`-norm of each window of `kernel` moved by `stride` (the kernel size when
/// `None`, torch's default) over each `[H, W]` plane of `x` (`[N, C, H, W]`), no padding;
/// `ceil_mode` as `avg_pool2d`'s (torch's `F.lp_pool2d`). `norm_type` 1 is sum pooling, and
/// a large one approaches max pooling.
pub fn lp_pool2d(
    x: &Tensor,
    norm_type: f64,
    kernel: impl Into<Size2>,
    stride: Option<Size2>,
    ceil_mode: bool,
) -> Result<Tensor> {
    check_norm("lp_pool2d", norm_type)?;
    let k = kernel.into();
    let out = avg_pool2d(
        &x.pow(norm_type)?,
        k,
        stride.unwrap_or(k),
        0,
        ceil_mode,
        true,
    )?;
    finish(out, k.0 * k.1, norm_type)
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
    check_norm("lp_pool1d", norm_type)?;
    let s = stride.unwrap_or(kernel_size);
    let out = avg_pool1d(&x.pow(norm_type)?, kernel_size, s, 0, ceil_mode, true)?;
    finish(out, kernel_size, norm_type)
}

/// torch's `nn.LPPool2d(norm_type, kernel_size)` ([`lp_pool2d`]): stride the kernel size and
/// no `ceil_mode` unless set.
#[derive(Clone, Copy, PartialEq)]
pub struct LPPool2d {
    norm_type: f64,
    kernel: Size2,
    stride: Option<Size2>,
    ceil_mode: bool,
}

impl LPPool2d {
    pub fn new(norm_type: f64, kernel_size: impl Into<Size2>) -> LPPool2d {
        LPPool2d {
            norm_type,
            kernel: kernel_size.into(),
            stride: None,
            ceil_mode: false,
        }
    }

    pub fn stride(mut self, stride: impl Into<Size2>) -> LPPool2d {
        self.stride = Some(stride.into());
        self
    }

    pub fn ceil_mode(mut self, ceil: bool) -> LPPool2d {
        self.ceil_mode = ceil;
        self
    }
}

impl Module for LPPool2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        lp_pool2d(x, self.norm_type, self.kernel, self.stride, self.ceil_mode)
    }
    fn describe(&self) -> String {
        let size = |s: Size2| {
            if s.0 == s.1 {
                s.0.to_string()
            } else {
                format!("({}, {})", s.0, s.1)
            }
        };
        format!(
            "LPPool2d(norm_type={}, kernel_size={}, stride={}, ceil_mode={})",
            self.norm_type,
            size(self.kernel),
            self.stride.map_or("None".into(), size),
            if self.ceil_mode { "True" } else { "False" }
        )
    }
}

/// torch's `nn.LPPool1d(norm_type, kernel_size)` ([`lp_pool1d`]): stride the kernel size and
/// no `ceil_mode` unless set.
#[derive(Clone, Copy, PartialEq)]
pub struct LPPool1d {
    norm_type: f64,
    kernel_size: usize,
    stride: Option<usize>,
    ceil_mode: bool,
}

impl LPPool1d {
    pub fn new(norm_type: f64, kernel_size: usize) -> LPPool1d {
        LPPool1d {
            norm_type,
            kernel_size,
            stride: None,
            ceil_mode: false,
        }
    }

    pub fn stride(mut self, stride: usize) -> LPPool1d {
        self.stride = Some(stride);
        self
    }

    pub fn ceil_mode(mut self, ceil: bool) -> LPPool1d {
        self.ceil_mode = ceil;
        self
    }
}

impl Module for LPPool1d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        lp_pool1d(
            x,
            self.norm_type,
            self.kernel_size,
            self.stride,
            self.ceil_mode,
        )
    }
    fn describe(&self) -> String {
        format!(
            "LPPool1d(norm_type={}, kernel_size={}, stride={}, ceil_mode={})",
            self.norm_type,
            self.kernel_size,
            self.stride.map_or("None".into(), |s| s.to_string()),
            if self.ceil_mode { "True" } else { "False" }
        )
    }
}
