//! One-dimensional convolution and pooling, torch's `F.conv1d`, `F.max_pool1d`,
//! `F.avg_pool1d` and the layers `nn.Conv1d`, `nn.MaxPool1d`, `nn.AvgPool1d`, for sequences
//! (`[N, C, L]`): each is its 2-D version on a height of 1, so it runs on every device with
//! the same kernels and gradients.

use super::conv::Padding;
use super::functional;
use crate::autograd::relabel;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// conv1d's padding: zeros on both ends (`2`), or `"same"` / `"valid"` as conv2d's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Padding1(pub(super) Padding);

impl From<usize> for Padding1 {
    fn from(p: usize) -> Padding1 {
        Padding1(Padding::Zeros(0, p))
    }
}

impl From<&str> for Padding1 {
    fn from(s: &str) -> Padding1 {
        Padding1(Padding::from(s))
    }
}

/// `x` `[N, C, L]` (or `[C, L]`) as `[N, C, 1, L]`, and whether it was unbatched.
pub(super) fn as_image(op: &str, x: &Tensor) -> Result<(Tensor, bool)> {
    match x.rank() {
        3 => Ok((x.unsqueeze(2)?, false)),
        2 => Ok((x.unsqueeze(0)?.unsqueeze(2)?, true)),
        _ => Err(Error::BadShape(format!(
            "{op}: expected input [N, C, L] or [C, L], got {:?}",
            x.shape()
        ))),
    }
}

/// `[N, C, 1, L]` back to `[N, C, L]` (or `[C, L]`).
pub(super) fn as_sequence(y: Tensor, unbatched: bool) -> Result<Tensor> {
    let y = y.squeeze(2)?;
    if unbatched {
        y.squeeze(0)
    } else {
        Ok(y)
    }
}

/// 1-D convolution (torch's `F.conv1d(input, weight, bias, stride, padding, dilation,
/// groups)`): `x` `[N, C_in, L]` (or `[C_in, L]`), `weight` `[C_out, C_in / groups, K]`,
/// optional `bias` `[C_out]`; padding an int, `"same"` or `"valid"`.
pub fn conv1d(
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: usize,
    padding: impl Into<Padding1>,
    dilation: usize,
    groups: usize,
) -> Result<Tensor> {
    if weight.rank() != 3 {
        return Err(Error::BadShape(format!(
            "conv1d: expected a weight [out_channels, in_channels / groups, K], got {:?}",
            weight.shape()
        )));
    }
    let (img, unbatched) = as_image("conv1d", x)?;
    let y = functional::conv2d(
        &img,
        &weight.unsqueeze(2)?,
        bias,
        (1, stride),
        padding.into().0,
        (1, dilation),
        groups,
    )
    .map_err(|e| match e {
        Error::BadShape(m) => Error::BadShape(m.replace("conv2d", "conv1d (as conv2d)")),
        other => other,
    })?;
    Ok(relabel("conv2d", as_sequence(y, unbatched)?))
}

/// Transposed 1-D convolution (torch's `F.conv_transpose1d(input, weight, bias, stride,
/// padding, output_padding, groups, dilation)`): `x` `[N, C_in, L]` (or `[C_in, L]`),
/// `weight` `[C_in, C_out / groups, K]`, optional `bias` `[C_out]`; the output length is
/// `(L - 1)·stride - 2·padding + dilation·(K - 1) + output_padding + 1`. It is
/// `conv_transpose2d` on a height of 1.
#[allow(clippy::too_many_arguments)]
pub fn conv_transpose1d(
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: usize,
    padding: usize,
    output_padding: usize,
    groups: usize,
    dilation: usize,
) -> Result<Tensor> {
    const OP: &str = "conv_transpose1d";
    if weight.rank() != 3 {
        return Err(Error::BadShape(format!(
            "{OP}: expected a weight [in_channels, out_channels / groups, K], got {:?}",
            weight.shape()
        )));
    }
    let (img, unbatched) = as_image(OP, x)?;
    let y = functional::conv_transpose2d(
        &img,
        &weight.unsqueeze(2)?,
        bias,
        (1, stride),
        (0, padding),
        (0, output_padding),
        groups,
        (1, dilation),
    )
    .map_err(|e| match e {
        Error::BadShape(m) => {
            Error::BadShape(m.replace("conv_transpose2d", "conv_transpose1d (as conv_transpose2d)"))
        }
        Error::Invalid(m) => {
            Error::Invalid(m.replace("conv_transpose2d", "conv_transpose1d (as conv_transpose2d)"))
        }
        other => other,
    })?;
    as_sequence(y, unbatched)
}

/// 1-D max pooling (torch's `F.max_pool1d(input, kernel_size, stride, padding, dilation,
/// ceil_mode)`) over `[N, C, L]` or `[C, L]`.
pub fn max_pool1d(
    x: &Tensor,
    kernel_size: usize,
    stride: usize,
    padding: usize,
    dilation: usize,
    ceil_mode: bool,
) -> Result<Tensor> {
    let (img, unbatched) = as_image("max_pool1d", x)?;
    let y = functional::max_pool2d(
        &img,
        (1, kernel_size),
        (1, stride),
        (0, padding),
        (1, dilation),
        ceil_mode,
    )?;
    as_sequence(y, unbatched)
}

/// 1-D average pooling (torch's `F.avg_pool1d(input, kernel_size, stride, padding,
/// ceil_mode, count_include_pad)`) over `[N, C, L]` or `[C, L]`.
pub fn avg_pool1d(
    x: &Tensor,
    kernel_size: usize,
    stride: usize,
    padding: usize,
    ceil_mode: bool,
    count_include_pad: bool,
) -> Result<Tensor> {
    let (img, unbatched) = as_image("avg_pool1d", x)?;
    let y = functional::avg_pool2d(
        &img,
        (1, kernel_size),
        (1, stride),
        (0, padding),
        ceil_mode,
        count_include_pad,
    )?;
    as_sequence(y, unbatched)
}
