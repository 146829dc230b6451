//! Adaptive pooling over volumes, torch's `F.adaptive_avg_pool3d` / `F.adaptive_max_pool3d`
//! and `nn.AdaptiveAvgPool3d` / `nn.AdaptiveMaxPool3d` (`[N, C, D, H, W]` or `[C, D, H, W]`),
//! with torch's windows (output `i` of `o` covers `floor(i len / o)` up to
//! `ceil((i + 1) len / o)`). A box's mean and its maximum both split by axis, so each axis is
//! pooled in turn: the mean by `resample`'s area taps, the maximum by the window's taps
//! stacked and `max_dim` (first maximum, so the winner is the first in depth, row, column
//! order, as torch's scan).

use super::conv3d::{as_volume, unvolume};
use super::functional::float_input;
use super::pool_layers::show_triple;
use super::resample::resize_axes;
use super::Module;
use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::autocast::unlisted;
use crate::tensor::host_mem::checked_numel;
use crate::tensor::Tensor;

type Size3 = (usize, usize, usize);

/// The volume, whether it was unbatched, after the checks both poolings share.
fn volume(x: &Tensor, op: &str, (od, oh, ow): Size3) -> Result<(Tensor, bool)> {
    let (v, unbatched) = as_volume(op, x)?;
    float_input(&v, op)?;
    if v.shape()[2..].contains(&0) || [od, oh, ow].contains(&0) {
        return Err(Error::BadShape(format!(
            "{op}: the input's depth, height and width and the output size must not be 0, got \
             input {:?} and output_size ({od}, {oh}, {ow})",
            x.shape()
        )));
    }
    checked_numel(op, &[v.shape()[0], v.shape()[1], od, oh, ow])?;
    Ok((v, unbatched))
}

/// Mean over the `output_size` grid of windows laid over each volume (torch's
/// `adaptive_avg_pool3d`); `(1, 1, 1)` is global average pooling. Halves in float32.
pub fn adaptive_avg_pool3d(x: &Tensor, output_size: Size3) -> Result<Tensor> {
    const OP: &str = "adaptive_avg_pool3d";
    let (v, unbatched) = volume(x, OP, output_size)?;
    let (od, oh, ow) = output_size;
    // One op in torch, on no autocast list: it keeps its input's dtype.
    let y = unlisted(&v, || resize_axes(&v, &[od, oh, ow], "area"))?;
    unvolume(y, unbatched)
}

/// Max over the `output_size` grid of windows laid over each volume (torch's
/// `adaptive_max_pool3d`); the gradient goes to each window's first maximum in depth, row,
/// column order.
pub fn adaptive_max_pool3d(x: &Tensor, output_size: Size3) -> Result<Tensor> {
    Ok(pool_max(x, output_size, false)?.0)
}

/// [`adaptive_max_pool3d`] and where each maximum is: an int64 index into its `[D, H, W]`
/// volume flattened (torch's `return_indices=True`, what `max_unpool3d` takes).
pub fn adaptive_max_pool3d_with_indices(
    x: &Tensor,
    output_size: Size3,
) -> Result<(Tensor, Tensor)> {
    let (values, at) = pool_max(x, output_size, true)?;
    Ok((values, at.expect("asked for")))
}

/// The maxima, one axis at a time, the last first: each stage's first maximum then keeps the
/// earlier axes' order. With `indices`, each stage also carries its winners' volume positions
/// (under `no_grad`), so the index is the first maximum in depth, row, column order.
fn pool_max(x: &Tensor, output_size: Size3, indices: bool) -> Result<(Tensor, Option<Tensor>)> {
    const OP: &str = "adaptive_max_pool3d";
    let (v, unbatched) = volume(x, OP, output_size)?;
    let (od, oh, ow) = output_size;
    let s = v.shape().to_vec();
    let mut at = if indices {
        let positions = no_grad(|| {
            Tensor::arange(0i64, (s[2] * s[3] * s[4]) as i64, v.device())?
                .reshape(vec![1, 1, s[2], s[3], s[4]])?
                .expand(s.clone())?
                .contiguous()
        })?;
        Some(positions)
    } else {
        None
    };
    let mut y = v;
    for (dim, out) in [(4usize, ow), (3, oh), (2, od)] {
        let taps = Tensor::stack(&window_taps(&y, dim, out)?, 0)?;
        if let Some(place) = &at {
            at = Some(no_grad(|| {
                let first = taps.argmax_dim(0)?.unsqueeze(0)?;
                Tensor::stack(&window_taps(place, dim, out)?, 0)?
                    .gather(0, &first)?
                    .squeeze(0)
            })?);
        }
        y = taps.max_dim(0)?;
    }
    let at = at.map(|a| unvolume(a, unbatched)).transpose()?;
    Ok((unvolume(y, unbatched)?, at))
}

/// The taps of each adaptive window along `dim`, one tensor per tap (a short window repeats
/// its first element, which cannot change its first maximum), for `max_dim` over them.
fn window_taps(x: &Tensor, dim: usize, out: usize) -> Result<Vec<Tensor>> {
    let len = x.shape()[dim];
    let window = |o: usize| (o * len / out, ((o + 1) * len).div_ceil(out));
    let k = (0..out)
        .map(|o| window(o).1 - window(o).0)
        .max()
        .unwrap_or(1);
    (0..k)
        .map(|t| {
            let idx: Vec<i64> = (0..out)
                .map(|o| {
                    let (a, b) = window(o);
                    if a + t < b {
                        (a + t) as i64
                    } else {
                        a as i64
                    }
                })
                .collect();
            let idx = Tensor::from_vec(idx, vec![out], x.device())?;
            x.index_select(dim as isize, &idx)
        })
        .collect()
}

/// torch's `nn.AdaptiveAvgPool3d(output_size)`.
#[derive(Clone, Copy)]
pub struct AdaptiveAvgPool3d {
    output_size: Size3,
}

impl AdaptiveAvgPool3d {
    pub fn new(output_size: Size3) -> AdaptiveAvgPool3d {
        AdaptiveAvgPool3d { output_size }
    }
}

impl Module for AdaptiveAvgPool3d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        adaptive_avg_pool3d(x, self.output_size)
    }
    fn describe(&self) -> String {
        format!(
            "AdaptiveAvgPool3d(output_size={})",
            show_triple(self.output_size)
        )
    }
}

/// torch's `nn.AdaptiveMaxPool3d(output_size)`.
#[derive(Clone, Copy)]
pub struct AdaptiveMaxPool3d {
    output_size: Size3,
}

impl AdaptiveMaxPool3d {
    pub fn new(output_size: Size3) -> AdaptiveMaxPool3d {
        AdaptiveMaxPool3d { output_size }
    }
    /// The pooling and where each maximum is (torch's `return_indices=True`).
    pub fn forward_with_indices(&self, x: &Tensor) -> Result<(Tensor, Tensor)> {
        adaptive_max_pool3d_with_indices(x, self.output_size)
    }
}

impl Module for AdaptiveMaxPool3d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        adaptive_max_pool3d(x, self.output_size)
    }
    fn describe(&self) -> String {
        format!(
            "AdaptiveMaxPool3d(output_size={})",
            show_triple(self.output_size)
        )
    }
}
