//! Transposed 3-D convolution, torch's `F.conv_transpose3d` and `nn.ConvTranspose3d` (the
//! upsampling layer of volumetric decoders): as `conv_transpose2d`, a stride-1 convolution of
//! the input spread out with `stride - 1` zeros between elements (one `index_select` per
//! axis, reading a zero slice where nothing lands), with the kernel flipped and its channel
//! axes swapped per group, so `conv3d` does the work on every device with its gradients.

use super::conv::{check_transposed, halves_in_float32, transposed_axis};
use super::conv3d::{as_volume, conv3d, unvolume, Size3};

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
    let k = [kd, kh, kw];
    let s = [stride.0, stride.1, stride.2];
    let p = [padding.0, padding.1, padding.2];
    let d = [dilation.0, dilation.1, dilation.2];
    let op = [output_padding.0, output_padding.1, output_padding.2];
    let lens = [v.shape()[2], v.shape()[3], v.shape()[4]];
    let cout = check_transposed(
        OP,
        &v,
        weight,
        bias,
        groups,
        "D, H, W",
        [&s[..], &d[..], &op[..]],
        &lens,
    )?;
    let mut outs = [0usize; 3];
    let mut spread = v.clone();
    for a in 0..3 {
        let name = ["depth", "height", "width"][a];
        let before;
        (outs[a], before) = transposed_axis(OP, name, lens[a], [k[a], s[a], p[a], d[a], op[a]])?;
        let z = outs[a] + d[a] * (k[a] - 1);
        checked_numel(OP, &[n, c, z])?;
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
