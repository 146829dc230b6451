//! Sampling images and volumes at given points, torch's `F.grid_sample` and `F.affine_grid`
//! (spatial transformer networks, warps, augmentation by a learned or random affine map). A
//! grid holds, for each output pixel, the `(x, y)` (or `(x, y, z)`) to read in the input,
//! normalised to `[-1, 1]`; `grid_sample` reads there by `nearest`, `bilinear` or `bicubic` interpolation,
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

/// One tap: the integer position per spatial axis (float tensors `[N, out..]` in the
/// input's axis order, depth, height, width; no gradient) and its weight.
type Tap = (Vec<Tensor>, Tensor);

/// The taps' sum: each reads `flat` (`[N, C, prod(dims)]`) at its position, zero outside the
/// input.
fn taps_sum(flat: &Tensor, dims: &[usize], taps: Vec<Tap>) -> Result<Tensor> {
    let [n, c] = [flat.shape()[0], flat.shape()[1]];
    let mut sum: Option<Tensor> = None;
    for (at, weight) in taps {
        let points: usize = at[0].shape()[1..].iter().product();
        let (index, inside) = no_grad(|| -> Result<(Tensor, Tensor)> {
            let mut inside: Option<Tensor> = None;
            for (p, &len) in at.iter().zip(dims) {
                let ok = p.ge(0.0)?.logical_and(&p.le(len as f64 - 1.0)?)?;
                inside = Some(match inside {
                    Some(i) => i.logical_and(&ok)?,
                    None => ok,
                });
            }
            let inside = inside.expect("at least one axis");
            let zero = at[0].zeros_like()?;
            let mut index: Option<Tensor> = None;
            for (p, &len) in at.iter().zip(dims) {
                let p = p.where_(&inside, &zero)?.to_dtype(DType::I64)?;
                index = Some(match index {
                    Some(i) => i.mul(len as i64)?.add(&p)?,
                    None => p,
                });
            }
            let index = index
                .expect("at least one axis")
                .reshape(vec![n, 1, points])?
                .expand(vec![n, c, points])?;
            Ok((index, inside))
        })?;
        let weight = weight
            .where_(&inside, &weight.zeros_like()?)?
            .reshape(vec![n, 1, points])?;
        let term = flat.gather(2, &index)?.mul(&weight)?;
        sum = Some(match sum {
            Some(s) => s.add(&term)?,
            None => term,
        });
    }
    Ok(sum.expect("at least one tap"))
}

/// torch's `F.grid_sample(input, grid, mode, padding_mode, align_corners)` for images and
/// volumes: `input` `[N, C, H, W]` with `grid` `[N, Ho, Wo, 2]` holding `(x, y)`, or `input`
/// `[N, C, D, H, W]` with `grid` `[N, Do, Ho, Wo, 3]` holding `(x, y, z)`, in `[-1, 1]`
/// (beyond it is outside the input); the output is `[N, C, Ho, Wo]` (or `[N, C, Do, Ho,
/// Wo]`). `mode` `"bilinear"` (torch's default; trilinear for volumes), `"nearest"` (halves
/// to even; no gradient to the grid) or `"bicubic"` (images only, as torch's);
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
    let r = match input.rank() {
        4 => 2,
        5 => 3,
        _ => {
            return Err(Error::BadShape(format!(
                "{OP}: expected an input [N, C, H, W] or a volume [N, C, D, H, W], got {:?}",
                input.shape()
            )))
        }
    };
    if r == 3 && mode == "bicubic" {
        return Err(Error::Invalid(format!(
            "{OP}: bicubic interpolation takes images [N, C, H, W] only (as torch's), got a \
             volume {:?}",
            input.shape()
        )));
    }
    let (n, c) = (input.shape()[0], input.shape()[1]);
    let dims = input.shape()[2..].to_vec();
    let g = grid.shape();
    if g.len() != r + 2 || g[0] != n || g[r + 1] != r {
        let (want, what) = if r == 2 {
            ("H_out, W_out, 2", "(x, y) per output pixel")
        } else {
            ("D_out, H_out, W_out, 3", "(x, y, z) per output point")
        };
        return Err(Error::BadShape(format!(
            "{OP}: expected a grid [{n}, {want}] (the input's batch, then {what}), got {:?} \
             for input {:?}",
            grid.shape(),
            input.shape()
        )));
    }
    let out = g[1..=r].to_vec();
    if dims.contains(&0) {
        return Err(Error::BadShape(format!(
            "{OP}: the input's spatial sizes must not be 0, got {:?}",
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
    let flat = input.reshape(vec![n, c, dims.iter().product()])?;
    // The grid's coordinates in the input's axis order: its last entry (x) is the width's.
    let coords = (0..r)
        .map(|a| {
            unnormalize(
                &grid.select(r as isize + 1, (r - 1 - a) as isize)?,
                dims[a],
                align_corners,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let padded = |a: usize, x: &Tensor| pad_coordinate(x, dims[a], pad, align_corners);
    let taps: Vec<Tap> = match mode {
        "nearest" => {
            let at = no_grad(|| {
                (0..r)
                    .map(|a| padded(a, &coords[a])?.round())
                    .collect::<Result<Vec<_>>>()
            })?;
            // torch gives the grid a zero gradient here, not none.
            let one = coords[0].mul(0.0)?.add(1.0)?;
            vec![(at, one)]
        }
        "bilinear" => {
            // Per axis: the point, the lower and upper neighbour, and their weights (each
            // the distance to the other neighbour, torch's).
            let mut axes = Vec::with_capacity(r);
            for (a, coord) in coords.iter().enumerate() {
                let i = padded(a, coord)?;
                let lo = no_grad(|| i.floor())?;
                let hi = lo.add(1.0)?;
                let (w_lo, w_hi) = (hi.sub(&i)?, i.sub(&lo)?);
                axes.push([(lo, w_lo), (hi, w_hi)]);
            }
            // Every corner, the last axis fastest (torch's nw, ne, sw, se and its eight
            // corners of a volume); its weight the product from the last axis, as torch's.
            (0..1usize << r)
                .map(|corner| {
                    let pick = |a: usize| &axes[a][(corner >> (r - 1 - a)) & 1];
                    let at = (0..r).map(|a| pick(a).0.clone()).collect();
                    let mut weight = pick(r - 1).1.clone();
                    for a in (0..r - 1).rev() {
                        weight = weight.mul(&pick(a).1)?;
                    }
                    Ok((at, weight))
                })
                .collect::<Result<_>>()?
        }
        _ => {
            // Bicubic: sixteen taps around the unpadded point, each tap's position padded.
            let (gy, gx) = (&coords[0], &coords[1]);
            let (x0, y0) = no_grad(|| Ok::<_, Error>((gx.floor()?, gy.floor()?)))?;
            let wx = cubic(&gx.sub(&x0)?)?;
            let wy = cubic(&gy.sub(&y0)?)?;
            let mut taps = Vec::with_capacity(16);
            for (j, wy) in wy.iter().enumerate() {
                let y = no_grad(|| padded(0, &y0.add(j as f64 - 1.0)?))?;
                for (i, wx) in wx.iter().enumerate() {
                    let x = no_grad(|| padded(1, &x0.add(i as f64 - 1.0)?))?;
                    taps.push((vec![y.clone(), x], wx.mul(wy)?));
                }
            }
            taps
        }
    };
    taps_sum(&flat, &dims, taps)?.reshape([vec![n, c], out].concat())
}

/// torch's `F.affine_grid(theta, size, align_corners)`: the grid that `grid_sample` needs to
/// apply the affine maps `theta` (output coordinates to input coordinates, both in
/// `[-1, 1]`): `theta` `[N, 2, 3]` for images of `size` `[N, C, H, W]` (a grid `[N, H, W,
/// 2]`), or `[N, 3, 4]` for volumes of `size` `[N, C, D, H, W]` (a grid `[N, D, H, W, 3]`).
/// Differentiable in `theta` (one batched matmul of the output points' coordinates).
pub fn affine_grid(
    theta: &Tensor,
    size: impl AsRef<[usize]>,
    align_corners: bool,
) -> Result<Tensor> {
    const OP: &str = "affine_grid";
    let size = size.as_ref();
    float_input(theta, OP)?;
    if !matches!(size.len(), 4 | 5) {
        return Err(Error::BadShape(format!(
            "{OP}: size must be [N, C, H, W] or [N, C, D, H, W], got {size:?}"
        )));
    }
    let (n, r) = (size[0], size.len() - 2);
    let spatial = &size[2..];
    if theta.shape() != [n, r, r + 1] {
        return Err(Error::BadShape(format!(
            "{OP}: expected theta [{n}, {r}, {}] (one {r} x {} affine matrix per {} of size \
             {size:?}), got {:?}",
            r + 1,
            r + 1,
            if r == 2 { "image" } else { "volume" },
            theta.shape()
        )));
    }
    if spatial.contains(&0) {
        return Err(Error::BadShape(format!(
            "{OP}: the spatial sizes must not be 0, got size {size:?}"
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
    // The base grid [spatial.., r + 1]: x along the last axis, then y, (z), then 1.
    let points: usize = spatial.iter().product();
    let mut columns = Vec::with_capacity(r + 1);
    for a in (0..r).rev() {
        let mut shape = vec![1; r + 1];
        shape[a] = spatial[a];
        let full = [spatial.to_vec(), vec![1]].concat();
        columns.push(axis(spatial[a])?.reshape(shape)?.expand(full)?);
    }
    columns.push(Tensor::ones_dtype(
        [spatial.to_vec(), vec![1]].concat(),
        theta.dtype(),
        Device::Cpu,
    )?);
    let base = Tensor::cat(&columns, r as isize)?
        .reshape(vec![1, points, r + 1])?
        .to(theta.device())?
        .expand(vec![n, points, r + 1])?;
    let out = [vec![n], spatial.to_vec(), vec![r]].concat();
    base.bmm(&theta.transpose(1, 2)?)?.reshape(out)
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
