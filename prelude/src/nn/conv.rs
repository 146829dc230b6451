//! 2-D convolutions as torch's `F.conv2d` and `F.conv_transpose2d`, and their arguments as
//! torch takes them (an int or an (h, w) pair; padding also `"same"` or `"valid"`). The layers
//! are in `conv_layers`.

use super::functional::in_float32;
use super::windows::{
    four_d, nchw, per_image, window_count, window_indices, WindowKey, WindowKind,
};
use crate::error::{Error, Result};
use crate::tensor::autocast::{autocast3, AmpOp};
use crate::tensor::host_mem::{checked_numel, host_room};
use crate::tensor::{ConvGeom, DType, Tensor};
use crate::Device;

/// The size of a 1-D layer's one axis (kernel, stride, padding, dilation): `Conv1d::new(16, 32,
/// 5)`, `MaxPool1d::new(2)`. A type of its own, so an integer literal converts into it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size1(pub usize);

impl From<usize> for Size1 {
    fn from(v: usize) -> Size1 {
        Size1(v)
    }
}

impl From<[usize; 1]> for Size1 {
    fn from([v]: [usize; 1]) -> Size1 {
        Size1(v)
    }
}

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
    pub(super) fn show(self) -> String {
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
    pub(super) fn show(&self) -> Option<String> {
        match self {
            Padding::Zeros(0, 0) => None,
            Padding::Zeros(h, w) => Some(Size2(*h, *w).show()),
            Padding::Same => Some("same".into()),
            Padding::Valid => Some("valid".into()),
            Padding::Unknown(s) => Some(s.clone()),
        }
    }
}

/// 2-D convolution (cross-correlation, as torch's `F.conv2d(input, weight, bias, stride,
/// padding, dilation, groups)`): `x` `[N, C, H, W]`, `weight` `[O, C / groups, kh, kw]`,
/// optional `bias` `[O]`. `stride` and `dilation` are an int or an `(h, w)` pair; `padding`
/// also `"same"` or `"valid"` ([`Padding`](super::Padding)). Computed as im2col (one index
/// gather) and one matrix product; with `groups > 1`, once per group on its channels, the
/// outputs concatenated.
pub fn conv2d(
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: impl Into<Size2>,
    padding: impl Into<Padding>,
    dilation: impl Into<Size2>,
    groups: usize,
) -> Result<Tensor> {
    let (stride, dilation, padding) = (stride.into(), dilation.into(), padding.into());
    if x.rank() != 4 {
        return per_image(x, "conv2d", |x| {
            conv2d(x, weight, bias, stride, padding.clone(), dilation, groups)
        });
    }
    let lowered = autocast3(AmpOp::Conv2d, "conv2d", x, Some(weight), bias, |x, w, b| {
        let w = w.expect("the weight");
        conv2d(x, w, b, stride, padding.clone(), dilation, groups)
    });
    if let Some(y) = lowered {
        return y;
    }
    if let Some(y) = halves_in_float32(x, weight, bias, |x, w, b| {
        conv2d(x, w, b, stride, padding.clone(), dilation, groups)
    }) {
        return y;
    }
    let [o, _, kh, kw] = four_d(
        weight,
        "conv2d",
        "weight [out_channels, in_channels / groups, kH, kW]",
    )?;
    let [n, c, h, w] = nchw(x, "conv2d")?;
    check_channels("conv2d", x, c, weight, bias, groups, "H, W")?;
    if n > 0 && c > 0 && (h == 0 || w == 0) {
        return Err(Error::BadShape(format!(
            "conv2d: only an empty batch or no channels may be empty (as in torch), got input \
             {:?}",
            x.shape()
        )));
    }
    let [pt, pb, pl, pr] = padding.resolve(Size2(kh, kw), stride, dilation, "conv2d")?;
    let oh = window_count(h, kh, stride.0, [pt, pb], dilation.0, "conv2d")?;
    let ow = window_count(w, kw, stride.1, [pl, pr], dilation.1, "conv2d")?;
    checked_numel("conv2d", &[n, o, oh, ow])?;
    let (cg, og) = (c / groups, o / groups);
    let geom = ConvGeom {
        n,
        c: cg,
        h,
        w,
        o: og,
        kh,
        kw,
        oh,
        ow,
        sh: stride.0,
        sw: stride.1,
        ph: pt,
        pw: pl,
        dh: dilation.0,
        dw: dilation.1,
    };
    if groups == 1 {
        return conv2d_group(x, weight, bias, geom);
    }
    // One convolution per group on its slice of channels (views; the CPU path copies each
    // slice dense); the gradients flow back through narrow and cat.
    let outs = (0..groups)
        .map(|gi| {
            let b = bias.map(|b| b.narrow(0, gi * og, og)).transpose()?;
            conv2d_group(
                &x.narrow(1, gi * cg, cg)?,
                &weight.narrow(0, gi * og, og)?,
                b.as_ref(),
                geom,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    Tensor::cat(&outs, 1)
}

/// What conv2d and conv3d check of the channels: `groups` divides the weight's output
/// channels `[O, C / groups, k..]`, the input (`x`, with `c` channels) has `C`, and the bias
/// (if any) one value per output channel. `axes` names the input's spatial axes.
pub(super) fn check_channels(
    op: &str,
    x: &Tensor,
    c: usize,
    weight: &Tensor,
    bias: Option<&Tensor>,
    groups: usize,
    axes: &str,
) -> Result<()> {
    let (o, wc) = (weight.shape()[0], weight.shape()[1]);
    if groups == 0 || o % groups != 0 {
        return Err(Error::Invalid(format!(
            "{op}: groups must be positive and divide the weight's {o} output channels, got \
             groups {groups}"
        )));
    }
    if Some(c) != wc.checked_mul(groups) {
        let per = if groups > 1 {
            format!(" times {groups} groups")
        } else {
            String::new()
        };
        return Err(Error::BadShape(format!(
            "{op}: expected input [N, {}, {axes}] ({wc} channels{per}, as the weight {:?} \
             says), got {:?}",
            wc.saturating_mul(groups),
            weight.shape(),
            x.shape()
        )));
    }
    check_bias(op, bias, o)
}

/// The bias (if any) holds one value per output channel, `[out]`.
fn check_bias(op: &str, bias: Option<&Tensor>, out: usize) -> Result<()> {
    match bias {
        Some(b) if b.shape() != [out] => Err(Error::BadShape(format!(
            "{op}: expected a bias of shape [{out}] (one per output channel), got {:?}",
            b.shape()
        ))),
        _ => Ok(()),
    }
}

/// What the transposed convolutions check before they spread the input: `groups` divides the
/// weight's input channels `[C_in, C_out / groups, k..]`, the input (`x`, its spatial
/// lengths `lens`) has `C_in`, the bias has `C_out` values, every size is positive, and each
/// axis's `output_padding` is smaller than its stride or dilation. Returns `C_out`.
#[allow(clippy::too_many_arguments)]
pub(super) fn check_transposed(
    op: &str,
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    groups: usize,
    axes: &str,
    [stride, dilation, output_padding]: [&[usize]; 3],
    lens: &[usize],
) -> Result<usize> {
    let (cin, og) = (weight.shape()[0], weight.shape()[1]);
    let c = x.shape()[1];
    let k = &weight.shape()[2..];
    if groups == 0 || cin % groups != 0 {
        return Err(Error::Invalid(format!(
            "{op}: groups must be positive and divide the weight's {cin} input channels, got \
             groups {groups}"
        )));
    }
    if c != cin {
        return Err(Error::BadShape(format!(
            "{op}: expected input [N, {cin}, {axes}] (as the weight {:?} says), got {:?}",
            weight.shape(),
            x.shape()
        )));
    }
    let cout = og * groups;
    check_bias(op, bias, cout)?;
    let all = [stride, dilation, k, lens];
    // As torch prints sizes: (2, 2).
    let show = |v: &[usize]| {
        let items: Vec<String> = v.iter().map(usize::to_string).collect();
        format!("({})", items.join(", "))
    };
    if all.iter().any(|v| v.contains(&0)) {
        return Err(Error::Invalid(format!(
            "{op}: kernel size, stride, dilation and the input's {axes} must be positive, got \
             kernel {}, stride {}, dilation {}, input {:?}",
            show(k),
            show(stride),
            show(dilation),
            x.shape()
        )));
    }
    if (0..k.len()).any(|a| output_padding[a] >= stride[a].max(dilation[a])) {
        return Err(Error::Invalid(format!(
            "{op}: output_padding {} must be smaller than the stride {} or the dilation {}, as \
             in torch",
            show(output_padding),
            show(stride),
            show(dilation)
        )));
    }
    Ok(cout)
}

/// One axis of a transposed convolution: the output length `(len - 1)·s - 2·p + d·(k - 1) +
/// op + 1`, and the zeros before the spread input (negative: that many of its first rows are
/// cut off, when the padding exceeds the dilated kernel's reach). Sizes checked positive.
pub(super) fn transposed_axis(
    what: &str,
    name: &str,
    len: usize,
    [k, s, p, d, op]: [usize; 5],
) -> Result<(usize, isize)> {
    let reach = d.checked_mul(k - 1).and_then(|r| r.checked_add(op + 1));
    let out = (len - 1)
        .checked_mul(s)
        .zip(reach)
        .and_then(|(a, b)| a.checked_add(b))
        .and_then(|full| full.checked_sub(p.saturating_mul(2)))
        .filter(|&o| o > 0)
        .ok_or_else(|| {
            Error::BadShape(format!(
                "{what}: the padding {p} leaves no output {name} (input {name} {len}, stride \
                 {s}, kernel {k}, dilation {d}, output_padding {op})"
            ))
        })?;
    Ok((out, (d * (k - 1)) as isize - p as isize))
}

/// On the CPU, a float16/bfloat16 convolution (input and weight of that dtype) is computed
/// in float32 and rounded once at the end, as torch's CPU convolutions are (and its GPU ones
/// accumulate): the composed path would round the unfolded products of the gradients before
/// summing them, a unit or two in the last place off. CUDA keeps the half-precision matmul
/// (tensor cores). None where this does not apply.
pub(super) fn halves_in_float32(
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    f: impl FnOnce(&Tensor, &Tensor, Option<&Tensor>) -> Result<Tensor>,
) -> Option<Result<Tensor>> {
    if x.device() != Device::Cpu || weight.dtype() != x.dtype() {
        return None;
    }
    in_float32(x, &[Some(weight), bias], |x, up| {
        f(x, up[0].as_ref().expect("the weight"), up[1].as_ref())
    })
}

/// One group's convolution (all channels of `x` and `weight`, shapes checked by the caller).
fn conv2d_group(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>, g: ConvGeom) -> Result<Tensor> {
    let ConvGeom {
        n,
        c,
        o,
        kh,
        kw,
        oh,
        ow,
        ..
    } = g;
    let unfolded = checked_numel("conv2d", &[n, oh, ow, c, kh, kw])?;
    // On the CPU, per image straight into NCHW with the bias fused (`Tensor::conv2d_cpu`).
    if let Some(out) = Tensor::conv2d_cpu(x, weight, bias, g)? {
        return Ok(out);
    }
    let idx = unfold_indices(g, unfolded)?;
    let cols = x.gather_flat(idx, vec![n * oh * ow, c * kh * kw])?;
    let w2 = weight.reshape((o, c * kh * kw))?;
    let out = cols
        .matmul(&w2.t()?)?
        .reshape((n, oh * ow, o))?
        .transpose(1, 2)?
        .reshape((n, o, oh, ow))?;
    match bias {
        Some(b) => out.add(&b.reshape((1, o, 1, 1))?),
        None => Ok(out),
    }
}

/// Where each element of the unfolded input `[N*oh*ow, C*kh*kw]` comes from in the flat input
/// `[N, C, H, W]` (-1 for padding), built on the host once per geometry (`window_indices`
/// keeps the last few): conv2d's im2col, and `F::unfold` / `F::fold`.
pub(super) fn unfold_indices(g: ConvGeom, unfolded: usize) -> Result<std::sync::Arc<Vec<i32>>> {
    let ConvGeom {
        n,
        c,
        h,
        w,
        kh,
        kw,
        oh,
        ow,
        ..
    } = g;
    host_room(unfolded, DType::I32)?;
    let key = WindowKey {
        kind: WindowKind::Conv,
        dims: [n, c, h, w],
        kernel: [kh, kw],
        stride: [g.sh, g.sw],
        pad: [g.ph as isize, g.pw as isize],
        dilation: [g.dh, g.dw],
        out: [oh, ow],
    };
    Ok(window_indices(key, || {
        let mut idx = Vec::with_capacity(unfolded);
        for b in 0..n {
            for y in 0..oh {
                for xo in 0..ow {
                    for ch in 0..c {
                        let base = ((b * c + ch) * h * w) as isize;
                        for i in 0..kh {
                            let iy = (y * g.sh + i * g.dh) as isize - g.ph as isize;
                            for j in 0..kw {
                                let ix = (xo * g.sw + j * g.dw) as isize - g.pw as isize;
                                let inside =
                                    iy >= 0 && iy < h as isize && ix >= 0 && ix < w as isize;
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
        }
        idx
    }))
}

/// Transposed 2-D convolution (torch's `F.conv_transpose2d(input, weight, bias, stride,
/// padding, output_padding, groups, dilation)`, the gradient of `conv2d` with respect to its
/// input, used to upsample in decoders): `x` `[N, C_in, H, W]`, `weight`
/// `[C_in, C_out / groups, kh, kw]`, optional `bias` `[C_out]`; the output is
/// `[N, C_out, H', W']` with `H' = (H - 1)·stride - 2·padding + dilation·(kh - 1) +
/// output_padding + 1` (the same for the width). Computed as a stride-1 `conv2d` of the input
/// spread out (`stride - 1` zeros between pixels, `dilation·(k - 1) - padding` around: one
/// index gather) with the kernel flipped and its channel axes swapped, so it runs on every
/// device with gradients; the spread input is `stride²` times larger than the input.
#[allow(clippy::too_many_arguments)]
pub fn conv_transpose2d(
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: impl Into<Size2>,
    padding: impl Into<Size2>,
    output_padding: impl Into<Size2>,
    groups: usize,
    dilation: impl Into<Size2>,
) -> Result<Tensor> {
    const OP: &str = "conv_transpose2d";
    let (stride, padding, dilation) = (stride.into(), padding.into(), dilation.into());
    let output_padding = output_padding.into();
    if x.rank() != 4 {
        return per_image(x, OP, |x| {
            conv_transpose2d(
                x,
                weight,
                bias,
                stride,
                padding,
                output_padding,
                groups,
                dilation,
            )
        });
    }
    let lowered = autocast3(
        AmpOp::ConvTranspose2d,
        OP,
        x,
        Some(weight),
        bias,
        |x, w, b| {
            let w = w.expect("the weight");
            conv_transpose2d(x, w, b, stride, padding, output_padding, groups, dilation)
        },
    );
    if let Some(y) = lowered {
        return y;
    }
    if let Some(y) = halves_in_float32(x, weight, bias, |x, w, b| {
        conv_transpose2d(x, w, b, stride, padding, output_padding, groups, dilation)
    }) {
        return y;
    }
    let [cin, og, kh, kw] = four_d(
        weight,
        OP,
        "weight [in_channels, out_channels / groups, kH, kW]",
    )?;
    let [n, c, h, w] = nchw(x, OP)?;
    let pair = |s: Size2| [s.0, s.1];
    let sizes = [pair(stride), pair(dilation), pair(output_padding)];
    let cout = check_transposed(
        OP,
        x,
        weight,
        bias,
        groups,
        "H, W",
        sizes.each_ref().map(|s| &s[..]),
        &[h, w],
    )?;
    let (oh, before_h) = transposed_axis(
        OP,
        "height",
        h,
        [kh, stride.0, padding.0, dilation.0, output_padding.0],
    )?;
    let (ow, before_w) = transposed_axis(
        OP,
        "width",
        w,
        [kw, stride.1, padding.1, dilation.1, output_padding.1],
    )?;
    let (hz, wz) = (oh + dilation.0 * (kh - 1), ow + dilation.1 * (kw - 1));
    checked_numel(OP, &[n, cout, oh, ow])?;
    host_room(checked_numel(OP, &[n, c, hz, wz])?, DType::I32)?;
    let key = WindowKey {
        kind: WindowKind::Spread,
        dims: [n, c, h, w],
        kernel: [kh, kw],
        stride: [stride.0, stride.1],
        pad: [before_h, before_w],
        dilation: [dilation.0, dilation.1],
        out: [hz, wz],
    };
    let idx = window_indices(key, || {
        // Spread row `yz` holds input row `(yz - before) / stride` when that divides exactly
        // and lies inside the input, else a zero (-1).
        let source = |len: usize, z: usize, before: isize, s: usize| -> Vec<isize> {
            (0..z)
                .map(|i| {
                    let t = i as isize - before;
                    if t >= 0 && t % s as isize == 0 && ((t / s as isize) as usize) < len {
                        t / s as isize
                    } else {
                        -1
                    }
                })
                .collect()
        };
        let rows = source(h, hz, before_h, stride.0);
        let cols = source(w, wz, before_w, stride.1);
        let mut idx = Vec::with_capacity(n * c * hz * wz);
        for plane in 0..n * c {
            let base = (plane * h * w) as isize;
            for &r in &rows {
                for &col in &cols {
                    idx.push(if r < 0 || col < 0 {
                        -1
                    } else {
                        (base + r * w as isize + col) as i32
                    });
                }
            }
        }
        idx
    });
    let spread = x.gather_flat(idx, vec![n, c, hz, wz])?;
    // [C_in, C_out/g, kh, kw] as g blocks, each block's channel axes swapped: the weight of
    // the equivalent convolution, [C_out, C_in/g, kh, kw], flipped in space.
    let flipped = weight
        .reshape(vec![groups, cin / groups, og, kh, kw])?
        .transpose(1, 2)?
        .reshape(vec![cout, cin / groups, kh, kw])?
        .flip(&[2, 3])?;
    conv2d(&spread, &flipped, bias, 1, 0, dilation, groups)
}
