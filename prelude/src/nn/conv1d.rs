//! One-dimensional convolution and pooling, torch's `F.conv1d`, `F.max_pool1d`,
//! `F.avg_pool1d` and the layers `nn.Conv1d`, `nn.MaxPool1d`, `nn.AvgPool1d`, for sequences
//! (`[N, C, L]`): each is its 2-D version on a height of 1, so it runs on every device with
//! the same kernels and gradients.

use super::conv::Padding;
use super::pool_layers::py_bool;
use super::{functional, init_param, same_device, weight_and_bias, Module, Parameter};
use crate::autograd::relabel;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// conv1d's padding: zeros on both ends (`2`), or `"same"` / `"valid"` as conv2d's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Padding1(Padding);

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

/// 1-D convolution layer (torch's `nn.Conv1d`): weight `[out, in / groups, K]` and a bias of
/// `out`, Kaiming-uniform as torch draws them; `Conv1d::new(16, 32, 5).padding(2)`,
/// `.stride(2)`, `.dilation(2)`, `.groups(4)`, `.padding("same")`, `.bias(false)`.
pub struct Conv1d {
    pub weight: Parameter,
    pub bias: Option<Parameter>,
    in_channels: usize,
    out_channels: usize,
    kernel_size: usize,
    stride: usize,
    padding: Padding1,
    dilation: usize,
    groups: usize,
}

impl Conv1d {
    pub fn new(in_channels: usize, out_channels: usize, kernel_size: usize) -> Conv1d {
        let mut c = Conv1d {
            weight: init_param(vec![0], 1),
            bias: None,
            in_channels,
            out_channels,
            kernel_size,
            stride: 1,
            padding: Padding1(Padding::Zeros(0, 0)),
            dilation: 1,
            groups: 1,
        };
        c.draw(true);
        c
    }
    /// Weight and (if `bias`) bias drawn anew for the current groups.
    fn draw(&mut self, bias: bool) {
        let per_group = self.in_channels / self.groups.max(1);
        self.weight = init_param(
            vec![self.out_channels, per_group, self.kernel_size],
            self.fan_in(),
        );
        self.bias = bias.then(|| init_param(vec![self.out_channels], self.fan_in()));
    }
    /// torch's fan-in for both parameters, `in / groups * K`.
    fn fan_in(&self) -> usize {
        (self.in_channels / self.groups.max(1) * self.kernel_size).max(1)
    }
    pub fn stride(mut self, stride: usize) -> Conv1d {
        self.stride = stride;
        self
    }
    /// Zeros on both ends: an int, `"same"` or `"valid"`.
    pub fn padding(mut self, padding: impl Into<Padding1>) -> Conv1d {
        self.padding = padding.into();
        self
    }
    pub fn dilation(mut self, dilation: usize) -> Conv1d {
        self.dilation = dilation;
        self
    }
    /// Independent convolutions over `groups` slices of the channels. Draws a new weight.
    pub fn groups(mut self, groups: usize) -> Conv1d {
        self.groups = groups;
        let bias = self.bias.is_some();
        self.draw(bias);
        self
    }
    /// `bias(false)` drops the bias (torch's `bias=False`); `bias(true)` draws one.
    pub fn bias(mut self, bias: bool) -> Conv1d {
        if !bias {
            self.bias = None;
        } else if self.bias.is_none() {
            self.bias = Some(init_param(vec![self.out_channels], self.fan_in()));
        }
        self
    }
}

impl Module for Conv1d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if !(2..=3).contains(&x.rank()) || x.shape()[x.rank() - 2] != self.in_channels {
            return Err(Error::BadShape(format!(
                "{}: expected input of shape [N, {}, L] or [{}, L], got {:?}",
                self.describe(),
                self.in_channels,
                self.in_channels,
                x.shape()
            )));
        }
        same_device(self, &self.weight, x)?;
        let b = self.bias.as_ref().map(Parameter::tensor);
        conv1d(
            x,
            &self.weight.tensor(),
            b.as_ref(),
            self.stride,
            self.padding.clone(),
            self.dilation,
            self.groups,
        )
    }
    fn parameters(&self) -> Vec<Parameter> {
        std::iter::once(self.weight.clone())
            .chain(self.bias.clone())
            .collect()
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        weight_and_bias(&self.weight, &self.bias)
    }
    fn describe(&self) -> String {
        let mut s = format!(
            "Conv1d({}, {}, kernel_size=({},), stride=({},)",
            self.in_channels, self.out_channels, self.kernel_size, self.stride
        );
        match &self.padding.0 {
            Padding::Zeros(_, 0) => {}
            Padding::Zeros(_, p) => s += &format!(", padding=({p},)"),
            Padding::Same => s += ", padding=same",
            Padding::Valid => s += ", padding=valid",
            Padding::Unknown(u) => s += &format!(", padding={u}"),
        }
        if self.dilation != 1 {
            s += &format!(", dilation=({},)", self.dilation);
        }
        if self.groups != 1 {
            s += &format!(", groups={}", self.groups);
        }
        if self.bias.is_none() {
            s += ", bias=False";
        }
        s + ")"
    }
}

/// 1-D max pooling layer (torch's `nn.MaxPool1d`; the stride defaults to the kernel size).
#[derive(Clone, Copy)]
pub struct MaxPool1d {
    kernel_size: usize,
    stride: usize,
    padding: usize,
    dilation: usize,
    ceil_mode: bool,
}

impl MaxPool1d {
    pub fn new(kernel_size: usize) -> MaxPool1d {
        MaxPool1d {
            kernel_size,
            stride: kernel_size,
            padding: 0,
            dilation: 1,
            ceil_mode: false,
        }
    }
    pub fn stride(mut self, stride: usize) -> MaxPool1d {
        self.stride = stride;
        self
    }
    pub fn padding(mut self, padding: usize) -> MaxPool1d {
        self.padding = padding;
        self
    }
    pub fn dilation(mut self, dilation: usize) -> MaxPool1d {
        self.dilation = dilation;
        self
    }
    pub fn ceil_mode(mut self, ceil: bool) -> MaxPool1d {
        self.ceil_mode = ceil;
        self
    }
}

impl Module for MaxPool1d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        max_pool1d(
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
            "MaxPool1d(kernel_size={}, stride={}, padding={}, dilation={}, ceil_mode={})",
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            py_bool(self.ceil_mode)
        )
    }
}

/// 1-D average pooling layer (torch's `nn.AvgPool1d`; the stride defaults to the kernel
/// size, padded zeros count in the mean unless `.count_include_pad(false)`).
#[derive(Clone, Copy)]
pub struct AvgPool1d {
    kernel_size: usize,
    stride: usize,
    padding: usize,
    ceil_mode: bool,
    count_include_pad: bool,
}

impl AvgPool1d {
    pub fn new(kernel_size: usize) -> AvgPool1d {
        AvgPool1d {
            kernel_size,
            stride: kernel_size,
            padding: 0,
            ceil_mode: false,
            count_include_pad: true,
        }
    }
    pub fn stride(mut self, stride: usize) -> AvgPool1d {
        self.stride = stride;
        self
    }
    pub fn padding(mut self, padding: usize) -> AvgPool1d {
        self.padding = padding;
        self
    }
    pub fn ceil_mode(mut self, ceil: bool) -> AvgPool1d {
        self.ceil_mode = ceil;
        self
    }
    pub fn count_include_pad(mut self, include: bool) -> AvgPool1d {
        self.count_include_pad = include;
        self
    }
}

impl Module for AvgPool1d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        avg_pool1d(
            x,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
        )
    }
    fn describe(&self) -> String {
        format!(
            "AvgPool1d(kernel_size=({},), stride=({},), padding=({},))",
            self.kernel_size, self.stride, self.padding
        )
    }
}
