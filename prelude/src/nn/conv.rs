//! 2-D convolution's arguments as torch takes them (an int or an (h, w) pair; padding also
//! `"same"` or `"valid"`), and the [`Conv2d`] layer. The computation is
//! [`functional::conv2d`](super::functional::conv2d).

use super::{functional, init_param, same_device, weight_and_bias, Module, Parameter};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// A size per spatial axis, `(height, width)`: `3` means `(3, 3)`, as torch's int-or-tuple
/// arguments (kernel size, stride, dilation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size2(pub usize, pub usize);

impl From<usize> for Size2 {
    fn from(v: usize) -> Size2 {
        Size2(v, v)
    }
}

impl From<(usize, usize)> for Size2 {
    fn from((h, w): (usize, usize)) -> Size2 {
        Size2(h, w)
    }
}

impl From<[usize; 2]> for Size2 {
    fn from([h, w]: [usize; 2]) -> Size2 {
        Size2(h, w)
    }
}

impl Size2 {
    fn show(self) -> String {
        format!("({}, {})", self.0, self.1)
    }
}

/// conv2d's zero padding: the same on both sides of each axis (`1`, `(1, 2)`), or torch's
/// `"same"` (the output as large as the input; stride 1 only; for an even kernel the extra
/// row and column go after, as torch pads them) or `"valid"` (none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Padding {
    /// Zeros on both sides: `.0` rows above and below, `.1` columns left and right.
    Zeros(usize, usize),
    Same,
    Valid,
    /// A string other than "same" or "valid": an error when the convolution runs.
    Unknown(String),
}

impl From<usize> for Padding {
    fn from(v: usize) -> Padding {
        Padding::Zeros(v, v)
    }
}

impl From<(usize, usize)> for Padding {
    fn from((h, w): (usize, usize)) -> Padding {
        Padding::Zeros(h, w)
    }
}

impl From<[usize; 2]> for Padding {
    fn from([h, w]: [usize; 2]) -> Padding {
        Padding::Zeros(h, w)
    }
}

impl From<&str> for Padding {
    fn from(s: &str) -> Padding {
        match s {
            "same" => Padding::Same,
            "valid" => Padding::Valid,
            other => Padding::Unknown(other.to_string()),
        }
    }
}

impl Padding {
    /// Rows before and after, columns before and after, for a `kernel` dilated by
    /// `dilation` moved by `stride`.
    pub(crate) fn resolve(
        &self,
        kernel: Size2,
        stride: Size2,
        dilation: Size2,
        op: &str,
    ) -> Result<[usize; 4]> {
        match self {
            Padding::Zeros(h, w) => Ok([*h, *h, *w, *w]),
            Padding::Valid => Ok([0; 4]),
            Padding::Same => {
                if stride != Size2(1, 1) {
                    return Err(Error::Invalid(format!(
                        "{op}: padding \"same\" needs stride 1 (as in torch), got stride {}",
                        stride.show()
                    )));
                }
                // The dilated kernel spans d*(k-1)+1 inputs; the output keeps the input's
                // size when d*(k-1) zeros are added, half before (rounded down).
                let total = |k: usize, d: usize| d.saturating_mul(k.saturating_sub(1));
                let (th, tw) = (total(kernel.0, dilation.0), total(kernel.1, dilation.1));
                Ok([th / 2, th - th / 2, tw / 2, tw - tw / 2])
            }
            Padding::Unknown(s) => Err(Error::Invalid(format!(
                "{op}: padding must be a number, an (h, w) pair, \"same\" or \"valid\", got \
                 \"{s}\""
            ))),
        }
    }

    /// As torch's module repr prints it: `(1, 1)`, `same`, `valid`; None for no padding.
    fn show(&self) -> Option<String> {
        match self {
            Padding::Zeros(0, 0) => None,
            Padding::Zeros(h, w) => Some(Size2(*h, *w).show()),
            Padding::Same => Some("same".into()),
            Padding::Valid => Some("valid".into()),
            Padding::Unknown(s) => Some(s.clone()),
        }
    }
}

/// 2-D convolution (torch's `nn.Conv2d`): weight `[out, in / groups, kh, kw]`, a bias of
/// `out` unless `.bias(false)`. Builders set torch's keyword arguments:
/// `Conv2d::new(3, 64, 3).stride(2).padding(1)`, `.padding("same")`, `.dilation(2)`,
/// `.groups(3)`; each size is an int or an `(h, w)` pair, as in torch.
pub struct Conv2d {
    pub weight: Parameter,
    pub bias: Option<Parameter>,
    in_channels: usize,
    out_channels: usize,
    kernel_size: Size2,
    stride: Size2,
    padding: Padding,
    dilation: Size2,
    groups: usize,
}

impl Conv2d {
    pub fn new(in_channels: usize, out_channels: usize, kernel_size: impl Into<Size2>) -> Conv2d {
        let kernel_size = kernel_size.into();
        let (weight, bias) = Conv2d::draw(in_channels, out_channels, kernel_size, 1, true);
        Conv2d {
            weight,
            bias,
            in_channels,
            out_channels,
            kernel_size,
            stride: Size2(1, 1),
            padding: Padding::Zeros(0, 0),
            dilation: Size2(1, 1),
            groups: 1,
        }
    }

    /// A weight `[out, in / groups, kh, kw]` and optionally a bias, Kaiming-uniform as
    /// torch's (fan-in `in / groups * kh * kw`). A bad `groups` (0, or not dividing the
    /// channels) gets a weight with the channels it can; the layer refuses it when it runs.
    fn draw(
        in_channels: usize,
        out_channels: usize,
        Size2(kh, kw): Size2,
        groups: usize,
        bias: bool,
    ) -> (Parameter, Option<Parameter>) {
        let per_group = in_channels / groups.max(1);
        let fan_in = (per_group * kh * kw).max(1);
        let weight = init_param(vec![out_channels, per_group, kh, kw], fan_in);
        (weight, bias.then(|| init_param(vec![out_channels], fan_in)))
    }

    pub fn stride(mut self, stride: impl Into<Size2>) -> Conv2d {
        self.stride = stride.into();
        self
    }
    pub fn padding(mut self, padding: impl Into<Padding>) -> Conv2d {
        self.padding = padding.into();
        self
    }
    pub fn dilation(mut self, dilation: impl Into<Size2>) -> Conv2d {
        self.dilation = dilation.into();
        self
    }
    /// Splits the channels into `groups` independent convolutions (torch's `groups`;
    /// `groups == in_channels` is a depthwise convolution). Draws a new weight of
    /// `[out, in / groups, kh, kw]`.
    pub fn groups(mut self, groups: usize) -> Conv2d {
        self.groups = groups;
        (self.weight, self.bias) = Conv2d::draw(
            self.in_channels,
            self.out_channels,
            self.kernel_size,
            groups,
            self.bias.is_some(),
        );
        self
    }
    /// `bias(false)` drops the bias (torch's `bias=False`); `bias(true)` draws a new one if
    /// there was none.
    pub fn bias(mut self, bias: bool) -> Conv2d {
        if !bias {
            self.bias = None;
        } else if self.bias.is_none() {
            let Size2(kh, kw) = self.kernel_size;
            let fan_in = (self.in_channels / self.groups.max(1) * kh * kw).max(1);
            self.bias = Some(init_param(vec![self.out_channels], fan_in));
        }
        self
    }
}

impl Module for Conv2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if x.rank() != 4 || x.shape()[1] != self.in_channels {
            return Err(Error::BadShape(format!(
                "{}: expected input of shape [N, {}, H, W], got {:?}",
                self.describe(),
                self.in_channels,
                x.shape()
            )));
        }
        let g = self.groups;
        if g == 0 || !self.in_channels.is_multiple_of(g) || !self.out_channels.is_multiple_of(g) {
            return Err(Error::Invalid(format!(
                "{}: in_channels ({}) and out_channels ({}) must both be divisible by groups \
                 ({g}), as torch requires",
                self.describe(),
                self.in_channels,
                self.out_channels
            )));
        }
        same_device(self, &self.weight, x)?;
        let b = self.bias.as_ref().map(Parameter::tensor);
        functional::conv2d(
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
    /// torch's repr: kernel size and stride always, the rest where not the default.
    fn describe(&self) -> String {
        let mut s = format!(
            "Conv2d({}, {}, kernel_size={}, stride={}",
            self.in_channels,
            self.out_channels,
            self.kernel_size.show(),
            self.stride.show()
        );
        if let Some(p) = self.padding.show() {
            s += &format!(", padding={p}");
        }
        if self.dilation != Size2(1, 1) {
            s += &format!(", dilation={}", self.dilation.show());
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
