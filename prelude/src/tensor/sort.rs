//! `sort`, `argsort`, `topk`, `cummax`/`cummin` and `searchsorted`/`bucketize`, torch's
//! names and orders. The order is found on the host (one copy of the tensor, whatever its
//! device) and the values are then gathered with it on the tensor's own device, so they carry
//! gradients as `gather` does: each value's gradient goes back to the element it came from.

use super::dtype::DType;
use super::shape::resolve_dim;
use super::Tensor;
use crate::autograd::relabel;
use crate::device::Device;
use crate::error::{Error, Result};
use std::cmp::Ordering;

/// The indices of the first `k` of each row of `len` in `rows` in `cmp`'s order (reversed
/// when `descending`); equal values keep their order.
fn first_k<T>(
    rows: &[T],
    len: usize,
    k: usize,
    descending: bool,
    cmp: impl Fn(&T, &T) -> Ordering,
) -> Vec<i64> {
    let mut idx = Vec::with_capacity(rows.len() / len.max(1) * k);
    for row in rows.chunks(len.max(1)).filter(|_| len > 0) {
        let mut order: Vec<usize> = (0..len).collect();
        if descending {
            order.sort_by(|&i, &j| cmp(&row[j], &row[i]));
        } else {
            order.sort_by(|&i, &j| cmp(&row[i], &row[j]));
        }
        idx.extend(order[..k].iter().map(|&i| i as i64));
    }
    idx
}

/// Ascending order with NaN largest (as torch sorts), equal values keeping their order.
fn ascending(a: f64, b: f64) -> Ordering {
    a.partial_cmp(&b)
        .unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
}

impl Tensor {
    /// The indices (int64, on the CPU) that put each slice along `dim` in order, the first
    /// `k` of each; the slices keep their place in the other dimensions.
    fn order(
        &self,
        op: &str,
        dim: isize,
        descending: bool,
        k: Option<usize>,
    ) -> Result<(usize, Tensor)> {
        let d = resolve_dim(dim, self.rank().max(1))?;
        let shape = if self.rank() == 0 {
            vec![1]
        } else {
            self.shape().to_vec()
        };
        let len = shape[d];
        let k = k.unwrap_or(len);
        if k > len {
            return Err(Error::Invalid(format!(
                "{op}: k = {k} is larger than dimension {d} (size {len}, shape {:?})",
                self.shape()
            )));
        }
        let last = shape.len() - 1;
        // Each slice as a row of a contiguous host copy: dimension d moved last.
        let rows = self
            .detach()
            .reshape(shape.clone())?
            .transpose(d as isize, last as isize)?;
        // int64 beyond 2^53 would not survive f64; every other dtype does exactly.
        let idx = match self.dtype() {
            DType::I64 => first_k(&rows.to_vec::<i64>()?, len, k, descending, i64::cmp),
            _ => first_k(&rows.to_f64_vec()?, len, k, descending, |a, b| {
                ascending(*a, *b)
            }),
        };
        let mut dims = rows.shape().to_vec();
        dims[last] = k;
        let idx = Tensor::from_vec(idx, dims, Device::Cpu)?
            .transpose(d as isize, last as isize)?
            .contiguous()?;
        Ok((d, idx))
    }

    /// The values along `dim` in ascending order (descending with `descending`), and the
    /// int64 indices they came from, as torch's `sort` (stable: equal values keep their
    /// order; NaN sorts as the largest). Gradients flow to the original positions.
    pub fn sort(&self, dim: isize, descending: bool) -> Result<(Tensor, Tensor)> {
        self.select_order("sort", dim, descending, None)
    }

    /// The int64 indices that sort `dim` (the second half of [`Tensor::sort`]).
    pub fn argsort(&self, dim: isize, descending: bool) -> Result<Tensor> {
        Ok(self.sort(dim, descending)?.1)
    }

    /// The `k` largest values along `dim` (the smallest with `largest` false), in order,
    /// and their int64 indices, as torch's `topk` (ties: the lower index first; NaN counts
    /// as the largest).
    pub fn topk(&self, k: usize, dim: isize, largest: bool) -> Result<(Tensor, Tensor)> {
        self.refuse_bool("topk")?;
        self.select_order("topk", dim, largest, Some(k))
    }

    fn select_order(
        &self,
        op: &str,
        dim: isize,
        descending: bool,
        k: Option<usize>,
    ) -> Result<(Tensor, Tensor)> {
        let (d, idx) = self.order(op, dim, descending, k)?;
        if self.rank() == 0 {
            let idx = idx.reshape(())?;
            let values = self
                .reshape([1])?
                .gather(0, &idx.reshape([1])?)?
                .reshape(())?;
            return Ok((values, idx.to(self.device())?));
        }
        let values = self.gather(d as isize, &idx)?;
        Ok((values, idx.to(self.device())?))
    }

    /// The running maximum along `dim` and where each was found (torch's `cummax`): a tie
    /// takes the later position, and a NaN, once met, stays (with the last NaN's position).
    pub fn cummax(&self, dim: isize) -> Result<(Tensor, Tensor)> {
        self.cumulative_extreme(dim, true)
    }

    /// The running minimum along `dim` and its positions (torch's `cummin`), as
    /// [`Tensor::cummax`].
    pub fn cummin(&self, dim: isize) -> Result<(Tensor, Tensor)> {
        self.cumulative_extreme(dim, false)
    }

    fn cumulative_extreme(&self, dim: isize, max: bool) -> Result<(Tensor, Tensor)> {
        if self.rank() == 0 {
            let (v, i) = self.reshape([1])?.cumulative_extreme(0, max)?;
            return Ok((
                v.reshape(Vec::<usize>::new())?,
                i.reshape(Vec::<usize>::new())?,
            ));
        }
        let d = resolve_dim(dim, self.rank())?;
        let dims = self.shape().to_vec();
        let (len, inner) = (dims[d], dims[d + 1..].iter().product::<usize>());
        let x = self.to_dtype(DType::F64)?.to_vec::<f64>()?;
        let mut idx = vec![0i64; x.len()];
        for start in 0..x.len() {
            // `start` walks every line's first element: those at position 0 along `d`.
            if (start / inner) % len.max(1) != 0 {
                continue;
            }
            let (mut best, mut at) = (x[start], 0);
            for k in 0..len {
                let v = x[start + k * inner];
                // torch's rule: take v if it is NaN, or if the best so far is not NaN and v
                // is at least (at most) as good; so ties move to the later position.
                let better = if max { v >= best } else { v <= best };
                if v.is_nan() || (!best.is_nan() && better) {
                    (best, at) = (v, k);
                }
                idx[start + k * inner] = at as i64;
            }
        }
        let idx = Tensor::from_vec(idx, dims, Device::Cpu)?.to(self.device())?;
        let values = self.gather(d as isize, &idx)?;
        Ok((relabel(if max { "cummax" } else { "cummin" }, values), idx))
    }

    /// Where each of `values` would go in `sorted` to keep it sorted, as int64 indices
    /// (torch's `searchsorted`): the first position whose element is not less than the value
    /// (`right`: greater than it). `sorted` is 1-D (one sequence for all values) or has the
    /// values' leading dimensions (one sequence per row); NaN sorts last.
    pub fn searchsorted(sorted: &Tensor, values: &Tensor, right: bool) -> Result<Tensor> {
        sorted.same_device(values)?;
        sorted.refuse_bool("searchsorted")?;
        values.refuse_bool("searchsorted")?;
        if sorted.rank() == 0
            || (sorted.rank() > 1
                && sorted.shape()[..sorted.rank() - 1]
                    != values.shape()[..values.rank().saturating_sub(1)])
        {
            return Err(Error::BadShape(format!(
                "searchsorted: the sorted sequence must be 1-D, or share the values' leading \
                 dimensions, got shapes {:?} (sorted) and {:?} (values)",
                sorted.shape(),
                values.shape()
            )));
        }
        let seq = sorted.to_dtype(DType::F64)?.to_vec::<f64>()?;
        let vals = values.to_dtype(DType::F64)?.to_vec::<f64>()?;
        let n = sorted.shape()[sorted.rank() - 1];
        let per_row = if sorted.rank() == 1 {
            vals.len()
        } else {
            values.shape().last().copied().unwrap_or(1)
        };
        let out: Vec<i64> = vals
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let row = if sorted.rank() == 1 {
                    0
                } else {
                    i / per_row.max(1)
                };
                let s = &seq[row * n..(row + 1) * n];
                // torch's binary search: move right while the middle element is not >= (or
                // not >) the value, which also sends NaN to the end.
                let (mut lo, mut hi) = (0, n);
                while lo < hi {
                    let mid = (lo + hi) / 2;
                    let go_right = match s[mid].partial_cmp(&v) {
                        Some(Ordering::Greater) => false,
                        Some(Ordering::Equal) => right,
                        // Less, or a NaN on either side.
                        _ => true,
                    };
                    if go_right {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                lo as i64
            })
            .collect();
        Tensor::from_vec(out, values.shape().to_vec(), Device::Cpu)?.to(values.device())
    }

    /// The bucket of each element among the 1-D sorted `boundaries` (torch's `bucketize`):
    /// the index of the first boundary not below it (`right`: above it), int64.
    pub fn bucketize(&self, boundaries: &Tensor, right: bool) -> Result<Tensor> {
        if boundaries.rank() != 1 {
            return Err(Error::BadShape(format!(
                "bucketize: the boundaries must be 1-D, got shape {:?}",
                boundaries.shape()
            )));
        }
        Tensor::searchsorted(boundaries, self, right)
    }
}
