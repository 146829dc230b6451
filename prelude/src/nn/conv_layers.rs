//! The convolution layers, torch's `nn.Conv2d` and `nn.ConvTranspose2d`: parameters drawn as
//! torch draws them, builders for torch's keyword arguments, torch's repr.

use super::conv::{Padding, Size2};
use super::{functional, init_param, same_device, weight_and_bias, Module, Parameter};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// What both layers take, as torch's keyword arguments (`output_padding` only matters to the
/// transposed one, `"same"`/`"valid"` padding only to the plain one).
#[derive(Clone, Debug)]
struct ConvArgs {
    in_channels: usize,
    out_channels: usize,
    kernel_size: Size2,
    stride: Size2,
    padding: Padding,
    output_padding: Size2,
    dilation: Size2,
    groups: usize,
}

impl ConvArgs {
    fn new(in_channels: usize, out_channels: usize, kernel_size: Size2) -> ConvArgs {
        ConvArgs {
            in_channels,
            out_channels,
            kernel_size,
            stride: Size2(1, 1),
            padding: Padding::Zeros(0, 0),
            output_padding: Size2(0, 0),
            dilation: Size2(1, 1),
            groups: 1,
        }
    }

    /// A weight `[a, b / groups, kh, kw]` and optionally a bias of `bias_len`, Kaiming-uniform
    /// as torch's, whose fan-in is the weight's second size times the kernel's area. A bad
    /// `groups` (0, or not dividing the channels) gets a weight with the channels it can; the
    /// layer refuses it when it runs.
    fn draw(&self, a: usize, b: usize, bias_len: Option<usize>) -> (Parameter, Option<Parameter>) {
        let Size2(kh, kw) = self.kernel_size;
        let per_group = b / self.groups.max(1);
        let fan_in = (per_group * kh * kw).max(1);
        let weight = init_param(vec![a, per_group, kh, kw], fan_in);
        (weight, bias_len.map(|n| init_param(vec![n], fan_in)))
    }

    /// The layer's input check: 4-D with its channels, and `groups` dividing both channel
    /// counts (torch refuses that when the layer is built; a builder here cannot fail). The
    /// layer's description is only formatted for an error, not on every forward.
    fn check(&self, layer: &dyn Module, x: &Tensor) -> Result<()> {
        let g = self.groups;
        if g == 0 || !self.in_channels.is_multiple_of(g) || !self.out_channels.is_multiple_of(g) {
            return Err(Error::Invalid(format!(
                "{}: in_channels ({}) and out_channels ({}) must both be divisible by \
                 groups ({g}), as torch requires",
                layer.describe(),
                self.in_channels,
                self.out_channels
            )));
        }
        if x.rank() != 4 || x.shape()[1] != self.in_channels {
            return Err(Error::BadShape(format!(
                "{}: expected input of shape [N, {}, H, W], got {:?}",
                layer.describe(),
                self.in_channels,
                x.shape()
            )));
        }
        Ok(())
    }

    /// torch's repr: kernel size and stride always, the rest where not the default.
    fn describe(&self, name: &str, bias: bool) -> String {
        let mut s = format!(
            "{name}({}, {}, kernel_size={}, stride={}",
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
        if self.output_padding != Size2(0, 0) {
            s += &format!(", output_padding={}", self.output_padding.show());
        }
        if self.groups != 1 {
            s += &format!(", groups={}", self.groups);
        }
        if !bias {
            s += ", bias=False";
        }
        s + ")"
    }
}

/// The builders both layers share: each sets one of torch's keyword arguments (a size is an
/// int or an `(h, w)` pair); `groups` and `bias(true)` draw the parameters they change anew.
macro_rules! conv_builders {
    ($layer:ident) => {
        impl $layer {
            pub fn stride(mut self, stride: impl Into<Size2>) -> $layer {
                self.args.stride = stride.into();
                self
            }
            pub fn dilation(mut self, dilation: impl Into<Size2>) -> $layer {
                self.args.dilation = dilation.into();
                self
            }
            /// Splits the channels into `groups` independent convolutions (torch's `groups`;
            /// `groups == in_channels` is a depthwise convolution). Draws a new weight.
            pub fn groups(mut self, groups: usize) -> $layer {
                self.args.groups = groups;
                (self.weight, self.bias) = $layer::draw(&self.args, self.bias.is_some());
                self
            }
            /// `bias(false)` drops the bias (torch's `bias=False`); `bias(true)` draws one if
            /// there was none.
            pub fn bias(mut self, bias: bool) -> $layer {
                if !bias {
                    self.bias = None;
                } else if self.bias.is_none() {
                    self.bias = $layer::draw(&self.args, true).1;
                }
                self
            }
        }
    };
}

/// 2-D convolution (torch's `nn.Conv2d`): weight `[out, in / groups, kh, kw]`, a bias of
/// `out` unless `.bias(false)`: `Conv2d::new(3, 64, 3).stride(2).padding(1)`,
/// `.padding("same")`, `.dilation(2)`, `.groups(3)`, rectangular `Conv2d::new(3, 8, (3, 5))`.
pub struct Conv2d {
    pub weight: Parameter,
    pub bias: Option<Parameter>,
    args: ConvArgs,
}

impl Conv2d {
    pub fn new(in_channels: usize, out_channels: usize, kernel_size: impl Into<Size2>) -> Conv2d {
        let args = ConvArgs::new(in_channels, out_channels, kernel_size.into());
        let (weight, bias) = Conv2d::draw(&args, true);
        Conv2d { weight, bias, args }
    }
    fn draw(a: &ConvArgs, bias: bool) -> (Parameter, Option<Parameter>) {
        a.draw(
            a.out_channels,
            a.in_channels,
            bias.then_some(a.out_channels),
        )
    }
    /// Zeros around the input: an int, an `(h, w)` pair, `"same"` or `"valid"`.
    pub fn padding(mut self, padding: impl Into<Padding>) -> Conv2d {
        self.args.padding = padding.into();
        self
    }
}

conv_builders!(Conv2d);

/// Transposed 2-D convolution (torch's `nn.ConvTranspose2d`, the upsampling layer of decoders
/// and GAN generators): weight `[in, out / groups, kh, kw]`, a bias of `out` unless
/// `.bias(false)`; `ConvTranspose2d::new(64, 32, 2).stride(2)` doubles the height and width.
/// See [`functional::conv_transpose2d`] for the output size.
pub struct ConvTranspose2d {
    pub weight: Parameter,
    pub bias: Option<Parameter>,
    args: ConvArgs,
}

impl ConvTranspose2d {
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel_size: impl Into<Size2>,
    ) -> ConvTranspose2d {
        let args = ConvArgs::new(in_channels, out_channels, kernel_size.into());
        let (weight, bias) = ConvTranspose2d::draw(&args, true);
        ConvTranspose2d { weight, bias, args }
    }
    /// torch's fan-in for a transposed weight is its second size: `out / groups * kh * kw`.
    fn draw(a: &ConvArgs, bias: bool) -> (Parameter, Option<Parameter>) {
        a.draw(
            a.in_channels,
            a.out_channels,
            bias.then_some(a.out_channels),
        )
    }
    /// `dilation·(k - 1) - padding` zeros fewer around the spread input: an int or a pair.
    pub fn padding(mut self, padding: impl Into<Size2>) -> ConvTranspose2d {
        let Size2(h, w) = padding.into();
        self.args.padding = Padding::Zeros(h, w);
        self
    }
    /// Extra rows and columns on the bottom and right of the output (torch's
    /// `output_padding`, smaller than the stride or the dilation), to reach an exact size.
    pub fn output_padding(mut self, output_padding: impl Into<Size2>) -> ConvTranspose2d {
        self.args.output_padding = output_padding.into();
        self
    }
}

conv_builders!(ConvTranspose2d);

impl Module for Conv2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.args.check(self, x)?;
        same_device(self, &self.weight, x)?;
        let b = self.bias.as_ref().map(Parameter::tensor);
        let a = &self.args;
        functional::conv2d(
            x,
            &self.weight.tensor(),
            b.as_ref(),
            a.stride,
            a.padding.clone(),
            a.dilation,
            a.groups,
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
        self.args.describe("Conv2d", self.bias.is_some())
    }
}

impl Module for ConvTranspose2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.args.check(self, x)?;
        same_device(self, &self.weight, x)?;
        let b = self.bias.as_ref().map(Parameter::tensor);
        let a = &self.args;
        let padding = match a.padding {
            Padding::Zeros(h, w) => Size2(h, w),
            _ => Size2(0, 0),
        };
        functional::conv_transpose2d(
            x,
            &self.weight.tensor(),
            b.as_ref(),
            a.stride,
            padding,
            a.output_padding,
            a.groups,
            a.dilation,
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
        self.args.describe("ConvTranspose2d", self.bias.is_some())
    }
}
