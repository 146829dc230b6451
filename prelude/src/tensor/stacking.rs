//! torch's joins and splits by layout, built on `cat`, `narrow` and `gather` (so each runs
//! on every device and passes gradients through them): `atleast_1d/2d/3d`, `hstack`,
//! `vstack`, `dstack`, `column_stack`, `tensor_split`, `hsplit` / `vsplit` / `dsplit`,
//! `block_diag`, `cartesian_prod`, `take_along_dim`, `ravel`, `msort`, `moveaxis`, and the
//! index grids `tril_indices` / `triu_indices`.

use super::dtype::{promote, DType};
use super::shape::resolve_dim;
use super::Tensor;
use crate::device::Device;
use crate::error::{Error, Result};
use std::borrow::Borrow;

fn non_empty<T>(op: &str, tensors: &[T]) -> Result<()> {
    if tensors.is_empty() {
        return Err(Error::Invalid(format!(
            "{op}: needs at least one tensor, got an empty list"
        )));
    }
    Ok(())
}

impl Tensor {
    /// A view with at least one dimension: a 0-d tensor becomes `[1]` (torch's
    /// `atleast_1d`).
    pub fn atleast_1d(&self) -> Result<Tensor> {
        match self.rank() {
            0 => self.reshape(vec![1]),
            _ => Ok(self.clone()),
        }
    }

    /// A view with at least two dimensions: `[]` becomes `[1, 1]`, `[n]` becomes `[1, n]`
    /// (torch's `atleast_2d`).
    pub fn atleast_2d(&self) -> Result<Tensor> {
        match self.rank() {
            0 => self.reshape(vec![1, 1]),
            1 => self.unsqueeze(0),
            _ => Ok(self.clone()),
        }
    }

    /// A view with at least three dimensions: `[]` becomes `[1, 1, 1]`, `[n]` becomes
    /// `[1, n, 1]` and `[m, n]` becomes `[m, n, 1]` (torch's `atleast_3d`).
    pub fn atleast_3d(&self) -> Result<Tensor> {
        match self.rank() {
            0 => self.reshape(vec![1, 1, 1]),
            1 => self.unsqueeze(0)?.unsqueeze(2),
            2 => self.unsqueeze(2),
            _ => Ok(self.clone()),
        }
    }

    /// The tensors joined column-wise (torch's `hstack`): along dimension 1, or along 0
    /// when they are vectors.
    pub fn hstack<T: Borrow<Tensor>>(tensors: &[T]) -> Result<Tensor> {
        non_empty("hstack", tensors)?;
        let parts = each(tensors, Tensor::atleast_1d)?;
        let dim = if parts[0].rank() == 1 { 0 } else { 1 };
        Tensor::cat(&parts, dim)
    }

    /// The tensors joined row-wise, vectors as rows (torch's `vstack` / `row_stack`).
    pub fn vstack<T: Borrow<Tensor>>(tensors: &[T]) -> Result<Tensor> {
        non_empty("vstack", tensors)?;
        Tensor::cat(&each(tensors, Tensor::atleast_2d)?, 0)
    }

    /// The tensors joined along the third dimension (torch's `dstack`).
    pub fn dstack<T: Borrow<Tensor>>(tensors: &[T]) -> Result<Tensor> {
        non_empty("dstack", tensors)?;
        Tensor::cat(&each(tensors, Tensor::atleast_3d)?, 2)
    }

    /// The tensors as columns side by side: vectors (and 0-d tensors) become `[n, 1]`
    /// columns, matrices join along dimension 1 (torch's `column_stack`).
    pub fn column_stack<T: Borrow<Tensor>>(tensors: &[T]) -> Result<Tensor> {
        non_empty("column_stack", tensors)?;
        let parts = each(tensors, |t| match t.rank() {
            0 | 1 => t.reshape(vec![t.numel(), 1]),
            _ => Ok(t.clone()),
        })?;
        Tensor::cat(&parts, 1)
    }

    /// Views of `sections` pieces along `dim`, as equal as can be: the first `len %
    /// sections` are one longer (torch's `tensor_split` with a count; unlike `chunk`, there
    /// are always `sections` pieces, some empty when `sections > len`).
    pub fn tensor_split(&self, sections: usize, dim: isize) -> Result<Vec<Tensor>> {
        let d = resolve_dim(dim, self.rank())?;
        if sections == 0 {
            return Err(Error::Invalid(format!(
                "tensor_split: the number of sections must be positive, got 0 (shape {:?})",
                self.shape()
            )));
        }
        let len = self.shape()[d];
        let (size, extra) = (len / sections, len % sections);
        let mut at = 0;
        (0..sections)
            .map(|i| {
                let n = size + usize::from(i < extra);
                at += n;
                self.narrow(d as isize, at - n, n)
            })
            .collect()
    }

    /// Views cut at `indices` along `dim`: `[..i0]`, `[i0..i1]`, ..., `[ik..]` (torch's
    /// `tensor_split` with indices; negative indices count from the end, and an index past
    /// the end is the end, and a piece whose end is below its start is empty, as slicing does).
    pub fn tensor_split_at(&self, indices: &[i64], dim: isize) -> Result<Vec<Tensor>> {
        let d = resolve_dim(dim, self.rank())?;
        let len = self.shape()[d] as i64;
        let clamp = |i: i64| (if i < 0 { i + len } else { i }).clamp(0, len) as usize;
        // Piece j is the slice [indices[j - 1], indices[j]), each end placed on its own (so a
        // piece after a larger index starts there), as torch slices.
        let mut cuts = vec![0];
        cuts.extend(indices.iter().map(|&i| clamp(i)));
        cuts.push(len as usize);
        cuts.windows(2)
            .map(|w| self.narrow(d as isize, w[0], w[1].max(w[0]) - w[0]))
            .collect()
    }

    /// `sections` equal pieces along dimension 1 (0 for a vector), as torch's `hsplit`: the
    /// size must divide evenly.
    pub fn hsplit(&self, sections: usize) -> Result<Vec<Tensor>> {
        let dim = if self.rank() == 1 { 0 } else { 1 };
        self.split_evenly("hsplit", 1, dim, sections)
    }

    /// `sections` equal pieces along dimension 0 (torch's `vsplit`; at least 2-D).
    pub fn vsplit(&self, sections: usize) -> Result<Vec<Tensor>> {
        self.split_evenly("vsplit", 2, 0, sections)
    }

    /// `sections` equal pieces along dimension 2 (torch's `dsplit`; at least 3-D).
    pub fn dsplit(&self, sections: usize) -> Result<Vec<Tensor>> {
        self.split_evenly("dsplit", 3, 2, sections)
    }

    fn split_evenly(
        &self,
        op: &str,
        rank: usize,
        dim: usize,
        sections: usize,
    ) -> Result<Vec<Tensor>> {
        if self.rank() < rank {
            return Err(Error::BadShape(format!(
                "{op}: needs a tensor of at least {rank} dimension(s), got shape {:?}",
                self.shape()
            )));
        }
        let len = self.shape()[dim];
        if sections == 0 || !len.is_multiple_of(sections) {
            return Err(Error::BadShape(format!(
                "{op}: dimension {dim} of shape {:?} (size {len}) does not split into \
                 {sections} equal pieces",
                self.shape()
            )));
        }
        self.tensor_split(sections, dim as isize)
    }

    /// The tensors (0-, 1- or 2-D, each taken as a matrix) on the diagonal of one matrix,
    /// zeros elsewhere (torch's `block_diag`); the dtypes promote.
    pub fn block_diag<T: Borrow<Tensor>>(tensors: &[T]) -> Result<Tensor> {
        non_empty("block_diag", tensors)?;
        if let Some((i, t)) = tensors
            .iter()
            .map(Borrow::borrow)
            .enumerate()
            .find(|(_, t)| t.rank() > 2)
        {
            return Err(Error::BadShape(format!(
                "block_diag: each tensor needs at most 2 dimensions, tensor {i} has shape {:?}",
                t.shape()
            )));
        }
        let blocks = each(tensors, Tensor::atleast_2d)?;
        let dtype = blocks
            .iter()
            .map(Tensor::dtype)
            .reduce(promote)
            .unwrap_or(DType::F32);
        let device = blocks[0].device();
        let width: usize = blocks.iter().map(|b| b.shape()[1]).sum();
        let mut at = 0;
        let mut rows = Vec::with_capacity(blocks.len());
        for b in &blocks {
            let (r, c) = (b.shape()[0], b.shape()[1]);
            let left = Tensor::zeros_dtype(vec![r, at], dtype, device)?;
            let right = Tensor::zeros_dtype(vec![r, width - at - c], dtype, device)?;
            rows.push(Tensor::cat(&[&left, &b.to_dtype(dtype)?, &right], 1)?);
            at += c;
        }
        Tensor::cat(&rows, 0)
    }

    /// Every combination of one element from each vector, as rows `[n0 * n1 * .., k]` in
    /// row-major order (torch's `cartesian_prod`; one vector comes back as itself).
    pub fn cartesian_prod<T: Borrow<Tensor>>(tensors: &[T]) -> Result<Tensor> {
        non_empty("cartesian_prod", tensors)?;
        let ts: Vec<&Tensor> = tensors.iter().map(Borrow::borrow).collect();
        if let Some(t) = ts.iter().find(|t| t.rank() != 1) {
            return Err(Error::BadShape(format!(
                "cartesian_prod: needs 1-D tensors, got shape {:?}",
                t.shape()
            )));
        }
        if let Some(t) = ts.iter().find(|t| t.dtype() != ts[0].dtype()) {
            return Err(Error::Invalid(format!(
                "cartesian_prod: every tensor needs one dtype, got {} and {}",
                ts[0].dtype(),
                t.dtype()
            )));
        }
        if ts.len() == 1 {
            return Ok(ts[0].clone());
        }
        let grids = Tensor::meshgrid(&ts, "ij")?;
        let flat = grids
            .iter()
            .map(Tensor::flatten)
            .collect::<Result<Vec<_>>>()?;
        Tensor::stack(&flat, 1)
    }

    /// The elements at `indices` (int64) along `dim`, the other dimensions broadcast
    /// between the two (torch's `take_along_dim`, the partner of `argsort` / `argmax` with
    /// `keepdim`); with no `dim`, both are flattened first.
    pub fn take_along_dim(&self, indices: &Tensor, dim: Option<isize>) -> Result<Tensor> {
        if indices.dtype() != DType::I64 {
            return Err(Error::Invalid(format!(
                "take_along_dim: the indices need dtype int64, got {} (shape {:?})",
                indices.dtype(),
                indices.shape()
            )));
        }
        let Some(dim) = dim else {
            return self.flatten()?.gather(0, &indices.flatten()?);
        };
        if self.rank() != indices.rank() {
            return Err(Error::BadShape(format!(
                "take_along_dim: the input and the indices need one rank, got shapes {:?} \
                 and {:?}",
                self.shape(),
                indices.shape()
            )));
        }
        let d = resolve_dim(dim, self.rank())?;
        let mut dims = Vec::with_capacity(self.rank());
        for (i, (&a, &b)) in self.shape().iter().zip(indices.shape()).enumerate() {
            dims.push(match (a, b) {
                _ if i == d => 0,
                (a, b) if a == b || b == 1 => a,
                (1, b) => b,
                _ => {
                    return Err(Error::BadShape(format!(
                        "take_along_dim: shapes {:?} and {:?} do not broadcast outside \
                         dimension {d}",
                        self.shape(),
                        indices.shape()
                    )))
                }
            });
        }
        let along = |n: usize| {
            let mut s = dims.clone();
            s[d] = n;
            s
        };
        let values = self.broadcast_to(along(self.shape()[d]))?;
        values.gather(
            d as isize,
            &indices.broadcast_to(along(indices.shape()[d]))?,
        )
    }

    /// The elements as one dimension (torch's `ravel`: a view when the layout allows, a
    /// copy otherwise).
    pub fn ravel(&self) -> Result<Tensor> {
        self.flatten()
    }

    /// Sorted along dimension 0 (torch's `msort`).
    pub fn msort(&self) -> Result<Tensor> {
        Ok(self.sort(0, false)?.0)
    }

    /// torch's `moveaxis`: [`Tensor::movedim`].
    pub fn moveaxis(&self, source: isize, destination: isize) -> Result<Tensor> {
        self.movedim(source, destination)
    }

    /// The coordinates of a `rows x cols` matrix's lower triangle (`offset` as `tril`'s
    /// `diagonal`), as an int64 `[2, n]` tensor in row-major order (torch's `tril_indices`).
    pub fn tril_indices(
        rows: usize,
        cols: usize,
        offset: i64,
        device: impl Into<Device>,
    ) -> Result<Tensor> {
        triangle_indices(rows, cols, |i, j| j - i <= offset, device.into())
    }

    /// The coordinates of the upper triangle (torch's `triu_indices`).
    pub fn triu_indices(
        rows: usize,
        cols: usize,
        offset: i64,
        device: impl Into<Device>,
    ) -> Result<Tensor> {
        triangle_indices(rows, cols, |i, j| j - i >= offset, device.into())
    }
}

fn each<T: Borrow<Tensor>>(
    tensors: &[T],
    f: impl Fn(&Tensor) -> Result<Tensor>,
) -> Result<Vec<Tensor>> {
    tensors.iter().map(|t| f(t.borrow())).collect()
}

fn triangle_indices(
    rows: usize,
    cols: usize,
    keep: impl Fn(i64, i64) -> bool,
    device: Device,
) -> Result<Tensor> {
    let (mut r, mut c) = (Vec::new(), Vec::new());
    for i in 0..rows as i64 {
        for j in 0..cols as i64 {
            if keep(i, j) {
                r.push(i);
                c.push(j);
            }
        }
    }
    let n = r.len();
    r.extend(c);
    Tensor::from_vec(r, [2, n], Device::Cpu)?.to(device)
}
