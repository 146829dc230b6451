//! Transposed 3-D convolution, torch's `F.conv_transpose3d` and `nn.ConvTranspose3d` (the
//! upsampling layer of volumetric decoders): as `conv_transpose2d`, a stride-1 convolution of
//! the input spread out with `stride - 1` zeros between elements (one `index_select` per
//! axis, reading a zero slice where nothing lands), with the kernel flipped and its channel
//! axes swapped per group, so `conv3d` does the work on every device with its gradients.

use super::conv::halves_in_float32;
use super::conv3d::{as_volume, conv3d, unvolume, Size3};
use super::{init_param, same_device, weight_and_bias, Module, Parameter};
use crate::autograd::relabel;
use crate::error::{Error, Result};
use crate::tensor::autocast::{autocast3, AmpOp};
use crate::tensor::host_mem::checked_numel;
use crate::tensor::Tensor;
use crate::Device;

/// `x` spread along `dim`: `z` slots, slot `i` holding element `(i - before) / s` when that
/// divides exactly and lies inside, else a zero (a zero slice appended and read).
fn spread_axis(x: &Tensor, dim: usize, z: usize, before: isize, s: usize) -> Result<Tensor> {
    let len = x.shape()[dim];
    let mut zero_shape = x.shape().to_vec();
    zero_shape[dim] = 1;
    let zero = Tensor::zeros_dtype(zero_shape, x.dtype(), x.device())?;
    let with_zero = Tensor::cat(&[x.clone(), zero], dim as isize)?;
    let idx: Vec<i64> = (0..z)
        .map(|i| {
            let t = i as isize - before;
            if t >= 0 && t % s as isize == 0 && ((t / s as isize) as usize) < len {
                t / s as isize
            } else {
                len as isize
            }
        })
        .map(|v| v as i64)
        .collect();
    let idx = Tensor::from_vec(idx, vec![z], Device::Cpu)?.to(x.device())?;
    with_zero.index_select(dim as isize, &idx)
}

/// Transposed 3-D convolution (torch's `F.conv_transpose3d(input, weight, bias, stride,
/// padding, output_padding, groups, dilation)`): `x` `[N, C_in, D, H, W]` (or unbatched),
/// `weight` `[C_in, C_out / groups, kd, kh, kw]`, optional `bias` `[C_out]`; each output
/// length is `(len - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1`.
#[allow(clippy::too_many_arguments)]
pub fn conv_transpose3d(
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: impl Into<Size3>,
    padding: impl Into<Size3>,
    output_padding: impl Into<Size3>,
    groups: usize,
    dilation: impl Into<Size3>,
) -> Result<Tensor> {
    const OP: &str = "conv_transpose3d";
    let (stride, padding, dilation) = (stride.into(), padding.into(), dilation.into());
    let output_padding = output_padding.into();
    let lowered = autocast3(
        AmpOp::ConvTranspose3d,
        OP,
        x,
        Some(weight),
        bias,
        |x, w, b| {
            let w = w.expect("the weight");
            conv_transpose3d(x, w, b, stride, padding, output_padding, groups, dilation)
        },
    );
    if let Some(y) = lowered {
        return y;
    }
    if let Some(y) = halves_in_float32(x, weight, bias, |x, w, b| {
        conv_transpose3d(x, w, b, stride, padding, output_padding, groups, dilation)
    }) {
        return y;
    }
    let [cin, og, kd, kh, kw] = match weight.shape()[..] {
        [a, b, c, d, e] => [a, b, c, d, e],
        _ => {
            return Err(Error::BadShape(format!(
                "{OP}: expected a 5-D weight [in_channels, out_channels / groups, kD, kH, kW], \
                 got shape {:?}",
                weight.shape()
            )))
        }
    };
    let (v, unbatched) = as_volume(OP, x)?;
    let [n, c] = [v.shape()[0], v.shape()[1]];
    if groups == 0 || cin % groups != 0 {
        return Err(Error::Invalid(format!(
            "{OP}: groups must be positive and divide the weight's {cin} input channels, got \
             groups {groups}"
        )));
    }
    if c != cin {
        return Err(Error::BadShape(format!(
            "{OP}: expected input [N, {cin}, D, H, W] (as the weight [{cin}, {og}, {kd}, {kh}, \
             {kw}] says), got {:?}",
            x.shape()
        )));
    }
    let cout = og * groups;
    if let Some(b) = bias {
        if b.shape() != [cout] {
            return Err(Error::BadShape(format!(
                "{OP}: expected a bias of shape [{cout}] (one per output channel), got {:?}",
                b.shape()
            )));
        }
    }
    let k = [kd, kh, kw];
    let s = [stride.0, stride.1, stride.2];
    let p = [padding.0, padding.1, padding.2];
    let d = [dilation.0, dilation.1, dilation.2];
    let op = [output_padding.0, output_padding.1, output_padding.2];
    let lens = [v.shape()[2], v.shape()[3], v.shape()[4]];
    if s.contains(&0) || d.contains(&0) || k.contains(&0) || lens.contains(&0) {
        return Err(Error::Invalid(format!(
            "{OP}: kernel size, stride, dilation and the input's depth, height and width must \
             be positive, got kernel {k:?}, stride {}, dilation {}, input {:?}",
            stride.show(),
            dilation.show(),
            x.shape()
        )));
    }
    if (0..3).any(|a| op[a] >= s[a].max(d[a])) {
        return Err(Error::Invalid(format!(
            "{OP}: output_padding {} must be smaller than the stride {} or the dilation {}, as \
             in torch",
            output_padding.show(),
            stride.show(),
            dilation.show()
        )));
    }
    let mut outs = [0usize; 3];
    let mut spread = v.clone();
    for a in 0..3 {
        let reach = d[a] * (k[a] - 1) + op[a] + 1;
        let full = (lens[a] - 1)
            .checked_mul(s[a])
            .and_then(|f| f.checked_add(reach));
        outs[a] = full
            .and_then(|f| f.checked_sub(2 * p[a]))
            .filter(|&o| o > 0)
            .ok_or_else(|| {
                Error::BadShape(format!(
                    "{OP}: the padding {} leaves no output along axis {} (input {:?}, stride \
                     {}, kernel {k:?}, dilation {}, output_padding {})",
                    padding.show(),
                    a + 2,
                    x.shape(),
                    stride.show(),
                    dilation.show(),
                    output_padding.show()
                ))
            })?;
        let z = outs[a] + d[a] * (k[a] - 1);
        checked_numel(OP, &[n, c, z])?;
        let before = (d[a] * (k[a] - 1)) as isize - p[a] as isize;
        spread = spread_axis(&spread, 2 + a, z, before, s[a])?;
    }
    checked_numel(OP, &[n, cout, outs[0], outs[1], outs[2]])?;
    // [C_in, C_out/g, k..] as g blocks, each block's channel axes swapped: the equivalent
    // convolution's weight [C_out, C_in/g, k..], flipped in space.
    let flipped = weight
        .reshape(vec![groups, cin / groups, og, kd, kh, kw])?
        .transpose(1, 2)?
        .reshape(vec![cout, cin / groups, kd, kh, kw])?
        .flip(&[2, 3, 4])?;
    let y = conv3d(&spread, &flipped, bias, 1, 0, dilation, groups)?;
    Ok(relabel(OP, unvolume(y, unbatched)?))
}

/// Transposed 3-D convolution layer (torch's `nn.ConvTranspose3d`): weight `[in, out /
/// groups, kd, kh, kw]` and a bias of `out`, Kaiming-uniform with torch's fan-in (the
/// weight's second size times the kernel's volume); `ConvTranspose3d::new(8, 4, 2).stride(2)`
/// doubles depth, height and width.
pub struct ConvTranspose3d {
    pub weight: Parameter,
    pub bias: Option<Parameter>,
    in_channels: usize,
    out_channels: usize,
    kernel_size: Size3,
    stride: Size3,
    padding: Size3,
    output_padding: Size3,
    dilation: Size3,
    groups: usize,
}

impl ConvTranspose3d {
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel_size: impl Into<Size3>,
    ) -> ConvTranspose3d {
        let mut c = ConvTranspose3d {
            weight: init_param(vec![0], 1),
            bias: None,
            in_channels,
            out_channels,
            kernel_size: kernel_size.into(),
            stride: Size3(1, 1, 1),
            padding: Size3(0, 0, 0),
            output_padding: Size3(0, 0, 0),
            dilation: Size3(1, 1, 1),
            groups: 1,
        };
        c.draw(true);
        c
    }
    fn fan_in(&self) -> usize {
        let Size3(kd, kh, kw) = self.kernel_size;
        (self.out_channels / self.groups.max(1) * kd * kh * kw).max(1)
    }
    fn draw(&mut self, bias: bool) {
        let Size3(kd, kh, kw) = self.kernel_size;
        let per_group = self.out_channels / self.groups.max(1);
        self.weight = init_param(vec![self.in_channels, per_group, kd, kh, kw], self.fan_in());
        self.bias = bias.then(|| init_param(vec![self.out_channels], self.fan_in()));
    }
    pub fn stride(mut self, stride: impl Into<Size3>) -> ConvTranspose3d {
        self.stride = stride.into();
        self
    }
    /// `dilation·(k - 1) - padding` zeros fewer around the spread input.
    pub fn padding(mut self, padding: impl Into<Size3>) -> ConvTranspose3d {
        self.padding = padding.into();
        self
    }
    /// Extra length on one side of each output axis (smaller than the stride or dilation).
    pub fn output_padding(mut self, output_padding: impl Into<Size3>) -> ConvTranspose3d {
        self.output_padding = output_padding.into();
        self
    }
    pub fn dilation(mut self, dilation: impl Into<Size3>) -> ConvTranspose3d {
        self.dilation = dilation.into();
        self
    }
    /// Independent transposed convolutions over `groups` slices of the channels; draws a
    /// new weight.
    pub fn groups(mut self, groups: usize) -> ConvTranspose3d {
        self.groups = groups;
        let bias = self.bias.is_some();
        self.draw(bias);
        self
    }
    /// `bias(false)` drops the bias (torch's `bias=False`); `bias(true)` draws one.
    pub fn bias(mut self, bias: bool) -> ConvTranspose3d {
        if !bias {
            self.bias = None;
        } else if self.bias.is_none() {
            self.bias = Some(init_param(vec![self.out_channels], self.fan_in()));
        }
        self
    }
}

impl Module for ConvTranspose3d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let g = self.groups;
        if g == 0 || !self.in_channels.is_multiple_of(g) || !self.out_channels.is_multiple_of(g) {
            return Err(Error::Invalid(format!(
                "{}: in_channels ({}) and out_channels ({}) must both be divisible by \
                 groups ({g}), as torch requires",
                self.describe(),
                self.in_channels,
                self.out_channels
            )));
        }
        let channels = match x.rank() {
            5 => Some(x.shape()[1]),
            4 => Some(x.shape()[0]),
            _ => None,
        };
        if channels != Some(self.in_channels) {
            return Err(Error::BadShape(format!(
                "{}: expected input of shape [N, {c}, D, H, W] or [{c}, D, H, W], got {:?}",
                self.describe(),
                x.shape(),
                c = self.in_channels
            )));
        }
        same_device(self, &self.weight, x)?;
        let b = self.bias.as_ref().map(Parameter::tensor);
        conv_transpose3d(
            x,
            &self.weight.tensor(),
            b.as_ref(),
            self.stride,
            self.padding,
            self.output_padding,
            self.groups,
            self.dilation,
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
            "ConvTranspose3d({}, {}, kernel_size={}, stride={}",
            self.in_channels,
            self.out_channels,
            self.kernel_size.show(),
            self.stride.show()
        );
        if self.padding != Size3(0, 0, 0) {
            s += &format!(", padding={}", self.padding.show());
        }
        if self.dilation != Size3(1, 1, 1) {
            s += &format!(", dilation={}", self.dilation.show());
        }
        if self.output_padding != Size3(0, 0, 0) {
            s += &format!(", output_padding={}", self.output_padding.show());
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
