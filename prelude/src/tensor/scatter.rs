//! torch's writes by index: `scatter_add`, `scatter` (from a tensor or a number) and
//! `index_add`, out of place and in place (`_`). Where each element goes is worked out on the
//! host from the index (read back once, as `gather` does); the values then move with the
//! flat gather and scatter-add of `gather.rs`, so float tensors keep their gradients on
//! either device. Integer and bool tensors are computed on the host and copied back.

use super::dtype::DType;
use super::gather::Indices;
use super::shape::{resolve_dim, strides};
use super::Tensor;
use crate::device::Device;
use crate::error::{Error, Result};
use std::sync::Arc;

/// For each element of `index` (row-major): the flat position it reads in `src` (of shape
/// `src_dims`) and the flat position it writes in the output (of shape `out_dims`), which is
/// its own position with dimension `d` replaced by the index value.
pub(super) struct Placement {
    pub(super) reads: Vec<i32>,
    pub(super) writes: Vec<i32>,
}

fn placement(
    op: &str,
    d: usize,
    index: &Tensor,
    src_dims: &[usize],
    out_dims: &[usize],
) -> Result<Placement> {
    if !matches!(index.dtype(), DType::I64 | DType::I32) {
        return Err(Error::Invalid(format!(
            "{op}: the index must be an int64 (or int32) tensor, got {} (shape {:?})",
            index.dtype(),
            index.shape()
        )));
    }
    let rank = out_dims.len();
    let dims = index.shape();
    // A 0-d tensor counts as one element along one dimension, as in torch.
    let (dims, src_dims, out_dims): (Vec<usize>, Vec<usize>, Vec<usize>) = if rank == 0 {
        (
            vec![index.numel()],
            vec![src_dims.iter().product()],
            vec![1],
        )
    } else {
        (dims.to_vec(), src_dims.to_vec(), out_dims.to_vec())
    };
    let fits = dims.len() == out_dims.len()
        && src_dims.len() == out_dims.len()
        && (0..dims.len()).all(|i| dims[i] <= src_dims[i] && (i == d || dims[i] <= out_dims[i]));
    if !fits && index.numel() > 0 {
        return Err(Error::BadShape(format!(
            "{op}: index of shape {:?} does not fit: it needs the tensor's rank ({}), no \
             dimension larger than the source's ({src_dims:?}), and none larger than the \
             tensor's ({out_dims:?}) outside dimension {d}",
            index.shape(),
            out_dims.len()
        )));
    }
    for n in [
        src_dims.iter().product::<usize>(),
        out_dims.iter().product(),
    ] {
        if n > i32::MAX as usize {
            return Err(Error::BadShape(format!(
                "{op}: a tensor of {n} elements is past the 32-bit index range"
            )));
        }
    }
    let values = index.to_dtype(DType::I64)?.to_vec::<i64>()?;
    let (ss, os) = (strides(&src_dims), strides(&out_dims));
    let mut reads = Vec::with_capacity(values.len());
    let mut writes = Vec::with_capacity(values.len());
    let mut coord = vec![0usize; dims.len()];
    for &v in &values {
        if v < 0 || v as usize >= out_dims[d] {
            return Err(Error::BadShape(format!(
                "{op}: index {v} is out of range for dimension {d} of size {} (shape {:?})",
                out_dims[d], out_dims
            )));
        }
        let read: usize = coord.iter().zip(&ss).map(|(c, s)| c * s).sum();
        let write: usize = coord
            .iter()
            .zip(&os)
            .enumerate()
            .map(|(i, (c, s))| if i == d { v as usize * s } else { c * s })
            .sum();
        reads.push(read as i32);
        writes.push(write as i32);
        // The next coordinate in row-major order.
        for i in (0..coord.len()).rev() {
            coord[i] += 1;
            if coord[i] < dims[i] {
                break;
            }
            coord[i] = 0;
        }
    }
    Ok(Placement { reads, writes })
}

impl Tensor {
    /// The elements of `src` at `reads`, added (`accumulate`) or written at `writes` into a
    /// copy of this tensor.
    pub(super) fn place(&self, src: &Tensor, p: Placement, accumulate: bool) -> Result<Tensor> {
        let out_dims = self.shape().to_vec();
        let mut writes = p.writes;
        if !accumulate {
            // Each position takes one element: the last one written there (torch leaves
            // the choice open for repeated indices).
            let mut seen = std::collections::HashSet::new();
            for w in writes.iter_mut().rev() {
                if !seen.insert(*w) {
                    *w = -1;
                }
            }
        }
        if !self.dtype().is_float() {
            return self.place_on_host(src, &p.reads, &writes, accumulate);
        }
        let src = src.to_dtype(self.dtype())?;
        let picked = src.gather_flat(Arc::new(p.reads), vec![writes.len()])?;
        let written: Indices = Arc::new(writes);
        let added = picked.scatter_add_flat(written.clone(), out_dims.clone())?;
        if accumulate {
            return self.add(&added);
        }
        // Overwritten positions as a mask built on the host.
        let mut mask = vec![false; self.numel()];
        for &w in written.iter().filter(|&&w| w >= 0) {
            mask[w as usize] = true;
        }
        let mask = Tensor::from_vec(mask, out_dims, Device::Cpu)?;
        added.where_(&mask, self)
    }

    /// [`Tensor::place`] for integer and bool tensors (no gradients), on the host: added in
    /// int64 and wrapped to the dtype as torch's integer arithmetic wraps (bool: or).
    fn place_on_host(
        &self,
        src: &Tensor,
        reads: &[i32],
        writes: &[i32],
        accumulate: bool,
    ) -> Result<Tensor> {
        let ints = |t: &Tensor| -> Result<Vec<i64>> {
            match t.dtype() {
                DType::I64 => t.to_vec::<i64>(),
                // Every other integer and bool value is exact in f64.
                _ => Ok(t.to_f64_vec()?.iter().map(|&v| v as i64).collect()),
            }
        };
        let (mut out, s) = (ints(self)?, ints(src)?);
        for (&r, &w) in reads.iter().zip(writes) {
            if w >= 0 {
                let (r, w) = (r as usize, w as usize);
                out[w] = if accumulate {
                    out[w].wrapping_add(s[r])
                } else {
                    s[r]
                };
            }
        }
        let dims = self.shape().to_vec();
        let t = match self.dtype() {
            DType::I64 => Tensor::from_vec(out, dims, Device::Cpu)?,
            dt => {
                let wrapped: Vec<f64> = out
                    .iter()
                    .map(|&v| match dt {
                        DType::I32 => v as i32 as f64,
                        DType::U8 => v as u8 as f64,
                        _ => (v != 0) as u8 as f64,
                    })
                    .collect();
                Tensor::from_vec(wrapped, dims, Device::Cpu)?.to_dtype(dt)?
            }
        };
        t.to(self.device())
    }

    fn scatter_checks(&self, op: &str, src: &Tensor) -> Result<()> {
        if src.dtype() != self.dtype() {
            return Err(Error::Invalid(format!(
                "{op}: the source must have the tensor's dtype, as in torch: got {} for a {} \
                 tensor; convert it with .to_dtype",
                src.dtype(),
                self.dtype()
            )));
        }
        if src.device() != self.device() {
            return Err(Error::Invalid(format!(
                "{op}: the source is on {} but the tensor on {}",
                src.device(),
                self.device()
            )));
        }
        Ok(())
    }

    /// A copy with `src[i][j]` added at `[index[i][j]][j]` (for `dim` 0; and so on), as
    /// torch's `scatter_add`: `index` (int64) has this tensor's rank, no dimension larger
    /// than `src`'s, and none larger than this tensor's outside `dim`; repeated indices add up.
    pub fn scatter_add(&self, dim: isize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        self.scatter_checks("scatter_add", src)?;
        let d = resolve_dim(dim, self.rank().max(1))?;
        let p = placement("scatter_add", d, index, src.shape(), self.shape())?;
        self.place(src, p, true)
    }

    /// A copy with `src[i][j]` written at `[index[i][j]][j]` (for `dim` 0), as torch's
    /// `scatter`; of repeated indices the last one wins.
    pub fn scatter(&self, dim: isize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        self.scatter_checks("scatter", src)?;
        let d = resolve_dim(dim, self.rank().max(1))?;
        let p = placement("scatter", d, index, src.shape(), self.shape())?;
        self.place(src, p, false)
    }

    /// A copy with `value` written at the places `index` names, as torch's `scatter` with a
    /// number: `zeros.scatter_value(1, &labels.unsqueeze(1)?, 1.0)` is a one-hot matrix.
    pub fn scatter_value(&self, dim: isize, index: &Tensor, value: f64) -> Result<Tensor> {
        let src = Tensor::full_dtype(index.shape().to_vec(), value, self.dtype(), self.device())?;
        self.scatter(dim, index, &src)
    }

    /// A copy with `alpha * source` added at the positions `index` (1-D, int64) names along
    /// `dim`, as torch's `index_add`: `source` has this tensor's shape except `index.len()`
    /// along `dim`.
    pub fn index_add(
        &self,
        dim: isize,
        index: &Tensor,
        source: &Tensor,
        alpha: f64,
    ) -> Result<Tensor> {
        let source = if alpha == 1.0 {
            source.clone()
        } else if self.dtype().is_float() {
            source.mul(alpha)?
        } else {
            // torch converts the number to the tensor's integer type, toward zero (0.5 -> 0).
            source.mul(alpha.trunc() as i64)?.to_dtype(self.dtype())?
        };
        self.index_place("index_add", dim, index, &source, true)
    }

    /// A copy with the slices of `source` written at the positions `index` (1-D, int64) names
    /// along `dim` (torch's `index_copy`; `source` shaped as for [`Tensor::index_add`]). With
    /// an index listed twice, the last slice wins.
    pub fn index_copy(&self, dim: isize, index: &Tensor, source: &Tensor) -> Result<Tensor> {
        self.index_place("index_copy", dim, index, source, false)
    }

    /// A copy with `value` at the positions `index` names along `dim` (torch's `index_fill`);
    /// the gradient is 0 there.
    pub fn index_fill(
        &self,
        dim: isize,
        index: &Tensor,
        value: impl Into<super::Number>,
    ) -> Result<Tensor> {
        let value = super::dtype::fill_scalar("index_fill", value, self.dtype(), self.device())?;
        let d = resolve_dim(dim, self.rank().max(1))?;
        let mut want = self.shape().to_vec();
        if !want.is_empty() {
            want[d] = index.numel();
        }
        let src = value.broadcast_to(want)?.contiguous()?;
        self.index_place("index_fill", dim, index, &src, false)
    }

    /// [`Tensor::index_copy`] written into this tensor (torch's `index_copy_`).
    pub fn index_copy_(&self, dim: isize, index: &Tensor, source: &Tensor) -> Result<()> {
        self.no_grad_source("index_copy_", source)?;
        let out = crate::autograd::no_grad(|| self.detach().index_copy(dim, index, source))?;
        self.copy_(&out)
    }

    /// [`Tensor::index_fill`] written into this tensor (torch's `index_fill_`).
    pub fn index_fill_(
        &self,
        dim: isize,
        index: &Tensor,
        value: impl Into<super::Number>,
    ) -> Result<()> {
        let value = value.into();
        let out = crate::autograd::no_grad(|| self.detach().index_fill(dim, index, value))?;
        self.copy_(&out)
    }

    /// `source`'s slices placed (added, or written) at the positions `index` names along
    /// `dim`: what `index_add`, `index_copy` and `index_fill` share.
    fn index_place(
        &self,
        op: &str,
        dim: isize,
        index: &Tensor,
        source: &Tensor,
        accumulate: bool,
    ) -> Result<Tensor> {
        self.scatter_checks(op, source)?;
        let d = resolve_dim(dim, self.rank().max(1))?;
        let n = index.numel();
        let mut want = self.shape().to_vec();
        if !want.is_empty() {
            want[d] = n;
        }
        if index.rank() > 1 || source.shape() != want {
            return Err(Error::BadShape(format!(
                "{op}: needs a 1-D index and a source of shape {want:?} (the tensor's, \
                 with the index's length along dimension {d}), got index {:?} and source {:?}",
                index.shape(),
                source.shape()
            )));
        }
        // The index along `dim`, spread over the source's other dimensions.
        let mut along = vec![1; want.len().max(1)];
        let at = d.min(along.len() - 1);
        along[at] = n;
        let spread = index.reshape(along)?.expand(want.clone())?.contiguous()?;
        let p = placement(op, d, &spread, &want, self.shape())?;
        self.place(source, p, accumulate)
    }

    /// The in-place writes cannot record a gradient for their source (see
    /// `check_inplace_autograd`): one that requires grad must use the out-of-place op.
    pub(super) fn no_grad_source(&self, op: &str, src: &Tensor) -> Result<()> {
        if src.requires_grad() && crate::autograd::is_grad_enabled() {
            return Err(Error::Invalid(format!(
                "{op}: the source requires grad, and in-place writes are not recorded for \
                 backward; use the out-of-place op (x = x.{}(..)?)",
                op.trim_end_matches('_')
            )));
        }
        Ok(())
    }

    /// [`Tensor::scatter_add`] written into this tensor (torch's `scatter_add_`).
    pub fn scatter_add_(&self, dim: isize, index: &Tensor, src: &Tensor) -> Result<()> {
        self.no_grad_source("scatter_add_", src)?;
        let out = crate::autograd::no_grad(|| self.detach().scatter_add(dim, index, src))?;
        self.copy_(&out)
    }

    /// [`Tensor::scatter`] written into this tensor (torch's `scatter_`).
    pub fn scatter_(&self, dim: isize, index: &Tensor, src: &Tensor) -> Result<()> {
        self.no_grad_source("scatter_", src)?;
        let out = crate::autograd::no_grad(|| self.detach().scatter(dim, index, src))?;
        self.copy_(&out)
    }

    /// [`Tensor::index_add`] written into this tensor (torch's `index_add_`).
    pub fn index_add_(
        &self,
        dim: isize,
        index: &Tensor,
        source: &Tensor,
        alpha: f64,
    ) -> Result<()> {
        self.no_grad_source("index_add_", source)?;
        let out = crate::autograd::no_grad(|| self.detach().index_add(dim, index, source, alpha))?;
        self.copy_(&out)
    }
}
