//! Sampling images at given points, torch's `F.grid_sample` and `F.affine_grid` (spatial
//! transformer networks, warps, augmentation by a learned or random affine map). A grid
//! holds, for each output pixel, the `(x, y)` to read in the input, normalised to
//! `[-1, 1]`; `grid_sample` reads there by `nearest`, `bilinear` or `bicubic` interpolation,
//! with torch's `zeros`, `border` or `reflection` padding. The coordinates and weights are
//! tensor ops on the grid and the taps one `gather` each, so the input and the grid both get
//! their gradients, as in torch, on every device.

use super::functional::{float_input, in_float32};
use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};
use crate::Device;

/// How a coordinate outside the input reads (torch's `padding_mode`).
#[derive(Clone, Copy, PartialEq)]
enum Pad {
    Zeros,
    Border,
    Reflection,
}

/// torch's `grid_sampler_unnormalize`: `[-1, 1]` to pixel coordinates, the corners' centres
/// at the ends with `align_corners`, else the corners' outer edges.
fn unnormalize(coord: &Tensor, size: usize, align: bool) -> Result<Tensor> {
    let s = size as f64;
    if align {
        coord.add(1.0)?.div(2.0)?.mul(s - 1.0)
    } else {
        coord.add(1.0)?.mul(s)?.sub(1.0)?.div(2.0)
    }
}

/// torch's `reflect_coordinates`: `x` mirrored into `[low2 / 2, high2 / 2]` as often as it
/// takes.
fn reflect(x: &Tensor, low2: f64, high2: f64) -> Result<Tensor> {
    if low2 == high2 {
        return x.zeros_like();
    }
    let (min, span) = (low2 / 2.0, (high2 - low2) / 2.0);
    let x = x.sub(min)?.abs()?;
    let extra = x.fmod(span)?;
    let flips = no_grad(|| x.div(span)?.floor())?;
    let even = no_grad(|| flips.fmod(2.0)?.eq(0.0))?;
    extra
        .add(min)?
        .where_(&even, &extra.neg()?.add(span + min)?)
}

/// torch's `compute_coordinates`: a pixel coordinate after the padding mode (clipped into
/// the input for `border`, reflected then clipped for `reflection`).
fn pad_coordinate(x: &Tensor, size: usize, pad: Pad, align: bool) -> Result<Tensor> {
    let last = size as f64 - 1.0;
    match pad {
        Pad::Zeros => Ok(x.clone()),
        Pad::Border => x.clamp(0.0, last),
        Pad::Reflection => {
            let r = if align {
                reflect(x, 0.0, 2.0 * last)?
            } else {
                reflect(x, -1.0, 2.0 * size as f64 - 1.0)?
            };
            r.clamp(0.0, last)
        }
    }
}

/// torch's cubic convolution weights (A = -0.75) for the four taps around a point `t` past
/// the second one.
fn cubic(t: &Tensor) -> Result<[Tensor; 4]> {
    const A: f64 = -0.75;
    let near =
        |x: &Tensor| -> Result<Tensor> { x.mul(A + 2.0)?.sub(A + 3.0)?.mul(x)?.mul(x)?.add(1.0) };
    let far = |x: &Tensor| -> Result<Tensor> {
        x.mul(A)?
            .sub(5.0 * A)?
            .mul(x)?
            .add(8.0 * A)?
            .mul(x)?
            .sub(4.0 * A)
    };
    let one_minus = t.neg()?.add(1.0)?;
    Ok([
        far(&t.add(1.0)?)?,
        near(t)?,
        near(&one_minus)?,
        far(&one_minus.add(1.0)?)?,
    ])
}

/// The taps' sum: each `(x, y, weight)` reads `flat` (`[N, C, H * W]`) at integer pixel
/// `(x, y)` (a float tensor `[N, Ho, Wo]`, no gradient), zero outside the input.
fn taps_sum(
    flat: &Tensor,
    [h, w]: [usize; 2],
    taps: Vec<(Tensor, Tensor, Tensor)>,
) -> Result<Tensor> {
    let [n, c] = [flat.shape()[0], flat.shape()[1]];
    let mut sum: Option<Tensor> = None;
    for (x, y, weight) in taps {
        let [ho, wo] = [x.shape()[1], x.shape()[2]];
        let (index, inside) = no_grad(|| -> Result<(Tensor, Tensor)> {
            let inside = x
                .ge(0.0)?
                .logical_and(&x.le(w as f64 - 1.0)?)?
                .logical_and(&y.ge(0.0)?)?
                .logical_and(&y.le(h as f64 - 1.0)?)?;
            let zero = x.zeros_like()?;
            let xi = x.where_(&inside, &zero)?.to_dtype(DType::I64)?;
            let yi = y.where_(&inside, &zero)?.to_dtype(DType::I64)?;
            let index = yi
                .mul(w as i64)?
                .add(&xi)?
                .reshape(vec![n, 1, ho * wo])?
                .expand(vec![n, c, ho * wo])?;
            Ok((index, inside))
        })?;
        let weight = weight
            .where_(&inside, &weight.zeros_like()?)?
            .reshape(vec![n, 1, ho * wo])?;
        let term = flat.gather(2, &index)?.mul(&weight)?;
        sum = Some(match sum {
            Some(s) => s.add(&term)?,
            None => term,
        });
    }
    Ok(sum.expect("at least one tap"))
}

/// torch's `F.grid_sample(input, grid, mode, padding_mode, align_corners)` for images:
/// `input` `[N, C, H, W]`, `grid` `[N, Ho, Wo, 2]` holding `(x, y)` in `[-1, 1]` (beyond it
/// is outside the input); the output is `[N, C, Ho, Wo]`. `mode` `"bilinear"` (torch's
/// default), `"nearest"` (halves to even; no gradient to the grid) or `"bicubic"`;
/// `padding_mode` `"zeros"` (torch's default), `"border"` or `"reflection"`. Floats only,
/// halves computed in float32.
pub fn grid_sample(
    input: &Tensor,
    grid: &Tensor,
    mode: &str,
    padding_mode: &str,
    align_corners: bool,
) -> Result<Tensor> {
    const OP: &str = "grid_sample";
    float_input(input, OP)?;
    float_input(grid, OP)?;
    let pad = match padding_mode {
        "zeros" => Pad::Zeros,
        "border" => Pad::Border,
        "reflection" => Pad::Reflection,
        other => {
            return Err(Error::Invalid(format!(
                "{OP}: padding_mode must be \"zeros\", \"border\" or \"reflection\", got \
                 \"{other}\""
            )))
        }
    };
    if !matches!(mode, "bilinear" | "nearest" | "bicubic") {
        return Err(Error::Invalid(format!(
            "{OP}: mode must be \"bilinear\", \"nearest\" or \"bicubic\", got \"{mode}\""
        )));
    }
    let (n, c, h, w) = match input.shape()[..] {
        [n, c, h, w] => (n, c, h, w),
        _ => {
            return Err(Error::BadShape(format!(
                "{OP}: expected an input [N, C, H, W] (4-D; volumes are not supported yet), \
                 got {:?}",
                input.shape()
            )))
        }
    };
    let (ho, wo) = match grid.shape()[..] {
        [gn, ho, wo, 2] if gn == n => (ho, wo),
        _ => {
            return Err(Error::BadShape(format!(
                "{OP}: expected a grid [{n}, H_out, W_out, 2] (the input's batch, then (x, y) \
                 per output pixel), got {:?} for input {:?}",
                grid.shape(),
                input.shape()
            )))
        }
    };
    if h == 0 || w == 0 {
        return Err(Error::BadShape(format!(
            "{OP}: the input's height and width must not be 0, got {:?}",
            input.shape()
        )));
    }
    if input.device() != grid.device() {
        return Err(Error::Invalid(format!(
            "{OP}: the input is on {} but the grid on {}; move one with .to(..)",
            input.device(),
            grid.device()
        )));
    }
    if let Some(y) = in_float32(input, &[Some(grid)], |x, g| {
        grid_sample(
            x,
            g[0].as_ref().expect("the grid"),
            mode,
            padding_mode,
            align_corners,
        )
    }) {
        return y;
    }
    let dtype = crate::tensor::promote(input.dtype(), grid.dtype());
    let (input, grid) = (input.to_dtype(dtype)?, grid.to_dtype(dtype)?);
    let flat = input.reshape(vec![n, c, h * w])?;
    let gx = unnormalize(&grid.select(3, 0)?, w, align_corners)?;
    let gy = unnormalize(&grid.select(3, 1)?, h, align_corners)?;
    let taps = match mode {
        "nearest" => {
            let (x, y) = no_grad(|| -> Result<(Tensor, Tensor)> {
                let x = pad_coordinate(&gx, w, pad, align_corners)?.round()?;
                let y = pad_coordinate(&gy, h, pad, align_corners)?.round()?;
                Ok((x, y))
            })?;
            // torch gives the grid a zero gradient here, not none.
            let one = gx.mul(0.0)?.add(1.0)?;
            vec![(x, y, one)]
        }
        "bilinear" => {
            let ix = pad_coordinate(&gx, w, pad, align_corners)?;
            let iy = pad_coordinate(&gy, h, pad, align_corners)?;
            let (x0, y0) = no_grad(|| Ok::<_, Error>((ix.floor()?, iy.floor()?)))?;
            let (x1, y1) = (x0.add(1.0)?, y0.add(1.0)?);
            // torch's weights: each the area of the rectangle opposite its corner.
            let (east, west) = (ix.sub(&x0)?, x1.sub(&ix)?);
            let (south, north) = (iy.sub(&y0)?, y1.sub(&iy)?);
            vec![
                (x0.clone(), y0.clone(), west.mul(&north)?),
                (x1.clone(), y0, east.mul(&north)?),
                (x0, y1.clone(), west.mul(&south)?),
                (x1, y1, east.mul(&south)?),
            ]
        }
        _ => {
            // Bicubic: sixteen taps around the unpadded point, each tap's position padded.
            let (x0, y0) = no_grad(|| Ok::<_, Error>((gx.floor()?, gy.floor()?)))?;
            let wx = cubic(&gx.sub(&x0)?)?;
            let wy = cubic(&gy.sub(&y0)?)?;
            let mut taps = Vec::with_capacity(16);
            for (j, wy) in wy.iter().enumerate() {
                let y =
                    no_grad(|| pad_coordinate(&y0.add(j as f64 - 1.0)?, h, pad, align_corners))?;
                for (i, wx) in wx.iter().enumerate() {
                    let x = no_grad(|| {
                        pad_coordinate(&x0.add(i as f64 - 1.0)?, w, pad, align_corners)
                    })?;
                    taps.push((x, y.clone(), wx.mul(wy)?));
                }
            }
            taps
        }
    };
    taps_sum(&flat, [h, w], taps)?.reshape(vec![n, c, ho, wo])
}

/// torch's `F.affine_grid(theta, size, align_corners)`: the grid `[N, H, W, 2]` that
/// `grid_sample` needs to apply the affine maps `theta` (`[N, 2, 3]`, output coordinates to
/// input coordinates, both in `[-1, 1]`) to images of `size` `[N, C, H, W]`. Differentiable
/// in `theta` (one batched matmul of the output pixels' coordinates).
pub fn affine_grid(theta: &Tensor, size: [usize; 4], align_corners: bool) -> Result<Tensor> {
    const OP: &str = "affine_grid";
    float_input(theta, OP)?;
    let [n, _, h, w] = size;
    if theta.shape() != [n, 2, 3] {
        return Err(Error::BadShape(format!(
            "{OP}: expected theta [{n}, 2, 3] (one 2 x 3 affine matrix per image of size \
             {size:?}), got {:?}",
            theta.shape()
        )));
    }
    if h == 0 || w == 0 {
        return Err(Error::BadShape(format!(
            "{OP}: the height and width must not be 0, got size {size:?}"
        )));
    }
    // torch's _linspace_from_neg_one: the pixels' centres, pulled in from the corners
    // unless align_corners.
    let axis = |len: usize| -> Result<Tensor> {
        let r = linspace_in(len, theta.dtype())?;
        if align_corners || len <= 1 {
            Ok(r)
        } else {
            r.mul((len - 1) as f64 / len as f64)
        }
    };
    let xs = axis(w)?.reshape(vec![1, w, 1])?.expand(vec![h, w, 1])?;
    let ys = axis(h)?.reshape(vec![h, 1, 1])?.expand(vec![h, w, 1])?;
    let ones = Tensor::ones_dtype(vec![h, w, 1], theta.dtype(), Device::Cpu)?;
    let base = Tensor::cat(&[xs, ys, ones], 2)?
        .reshape(vec![1, h * w, 3])?
        .to(theta.device())?
        .expand(vec![n, h * w, 3])?;
    base.bmm(&theta.transpose(1, 2)?)?.reshape(vec![n, h, w, 2])
}

/// `torch.linspace(-1, 1, len)` in `dtype`: float64 computed in float64 (torch's kernel runs
/// in the tensor's own dtype), the others in float32 and rounded, as torch's.
fn linspace_in(len: usize, dtype: DType) -> Result<Tensor> {
    if dtype != DType::F64 {
        return Tensor::linspace(-1.0, 1.0, len, Device::Cpu)?.to_dtype(dtype);
    }
    let step = if len > 1 { 2.0 / (len - 1) as f64 } else { 0.0 };
    let half = len / 2;
    let v: Vec<f64> = (0..len)
        .map(|i| {
            if i < half {
                -1.0 + i as f64 * step
            } else {
                1.0 - (len - 1 - i) as f64 * step
            }
        })
        .collect();
    Tensor::from_vec(v, vec![len], Device::Cpu)
}
