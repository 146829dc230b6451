//! The convolution layers, torch's `nn.Conv1d`/`2d`/`3d` and `nn.ConvTranspose1d`/`2d`/`3d`:
//! one [`Conv`] and one [`ConvTranspose`] over the size of their rank ([`ConvSize`]), with
//! parameters drawn as torch draws them, builders for torch's keyword arguments, the input
//! checked before the function runs, and torch's repr.

use super::conv::{Padding, Size1, Size2};
use super::conv1d::Padding1;
use super::conv3d::{Padding3, Size3};
use super::{functional, init_param, same_device, weight_and_bias, Module, Parameter};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// A convolution's padding argument as the layers keep it: torch's repr of it, and whether it
/// is the default (no padding, left out of the repr).
pub trait PaddingArg: Clone + std::fmt::Debug + Send + Sync + 'static {
    /// As torch's module repr prints it; None for no padding.
    fn show_padding(&self) -> Option<String>;
}

/// The sizes a convolution layer takes, one per spatial axis: [`Size1`] (an int) for 1-D, [`Size2`] for
/// 2-D, [`Size3`] for 3-D. It names the layer's axes, prints sizes as torch's repr does and
/// calls the functions of its rank, so each layer is written once.
pub trait ConvSize: Copy + PartialEq + std::fmt::Debug + PaddingArg {
    /// 1, 2 or 3.
    const RANK: usize;
    const ZERO: Self;
    const ONE: Self;
    /// The spatial axes in a shape: `L`, `H, W`, `D, H, W`.
    const AXES: &'static str;
    /// The plain convolution's padding: a size, or `"same"` / `"valid"`.
    type Padding: PaddingArg + From<Self>;
    fn dims(self) -> Vec<usize>;
    /// As torch's repr prints it: `(3,)`, `(3, 3)`, `(3, 3, 3)`.
    fn show(self) -> String;
    fn conv(
        x: &Tensor,
        w: &Tensor,
        b: Option<&Tensor>,
        a: &ConvArgs<Self, Self::Padding>,
    ) -> Result<Tensor>;
    fn conv_transpose(
        x: &Tensor,
        w: &Tensor,
        b: Option<&Tensor>,
        a: &ConvArgs<Self, Self>,
    ) -> Result<Tensor>;
}

/// What every convolution layer takes, as torch's keyword arguments (`output_padding` only
/// matters to the transposed ones, whose padding `P` is a size; the plain ones' also takes
/// `"same"` / `"valid"`).
#[derive(Clone, Debug)]
pub struct ConvArgs<S, P> {
    in_channels: usize,
    out_channels: usize,
    kernel_size: S,
    stride: S,
    padding: P,
    output_padding: S,
    dilation: S,
    groups: usize,
}

impl<S: ConvSize, P: PaddingArg> ConvArgs<S, P> {
    fn new(in_channels: usize, out_channels: usize, kernel_size: S, padding: P) -> Self {
        ConvArgs {
            in_channels,
            out_channels,
            kernel_size,
            stride: S::ONE,
            padding,
            output_padding: S::ZERO,
            dilation: S::ONE,
            groups: 1,
        }
    }

    /// A weight `[a, b / groups, k..]` and optionally a bias of `out_channels`,
    /// Kaiming-uniform as torch's, whose fan-in is the weight's second size times the
    /// kernel's volume. A bad `groups` (0, or not dividing the channels) gets a weight with
    /// the channels it can; the layer refuses it when it runs.
    fn draw(&self, a: usize, b: usize, bias: bool) -> (Parameter, Option<Parameter>) {
        let per_group = b / self.groups.max(1);
        let k = self.kernel_size.dims();
        let fan_in = (per_group * k.iter().product::<usize>()).max(1);
        let weight = init_param([vec![a, per_group], k].concat(), fan_in);
        (
            weight,
            bias.then(|| init_param(vec![self.out_channels], fan_in)),
        )
    }

    /// The layer's input check: `[N, C, ..]` or unbatched `[C, ..]` with its channels, and
    /// `groups` dividing both channel counts (torch refuses that when the layer is built; a
    /// builder here cannot fail). The layer's description is only formatted for an error.
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
        let channels = match x.rank() {
            r if r == S::RANK + 2 => Some(x.shape()[1]),
            r if r == S::RANK + 1 => Some(x.shape()[0]),
            _ => None,
        };
        if channels != Some(self.in_channels) {
            return Err(Error::BadShape(format!(
                "{}: expected input of shape [N, {c}, {axes}] or [{c}, {axes}], got {:?}",
                layer.describe(),
                x.shape(),
                c = self.in_channels,
                axes = S::AXES
            )));
        }
        Ok(())
    }

    /// torch's repr: kernel size and stride always, the rest where not the default.
    fn describe(&self, name: &str, bias: bool) -> String {
        let mut s = format!(
            "{name}{}d({}, {}, kernel_size={}, stride={}",
            S::RANK,
            self.in_channels,
            self.out_channels,
            self.kernel_size.show(),
            self.stride.show()
        );
        if let Some(p) = self.padding.show_padding() {
            s += &format!(", padding={p}");
        }
        if self.dilation != S::ONE {
            s += &format!(", dilation={}", self.dilation.show());
        }
        if self.output_padding != S::ZERO {
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

impl PaddingArg for Padding {
    fn show_padding(&self) -> Option<String> {
        self.show()
    }
}

impl PaddingArg for Padding1 {
    fn show_padding(&self) -> Option<String> {
        match &self.0 {
            Padding::Zeros(_, 0) => None,
            Padding::Zeros(_, p) => Some(format!("({p},)")),
            other => other.show(),
        }
    }
}

impl PaddingArg for Padding3 {
    fn show_padding(&self) -> Option<String> {
        self.show()
    }
}

/// A size as a transposed layer's padding: left out of the repr when zero.
macro_rules! size_padding {
    ($($size:ty),*) => {$(
        impl PaddingArg for $size {
            fn show_padding(&self) -> Option<String> {
                (*self != <$size as ConvSize>::ZERO).then(|| ConvSize::show(*self))
            }
        }
    )*};
}

size_padding!(Size1, Size2, Size3);

impl From<Size2> for Padding {
    fn from(Size2(h, w): Size2) -> Padding {
        Padding::Zeros(h, w)
    }
}

impl From<Size3> for Padding3 {
    fn from(Size3(d, h, w): Size3) -> Padding3 {
        Padding3::Zeros(d, h, w)
    }
}

impl From<Size1> for Padding1 {
    fn from(Size1(p): Size1) -> Padding1 {
        Padding1::from(p)
    }
}

impl ConvSize for Size1 {
    const RANK: usize = 1;
    const ZERO: Size1 = Size1(0);
    const ONE: Size1 = Size1(1);
    const AXES: &'static str = "L";
    type Padding = Padding1;
    fn dims(self) -> Vec<usize> {
        vec![self.0]
    }
    fn show(self) -> String {
        format!("({},)", self.0)
    }
    fn conv(
        x: &Tensor,
        w: &Tensor,
        b: Option<&Tensor>,
        a: &ConvArgs<Size1, Padding1>,
    ) -> Result<Tensor> {
        let (s, d) = (a.stride.0, a.dilation.0);
        functional::conv1d(x, w, b, s, a.padding.clone(), d, a.groups)
    }
    fn conv_transpose(
        x: &Tensor,
        w: &Tensor,
        b: Option<&Tensor>,
        a: &ConvArgs<Size1, Size1>,
    ) -> Result<Tensor> {
        let (s, p, op, d) = (a.stride.0, a.padding.0, a.output_padding.0, a.dilation.0);
        functional::conv_transpose1d(x, w, b, s, p, op, a.groups, d)
    }
}

/// The 2-D and 3-D sizes pass themselves to their rank's functions (the 1-D one, above,
/// unwraps its int).
macro_rules! conv_size {
    ($size:ident: $rank:literal, $zero:expr, $one:expr, $axes:literal, $padding:ident,
     [$($field:tt),*], $conv:ident, $transposed:ident) => {
        impl ConvSize for $size {
            const RANK: usize = $rank;
            const ZERO: $size = $zero;
            const ONE: $size = $one;
            const AXES: &'static str = $axes;
            type Padding = $padding;
            fn dims(self) -> Vec<usize> {
                vec![$(self.$field),*]
            }
            fn show(self) -> String {
                $size::show(self)
            }
            fn conv(
                x: &Tensor,
                w: &Tensor,
                b: Option<&Tensor>,
                a: &ConvArgs<$size, $padding>,
            ) -> Result<Tensor> {
                functional::$conv(x, w, b, a.stride, a.padding.clone(), a.dilation, a.groups)
            }
            fn conv_transpose(
                x: &Tensor,
                w: &Tensor,
                b: Option<&Tensor>,
                a: &ConvArgs<$size, $size>,
            ) -> Result<Tensor> {
                let (s, p, op, d) = (a.stride, a.padding, a.output_padding, a.dilation);
                functional::$transposed(x, w, b, s, p, op, a.groups, d)
            }
        }
    };
}

conv_size!(Size2: 2, Size2(0, 0), Size2(1, 1), "H, W", Padding, [0, 1], conv2d, conv_transpose2d);
conv_size!(Size3: 3, Size3(0, 0, 0), Size3(1, 1, 1), "D, H, W", Padding3, [0, 1, 2], conv3d,
    conv_transpose3d);

/// Convolution (cross-correlation) layer, torch's `nn.Conv1d`, `nn.Conv2d` and `nn.Conv3d`:
/// weight `[out, in / groups, k..]` and a bias of `out` unless `.bias(false)`, Kaiming-uniform
/// as torch draws them: `Conv2d::new(3, 64, 3).stride(2).padding(1)`, `.padding("same")`,
/// `.dilation(2)`, `.groups(3)`, rectangular `Conv2d::new(3, 8, (3, 5))`,
/// `Conv3d::new(3, 8, (1, 3, 3))` for a kernel that does not look across frames. Input
/// `[N, C, ..]` or unbatched `[C, ..]`.
pub struct Conv<S: ConvSize> {
    pub weight: Parameter,
    pub bias: Option<Parameter>,
    args: ConvArgs<S, S::Padding>,
}

/// torch's `nn.Conv1d`, over sequences `[N, C, L]`.
pub type Conv1d = Conv<Size1>;
/// torch's `nn.Conv2d`, over images `[N, C, H, W]`.
pub type Conv2d = Conv<Size2>;
/// torch's `nn.Conv3d`, over volumes and clips `[N, C, D, H, W]`.
pub type Conv3d = Conv<Size3>;

/// Transposed convolution layer, torch's `nn.ConvTranspose1d`, `nn.ConvTranspose2d` and
/// `nn.ConvTranspose3d` (the upsampling layer of decoders and GAN generators): weight
/// `[in, out / groups, k..]` and a bias of `out` unless `.bias(false)`, with torch's fan-in
/// (the weight's second size times the kernel's volume); `ConvTranspose2d::new(64, 32,
/// 2).stride(2)` doubles the height and width. See [`functional::conv_transpose2d`] for the
/// output size.
pub struct ConvTranspose<S: ConvSize> {
    pub weight: Parameter,
    pub bias: Option<Parameter>,
    args: ConvArgs<S, S>,
}

/// torch's `nn.ConvTranspose1d`, over sequences `[N, C, L]`.
pub type ConvTranspose1d = ConvTranspose<Size1>;
/// torch's `nn.ConvTranspose2d`, over images `[N, C, H, W]`.
pub type ConvTranspose2d = ConvTranspose<Size2>;
/// torch's `nn.ConvTranspose3d`, over volumes `[N, C, D, H, W]`.
pub type ConvTranspose3d = ConvTranspose<Size3>;

impl<S: ConvSize> Conv<S> {
    pub fn new(in_channels: usize, out_channels: usize, kernel_size: impl Into<S>) -> Conv<S> {
        let args = ConvArgs::new(
            in_channels,
            out_channels,
            kernel_size.into(),
            S::ZERO.into(),
        );
        let (weight, bias) = Conv::draw(&args, true);
        Conv { weight, bias, args }
    }
    fn draw(a: &ConvArgs<S, S::Padding>, bias: bool) -> (Parameter, Option<Parameter>) {
        a.draw(a.out_channels, a.in_channels, bias)
    }
    /// Zeros around the input: an int, a size per axis, `"same"` or `"valid"`.
    pub fn padding(mut self, padding: impl Into<S::Padding>) -> Conv<S> {
        self.args.padding = padding.into();
        self
    }
}

impl<S: ConvSize> ConvTranspose<S> {
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel_size: impl Into<S>,
    ) -> ConvTranspose<S> {
        let args = ConvArgs::new(in_channels, out_channels, kernel_size.into(), S::ZERO);
        let (weight, bias) = ConvTranspose::draw(&args, true);
        ConvTranspose { weight, bias, args }
    }
    /// torch's fan-in for a transposed weight is its second size: `out / groups * k..`.
    fn draw(a: &ConvArgs<S, S>, bias: bool) -> (Parameter, Option<Parameter>) {
        a.draw(a.in_channels, a.out_channels, bias)
    }
    /// `dilation·(k - 1) - padding` zeros fewer around the spread input: an int or a size
    /// per axis.
    pub fn padding(mut self, padding: impl Into<S>) -> ConvTranspose<S> {
        self.args.padding = padding.into();
        self
    }
    /// Extra length on the far side of each output axis (torch's `output_padding`, smaller
    /// than the stride or the dilation), to reach an exact size.
    pub fn output_padding(mut self, output_padding: impl Into<S>) -> ConvTranspose<S> {
        self.args.output_padding = output_padding.into();
        self
    }
}

/// What a lazy layer ([`super::Lazy`]) needs of both: the layer for a number of input
/// channels, the others' settings kept.
macro_rules! with_in_channels {
    ($($layer:ident),*) => {$(
        impl<S: ConvSize> $layer<S> {
            /// This layer's settings for `in_channels` inputs, its parameters drawn anew.
            pub(super) fn with_in_channels(&self, in_channels: usize) -> $layer<S> {
                let mut args = self.args.clone();
                args.in_channels = in_channels;
                let (weight, bias) = $layer::draw(&args, self.bias.is_some());
                $layer { weight, bias, args }
            }
            pub(super) fn groups_of(&self) -> usize {
                self.args.groups
            }
            /// This layer's settings with these parameters (a fused layer's).
            pub(super) fn with_parameters(&self, weight: Parameter, bias: Parameter) -> $layer<S> {
                $layer {
                    weight,
                    bias: Some(bias),
                    args: self.args.clone(),
                }
            }
        }
    )*};
}

with_in_channels!(Conv, ConvTranspose);

/// The builders and the `Module` both layers share: each builder sets one of torch's keyword
/// arguments; `groups` and `bias(true)` draw the parameters they change anew.
macro_rules! conv_layer {
    ($layer:ident, $name:literal, $run:ident) => {
        impl<S: ConvSize> $layer<S> {
            pub fn stride(mut self, stride: impl Into<S>) -> $layer<S> {
                self.args.stride = stride.into();
                self
            }
            pub fn dilation(mut self, dilation: impl Into<S>) -> $layer<S> {
                self.args.dilation = dilation.into();
                self
            }
            /// Splits the channels into `groups` independent convolutions (torch's `groups`;
            /// `groups == in_channels` is a depthwise convolution). Draws a new weight.
            pub fn groups(mut self, groups: usize) -> $layer<S> {
                self.args.groups = groups;
                (self.weight, self.bias) = $layer::draw(&self.args, self.bias.is_some());
                self
            }
            /// `bias(false)` drops the bias (torch's `bias=False`); `bias(true)` draws one if
            /// there was none.
            pub fn bias(mut self, bias: bool) -> $layer<S> {
                if !bias {
                    self.bias = None;
                } else if self.bias.is_none() {
                    self.bias = $layer::draw(&self.args, true).1;
                }
                self
            }
        }

        impl<S: ConvSize> Module for $layer<S> {
            fn forward(&self, x: &Tensor) -> Result<Tensor> {
                self.args.check(self, x)?;
                same_device(self, &self.weight, x)?;
                let b = self.bias.as_ref().map(Parameter::tensor);
                S::$run(x, &self.weight.tensor(), b.as_ref(), &self.args)
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
                self.args.describe($name, self.bias.is_some())
            }
        }
    };
}

conv_layer!(Conv, "Conv", conv);
conv_layer!(ConvTranspose, "ConvTranspose", conv_transpose);
generic_repr!(ConvSize: Conv, ConvTranspose);
