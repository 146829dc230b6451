//! Adaptive pooling as torch's `F.adaptive_avg_pool2d`, `F.adaptive_max_pool2d` and their 1-D
//! forms: the output size is given and the windows follow from it. Output row `i` of `oh`
//! covers input rows `floor(i*H/oh)` up to `ceil((i+1)*H/oh)`, so windows may differ in size
//! by one and overlap. Each window is one row of an index gather (padded to the longest
//! window), whose gradient goes back to the elements it read.

use super::conv1d::{as_image, as_sequence};
use super::functional::{float_input, in_float32};
use super::windows::{nchw, per_image};
use crate::error::{Error, Result};
use crate::tensor::autocast::unlisted;
use crate::tensor::host_mem::{checked_numel, host_room};
use crate::tensor::{DType, Tensor};
use crate::Device;
use std::sync::Arc;

/// The windows of an `[H, W]` plane pooled to `[oh, ow]`: each output row's and column's
/// input span, and the longest of each.
struct Grid {
    rows: Vec<(usize, usize)>,
    cols: Vec<(usize, usize)>,
    kh: usize,
    kw: usize,
}

fn grid(x: &Tensor, op: &str, (oh, ow): (usize, usize)) -> Result<([usize; 4], Grid)> {
    let [n, c, h, w] = nchw(x, op)?;
    float_input(x, op)?;
    if h == 0 || w == 0 {
        return Err(Error::BadShape(format!(
            "{op}: the input's height and width must not be 0, got shape {:?}",
            x.shape()
        )));
    }
    // The output's size first: the window lists below have one entry per output row/column.
    host_room(checked_numel(op, &[n, c, oh, ow])?, x.dtype())?;
    let span = |i: usize, len: usize, out: usize| (i * len / out, ((i + 1) * len).div_ceil(out));
    let rows: Vec<(usize, usize)> = (0..oh).map(|i| span(i, h, oh)).collect();
    let cols: Vec<(usize, usize)> = (0..ow).map(|i| span(i, w, ow)).collect();
    let longest = |s: &[(usize, usize)]| s.iter().map(|(a, b)| b - a).max().unwrap_or(0);
    let (kh, kw) = (longest(&rows), longest(&cols));
    Ok(([n, c, h, w], Grid { rows, cols, kh, kw }))
}

impl Grid {
    /// Ok when the index tables of `planes` planes fit in memory.
    fn room(&self, op: &str, planes: usize) -> Result<()> {
        let (oh, ow) = (self.rows.len(), self.cols.len());
        host_room(
            checked_numel(op, &[planes, oh, ow, self.kh, self.kw])?,
            DType::I64,
        )
    }

    /// One entry per tap of every window of `planes` planes of `h x w`, padded to the longest
    /// window with `pad`: `at(plane, y, x)` for a tap inside its window.
    fn table<T: Copy>(
        &self,
        planes: usize,
        pad: T,
        at: impl Fn(usize, usize, usize) -> T,
    ) -> Vec<T> {
        let (oh, ow) = (self.rows.len(), self.cols.len());
        let mut idx = Vec::with_capacity(planes * oh * ow * self.kh * self.kw);
        for plane in 0..planes {
            for &(y0, y1) in &self.rows {
                for &(x0, x1) in &self.cols {
                    for i in 0..self.kh {
                        for j in 0..self.kw {
                            let inside = y0 + i < y1 && x0 + j < x1;
                            idx.push(if inside {
                                at(plane, y0 + i, x0 + j)
                            } else {
                                pad
                            });
                        }
                    }
                }
            }
        }
        idx
    }
}

/// Mean over the windows that split each `[H, W]` plane of `x` (`[N, C, H, W]`) into an
/// `output_size` grid (torch's `adaptive_avg_pool2d`); `(1, 1)` is the mean of each plane
/// (global average pooling). Half types are summed in float32 and rounded once, as torch's.
pub fn adaptive_avg_pool2d(x: &Tensor, output_size: (usize, usize)) -> Result<Tensor> {
    if x.rank() != 4 {
        return per_image(x, "adaptive_avg_pool2d", |x| {
            adaptive_avg_pool2d(x, output_size)
        });
    }
    let ([n, c, h, w], g) = grid(x, "adaptive_avg_pool2d", output_size)?;
    let (oh, ow) = output_size;
    let pool = |x: &Tensor| -> Result<Tensor> {
        if (oh, ow) == (1, 1) {
            return x.reshape((n, c, h * w))?.mean_dim(2)?.reshape((n, c, 1, 1));
        }
        // Windows padded with -1 (a 0) to the longest; each divided by its own size.
        g.room("adaptive_avg_pool2d", n * c)?;
        let idx = g.table(n * c, -1, |p, y, xi| ((p * h + y) * w + xi) as i32);
        let sizes: Vec<f64> = g
            .rows
            .iter()
            .flat_map(|&(y0, y1)| {
                g.cols
                    .iter()
                    .map(move |&(x0, x1)| ((y1 - y0) * (x1 - x0)) as f64)
            })
            .collect();
        let sizes = Tensor::from_vec(sizes, vec![oh * ow], Device::Cpu)?
            .to_dtype(x.dtype())?
            .to(x.device())?;
        let sums = x
            .gather_flat(Arc::new(idx), vec![n * c, oh * ow, g.kh * g.kw])?
            .sum_dim(2)?;
        sums.div(&sizes)?.reshape((n, c, oh, ow))
    };
    // One op in torch, on no autocast list: its sums keep the input's dtype.
    unlisted(x, || {
        in_float32(x, &[], |x, _| pool(x)).unwrap_or_else(|| pool(x))
    })
}

/// Max over the windows that split each `[H, W]` plane of `x` (`[N, C, H, W]`) into an
/// `output_size` grid (torch's `adaptive_max_pool2d`); the gradient of each window goes to
/// its first maximum in row-major order (a NaN counts as the maximum).
pub fn adaptive_max_pool2d(x: &Tensor, output_size: (usize, usize)) -> Result<Tensor> {
    Ok(adaptive_max_pool2d_with_indices(x, output_size)?.0)
}

/// [`adaptive_max_pool2d`] and where each maximum is, as an int64 index into its `[H, W]`
/// plane flattened (torch's `return_indices=True`, what `max_unpool2d` takes).
pub fn adaptive_max_pool2d_with_indices(
    x: &Tensor,
    output_size: (usize, usize),
) -> Result<(Tensor, Tensor)> {
    if x.rank() != 4 {
        return per_image(x, "adaptive_max_pool2d", |x| {
            adaptive_max_pool2d_with_indices(x, output_size)
        });
    }
    let ([n, c, h, w], g) = grid(x, "adaptive_max_pool2d", output_size)?;
    let (oh, ow) = output_size;
    let planes = n * c;
    g.room("adaptive_max_pool2d", planes)?;
    let cells = planes * oh * ow;
    // Taps past a window read one extra element, -inf, appended to the input: it never wins
    // and `cat`'s gradient drops it.
    let end = planes * h * w;
    let flat = Tensor::cat(
        &[
            x.flatten()?,
            Tensor::full_dtype([1], f64::NEG_INFINITY, x.dtype(), x.device())?,
        ],
        0,
    )?;
    let idx = g.table(planes, end as i32, |p, y, xi| ((p * h + y) * w + xi) as i32);
    let windows = flat.gather_flat(Arc::new(idx), vec![cells, g.kh * g.kw])?;
    let values = windows.max_dim(1)?.reshape((n, c, oh, ow))?;
    let tap = windows.detach().argmax_dim(1)?.unsqueeze(1)?;
    let within = g.table(1, -1i64, |_, y, xi| (y * w + xi) as i64);
    let within = Tensor::from_vec(within, vec![oh * ow, g.kh * g.kw], Device::Cpu)?
        .to(x.device())?
        .repeat(&[planes, 1])?;
    let indices = within.gather(1, &tap)?.reshape((n, c, oh, ow))?;
    Ok((values, indices))
}

/// [`adaptive_avg_pool2d`] along the last dimension of `[N, C, L]` or `[C, L]` (torch's
/// `F.adaptive_avg_pool1d`).
pub fn adaptive_avg_pool1d(x: &Tensor, output_size: usize) -> Result<Tensor> {
    let (img, unbatched) = as_image("adaptive_avg_pool1d", x)?;
    as_sequence(adaptive_avg_pool2d(&img, (1, output_size))?, unbatched)
}

/// [`adaptive_max_pool2d`] along the last dimension of `[N, C, L]` or `[C, L]` (torch's
/// `F.adaptive_max_pool1d`).
pub fn adaptive_max_pool1d(x: &Tensor, output_size: usize) -> Result<Tensor> {
    Ok(adaptive_max_pool1d_with_indices(x, output_size)?.0)
}

/// [`adaptive_max_pool1d`] and where each maximum is along its sequence, int64 (torch's
/// `F.adaptive_max_pool1d(.., return_indices=True)`, what `max_unpool1d` takes).
pub fn adaptive_max_pool1d_with_indices(
    x: &Tensor,
    output_size: usize,
) -> Result<(Tensor, Tensor)> {
    let (img, unbatched) = as_image("adaptive_max_pool1d", x)?;
    // A [1, L] plane flattened is the sequence itself, so the 2-D indices carry over.
    let (values, indices) = adaptive_max_pool2d_with_indices(&img, (1, output_size))?;
    Ok((
        as_sequence(values, unbatched)?,
        as_sequence(indices, unbatched)?,
    ))
}
