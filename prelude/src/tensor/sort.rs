//! `sort`, `argsort` and `topk`, torch's names and orders. The order is found on the host
//! (one copy of the tensor, whatever its device) and the values are then gathered with it
//! on the tensor's own device, so they carry gradients as `gather` does: each value's
//! gradient goes back to the element it came from.

use super::dtype::DType;
use super::shape::resolve_dim;
use super::Tensor;
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
}
